"""LOG-10..LOG-12 at the daemon: whatever sits at the log path, the compaction answer is the one a run with
logging off gets, and the daemon keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from server.in_process_daemon import call_sync, connect, running_daemon, stop_process, wait_until_serving

from longhaul_daemon.protocol import CompactParams, CompactResult

NOBODY = 65534
LOG_NAME = "compaction-state.jsonl"


def fixed_result(pass_id: str) -> CompactResult:
    """What the pass answers, the same every time (the pass id aside, which the daemon draws)."""
    return CompactResult.model_validate(
        {
            "passId": pass_id,
            "span": 1,
            "compaction": {
                "summary": "# Longhaul state after span 1",
                "firstKeptEntryId": "e9",
                "tokensBefore": 1000,
                "details": {
                    "stateFormat": 1,
                    "compactor": "longhaul",
                    "passId": pass_id,
                    "span": 1,
                    "state": {},
                },
            },
            "after": {
                "spanRecord": {"v": 1, "span": 1, "closedAs": "narrative-less"},
                "line": {"v": 1, "span": 1},
            },
        }
    )


async def fixed_pass(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
    return fixed_result(pass_id)


def params(agent: Path, cwd: Path, **env: str) -> dict[str, Any]:
    return {
        "session": {
            "cwd": str(cwd),
            "sessionId": "s1",
            "agentDir": str(agent),
            "piVersion": "0.73.1",
            "env": env,
        },
        "preparation": {"firstKeptEntryId": "e9", "tokensBefore": 1000},
        "branchEntries": [],
    }


def normalized(reply: dict[str, Any]) -> str:
    result = reply["result"]
    return json.dumps(result, sort_keys=True).replace(result["passId"], "<pass>")


def symlink_file(logs: Path, tmp: Path) -> None:
    logs.mkdir(mode=0o700)
    (tmp / "victim").write_text("untouched\n")
    (logs / LOG_NAME).symlink_to(tmp / "victim")


def symlink_dir(logs: Path, tmp: Path) -> None:
    (tmp / "elsewhere").mkdir()
    logs.symlink_to(tmp / "elsewhere")


def fifo(logs: Path, tmp: Path) -> None:
    logs.mkdir(mode=0o700)
    os.mkfifo(logs / LOG_NAME)


def directory(logs: Path, tmp: Path) -> None:
    logs.mkdir(mode=0o700)
    (logs / LOG_NAME).mkdir()


def nobodys_file(logs: Path, tmp: Path) -> None:
    logs.mkdir(mode=0o700)
    (logs / LOG_NAME).write_text("theirs\n")
    os.chown(logs / LOG_NAME, NOBODY, NOBODY)


def unwritable_dir(logs: Path, tmp: Path) -> None:
    logs.mkdir(mode=0o700)
    os.chown(logs, NOBODY, NOBODY)


def no_attack(logs: Path, tmp: Path) -> None:
    """The control: the same run with a writable log, so the test shows records are really on."""


ATTACKS: dict[str, Callable[[Path, Path], None]] = {
    "none": no_attack,
    "symlink-at-path": symlink_file,
    "symlinked-logs-dir": symlink_dir,
    "fifo": fifo,
    "directory": directory,
    "file-owned-by-nobody": nobodys_file,
    "logs-dir-owned-by-nobody": unwritable_dir,
}


@pytest.mark.anyio
@pytest.mark.parametrize("attack", sorted(ATTACKS))
async def test_log12_attacked_log_path_leaves_the_answer_identical(
    attack: str, short_tmp: Path, tmp_path: Path
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    ATTACKS[attack](agent / "logs", tmp_path)
    daemon = running_daemon(short_tmp / "d.sock", run_pass=fixed_pass)
    async with daemon as handle, connect(handle.socket_path) as conn:
        off = await conn.call("compact", params(agent, tmp_path, PI_COMPACT_STATE_DEBUG="off"))
        await conn.call("hello", {"session": params(agent, tmp_path)["session"]})
        attacked = await conn.call("compact", params(agent, tmp_path))
        for event in ("compacted", "incident"):
            extra = (
                {"compactionEntryId": "c", "fromExtension": True, "summaryChars": 1, "tokensBefore": 1}
                if event == "compacted"
                else {"kind": "fallback", "reason": "x"}
            )
            assert "result" in await conn.call(
                event, {"session": params(agent, tmp_path)["session"], **extra}
            )
        status = await conn.call("status")
    assert normalized(attacked) == normalized(off)
    assert status["result"]["passes"]["whole"] == 0 and status["result"]["passes"]["narrativeLess"] == 2
    if attack == "none":
        written = [json.loads(line)["event"] for line in (agent / "logs" / LOG_NAME).read_text().splitlines()]
        assert written == ["extension-loaded", "compaction", "compacted", "fallback"]
    if attack == "symlink-at-path":
        assert (tmp_path / "victim").read_text() == "untouched\n"
    if attack == "symlinked-logs-dir":
        assert list((tmp_path / "elsewhere").iterdir()) == []
    if attack == "file-owned-by-nobody":
        assert (agent / "logs" / LOG_NAME).read_text() == "theirs\n"


def test_log12_full_disk_daemon_keeps_answering(short_tmp: Path, tmp_path: Path) -> None:
    """The daemon under RLIMIT_FSIZE (a full disk for the log): every compaction still answers whole."""
    agent = tmp_path / "agent"
    agent.mkdir()
    socket_path = short_tmp / "d.sock"
    launcher = (
        "import os, resource, sys; resource.setrlimit(resource.RLIMIT_FSIZE, (700, 700)); "
        "os.execv(sys.executable, [sys.executable, '-m', 'longhaul_daemon', *sys.argv[1:]])"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", launcher, "serve", "--socket", str(socket_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until_serving(socket_path, process)
        project = tmp_path / "proj"
        project.mkdir()
        for _ in range(4):
            reply = call_sync(socket_path, "compact", params(agent, project), timeout_s=60)
            assert reply["result"]["compaction"] is not None, reply
        passes = call_sync(socket_path, "status")["result"]["passes"]
        assert passes["fallback"] == 0 and passes["empty"] == 4  # these spans hold no messages
    finally:
        code, stderr = stop_process(process)
    assert code == 0, stderr
    data = (agent / "logs" / LOG_NAME).read_bytes()
    assert 0 < len(data) <= 700 and data.endswith(b"\n")
    assert all(json.loads(line)["event"] == "compaction" for line in data.splitlines())
    assert "record_dropped" in stderr
