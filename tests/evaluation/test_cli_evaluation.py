"""Each evaluation command, run in a fresh interpreter, loads its own module and no other command's.

The same promise ``tests/test_cli_imports.py`` checks for the daemon's commands: building the parser costs
only the standard library, and a command pays for what it runs on once it is chosen.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .branches import BranchBuilder, write_transcript
from .cli_run import private_env

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

MODULES = {
    "facts": "longhaul_daemon.evaluation.facts",
    "replay": "longhaul_daemon.evaluation.replay_command",
    "score": "longhaul_daemon.evaluation.score",
    "corpus": "longhaul_daemon.evaluation.corpus",
    "serve": "longhaul_daemon.server.lifecycle",
    "state": "longhaul_daemon.inspector.command",
}
THIRD_PARTY = frozenset({"anyio", "httpx", "jsonrpcserver", "pydantic", "structlog"})


def _loaded(*args: str, tmp_path: Path) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args],
        env=private_env(tmp_path),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return int(report["exit"]), set(report["modules"])


def _others(command: str) -> set[str]:
    return {module for name, module in MODULES.items() if name != command}


def test_help_loads_no_evaluation_command(tmp_path: Path) -> None:
    code, modules = _loaded("--help", tmp_path=tmp_path)
    assert code == 0
    assert modules.isdisjoint(set(MODULES.values()) | THIRD_PARTY)


@pytest.mark.parametrize(
    ("command", "args", "exit_code", "third_party"),
    [
        ("facts", ["{file}", "--json"], 0, {"pydantic"}),  # VALUE-4's matcher lives beside the state model
        ("corpus", ["{dir}/out", "--sessions", "1"], 0, set()),
        ("replay", ["{file}", "--pi", "{dir}/no-pi"], 1, {"pydantic"}),  # the one reader of our records
        ("score", ["{file}"], 2, {"pydantic", "httpx"}),
        ("state", ["{file}"], 0, {"pydantic"}),  # and the other way round: no evaluation code in state
    ],
)
def test_each_command_loads_only_its_own_code(
    command: str, args: list[str], exit_code: int, third_party: set[str], tmp_path: Path
) -> None:
    b = BranchBuilder()
    kept = b.user("hello")
    b.compaction(kept, "summary")
    file = write_transcript(tmp_path / "s.jsonl", b)
    argv = [a.format(file=file, dir=tmp_path) for a in args]
    code, modules = _loaded(command, *argv, tmp_path=tmp_path)
    assert code == exit_code
    assert MODULES[command] in modules
    assert modules.isdisjoint(_others(command))
    assert modules & THIRD_PARTY <= third_party
