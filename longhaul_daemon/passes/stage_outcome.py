"""What the model stage of a pass decided, in either mode, and the one sentence the user is shown about it.

The Diff (:mod:`longhaul_daemon.passes.diff.diff_stage`) and turns mode (:mod:`longhaul_daemon.passes.turns`)
both end in a :class:`StageOutcome`: how the span closes, the accepted events for Close, the counts for the
``compaction`` record, and what the span record keeps (``excused``, ``unmet``: turns mode's expectation
checks). When turns mode was asked for but could not run, ``turns_unavailable`` names why and the notice says
so, whatever else the notice says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from longhaul_daemon.passes.answers.events import ChunkEvents
from longhaul_daemon.protocol import RouteChoice
from longhaul_daemon.state.model import ClosedAs

__all__ = ["UNAVAILABLE_WHY", "StageOutcome", "TurnsUnavailable", "notice"]

# why turns mode could not run, in the words of the notice
UNAVAILABLE_WHY = {
    "tools-refused": "the model's route refuses tool calls, which turns mode needs for its show tool",
    "tools-not-carried": "this Longhaul extension cannot pass tool calls through pi; update it",
    "digest-too-large": "the span does not fit the model's context window in one conversation",
}


@dataclass(frozen=True)
class StageOutcome:
    """How the span closes, and the model's accepted, verified contribution."""

    closed_as: ClosedAs
    reason: str | None
    narrative: str | None = None
    events: tuple[ChunkEvents, ...] = ()
    calls: int = 0
    tokens: int = 0
    stats: dict[str, Any] = field(default_factory=dict)
    route: RouteChoice = field(default_factory=RouteChoice)
    unusable: dict[str, int] = field(default_factory=dict)
    excused: tuple[tuple[str, str], ...] = ()  # TURNS-13: (check, reason)
    unmet: tuple[str, ...] = ()  # TURNS-14
    turns_unavailable: str | None = None
    held: tuple[str, ...] = ()  # a partial close's unlabeled messages (FAIL-4, ours)


class TurnsUnavailable(Exception):
    """Turns mode cannot run on this route for this span; ``code`` names why."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _close_sentence(span_no: int, outcome: StageOutcome, carried: int) -> str | None:
    if outcome.closed_as == "narrative-less":
        return (
            f"Longhaul closed span {span_no} without a narrative ({outcome.reason}): "
            f"ledger and World updated, {_plural(carried, 'user message')} carried to the next pass."
        )
    if outcome.closed_as == "empty":
        return f"Longhaul closed span {span_no}, which held no messages: ledger and World updated."
    if outcome.closed_as == "partial":
        return (
            f"Longhaul closed span {span_no}, but the model gave no usable label to "
            f"{_plural(len(outcome.held), 'user message')}: carried, with their words, to the next pass."
        )
    if outcome.closed_as == "chunk-missing":
        return (
            f"Longhaul closed span {span_no} with a chunk missing ({outcome.reason}): "
            f"{_plural(carried, 'user message')} carried to the next pass."
        )
    return None


def notice(span_no: int, outcome: StageOutcome, carried: int) -> str | None:
    """What the UI shows when the pass did less than a whole close (FAIL-10), or could not run turns mode."""
    parts: list[str] = []
    if outcome.turns_unavailable is not None:
        why = UNAVAILABLE_WHY.get(outcome.turns_unavailable, outcome.turns_unavailable)
        parts.append(
            f"Longhaul's turns mode could not run for span {span_no} ({why}); the single-call Diff ran."
        )
    close = _close_sentence(span_no, outcome, carried)
    if close is not None:
        parts.append(close)
    return " ".join(parts) or None
