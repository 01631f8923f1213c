"""How long the pure parts of a pass take on long sessions, so regressions show up as numbers, not hunches.

Run with ``make bench``. It builds pi-shaped branches of growing size (user prompts, tool calls, tool
results), up to 20,000 turns and a span of 20 MB of tool output, then times, best of several runs: the fold,
the ledger, chunk planning of the whole span for a 128k-token model (``plan``), one prompt of the whole span,
verifying a scripted answer that labels every message, Close and rendering. A step slower than
``ONE_RUN_ENOUGH_S`` runs once. No model, no git, no socket: those are I/O and measured elsewhere. Prints one
table; exits 0. Arguments pick other rows: ``TURNS`` or ``TURNSxLINES`` (lines per tool result, default 40).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.answers.extract import parse_answer
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.passes.close import close_span
from longhaul_daemon.passes.fold import fold
from longhaul_daemon.passes.ledger import apply_ledger
from longhaul_daemon.passes.model_calls import DEFAULT_CONTEXT_WINDOW, FIRST_OUTPUT_BUDGET
from longhaul_daemon.passes.prompting.chunks import CHARS_PER_TOKEN
from longhaul_daemon.passes.prompting.planning import DiffInputs, plan_diff
from longhaul_daemon.passes.prompting.prompt import build_prompt
from longhaul_daemon.passes.prompting.span_turns import span_turns
from longhaul_daemon.state.model import State, World
from longhaul_daemon.state.render import render_summary
from longhaul_daemon.transcript.messages import span_messages, user_text

# (user turns, lines of each tool result): the last row is ~2,000 tool calls of ~10 kB each, a 20 MB span
SIZES = ((100, 40), (1_000, 40), (5_000, 40), (20_000, 40), (2_000, 1_100))
RUNS = 3
ONE_RUN_ENOUGH_S = 10.0  # a step this slow is compared as one run: repeats would only make the bench crawl


def _branch(turns: int, lines: int) -> list[dict[str, Any]]:
    """A branch of ``turns`` user prompts, each followed by a bash call and a result of ``lines`` lines."""
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
        output = f"{n} passed in 0.{n % 100:02d}s\n" + "log line\n" * lines
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
        if best > ONE_RUN_ENOUGH_S:
            break
    return best * 1000


def bench(turns: int, lines: int) -> dict[str, float]:
    branch = _branch(turns, lines)
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
    # What PassModel.input_tokens gives a model of the default context window (its margin is 1,024 tokens)
    input_chars = (DEFAULT_CONTEXT_WINDOW - FIRST_OUTPUT_BUDGET - 1024) * CHARS_PER_TOKEN
    inputs = DiffInputs(state=folded.state, span=span, commands=ledger.commands, errors=ledger.errors)

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
        "plan": _best(lambda: plan_diff(inputs, input_chars)),
        "prompt": _best(
            lambda: build_prompt(folded.state, span, commands=ledger.commands, errors=ledger.errors)
        ),
        "verify": _best(lambda: evaluate(parse_answer(reply, user_ids, ids), ctx, final=True)),
        "close": _best(close),
        "render": _best(lambda: render_summary(after, pass_id="bench")),
    }


def _rows(args: list[str]) -> list[tuple[int, int]]:
    rows = []
    for arg in args:
        turns, _, lines = arg.partition("x")
        rows.append((int(turns), int(lines or 40)))
    return rows or list(SIZES)


def main() -> None:
    steps = ("fold", "span", "ledger", "plan", "prompt", "verify", "close", "render")
    head = f"{'turns':>6} {'MB':>5} " + " ".join(f"{s:>9}" for s in steps)
    print(head + "   (ms, best of 3)", flush=True)  # noqa: T201
    for turns, lines in _rows(sys.argv[1:]):
        megabytes = len(json.dumps(_branch(turns, lines))) / 1e6
        row = bench(turns, lines)
        cells = " ".join(f"{row[s]:>9.1f}" for s in steps)
        print(f"{turns:>6} {megabytes:>5.1f} {cells}", flush=True)  # noqa: T201


if __name__ == "__main__":
    main()
