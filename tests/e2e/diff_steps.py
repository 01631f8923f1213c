"""Steps and checks the scripted-answer e2e suites share: close a span over RPC, read what pi stored."""

from __future__ import annotations

import json
import time
from typing import Any

from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import (
    DiffScript,
    Responder,
    section,
    standing_rules,
)
from .scenario import LonghaulCompaction, expect_longhaul, wrap_up

FILLER = (
    "Some background on the export module: it reads the table, formats each row and writes a file. "
    "The format code lives in one place and the writer in another. "
)


def padded(core: str, size: int, *, lead: str = "") -> str:
    """``lead`` + filler + ``core`` + filler, at least ``size`` characters (for the QUOTE length rules)."""
    body = lead + FILLER * 2 + core + " "
    while len(body) < size:
        body += FILLER
    return body.strip()


def install(server: ModelServer, *steps: Responder, then: Responder | None = None) -> DiffScript:
    script = DiffScript(steps=steps) if then is None else DiffScript(steps=steps, then=then)
    return script.install(server)


def close_span(pi: PiRpc, nth: int) -> LonghaulCompaction:
    """End the stretch with a long kept turn, compact over RPC, return the Longhaul compaction ``nth``."""
    wrap_up(pi, f"span {nth}")
    response = pi.compact()
    assert response.get("success") is True, f"compact #{nth} failed: {response}\n{pi.diagnostics()}"
    found = expect_longhaul(pi.session_file(), nth, span=nth)
    assert response["data"]["summary"] == found.summary
    return found


def closed(found: LonghaulCompaction) -> tuple[str, str | None]:
    data = found.span_record["data"]
    return str(data.get("closedAs")), data.get("reason")


def assert_whole(
    found: LonghaulCompaction, narrative: str = "Scripted narrative line for this span."
) -> None:
    """DIFF-13: the answer verified, so the span closed whole with the model's narrative as its log line."""
    assert closed(found) == ("whole", None), f"span record: {found.span_record['data']}\n{found.summary}"
    last = found.state["workLog"][-1]
    assert last["closedAs"] == "whole" and last["text"] == narrative, last
    assert f"- Span {found.details['span']}: {narrative}" in section(found.summary, "Work log")


def assert_held(found: LonghaulCompaction, held: str, words: str) -> None:
    """FAIL-4 and QUOTE-4, ours: the answer verified but ``held`` got no usable label (none, or rule words
    that never verified), so the span closed partial, carries ``held`` alone and shows its ``words``."""
    assert closed(found) == ("partial", "unlabeled-messages"), f"{found.span_record['data']}\n{found.summary}"
    assert found.span_record["data"]["held"] == [held] and found.state["carried"] == [held]
    assert words in section(found.summary, "User messages not yet labeled"), found.summary
    log = section(found.summary, "Work log")
    assert "(1 user message got no usable label; carried to the next pass)" in log, log


def single_rule(found: LonghaulCompaction) -> dict[str, Any]:
    rules = standing_rules(found.state)
    assert len(rules) == 1, f"want one rule in force, got {rules}"
    return next(iter(rules.values()))


def state_text(found: LonghaulCompaction) -> str:
    return json.dumps(found.state, ensure_ascii=False)


BIG = 30_000  # three such messages overflow one call's input (32k-token window): two chunks


def big_message(core: str, tag: str) -> str:
    """A ~30,000-character user message; ``[[tokens=1000]]`` keeps pi's own threshold from firing."""
    return padded(core, BIG, lead=f"{tag}. ") + " [[tokens=1000]]"


def log_records(sandbox: Sandbox, event: str) -> list[dict[str, Any]]:
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in (json.loads(line) for line in lines) if r.get("event") == event]


def wait_log_record(sandbox: Sandbox, event: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while not log_records(sandbox, event):
        assert time.monotonic() < deadline, f"no {event!r} record in the log"
        time.sleep(0.1)
    return log_records(sandbox, event)[-1]
