"""Each ``longhaul-daemon`` subcommand, run in a fresh interpreter, loads only the modules it runs on.

Start-up time is what this protects (``status`` and ``--help`` should not pay for the daemon's dependencies),
but no test asserts a time: each asserts which modules are in ``sys.modules`` when the command has finished.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from server.in_process_daemon import WAIT_S, running_daemon

# Runs the CLI as the console script does, then prints the exit code and every loaded module as one JSON line.
_WRAPPER = """\
import json, sys
from longhaul_daemon.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}))
"""

DAEMON_DEPENDENCIES = frozenset({"anyio", "httpx", "jsonrpcserver", "pydantic", "structlog"})
"""The project's third-party dependencies; of the commands tested here only ``state`` needs one (pydantic)."""

OTHER_COMMANDS = {
    "serve": "longhaul_daemon.server.lifecycle",
    "state": "longhaul_daemon.inspector.command",
    "report": "longhaul_daemon.log.report",
    "install": "longhaul_daemon.ops.install",
    "status": "longhaul_daemon.status_client",
}
"""The module each subcommand runs on; no subcommand imports another's."""


def _loaded(*args: str, env: dict[str, str], cwd: Path) -> tuple[int, set[str]]:
    """Run ``longhaul-daemon ARGS`` through the wrapper; its exit code and the modules loaded at its end."""
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WAIT_S * 2,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return int(report["exit"]), set(report["modules"])


@pytest.fixture
def private_env(tmp_path: Path) -> dict[str, str]:
    """The test's environment with HOME, the XDG dirs and pi's agent dir moved under ``tmp_path``."""
    env = {k: v for k, v in os.environ.items() if k not in {"LONGHAUL_SOCKET", "PI_COMPACT_STATE_DEBUG"}}
    (tmp_path / "agent").mkdir()  # report refuses an agent dir that does not exist
    return {
        **env,
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
    }


def _others(command: str) -> set[str]:
    return {module for name, module in OTHER_COMMANDS.items() if name != command}


def test_status_with_no_daemon_loads_no_dependency(
    short_tmp: Path, tmp_path: Path, private_env: dict[str, str]
) -> None:
    code, modules = _loaded("status", "--socket", str(short_tmp / "none.sock"), env=private_env, cwd=tmp_path)
    assert code == 3
    assert OTHER_COMMANDS["status"] in modules  # the command really ran
    assert modules.isdisjoint(DAEMON_DEPENDENCIES | _others("status"))
    assert "longhaul_daemon.protocol" not in modules


def test_help_loads_no_dependency_and_no_command(tmp_path: Path, private_env: dict[str, str]) -> None:
    code, modules = _loaded("--help", env=private_env, cwd=tmp_path)
    assert code == 0
    assert modules.isdisjoint(DAEMON_DEPENDENCIES | set(OTHER_COMMANDS.values()))


@pytest.mark.parametrize(
    ("command", "args"),
    [("report", []), ("install", ["--dry-run"]), ("uninstall", ["--dry-run"])],
)
def test_report_and_dry_runs_load_no_dependency(
    command: str, args: list[str], tmp_path: Path, private_env: dict[str, str]
) -> None:
    code, modules = _loaded(command, *args, env=private_env, cwd=tmp_path)
    assert code == 0
    own = "install" if command == "uninstall" else command
    assert OTHER_COMMANDS[own] in modules
    # install and uninstall share the user manager, which asks the socket for a daemon started by hand with
    # status's stdlib client (uninstall stops it); that client imports no dependency
    asks = {OTHER_COMMANDS["status"]} if own == "install" else set()
    assert modules.isdisjoint(DAEMON_DEPENDENCIES | (_others(own) - asks))


def test_state_loads_pydantic_for_the_fold_and_nothing_of_the_daemon(
    tmp_path: Path, private_env: dict[str, str]
) -> None:
    header = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-12-02T14:27:42.361Z"}
    entry = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-12-02T14:27:43.000Z",
        "message": {"role": "user", "content": "Run the tests."},
    }
    transcript = tmp_path / "s.jsonl"
    transcript.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n", encoding="utf-8")
    code, modules = _loaded("state", str(transcript), env=private_env, cwd=tmp_path)
    assert code == 0
    assert {"pydantic", "longhaul_daemon.passes.fold"} <= modules
    assert modules.isdisjoint((DAEMON_DEPENDENCIES - {"pydantic"}) | _others("state"))


@pytest.mark.anyio
async def test_status_of_a_running_daemon_loads_only_the_protocol_models(
    short_tmp: Path, tmp_path: Path, private_env: dict[str, str]
) -> None:
    async with running_daemon(short_tmp / "d.sock") as handle:
        with anyio.fail_after(WAIT_S * 2):
            code, modules = await anyio.to_thread.run_sync(
                lambda: _loaded("status", "--socket", str(handle.socket_path), env=private_env, cwd=tmp_path)
            )
    assert code == 0
    assert {"pydantic", "longhaul_daemon.protocol"} <= modules  # the answer is checked against StatusResult
    assert modules.isdisjoint((DAEMON_DEPENDENCIES - {"pydantic"}) | _others("status"))
