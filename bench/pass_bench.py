"""How long the pure parts of a pass take on long sessions, so regressions show up as numbers, not hunches.

Run with ``make bench``. It builds pi-shaped branches of growing size (user prompts, tool calls, tool results,
earlier Longhaul compactions), then times, best of several runs: the fold, the ledger, the prompt, verifying a
scripted answer that labels every message, Close and rendering. No model, no git, no socket: those are I/O and
measured elsewhere. Prints one table; exits 0.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from longhaul_daemon.diff.answer import parse_answer
from longhaul_daemon.diff.events import ChunkContext
from longhaul_daemon.diff.prompt import build_prompt
from longhaul_daemon.diff.quotes import OfferedMessage
from longhaul_daemon.diff.turns import span_turns
from longhaul_daemon.diff.verify import evaluate
from longhaul_daemon.passes.close import close_span
from longhaul_daemon.passes.ledger import apply_ledger
from longhaul_daemon.state.fold import fold
from longhaul_daemon.state.model import State, World
from longhaul_daemon.state.render import render_summary
from longhaul_daemon.transcript.messages import span_messages, user_text

SIZES = (100, 1_000, 5_000)  # user turns per branch
RUNS = 3


def _branch(turns: int) -> list[dict[str, Any]]:
    """A branch of ``turns`` user prompts, each followed by a bash call and its result."""
    entries: list[dict[str, Any]] = []

    def add(entry: dict[str, Any]) -> None:
        entry = {"id": f"e{len(entries)}", "parentId": entries[-1]["id"] if entries else None, **entry}
        entries.append(entry)

    for n in range(turns):
        text = f"Step {n}: never touch the generated files; run the tests with pytest -q after each change."
        add({"type": "message", "message": {"role": "user", "content": text}})
        command = {"command": f"pytest -q -k t{n}"}
        call = {"type": "toolCall", "id": f"c{n}", "name": "bash", "arguments": command}
        add({"type": "message", "message": {"role": "assistant", "content": [call], "stopReason": "toolUse"}})
        output = f"{n} passed in 0.{n % 100:02d}s\n" + "log line\n" * 40
        result = {"role": "toolResult", "toolCallId": f"c{n}", "toolName": "bash", "isError": False}
        add({"type": "message", "message": {**result, "content": [{"type": "text", "text": output}]}})
    return entries


def _answer(user_ids: list[str]) -> str:
    labels = [
        {"msg": uid, "label": "rule" if i % 50 == 0 else "not a rule"} for i, uid in enumerate(user_ids)
    ]
    return json.dumps({"labels": labels, "narrative": "Ran the tests.", "now": "Continue."})


def _best(step: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(RUNS):
        started = time.perf_counter()
        step()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def bench(turns: int) -> dict[str, float]:
    branch = _branch(turns)
    messages = [e["message"] for e in branch]
    folded = fold(branch)
    span = span_messages(messages, branch)
    ledger = apply_ledger(folded.state, span, 1)
    user_ids = [m.user_id for m in span if m.user_id is not None]
    offered = tuple(OfferedMessage(id=m.user_id, text=user_text(m.message)) for m in span if m.user_id)
    ids = [c.id for c in ledger.commands] + [e.id for e in ledger.errors]
    ctx = ChunkContext(offered=offered, rules=(), ledger_ids=frozenset(ids), turns=span_turns(span))
    reply = _answer(user_ids)
    parsed = parse_answer(reply, user_ids, ids)
    events = evaluate(parsed, ctx, final=True).events
    world = World(status="no-repository")

    def close() -> State:
        return close_span(
            folded.state,
            ledger=ledger,
            world=world,
            user_ids=user_ids,
            read_files=[],
            modified_files=[],
            closed_as="whole",
            reason=None,
            pass_id="bench",
            narrative="Ran the tests.",
            events=(events,),
        )

    after = close()
    return {
        "fold": _best(lambda: fold(branch)),
        "span": _best(lambda: span_messages(messages, branch)),
        "ledger": _best(lambda: apply_ledger(folded.state, span, 1)),
        "prompt": _best(
            lambda: build_prompt(folded.state, span, commands=ledger.commands, errors=ledger.errors)
        ),
        "verify": _best(lambda: evaluate(parse_answer(reply, user_ids, ids), ctx, final=True)),
        "close": _best(close),
        "render": _best(lambda: render_summary(after, pass_id="bench")),
    }


def main() -> None:
    steps = ("fold", "span", "ledger", "prompt", "verify", "close", "render")
    print(f"{'turns':>6} " + " ".join(f"{s:>9}" for s in steps) + "   (ms, best of 3)")  # noqa: T201
    for turns in SIZES:
        row = bench(turns)
        print(f"{turns:>6} " + " ".join(f"{row[s]:>9.1f}" for s in steps))  # noqa: T201


if __name__ == "__main__":
    main()
