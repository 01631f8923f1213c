"""Cut a span the summarizer cannot read in one call into at most four chunks, only at user messages.

DIFF-1: a span that fits the summarizer's input budget is one chunk, a larger one at most four. DIFF-3
(our choice, the proposal): chunks are cut only where a user message opens a turn, in order, so each chunk
labels whole turns and a later chunk can lift a rule an earlier chunk recorded. DIFF-2 (the proposal): when
even four chunks would not fit, the prompt cuts tool output harder (``tool_edge`` shrinks) until they do; if
nothing fits at the smallest edge, the span is still cut into four balanced chunks and the model sees them
as they are: user messages are never dropped from a chunk.

Sizes are in characters of the prompt a chunk would produce, so they include the state, the carried
messages and the instructions the call really sends, counted once per chunk. A :class:`ChunkSizer` gives
each turn group's size as parts that add up, so planning weighs every group once per tool edge and a run of
groups by adding parts: planning stays linear in the span however many groups and edges it tries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from longhaul_daemon.transcript.messages import SpanMessage

__all__ = [
    "CHARS_PER_TOKEN",
    "MAX_CHUNKS",
    "TOOL_EDGES",
    "ChunkPlan",
    "ChunkSizer",
    "plan_chunks",
    "turn_groups",
]

MAX_CHUNKS = 4  # DIFF-1
TOOL_EDGES = (1000, 400, 150, 40)  # DIFF-2: each step keeps less of each end of a long tool result
CHARS_PER_TOKEN = 3  # conservative: code and JSON tokenize denser than prose


class _Addable(Protocol):
    def __add__(self: P, other: P, /) -> P: ...


P = TypeVar("P", bound=_Addable)


class ChunkSizer(Protocol[P]):
    """How big a chunk's prompt would be, from parts of type ``P`` measured once per turn group and edge."""

    def overhead(self, edge: int) -> int:
        """What every chunk's budget loses to the first chunk's state, carried messages and instructions."""
        ...

    def parts(self, group: Sequence[SpanMessage], edge: int) -> P:
        """The group's parts at ``edge``."""
        ...

    def chars(self, parts: Sequence[P]) -> int:
        """The size of a prompt holding the groups whose parts these are, in order."""
        ...


@dataclass(frozen=True)
class ChunkPlan:
    """The chunks in order and the tool-result edge their prompts use."""

    chunks: tuple[tuple[SpanMessage, ...], ...]
    tool_edge: int


def turn_groups(span: Sequence[SpanMessage]) -> list[list[SpanMessage]]:
    """The span cut before every user message; what precedes the first one joins the first group."""
    groups: list[list[SpanMessage]] = []
    for item in span:
        if (
            item.role == "user" and item.user_id is not None and groups and _has_user(groups[-1])
        ) or not groups:
            groups.append([item])
        else:
            groups[-1].append(item)
    return groups


def _has_user(group: Sequence[SpanMessage]) -> bool:
    return any(m.role == "user" and m.user_id is not None for m in group)


def _pack(parts: Sequence[P], sizer: ChunkSizer[P], limit: int) -> list[range]:
    """Greedy: whole groups fill a chunk while its prompt stays within ``limit``; an oversized group stands
    alone. A chunk's running parts are added up, so each group is weighed once."""
    starts: list[int] = []
    running: P | None = None
    for index, part in enumerate(parts):
        if running is not None:
            grown = running + part
            if sizer.chars([grown]) <= limit:
                running = grown
                continue
        starts.append(index)
        running = part
    return [range(start, end) for start, end in zip(starts, [*starts[1:], len(parts)], strict=True)]


def _balanced(sizes: Sequence[int], count: int) -> list[range]:
    """``count`` chunks (fewer when there are fewer groups) of roughly equal size, cut at group boundaries."""
    total = sum(sizes) or 1
    starts = [0]
    seen = 0
    for index, size in enumerate(sizes):
        left_groups = len(sizes) - index
        left_chunks = count - len(starts)
        boundary = seen >= total * len(starts) / count
        if index > starts[-1] and left_chunks > 0 and (boundary or left_groups <= left_chunks):
            starts.append(index)
        seen += size
    return [range(start, end) for start, end in zip(starts, [*starts[1:], len(sizes)], strict=True)]


def _chunks(
    groups: Sequence[Sequence[SpanMessage]], cuts: Sequence[range]
) -> tuple[tuple[SpanMessage, ...], ...]:
    return tuple(tuple(m for index in cut for m in groups[index]) for cut in cuts)


def plan_chunks(span: Sequence[SpanMessage], *, input_chars: int, sizer: ChunkSizer[P]) -> ChunkPlan:
    """Choose chunks for ``span`` so each prompt stays within ``input_chars`` where possible.

    Every chunk's budget is ``input_chars`` less ``sizer.overhead(edge)``; a chunk's size is
    ``sizer.chars`` of its groups' parts.
    """
    groups = turn_groups(span)
    if not groups:
        return ChunkPlan(chunks=((),), tool_edge=TOOL_EDGES[0])
    measured: dict[int, list[P]] = {}
    for edge in TOOL_EDGES:
        room = input_chars - sizer.overhead(edge)
        if room <= 0:
            continue
        parts = measured[edge] = [sizer.parts(group, edge) for group in groups]
        if sizer.chars(parts) <= room:
            return ChunkPlan(chunks=(tuple(span),), tool_edge=edge)
        packed = _pack(parts, sizer, room)
        if len(packed) <= MAX_CHUNKS and all(
            sizer.chars(parts[cut.start : cut.stop]) <= room for cut in packed
        ):
            return ChunkPlan(chunks=_chunks(groups, packed), tool_edge=edge)
    edge = TOOL_EDGES[-1]
    # no room at all at this edge: the groups were never measured there
    parts = measured.get(edge) or [sizer.parts(group, edge) for group in groups]
    empty = sizer.chars([])
    sizes = [sizer.chars([part]) - empty for part in parts]  # what each group adds to a prompt
    return ChunkPlan(chunks=_chunks(groups, _balanced(sizes, MAX_CHUNKS)), tool_edge=edge)
