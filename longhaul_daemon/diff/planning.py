"""The Diff's pure preparation: which chunks a span is cut into, at which tool edge, and each chunk's prompt.

Kept apart from :mod:`longhaul_daemon.diff.stage` (the calls) so that everything here is a plain function of
the pass's inputs: no model, no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from longhaul_daemon.diff.chunks import ChunkPlan, plan_chunks
from longhaul_daemon.diff.prompt import OfferedMessage, Prompt, build_prompt
from longhaul_daemon.diff.takeover import Takeover
from longhaul_daemon.state.model import Command, ErrorEntry, Note, State
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["DiffInputs", "chunk_prompt", "plan_diff"]


@dataclass(frozen=True)
class DiffInputs:
    """What the pass hands the Diff: the folded state, the span, the ledger after it, and the settings."""

    state: State
    span: Sequence[SpanMessage]
    commands: Sequence[Command]
    errors: Sequence[ErrorEntry]
    carried: Sequence[OfferedMessage] = ()
    remembered: Sequence[Note] = ()
    focus: str | None = None
    retry_note_chars: int = 2000
    takeover: Takeover | None = None  # TAKEOVER-1: set when the newest compaction is another compactor's


def chunk_prompt(
    inputs: DiffInputs, state: State, chunk: Sequence[SpanMessage], *, first: bool, edge: int
) -> Prompt:
    """The prompt of one chunk; carried and takeover-earlier messages all go with the first (DIFF-8,
    TAKEOVER-25)."""
    takeover = inputs.takeover
    return build_prompt(
        state,
        chunk,
        carried=inputs.carried if first else (),
        commands=inputs.commands,
        errors=inputs.errors,
        remembered=inputs.remembered,
        focus=inputs.focus,
        tool_edge=edge,
        earlier=takeover.earlier if first and takeover else (),
        foreign_summary=takeover.summary if first and takeover else None,
    )


def plan_diff(inputs: DiffInputs, input_chars: int) -> ChunkPlan:
    """DIFF-1..3: the chunks of ``inputs.span`` for prompts of at most ``input_chars`` characters."""
    empty_state = inputs.state.model_copy(update={"decisions": [], "deadEnds": []})

    def measure(messages: Sequence[SpanMessage], edge: int) -> int:
        return len(chunk_prompt(inputs, empty_state, messages, first=False, edge=edge).user)

    def overhead(edge: int) -> int:
        base = chunk_prompt(inputs, inputs.state, [], first=True, edge=edge)
        return len(base.system) + len(base.user)

    return plan_chunks(inputs.span, input_chars=input_chars, measure=measure, overhead=overhead)
