"""Hand-built pi session files for the inspector tests: a header line, then the fold tests' entry shapes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_STATE_TESTS = str(Path(__file__).resolve().parents[1] / "state")
if _STATE_TESTS not in sys.path:
    sys.path.insert(0, _STATE_TESTS)

from lh_branch import Branch  # noqa: E402  (the fold tests' builder, shared rather than copied)

from longhaul_daemon.state.model import Command, ErrorEntry, Rule, State, WorkLogLine  # noqa: E402

__all__ = ["HEADER", "Branch", "sample_session", "span_state", "write_session"]

HEADER: dict[str, Any] = {
    "type": "session",
    "version": 3,
    "id": "01a23727-7498-775c-b2b8-428af5cdf786",
    "timestamp": "2026-12-02T14:27:42.361Z",
    "cwd": "/tmp/proj",
}


def write_session(path: Path, entries: list[dict[str, Any]], *, header: dict[str, Any] | None = None) -> Path:
    """One JSON line per entry after the header, as pi appends them."""
    lines = [json.dumps(header or HEADER), *(json.dumps(e) for e in entries)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def span_state(span: int, *, commands: list[Command], errors: list[ErrorEntry], rules: list[Rule]) -> State:
    """The state a pass closed into ``details.state``, with one narrative-less work-log line per span."""
    return State(
        span=span,
        seq=max((r.seq for r in rules), default=0),
        nextRule=len(rules) + 1,
        nextCommand=len(commands) + 1,
        nextError=len(errors) + 1,
        rules=rules,
        commands=commands,
        errors=errors,
        workLog=[
            WorkLogLine(
                span=n,
                closedAs="narrative-less",
                text=f"Closed narrative-less (no-model-call): span {n} recorded.",
                reason="no-model-call",
                passId=f"p{n}",
            )
            for n in range(1, span + 1)
        ],
    )


def sample_session() -> tuple[Branch, dict[str, dict[str, Any]]]:
    """Two Longhaul spans, a rule event between them, span records and lines: the compactions by name."""
    b = Branch("inspect")
    b.user("Build the CSV export. Never push to main.")
    b.assistant("On it.")
    c1 = Command(id="C1", text="pytest -q", exit=1, span=1, entryId="e1", toolCallId="t1")
    e1 = ErrorEntry(id="E1", tool="bash", text="1 failed", command="C1", span=1, entryId="e2")
    first = b.longhaul(span_state(1, commands=[c1], errors=[e1], rules=[]), pass_id="pass-one")
    b.span_record(
        first,
        messages=["u1"],
        commands=[c1.model_dump(mode="json")],
        errors=[e1.model_dump(mode="json")],
    )
    b.line(1)
    b.user("Indent with tabs from now on.")
    b.event("rule", 1, words="Indent with tabs from now on.", message="u2")
    b.assistant("Noted.")
    rule = Rule(id="R1", words="Indent with tabs from now on.", message="u2", seq=1, span=2)
    c2 = Command(id="C2", text="pytest -q", exit=0, span=2)
    second = b.longhaul(
        span_state(2, commands=[c1, c2], errors=[e1.model_copy(update={"open": False})], rules=[rule]),
        pass_id="pass-two",
    )
    b.span_record(
        second,
        closedAs="whole",
        reason=None,
        messages=["u2"],
        events=[1],
        commands=[c2.model_dump(mode="json")],
        narrative="Fixed the failing CSV test; the rule on tabs was stated.",
    )
    b.line(2)
    b.user("Next: the header row.")
    return b, {"first": first, "second": second}
