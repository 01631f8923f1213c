"""The parts of a parsed answer verification reads, and how its two kinds of withdrawal flag merge.

Split from :mod:`~longhaul_daemon.passes.answers.verify` so that module holds only the checks: a draft
answer is read as it stands, the final one cut to its bounds first (DIFF-16). Pure.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from longhaul_daemon.passes.answers.events import PossibleWithdrawal
from longhaul_daemon.passes.answers.schema import (
    DeadEnd,
    Decision,
    LabeledMessage,
    ParsedAnswer,
    cut_to_bounds,
    says_something,
)
from longhaul_daemon.passes.answers.values import ValueCandidate

__all__ = ["answer_parts", "merged_flags"]


def answer_parts(
    parsed: ParsedAnswer, final: bool
) -> tuple[
    tuple[LabeledMessage, ...],
    tuple[Decision, ...],
    tuple[DeadEnd, ...],
    tuple[ValueCandidate, ...],
    tuple[str | None, str | None, str | None],
    Counter[str],
]:
    """The answer's parts: cut to bounds when final (DIFF-16), the draft as it stands otherwise."""
    draft = parsed.answer
    if not final:
        decisions = tuple(
            Decision.model_construct(text=d.text, why=d.why, evidence=tuple(d.evidence))
            for d in draft.decisions
        )
        dead_ends = tuple(
            DeadEnd.model_construct(text=d.text, evidence=tuple(d.evidence)) for d in draft.deadEnds
        )
        values = tuple(ValueCandidate(v.name, v.value, v.turn) for v in draft.values)
        # words that say nothing ("...") are read as not given here too, as cut_to_bounds reads them in the
        # final answer: else a draft's "..." binds to a message holding "..." and hides a missing-words defect
        labels = tuple(
            label if label.words is None or says_something(label.words) else replace(label, words=None)
            for label in draft.labels
        )
        return (
            labels,
            decisions,
            dead_ends,
            values,
            (draft.narrative, draft.now, draft.objective),
            Counter(parsed.dropped),
        )
    answer, dropped = cut_to_bounds(parsed)
    labels = tuple(LabeledMessage(a.msg, a.label, a.words) for a in answer.labels)
    values = tuple(ValueCandidate(v.name, v.value, v.turn) for v in answer.values)
    prose = (answer.narrative, answer.now, answer.objective)
    return labels, answer.decisions, answer.deadEnds, values, prose, Counter(dropped)


def merged_flags(
    looked: Sequence[PossibleWithdrawal], named: Sequence[PossibleWithdrawal]
) -> tuple[PossibleWithdrawal, ...]:
    """Code's own flags, then those of the lifts named that the check refused; one a rule and message."""
    seen = {(f.target, f.by) for f in looked}
    return (*looked, *(f for f in named if (f.target, f.by) not in seen))
