"""Chunk planning (DIFF-1, DIFF-2, DIFF-3): snapshots of what is sent, exact sizes, work linear in the span.

The snapshots under ``snapshots/chunks/`` were first written by the planner that built a whole prompt for
every turn group at every tool edge; the linear planner reproduced them byte for byte (commit 5b93b7e).
That planner weighed each turn group with a whole prompt around it, so the state, ledger and instructions
counted once per group and a span that fit was still cut; they now count once per chunk (DIFF-1), which
changed the plans, and the cases' budgets were moved so each still takes its path. The Diff must send
byte-identical prompts for every shape in :mod:`chunk_cases` (``LONGHAUL_UPDATE_SNAPSHOTS=1`` rewrites
them: only for an intended change of the prompt or of the plan). The summed parts are held to the lengths
``build_prompt`` really writes, for those shapes and for generated messages, and the work planning does is
counted, never timed.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.diff.diff_stage import DiffResult, run_diff
from longhaul_daemon.passes.prompting import planning
from longhaul_daemon.passes.prompting.chunks import CHARS_PER_TOKEN, TOOL_EDGES, ChunkPlan, turn_groups
from longhaul_daemon.passes.prompting.message_text import LedgerIds, SpanSize, message_size
from longhaul_daemon.passes.prompting.planning import DiffInputs, PromptSizer, chunk_prompt, plan_diff
from longhaul_daemon.passes.prompting.prompt import Prompt
from longhaul_daemon.transcript.messages import SpanMessage

from .chunk_cases import CASES, Case, RecordingModel, assistant, bash_run, inputs, result, turns, user

SNAPSHOTS = Path(__file__).parent / "snapshots" / "chunks"

# The path each case was built to take: (tool edge, number of chunks)
PATHS = {
    "small": (1000, 1),
    "several-chunks": (1000, 3),
    "harder-edge": (150, 4),
    "balanced": (40, 4),
    "carried": (1000, 3),
    "takeover": (1000, 3),
    "split-turn": (1000, 3),
    "unicode": (400, 4),
}


def _ranges(span: Sequence[SpanMessage], plan: ChunkPlan) -> str:
    """Each chunk as the span indices it covers, so a changed boundary shows as a changed number."""
    out, start = [], 0
    for chunk in plan.chunks:
        assert tuple(span[start : start + len(chunk)]) == chunk, "chunks must cover the span in order"
        out.append(f"{start}-{start + len(chunk) - 1}")
        start += len(chunk)
    assert start == len(span)
    return " | ".join(out)


def _render(name: str, case: Case, plan: ChunkPlan, model: RecordingModel, result: DiffResult) -> str:
    lines = [
        f"case: {name}",
        f"input chars: {case.input_tokens * CHARS_PER_TOKEN}",
        f"tool edge: {plan.tool_edge}",
        f"chunks: {_ranges(case.inputs.span, plan)}",
        f"closed as: {result.closed_as} ({result.reason})",
    ]
    system = None
    for number, (kind, call_system, messages) in enumerate(model.calls, start=1):
        lines.append(f"===== call {number} ({kind}): system =====")
        lines.append("(as above)" if call_system == system else call_system)
        system = call_system
        for message in messages:
            lines += [f"===== call {number} ({kind}): {message.role} =====", message.text]
    return "\n".join(lines) + "\n"


@pytest.mark.anyio
@pytest.mark.parametrize("name", list(CASES))
async def test_diff1_diff2_diff3_chunks_tool_edge_and_prompts_match_the_snapshot(name: str) -> None:
    """DIFF-1, DIFF-2, DIFF-3: for each span shape, the plan and every prompt the Diff sends are the ones the
    snapshot holds, byte for byte."""
    case = CASES[name]()
    plan = plan_diff(case.inputs, case.input_tokens * CHARS_PER_TOKEN)
    assert (plan.tool_edge, len(plan.chunks)) == PATHS[name], "the case no longer exercises its path"
    model = RecordingModel(case)
    result = await run_diff(case.inputs, model)
    assert result.chunk_count == len(plan.chunks)
    first_calls = [messages[0].text for kind, _, messages in model.calls if kind == "first"]
    assert len(first_calls) == len(plan.chunks), "one first call per chunk (DIFF-1)"
    text = _render(name, case, plan, model, result)
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("LONGHAUL_UPDATE_SNAPSHOTS") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    assert text == path.read_bytes().decode("utf-8")  # bytes: a CR in a prompt must not read back as LF


def weighed_length(case_inputs: DiffInputs, messages: Sequence[SpanMessage], edge: int) -> int:
    """What planning weighs: what the messages add to a chunk's prompt."""
    state = case_inputs.state
    with_span = chunk_prompt(case_inputs, state, messages, first=False, edge=edge).user
    return len(with_span) - len(chunk_prompt(case_inputs, state, [], first=False, edge=edge).user)


@pytest.mark.parametrize("name", list(CASES))
def test_diff1_diff2_summed_parts_are_the_prompt_length_of_every_run_of_groups(name: str) -> None:
    """DIFF-1, DIFF-2: for every run of up to five turn groups, and the whole span, at every tool edge."""
    case_inputs = CASES[name]().inputs
    sizer = PromptSizer(case_inputs)
    groups = turn_groups(case_inputs.span)
    runs = {(start, min(start + width, len(groups))) for start in range(len(groups)) for width in range(1, 6)}
    runs.add((0, len(groups)))
    for edge in TOOL_EDGES:
        parts = [sizer.parts(group, edge) for group in groups]
        for start, stop in sorted(runs):
            messages = [m for group in groups[start:stop] for m in group]
            assert sizer.chars(parts[start:stop]) == weighed_length(case_inputs, messages, edge), (
                start,
                stop,
            )
        first = chunk_prompt(case_inputs, case_inputs.state, [], first=True, edge=edge)
        assert sizer.overhead(edge) == len(first.system) + len(first.user)


_text = st.text(st.characters(codec="utf-8"), max_size=2600)  # past 2 x 1000, so every edge may cut


@st.composite
def _message(draw: st.DrawFn, n: int) -> SpanMessage:
    kind = draw(
        st.sampled_from(["user", "unmatched", "assistant", "error", "result", "bash", "hidden", "other"])
    )
    text = draw(_text)
    if kind in ("user", "unmatched"):
        return user(f"u{n}" if kind == "user" else None, text, entry=f"e{n}")
    if kind in ("assistant", "error"):
        args: dict[str, Any] = {"command": text[:300], "n": n}
        return assistant(f"e{n}", text, (f"call-{n}", args), error=text[:50] if kind == "error" else None)
    if kind == "result":
        return result(f"e-r{n}", f"call-{n}", text, error=draw(st.booleans()), image=draw(st.booleans()))
    if kind in ("bash", "hidden"):
        return bash_run(f"e-r{n}", text[:80], text, n % 3, hidden=kind == "hidden")
    return SpanMessage(f"e{n}", "custom", {"role": "custom", "customType": "note\u202e", "content": text})


@st.composite
def _span(draw: st.DrawFn) -> list[SpanMessage]:
    count = draw(st.integers(min_value=0, max_value=8))
    return [draw(_message(n)) for n in range(1, count + 1)]


@settings(max_examples=60, deadline=None)
@given(span=_span(), edge=st.sampled_from(TOOL_EDGES))
def test_diff2_parts_add_up_for_any_messages(span: list[SpanMessage], edge: int) -> None:
    """DIFF-2: any text (controls, escapes, surrogate-free unicode, long outputs) at any edge sums exactly."""
    case_inputs = inputs(span, range(1, 9))
    sizer = PromptSizer(case_inputs)
    per_message = [sizer.parts([m], edge) for m in span]
    assert sizer.chars(per_message) == weighed_length(case_inputs, span, edge)
    assert sum(per_message, SpanSize()) == sizer.parts(span, edge)


def test_diff1_planning_renders_each_message_once_per_edge_and_builds_one_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DIFF-1: planning a span that tries every edge renders each message at most once per edge and builds
    only the span-less prompt; no whole prompt per candidate chunk."""
    case = CASES["balanced"]()
    rendered: Counter[tuple[int, int]] = Counter()
    built: list[int] = []
    real_size, real_prompt = message_size, chunk_prompt

    def counted_size(item: SpanMessage, ids: LedgerIds, edge: int) -> SpanSize:
        rendered[(id(item), edge)] += 1
        return real_size(item, ids, edge)

    def counted_prompt(*args: Any, **kwargs: Any) -> Prompt:
        built.append(len(args[2]))
        return real_prompt(*args, **kwargs)

    monkeypatch.setattr(planning, "message_size", counted_size)
    monkeypatch.setattr(planning, "chunk_prompt", counted_prompt)
    plan = plan_diff(case.inputs, case.input_tokens * CHARS_PER_TOKEN)
    assert plan.tool_edge == TOOL_EDGES[-1]  # it went through every edge
    assert set(rendered.values()) == {1}
    assert len(rendered) == len(case.inputs.span) * len(TOOL_EDGES)
    assert built == [0]


def test_diff1_a_span_whose_prompt_fits_is_one_chunk_however_many_turns_it_holds() -> None:
    """DIFF-1: the state, ledger and instructions count once per chunk, not once per turn group, so a span of
    many short turns whose whole prompt fits the budget is sent in one call at the widest tool edge."""
    span = turns(range(4, 40), lines=2)
    case_inputs = inputs(span, range(4, 40))
    whole = chunk_prompt(case_inputs, case_inputs.state, span, first=True, edge=TOOL_EDGES[0])
    budget = len(whole.system) + len(whole.user) + 200
    plan = plan_diff(case_inputs, budget)
    assert (plan.tool_edge, len(plan.chunks)) == (TOOL_EDGES[0], 1)
    assert len(turn_groups(span)) > 30
