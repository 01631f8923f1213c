"""``longhaul-daemon status``: ask the running daemon how it is, over a blocking socket with a short timeout.

Exit codes follow the LSB convention for status actions: 0 the daemon answered, 3 no daemon is running (no
socket, connection refused), 1 anything else (a timeout, a foreign daemon, a garbled answer), with a message
on stderr. Before trusting an answer, the server's uid is checked with SO_PEERCRED, so a socket squatted by
another user is reported instead of believed.

When no daemon answers, ``status`` says how to get one on this machine: through systemd where a user manager
answers, by hand where none does. ``--json`` then prints ``{"running": false, "socket", "problem", "message",
"hint"}`` instead of the daemon's status (which it prints with ``"running": true``).

Only the standard library is imported, so asking when no daemon runs costs the interpreter's start and, for
the hint, one ``systemctl --user`` call. The protocol's pydantic model, which checks an answer and feeds the
table, is imported once a daemon has answered.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.server.peercred import peer_allowed, peer_credentials

__all__ = [
    "EXIT_ERROR",
    "EXIT_NOT_RUNNING",
    "EXIT_RUNNING",
    "DaemonAnswer",
    "DaemonNotRunning",
    "StatusQueryFailed",
    "query_daemon",
    "query_status",
    "run_status",
]

EXIT_RUNNING = 0
EXIT_ERROR = 1
EXIT_NOT_RUNNING = 3

DEFAULT_TIMEOUT_S = 2.0
_MAX_REPLY = 1024 * 1024


class DaemonNotRunning(Exception):
    """Nothing listens on the socket path."""


class StatusQueryFailed(Exception):
    """Something listens, but the status call did not give a usable answer."""


@dataclass(frozen=True)
class DaemonAnswer:
    """The status result (checked against :class:`StatusResult`) and the server's pid as the kernel says."""

    status: dict[str, Any]
    peer_pid: int


def query_status(socket_path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """Call ``status`` and return the raw result object (already checked against :class:`StatusResult`)."""
    return query_daemon(socket_path, timeout_s=timeout_s).status


def query_daemon(socket_path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> DaemonAnswer:
    """Call ``status``; the result and who served it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(os.fspath(socket_path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
            raise DaemonNotRunning(f"no daemon is running on {socket_path}") from None
        except TimeoutError:
            raise StatusQueryFailed(f"connecting to {socket_path} timed out after {timeout_s:g}s") from None
        except OSError as exc:
            raise StatusQueryFailed(f"cannot connect to {socket_path}: {exc.strerror or exc}") from None
        peer_pid = _check_server_uid(sock, socket_path)
        request = {"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}}
        try:
            sock.sendall(json.dumps(request).encode() + b"\n")
            reply = _read_line(sock)
        except TimeoutError:
            raise StatusQueryFailed(
                f"the daemon on {socket_path} did not answer within {timeout_s:g}s"
            ) from None
        except OSError as exc:
            raise StatusQueryFailed(
                f"talking to the daemon on {socket_path} failed: {exc.strerror or exc}"
            ) from None
    return DaemonAnswer(_parse_reply(reply), peer_pid)


def _check_server_uid(sock: socket.socket, socket_path: Path) -> int:
    """The server's pid, once its uid is known to be ours."""
    try:
        server = peer_credentials(sock)
    except OSError as exc:
        raise StatusQueryFailed(f"cannot tell who serves {socket_path}: {exc.strerror or exc}") from None
    if not peer_allowed(server.uid, os.getuid()):
        raise StatusQueryFailed(
            f"{socket_path} is served by uid {server.uid} (pid {server.pid}), not by you (uid {os.getuid()})"
        )
    return server.pid


def _read_line(sock: socket.socket) -> bytes:
    buffer = b""
    while b"\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise StatusQueryFailed("the daemon closed the connection without answering")
        buffer += chunk
        if len(buffer) > _MAX_REPLY:
            raise StatusQueryFailed("the daemon's answer is implausibly large")
    return buffer.split(b"\n", 1)[0]


def _parse_reply(reply: bytes) -> dict[str, Any]:
    try:
        message = json.loads(reply)
    except ValueError:
        raise StatusQueryFailed("the daemon's answer is not JSON") from None
    if not isinstance(message, dict):
        raise StatusQueryFailed("the daemon's answer is not a JSON-RPC response")
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        raise StatusQueryFailed(f"the daemon answered with error {error.get('code')}: {error.get('message')}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise StatusQueryFailed("the daemon's answer has no result object")
    from pydantic import ValidationError

    from longhaul_daemon.protocol import StatusResult

    try:
        StatusResult.model_validate(result)
    except ValidationError:
        raise StatusQueryFailed("the daemon's status does not match this client's protocol") from None
    return result


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
    from longhaul_daemon.ops.user_manager import not_running_hint
    from longhaul_daemon.server.paths import default_socket_path

    default = default_socket_path(env, os.getuid())
    return not_running_hint(env, socket_path, socket_named=socket_named, default_socket=default)
