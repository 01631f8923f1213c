"""Chunk planning (DIFF-1, DIFF-2, DIFF-3) pinned to snapshots: chunks, tool edge and every prompt sent.

The snapshots under ``snapshots/chunks/`` were written by the planner that built a whole prompt for every
turn group at every tool edge. Any faster planner must choose the same chunks and tool edge, and the Diff must
send byte-identical prompts, for every shape in :mod:`chunk_cases`. ``LONGHAUL_UPDATE_SNAPSHOTS=1`` rewrites
them; do that only for an intended change of the prompt or of the plan.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from longhaul_daemon.diff.chunks import CHARS_PER_TOKEN, ChunkPlan
from longhaul_daemon.diff.planning import plan_diff
from longhaul_daemon.diff.stage import DiffResult, run_diff
from longhaul_daemon.transcript.messages import SpanMessage

from .chunk_cases import CASES, Case, RecordingModel

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
