"""The operational log (structlog to stderr) stays apart from the record log and carries no message text."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from longhaul_daemon.rpc.methods import Services, build_methods

MARKER = "QZOPSMARK"
SECRET = "sk-QZSECRETKEY"


@pytest.fixture
def stream(operational_log: io.StringIO) -> io.StringIO:
    return operational_log


def facts(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "agent").mkdir(exist_ok=True)
    return {
        "cwd": str(tmp_path),
        "sessionId": "s-ops",
        "agentDir": str(tmp_path / "agent"),
        "piVersion": "0.73.1",
    }


@pytest.mark.anyio
async def test_methods_log_codes_and_counts_only(stream: io.StringIO, tmp_path: Path) -> None:
    methods = build_methods(Services(socket_path="/s"))
    session = facts(tmp_path)
    message = {"role": "user", "content": f"{MARKER} {SECRET}", "timestamp": 1}
    with anyio.fail_after(30):
        await methods["hello"].call(None, session=session, reason=f"{MARKER} with spaces")
        await methods["compact"].call(
            None,
            session=session,
            customInstructions=MARKER,
            preparation={"firstKeptEntryId": "e1", "tokensBefore": 5, "messagesToSummarize": [message]},
            branchEntries=[{"type": "message", "id": "e0", "parentId": None, "message": message}],
        )
        await methods["incident"].call(
            None, session=session, kind="fallback", reason="x", errorClass="Error", error=f"{MARKER} {SECRET}"
        )
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert {"hello", "pass_started", "pass_finished", "incident"} <= {line["event"] for line in lines}
    assert MARKER not in stream.getvalue() and SECRET not in stream.getvalue()
    # The record log is a different file: none of its records went to the operational stream.
    assert not any(line["event"] in ("extension-loaded", "compaction", "fallback") for line in lines)
    recorded = (tmp_path / "agent" / "logs" / "compaction-state.jsonl").read_text()
    assert '"event":"compaction"' in recorded


def test_library_records_keep_no_message_text(stream: io.StringIO) -> None:
    logging.getLogger("httpx").warning("request to %s with key %s", MARKER, SECRET)
    try:
        raise ValueError(SECRET)
    except ValueError:
        logging.getLogger("some.library").exception("failed %s", MARKER)
    text = stream.getvalue()
    assert "library_log" in text and "ValueError" in text
    assert MARKER not in text and SECRET not in text


def test_a_dropped_record_is_noted_without_its_path(stream: io.StringIO, tmp_path: Path) -> None:
    from longhaul_daemon.log.sink import LogSink

    (tmp_path / "logs").mkdir()
    sink = LogSink(tmp_path / "logs" / f"{MARKER}.jsonl")
    sink.path.mkdir()
    assert not sink.write_line("{}")
    assert "record_dropped" in stream.getvalue() and MARKER not in stream.getvalue()
