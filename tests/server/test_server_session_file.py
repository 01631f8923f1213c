"""``compact`` naming pi's session file, against a real daemon on a real socket (protocol 2).

The daemon reads the branch itself; a file it must not read is refused with ``-32004`` and a reason code, and
the same pass sent again with the entries inline is still Longhaul's, its record naming the refusal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from longhaul_daemon.protocol import CompactResult

from .in_process_daemon import WAIT_S, connect, running_daemon

SESSION_ID = "0198aaaa-0000-7000-8000-000000000001"


def _entries() -> list[dict[str, Any]]:
    def message(n: int, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
        entry_id = f"e{n:07d}"
        return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t", "message": message}

    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "pytest -q"}}
    return [
        message(1, None, {"role": "user", "content": "run the tests", "timestamp": 1}),
        message(
            2, "e0000001", {"role": "assistant", "content": [call], "stopReason": "toolUse", "timestamp": 2}
        ),
        message(
            3,
            "e0000002",
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "bash",
                "content": [{"type": "text", "text": "1 failed\n\nCommand exited with code 1"}],
                "isError": True,
                "timestamp": 3,
            },
        ),
        message(4, "e0000003", {"role": "user", "content": "kept", "timestamp": 4}),
    ]


def _write(path: Path, entries: list[dict[str, Any]]) -> Path:
    header = {"type": "session", "version": 3, "id": SESSION_ID, "timestamp": "t", "cwd": str(path.parent)}
    path.write_text("".join(json.dumps(e) + "\n" for e in [header, *entries]))
    return path


def _params(tmp: Path, session_file: Path, *, inline: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    entries = _entries()
    params: dict[str, Any] = {
        "session": {
            "cwd": str(tmp),
            "sessionId": SESSION_ID,
            "sessionFile": str(session_file),
            "agentDir": str(tmp / "agent"),
            "piVersion": "0.73.1",
        },
        "preparation": {
            "firstKeptEntryId": "e0000004",
            "messagesToSummarize": [{"entryRef": e["id"]} for e in entries[:3]],
            "tokensBefore": 1000,
        },
        "leafId": "e0000004",
    }
    if inline is not None:
        params["branchEntries"] = inline
    return params


@pytest.mark.anyio
async def test_compact_reads_the_branch_from_the_session_file(short_tmp: Path, tmp_path: Path) -> None:
    session_file = _write(tmp_path / "s.jsonl", _entries())
    (tmp_path / "agent").mkdir()
    async with running_daemon(short_tmp / "d.sock") as handle, connect(handle.socket_path) as conn:
        with anyio.fail_after(WAIT_S):
            reply = await conn.call("compact", _params(tmp_path, session_file))
    result = CompactResult.model_validate(reply["result"])
    assert result.compaction is not None and result.diagnostics is not None
    assert result.diagnostics.branch["source"] == "file" and result.diagnostics.branch["cold"] is True
    assert "E1 bash: 1 failed (from C1)" in result.compaction.summary  # read from the file (LEDGER-1)
    record = json.loads((tmp_path / "agent" / "logs" / "compaction-state.jsonl").read_text().splitlines()[-1])
    assert record["event"] == "compaction" and record["branch"]["source"] == "file"


@pytest.mark.anyio
async def test_a_refused_file_is_an_error_with_its_reason_and_the_inline_resend_is_longhauls(
    short_tmp: Path, tmp_path: Path
) -> None:
    real = _write(tmp_path / "real.jsonl", _entries())
    link = tmp_path / "s.jsonl"
    link.symlink_to(real)
    async with running_daemon(short_tmp / "d.sock") as handle, connect(handle.socket_path) as conn:
        with anyio.fail_after(WAIT_S):
            refused = await conn.call("compact", _params(tmp_path, link))
            params = {**_params(tmp_path, link, inline=_entries()), "sessionFileRefused": "symlink"}
            resent = await conn.call("compact", params)
            status = await conn.call("status", {})
    assert refused["error"]["code"] == -32004
    assert refused["error"]["data"] == {"reason": "symlink"}
    result = CompactResult.model_validate(resent["result"])
    assert result.compaction is not None and result.diagnostics is not None
    assert result.diagnostics.branch == {"source": "inline", "refused": "symlink"}
    assert status["result"]["passes"]["fallback"] == 0  # a refusal is not a pass


@pytest.mark.anyio
async def test_compact_without_any_branch_source_is_invalid_params(short_tmp: Path, tmp_path: Path) -> None:
    params = _params(tmp_path, tmp_path / "s.jsonl")
    del params["leafId"]
    async with running_daemon(short_tmp / "d.sock") as handle, connect(handle.socket_path) as conn:
        with anyio.fail_after(WAIT_S):
            reply = await conn.call("compact", params)
    assert reply["error"]["code"] == -32602


async def _until_warmed(conn: Any, count: int) -> None:
    """Ask ``status`` until the daemon says ``count`` files were warmed (bounded by the caller)."""
    for _ in range(10_000):
        if (await conn.call("status", {}))["result"]["sessionFilesWarmed"] >= count:
            return
        await anyio.sleep(0.02)
    raise AssertionError("the session file was never warmed")


@pytest.mark.anyio
async def test_issue10_hello_warms_the_session_file_so_the_first_pass_reads_nothing_more(
    short_tmp: Path, tmp_path: Path
) -> None:
    """A session resumed after the daemon started: its ``hello`` has the file indexed before the first
    ``compact``, which then reads no byte of it again (``cold`` false, ``readBytes`` 0)."""
    session_file = _write(tmp_path / "s.jsonl", _entries())
    (tmp_path / "agent").mkdir()
    params = _params(tmp_path, session_file)
    async with running_daemon(short_tmp / "d.sock") as handle, connect(handle.socket_path) as conn:
        with anyio.fail_after(WAIT_S):
            await conn.call("hello", {"session": params["session"], "reason": "resume"})
            await _until_warmed(conn, 1)
            reply = await conn.call("compact", params)
            status = (await conn.call("status", {}))["result"]
    result = CompactResult.model_validate(reply["result"])
    assert result.compaction is not None
    assert result.diagnostics.branch["cold"] is False and result.diagnostics.branch["readBytes"] == 0
    assert (status["sessionFiles"], status["sessionFilesWarmed"]) == (1, 1)
