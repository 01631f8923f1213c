"""The ``status`` subcommand: the daemon's answer as a table or JSON, or, with no daemon, how to get one.

Exit codes follow the LSB convention for status actions: 0 the daemon answered, 3 no daemon is running (no
socket, connection refused), 1 anything else (a timeout, a foreign daemon, a garbled answer), with a message
on stderr. With no daemon, the hint says how to start one on this machine: through systemd where a user
manager answers, by hand where none does; ``--json`` then prints ``{"running": false, "socket", "problem",
"message", "hint"}`` (and the daemon's status with ``"running": true`` when it answers).

Asking with no daemon imports only the standard library; the protocol's model and the table are imported
once a daemon has answered.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.ops.user_manager import not_running_hint
from longhaul_daemon.status_client import (
    DEFAULT_TIMEOUT_S,
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_RUNNING,
    DaemonNotRunning,
    StatusQueryFailed,
    query_status,
)

__all__ = ["not_running_document", "run_status"]


def not_running_document(socket_path: Path, problem: str, message: str, hint: list[str]) -> dict[str, Any]:
    """What ``status --json`` prints when no daemon gave a usable answer (exit 3 or 1)."""
    return {
        "running": False,
        "socket": str(socket_path),
        "problem": problem,
        "message": message,
        "hint": hint,
    }


def run_status(
    socket_path: Path,
    *,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    socket_named: bool = False,
) -> int:
    """The ``status`` subcommand: print the daemon's status and return the exit code.

    With no daemon, the hint says how to get one on this machine (:mod:`longhaul_daemon.ops.user_manager`);
    ``socket_named`` says the user gave ``--socket``, so the hint passes it on."""
    try:
        result = query_status(socket_path, timeout_s=timeout_s)
    except DaemonNotRunning as exc:
        hint = _hint(socket_path, os.environ if env is None else env, socket_named)
        print("\n".join([f"longhaul-daemon: {exc}", *hint]), file=err)
        if as_json:
            print(_json(not_running_document(socket_path, "not-running", str(exc), hint)), file=out)
        return EXIT_NOT_RUNNING
    except StatusQueryFailed as exc:
        print(f"longhaul-daemon: {exc}", file=err)
        if as_json:
            print(_json(not_running_document(socket_path, "no-usable-answer", str(exc), [])), file=out)
        return EXIT_ERROR
    if as_json:
        print(_json({"running": True, **result}), file=out)
    else:
        from longhaul_daemon.ops.status_view import format_status
        from longhaul_daemon.protocol import StatusResult

        print(format_status(StatusResult.model_validate(result)), file=out)
    return EXIT_RUNNING


def _json(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True)


def _hint(socket_path: Path, env: Mapping[str, str], socket_named: bool) -> list[str]:
    from longhaul_daemon.server.paths import default_socket_path

    default = default_socket_path(env, os.getuid())
    return not_running_hint(env, socket_path, socket_named=socket_named, default_socket=default)
