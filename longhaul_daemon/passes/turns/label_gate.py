"""The labels turn's gate: the Diff's own verifiers, so a label means the same thing in both modes (TURNS-4).

A labels answer is read with :func:`~longhaul_daemon.passes.answers.extract.verify_labels` and checked with
:func:`~longhaul_daemon.passes.answers.verify.evaluate`, so every store-side rule of the Diff holds (QUOTE-*,
LIFT-*, LABEL-8). The turn offers ``rule``, ``lifts R<n>`` and ``not a rule``; the parser reads all of
LABEL-1. Every defect the Diff would put in a retry note is an integrity problem (TURNS-9). The settled
answer is evaluated as final: failing items are dropped (TURNS-10), and a span message still unlabeled
leaves the section unfinished, so the span is carried whole (TURNS-16, FAIL-12).

Taking over (TURNS-17, TAKEOVER-27): a message the standing-rule reading picked takes no label; code records
it as a rule and asks no replacement question, so both rules stand until a later lift. Every other earlier
message needs a label (TAKEOVER-18), and one still unlabeled reads as ``not a rule`` (FAIL-4).
"""

from __future__ import annotations

from dataclasses import dataclass

from longhaul_daemon.passes.answers.events import ChunkContext, Evaluation, Question
from longhaul_daemon.passes.answers.extract import verify_labels
from longhaul_daemon.passes.answers.schema import DraftAnswer, ParsedAnswer, ReplyForm
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.passes.turns.gate import Problem, parse_problem

__all__ = [
    "LabelsContext",
    "LabelsVerdict",
    "evaluate_labels",
    "fewer_problems",
    "gate_labels",
    "settle_labels",
]


@dataclass(frozen=True)
class LabelsContext:
    """The Diff's chunk context for the whole span, and the ids the labels turn asks about (no picks)."""

    chunk: ChunkContext
    label_ids: tuple[str, ...]

    @property
    def picked(self) -> frozenset[str]:
        """The messages this chunk asks labels for."""
        return frozenset(self.chunk.picked)


@dataclass(frozen=True)
class LabelsVerdict:
    """One labels answer through the gate: the parsed answer, its problems and its evaluation."""

    parsed: ParsedAnswer
    problems: tuple[Problem, ...]
    evaluation: Evaluation

    @property
    def integrity(self) -> int:
        """How many problems the labels answer has; all count as integrity problems."""
        return len(self.problems)

    @property
    def questions(self) -> tuple[Question, ...]:
        """The questions the evaluation raised about the labels."""
        return self.evaluation.questions


def _without_picks(evaluation: Evaluation, picked: frozenset[str]) -> Evaluation:
    """TAKEOVER-27: no question about a picked message, which takes no label in turns mode."""
    kept = tuple(q for q in evaluation.questions if q.msg not in picked)
    if len(kept) == len(evaluation.questions):
        return evaluation
    return Evaluation(evaluation.events, evaluation.defects, kept, evaluation.unlabeled)


def evaluate_labels(parsed: ParsedAnswer, ctx: LabelsContext, *, final: bool) -> LabelsVerdict:
    """A parsed labels answer checked against the span (``final``: the settled answer, drops instead of
    problems)."""
    evaluation = _without_picks(evaluate(parsed, ctx.chunk, final=final), ctx.picked)
    problems = tuple(Problem("integrity", d.code, d.text) for d in evaluation.defects)
    return LabelsVerdict(parsed, problems, evaluation)


def gate_labels(obj: dict[str, object] | None, form: ReplyForm, ctx: LabelsContext) -> LabelsVerdict:
    """One labels answer (``obj`` as the section finder found it) before it is settled."""
    if obj is None:
        unparsed = ParsedAnswer(False, DraftAnswer(), form=form)
        empty = evaluate(ParsedAnswer(True, DraftAnswer()), ctx.chunk, final=True)
        return LabelsVerdict(unparsed, (parse_problem(form),), empty)
    parsed = verify_labels(obj, ctx.label_ids, rules=ctx.chunk.rules, label_optional=ctx.chunk.label_optional)
    return evaluate_labels(parsed, ctx, final=False)


def settle_labels(kept: LabelsVerdict, ctx: LabelsContext) -> LabelsVerdict:
    """TURNS-10: the kept answer as final: failing items dropped, its questions and unlabeled ids known."""
    if not kept.parsed.parsed:
        return kept
    return evaluate_labels(kept.parsed, ctx, final=True)


def fewer_problems(kept: LabelsVerdict | None, new: LabelsVerdict) -> LabelsVerdict:
    """FAIL-2 in turns mode: the answer with fewer problems is kept, the newer winning ties; an answer that
    did not parse never replaces one that did."""
    if kept is None or not kept.parsed.parsed:
        return new
    if not new.parsed.parsed:
        return kept
    return kept if kept.integrity < new.integrity else new
