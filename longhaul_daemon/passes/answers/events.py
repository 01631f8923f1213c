"""The shapes that carry one chunk's verified answer from the verifiers to Close, so both sides agree on them.

The Diff stage asks a model, :mod:`longhaul_daemon.passes.answers.verify` turns a parsed answer into an
:class:`Evaluation` (accepted events, format defects, questions), and
:mod:`longhaul_daemon.passes.close_events` numbers the accepted events into the State at Close (PASS-5).
Everything here is plain frozen data: no model text reaches the State except through these fields, and each
was checked by code before it was built.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from longhaul_daemon.passes.answers.fixes import Fix
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.schema import DeadEnd, Decision, Defect
from longhaul_daemon.passes.answers.values import Turn, ValueCandidate
from longhaul_daemon.state.model import Command, ErrorEntry, Rule

__all__ = [
    "ChunkContext",
    "ChunkEvents",
    "Evaluation",
    "LabelEvents",
    "LiftEvent",
    "NewRule",
    "PossibleWithdrawal",
    "Question",
    "RuleDoubt",
]

# Why code doubts a rule's label (see passes/answers/doubts.py): code reads a standing rule the model
# called a one-off, or the model called a rule what code reads as a one-off request.
RuleDoubt = Literal["model-read-one-off", "may-be-standing", "reads-as-request"]


@dataclass(frozen=True)
class ChunkContext:
    """Everything code needs to verify one chunk's answer.

    ``offered``: every message the chunk offers for labels (carried ones first, then the chunk's own), oldest
    first, with full text. ``rules``: the state's rules, in force and lifted, plus the rules earlier chunks of
    this pass accepted, whose ``id`` is their ``u<n>`` until Close numbers them (LABEL-16). ``turns``: the
    chunk's turns for value checks (VALUE-3). ``ledger_ids``: the C/E ids evidence may cite (DIFF-14).
    ``commands``, ``errors``: the ledger after this span's Ledger step, for the answer's ``fixed`` claims.
    """

    offered: tuple[OfferedMessage, ...]
    rules: tuple[Rule, ...]
    ledger_ids: frozenset[str]
    turns: tuple[Turn, ...] = ()
    label_optional: frozenset[str] = frozenset()
    retry_note_chars: int = 2000
    # TAKEOVER-4, TAKEOVER-22: earlier messages the standing-rule reading picked, with the range code records
    # when the model leaves them unlabeled (the whole message, or the qualifying stretch of a long one).
    picked: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    # FAIL-4: earlier messages of a takeover the reading did not pick. Unlabeled, they are a defect for the
    # retry; still unlabeled in the settled answer, they read as `not a rule` rather than failing the chunk.
    unpicked_earlier: frozenset[str] = frozenset()
    commands: tuple[Command, ...] = ()
    errors: tuple[ErrorEntry, ...] = ()
    # QUOTE-4, ours: carried messages an earlier pass labeled `rule` whose words never verified; labeled
    # anything else now, the two labels disagree and the message is kept as the user's words (``disputed``)
    unconfirmed_rules: frozenset[str] = frozenset()


@dataclass(frozen=True)
class NewRule:
    """A rule code copied from a message: ``words`` is ``quotable_text(message)[start:end]`` (QUOTE-1)."""

    message: str  # the u<n> that holds the words, after QUOTE-7 rebinding
    words: str
    start: int
    end: int
    doubt: RuleDoubt | None = None  # code and the model disagree on whether the message gives a rule


@dataclass(frozen=True)
class LiftEvent:
    """One withdrawal that passed every store check (LIFT-1..LIFT-8).

    ``target`` is the rule's id as the chunk knew it: ``R<n>`` for a rule already in the state, or the
    ``u<n>`` of a rule new in this pass. ``replacing`` is the ``u<n>`` of the new rule the same message gave
    (a ``rule and lifts`` label), kept so the state can name the replacing rule (LABEL-14).
    """

    target: str
    by: str
    replacing: str | None = None


@dataclass(frozen=True)
class PossibleWithdrawal:
    """A rule code reads as withdrawn by a later message that was not lifted (the model did not confirm it,
    or the lift check refused it): kept in force, shown flagged with ``by`` and the user's ``words``."""

    target: str  # the rule as the chunk knew it: R<n>, or the u<n> of a rule new in this pass
    by: str
    words: str


@dataclass(frozen=True)
class LabelEvents:
    """What one accepted label contributes, in the order Close numbers it: the rule first, then its lifts."""

    msg: str
    rule: NewRule | None = None
    lifts: tuple[LiftEvent, ...] = ()


@dataclass(frozen=True)
class ChunkEvents:
    """One chunk's accepted contribution. ``labels`` in message order; ``judged`` every offered id whose label
    was accepted (``not a rule`` included); ``fixed`` the open errors a later successful command closed;
    ``dropped`` counts what verification discarded, by kind; ``rejected_quotes`` the rule words
    it refused, as ``(msg, words)`` given, for the debug excerpts of LOG-14 and QUOTE-17 only."""

    labels: tuple[LabelEvents, ...] = ()
    judged: frozenset[str] = frozenset()
    decisions: tuple[Decision, ...] = ()
    dead_ends: tuple[DeadEnd, ...] = ()
    values: tuple[ValueCandidate, ...] = ()
    narrative: str | None = None
    now: str | None = None
    objective: str | None = None
    fixed: tuple[Fix, ...] = ()
    dropped: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    rejected_quotes: tuple[tuple[str, str], ...] = ()
    possibly_withdrawn: tuple[PossibleWithdrawal, ...] = ()
    # QUOTE-4, ours: long messages labeled `rule` whose words never verified (held back, carried and offered
    # again), and carried ones of those labeled otherwise now (judged, kept verbatim, not offered again)
    unconfirmed: frozenset[str] = frozenset()
    disputed: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Question:
    """A question for the one extra call of a chunk (LIFT-7, LIFT-10, FAIL-5).

    ``kind`` ``"rule-lift"``: ``msg`` is labeled ``rule`` and may replace ``target``; the only reply that
    changes anything is ``rule and lifts <target>``. ``kind`` ``"replaced"``: ``msg`` lifts a rule a narrowing
    already replaced, ``target`` is that narrowing; only ``lifts <target>`` changes anything. ``kind``
    ``"withdrawal"``: code reads ``msg`` as withdrawing ``target``
    (:mod:`longhaul_daemon.passes.answers.doubts`); a lift naming it adds the lift. ``text`` is the whole
    question as sent (LIFT-12), never cut (LIFT-13).
    """

    msg: str
    target: str
    kind: Literal["rule-lift", "replaced", "withdrawal"]
    text: str
    # The reply label the question offers beyond the kind's own form: a ``rule and lifts`` label asked
    # about a replaced target is offered ``rule and lifts <target>`` as well as ``lifts <target>``.
    answer_label: str | None = None


@dataclass(frozen=True)
class Evaluation:
    """What code makes of one parsed answer.

    ``events``: what would enter the State if this answer were the chunk's settled one (defective items left
    out). ``defects``: format defects for the retry note (FAIL-1), empty when ``final``. ``questions``: the
    questions this answer raises once settled (never in a retry note, FAIL-6). ``unlabeled``: offered ids
    with no accepted label (FAIL-4: the chunk never verified if any remain after the retry).
    """

    events: ChunkEvents
    defects: tuple[Defect, ...] = ()
    questions: tuple[Question, ...] = ()
    unlabeled: tuple[str, ...] = ()
