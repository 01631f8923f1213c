"""Cut a span the summarizer cannot read in one call into at most four chunks, only at user messages.

DIFF-1: a span that fits the summarizer's input budget is one chunk, a larger one at most four. DIFF-3
(our choice, the proposal): chunks are cut only where a user message opens a turn, in order, so each chunk
labels whole turns and a later chunk can lift a rule an earlier chunk recorded. DIFF-2 (the proposal): when
even four chunks would not fit, the prompt cuts tool output harder (``tool_edge`` shrinks) until they do; if
nothing fits at the smallest edge, the span is still cut into four balanced chunks and the model sees them
as they are: user messages are never dropped from a chunk.

Sizes are estimated in characters from the prompt the chunk would produce, so the estimate includes the
state, the carried messages and the instructions the call really sends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["CHARS_PER_TOKEN", "MAX_CHUNKS", "TOOL_EDGES", "ChunkPlan", "plan_chunks", "turn_groups"]

MAX_CHUNKS = 4  # DIFF-1
TOOL_EDGES = (1000, 400, 150, 40)  # DIFF-2: each step keeps less of each end of a long tool result
CHARS_PER_TOKEN = 3  # conservative: code and JSON tokenize denser than prose


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


def _pack(
    groups: Sequence[Sequence[SpanMessage]], sizes: Sequence[int], limit: int
) -> list[list[SpanMessage]]:
    """Greedy: whole groups fill a chunk up to ``limit``; an oversized group stands alone."""
    chunks: list[list[SpanMessage]] = []
    used = 0
    for group, size in zip(groups, sizes, strict=True):
        if chunks and used + size <= limit:
            chunks[-1].extend(group)
            used += size
        else:
            chunks.append(list(group))
            used = size
    return chunks


def _balanced(
    groups: Sequence[Sequence[SpanMessage]], sizes: Sequence[int], count: int
) -> list[list[SpanMessage]]:
    """``count`` chunks (fewer when there are fewer groups) of roughly equal size, cut at group boundaries."""
    total = sum(sizes) or 1
    chunks: list[list[SpanMessage]] = [[]]
    seen = 0
    for index, (group, size) in enumerate(zip(groups, sizes, strict=True)):
        left_groups = len(groups) - index
        left_chunks = count - len(chunks)
        boundary = seen >= total * len(chunks) / count
        if chunks[-1] and left_chunks > 0 and (boundary or left_groups <= left_chunks):
            chunks.append([])
        chunks[-1].extend(group)
        seen += size
    return chunks


def plan_chunks(
    span: Sequence[SpanMessage],
    *,
    input_chars: int,
    measure: Callable[[Sequence[SpanMessage], int], int],
    overhead: Callable[[int], int],
) -> ChunkPlan:
    """Choose chunks for ``span`` so each prompt stays within ``input_chars`` where possible.

    ``measure(messages, tool_edge)`` is the size of the conversation part of a prompt; ``overhead(tool_edge)``
    the size of everything else (state, carried messages, instructions), counted once per chunk.
    """
    groups = turn_groups(span)
    if not groups:
        return ChunkPlan(chunks=((),), tool_edge=TOOL_EDGES[0])
    for edge in TOOL_EDGES:
        room = input_chars - overhead(edge)
        if room <= 0:
            continue
        sizes = [measure(group, edge) for group in groups]
        if sum(sizes) <= room:
            return ChunkPlan(chunks=(tuple(span),), tool_edge=edge)
        packed = _pack(groups, sizes, room)
        if len(packed) <= MAX_CHUNKS and all(measure(c, edge) <= room for c in packed):
            return ChunkPlan(chunks=tuple(tuple(c) for c in packed), tool_edge=edge)
    edge = TOOL_EDGES[-1]
    sizes = [measure(group, edge) for group in groups]
    balanced = _balanced(groups, sizes, MAX_CHUNKS)
    return ChunkPlan(chunks=tuple(tuple(c) for c in balanced), tool_edge=edge)
