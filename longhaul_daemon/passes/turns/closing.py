"""How a turns-mode conversation closes the span: what each section gave, and the one set of events for Close.

Our decisions (TURNS-15, TURNS-16, FAIL-10):

- The span closes **whole** when the labels section finished: every offered message labeled (or the span
  offered none). Sections that were unfinished or never reached contribute nothing, so the objective and Now
  carry from the previous state, and a missing narrative leaves the work-log line saying so.
- When the labels section did not finish (unlabeled after the repair turns, no usable answer, an error, the
  budget) but some other section was accepted, the span closes **chunk-missing** with reason
  ``labels-<why>``: the labels section plays the part of the Diff's missing chunk, so the span's messages are
  carried whole (FAIL-12). Labels that verified still count; a message offered again does not give a rule
  twice (FAIL-18).
- When no section was accepted, the span closes **narrative-less** with the first section's failure code.
- Values are those code learned from tool output (VALUE-7), kept only where they verify (VALUE-2); a
  narrative-less close takes none, like every other event. (The values of the user's own short commands are
  code's alone and the pass records them in every close: :mod:`~longhaul_daemon.passes.answers.lookups`.)
- A long message labeled ``rule`` whose words never verify is left unlabeled by the check (QUOTE-4, ours),
  so the labels section is unfinished and the span's messages are carried, that one included.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from longhaul_daemon.passes.answers.events import ChunkEvents
from longhaul_daemon.passes.answers.values import check_values
from longhaul_daemon.passes.prompting.span_turns import span_turns
from longhaul_daemon.passes.turns.gate import Accepted, Verdict
from longhaul_daemon.passes.turns.label_gate import LabelsVerdict
from longhaul_daemon.passes.turns.learned import learned_values
from longhaul_daemon.passes.turns.sections import SECTIONS, Section
from longhaul_daemon.state.model import ClosedAs
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["NO_NARRATIVE", "SectionOutcome", "TurnsResult", "close_turns"]

NO_NARRATIVE = "The span closed without a narrative line from the model."
_ACCEPTED = ("accepted", "repaired", "accepted-with-drops")


@dataclass(frozen=True)
class SectionOutcome:
    """One section's end: ``status`` is accepted, repaired, accepted-with-drops, unfinished or unreached."""

    section: Section
    status: str
    failure: str | None = None
    verdict: Verdict | None = None
    labels: LabelsVerdict | None = None
    repairs: int = 0

    @property
    def accepted(self) -> bool:
        """Whether the section's answer was accepted (possibly repaired or with drops)."""
        return self.status in _ACCEPTED


@dataclass(frozen=True)
class TurnsResult:
    """What the pass closes with, and what the span record and the log keep about the conversation."""

    closed_as: ClosedAs
    reason: str | None
    narrative: str | None = None
    events: tuple[ChunkEvents, ...] = ()
    excused: tuple[tuple[str, str], ...] = ()
    unmet: tuple[str, ...] = ()
    sections: Mapping[str, str] = field(default_factory=dict)
    dropped: Mapping[str, int] = field(default_factory=dict)
    shows: int = 0
    digest_edge: int = 0
    digest_left_out: int = 0


def _content(outcomes: Mapping[Section, SectionOutcome], section: Section) -> Accepted:
    outcome = outcomes.get(section)
    if outcome is None or not outcome.accepted or outcome.verdict is None:
        return Accepted()
    return outcome.verdict.accepted


def _status(outcome: SectionOutcome) -> str:
    return (
        f"{outcome.status}:{outcome.failure}" if outcome.failure and not outcome.accepted else outcome.status
    )


def close_turns(
    outcomes: Mapping[Section, SectionOutcome],
    span: Sequence[SpanMessage],
    *,
    shows: int = 0,
    digest_edge: int = 0,
    digest_left_out: int = 0,
) -> TurnsResult:
    """The span's close from each section's outcome (the module docstring's rules)."""
    labels = outcomes.get("labels")
    verified_labels = labels.labels.evaluation.events if labels is not None and labels.labels else None
    some = any(o.accepted for o in outcomes.values()) or bool(verified_labels and verified_labels.judged)
    base = TurnsResult(
        "narrative-less",
        None,
        sections={name: _status(outcomes[name]) for name in SECTIONS if name in outcomes},
        shows=shows,
        digest_edge=digest_edge,
        digest_left_out=digest_left_out,
    )
    if not some:
        first = next((o.failure for o in (outcomes.get(s) for s in SECTIONS) if o and o.failure), None)
        return replace(base, reason=first or "unverified")
    narrative = _content(outcomes, "narrative").narrative
    decisions = _content(outcomes, "decisions")
    dropped: Counter[str] = Counter()
    excused: list[tuple[str, str]] = []
    unmet: list[str] = []
    for name in SECTIONS:
        outcome = outcomes.get(name)
        if outcome is None:
            continue
        if outcome.verdict is not None and outcome.accepted:
            dropped.update(outcome.verdict.accepted.dropped)
            excused.extend(outcome.verdict.excused)
            unmet.extend(outcome.verdict.unmet)
    if verified_labels is not None:
        dropped.update(verified_labels.dropped)
    values = check_values(learned_values(span), span_turns(span))
    events = ChunkEvents(
        labels=verified_labels.labels if verified_labels is not None else (),
        judged=verified_labels.judged if verified_labels is not None else frozenset(),
        decisions=decisions.decisions,
        dead_ends=decisions.dead_ends,
        values=values.kept,
        narrative=narrative,
        now=_content(outcomes, "now").now,
        objective=_content(outcomes, "objective").objective,
        fixed=decisions.fixed,
        dropped=MappingProxyType({k: v for k, v in sorted(dropped.items()) if v}),
    )
    finished = labels is not None and labels.accepted
    closed: ClosedAs = "whole" if finished else "chunk-missing"
    why = labels.failure if labels is not None and labels.failure else "unreached"
    return replace(
        base,
        closed_as=closed,
        reason=None if finished else f"labels-{why}",
        narrative=narrative or NO_NARRATIVE,
        events=(events,),
        excused=tuple(excused),
        unmet=tuple(unmet),
        dropped=dict(events.dropped),
    )
