"""The remember, recall and strip JSON-RPC methods: shapes on the wire and the kept-window-strip record."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from tools_branch import Branch

from longhaul_daemon.rpc.methods import Services, build_methods
from longhaul_daemon.rpc.registry import RpcFailure, RpcMethod, RpcSuccess
from longhaul_daemon.state.model import State

pytestmark = pytest.mark.anyio


def session(log: Path | None = None) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "cwd": "/w",
        "sessionId": "s1",
        "agentDir": "/nonexistent-agent",
        "piVersion": "0.73.1",
    }
    facts["env"] = {"PI_COMPACT_STATE_DEBUG": str(log) if log else "off"}
    return facts


async def call(method: str, params: dict[str, Any], methods: dict[str, RpcMethod] | None = None) -> Any:
    """One call; pass ``methods`` (built once, as the daemon does) to share its memory across calls."""
    with anyio.fail_after(10):
        outcome = await (methods or build_methods(Services(socket_path="/s")))[method].call(None, **params)
    assert isinstance(outcome, RpcSuccess), outcome
    return outcome.result


async def test_methods_are_registered_with_the_others() -> None:
    assert {"remember", "recall", "strip", "hello", "compact"} <= set(
        build_methods(Services(socket_path="/s"))
    )


async def test_remember_returns_the_entry_for_the_shim_to_append() -> None:
    """TOOLS-2: the shim appends customType/data as given."""
    result = await call("remember", {"session": session(), "text": "pnpm, not npm", "kind": "decision"})
    assert result == {
        "ok": True,
        "text": result["text"],
        "customType": "compaction-state.event",
        "data": {"stateFormat": 1, "kind": "remember", "text": "pnpm, not npm", "noteKind": "decision"},
    }
    refused = await call("remember", {"session": session(), "text": " "})
    assert refused["ok"] is False and refused["data"] is None and refused["customType"] is None


async def test_remember_rejects_unknown_fields_and_oversized_payloads() -> None:
    method = build_methods(Services(socket_path="/s"))["remember"]
    outcome = await method.call(None, session=session(), text="x", extra=1)
    assert isinstance(outcome, RpcFailure) and outcome.code == -32602
    outcome = await method.call(None, session=session(), text="x" * 200_001)
    assert isinstance(outcome, RpcFailure) and outcome.code == -32602
    assert "xxxx" not in json.dumps(outcome.data)  # the input is never echoed


async def test_recall_reads_span_records_from_the_branch() -> None:
    b = Branch()
    b.user("q")
    comp = b.longhaul(State(span=1))
    b.span_record(comp, commands=[{"id": "C1", "text": "echo hi", "exit": 0, "span": 1}])
    result = await call("recall", {"session": session(), "ref": "span:1", "branchEntries": b.entries})
    assert result["ok"] is True and result["spans"] == [1] and "C1 `echo hi` exit 0" in result["text"]


def strip_params(log: Path) -> tuple[dict[str, Any], str]:
    b = Branch()
    kept = b.user("kept")
    b.assistant("a", thinking=("THOUGHT-1",))
    comp = b.longhaul(State(span=1), first_kept=kept["id"])
    b.user("new")
    msgs = [{"role": "compactionSummary", "summary": "s", "timestamp": 1}]
    msgs += copy.deepcopy([b.entries[0]["message"], b.entries[1]["message"], b.entries[3]["message"]])
    return {"session": session(log), "messages": msgs, "branchEntries": b.entries}, comp["id"]


async def test_strip_answers_the_plan_and_logs_the_first_time_per_window(tmp_path: Path) -> None:
    """TOOLS-9, TOOLS-10, LOG-21: the plan and its counts; one kept-window-strip record per window."""
    log = tmp_path / "records.jsonl"
    params, cutoff = strip_params(log)
    methods = build_methods(Services(socket_path="/s"))  # once per daemon (server/lifecycle.py)
    first = await call("strip", params, methods)
    assert first == {
        "cutoff": cutoff,
        "strip": [2],
        "strippedBlocks": 1,
        "strippedChars": len("THOUGHT-1"),
        "contextMessages": 4,
        "logged": True,
    }
    again = await call("strip", params, methods)
    assert again["logged"] is False and again["strip"] == [2]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    strips = [r for r in records if r["event"] == "kept-window-strip"]
    assert len(strips) == 1
    record = strips[0]
    assert {k: record[k] for k in ("cutoff", "strippedBlocks", "strippedChars", "contextMessages")} == {
        "cutoff": cutoff,
        "strippedBlocks": 1,
        "strippedChars": 9,
        "contextMessages": 4,
    }
    assert record["v"] == 1 and record["session"]["sessionId"] == "s1"
    assert "THOUGHT" not in log.read_text()  # LOG-5: counts, never the reasoning itself


async def test_strip_with_nothing_to_strip_logs_nothing(tmp_path: Path) -> None:
    log = tmp_path / "records.jsonl"
    params, _ = strip_params(log)
    params["messages"] = params["messages"][:3]  # no user message after the window: the turn is in progress
    result = await call("strip", params)
    assert result["strip"] == [] and result["logged"] is False
    assert not log.exists()
