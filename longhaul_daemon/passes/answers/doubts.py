"""Code looks for withdrawals and disputed rule labels itself, so one a model misses is never left unseen.

A weak model may miss a withdrawal, call a standing instruction ``not a rule``, or label a one-off ``rule``;
each would put a wrong rule before the agent after every later compaction. Pure functions over one chunk's
offered messages and rules, called by :mod:`~longhaul_daemon.passes.answers.verify` once labels are judged,
so the Diff and turns mode both get them (docs/how-it-works.md, "Code's second look"). Decisions:

- Withdrawal candidates are read by :mod:`.withdrawal_reading`; here each becomes a question (only one whose
  lift check passes, LIFT-18) or a flag: a candidate left unlifted flags its rule *possibly withdrawn* with
  the message id and sentence, carried messages included (FAIL-11, :func:`flag_carried_withdrawals`).
- Rule doubts cost no call: ``not a rule`` on a message the standing-rule reading picks records the rule as
  ``model-read-one-off``; on one only the wider reading picks (ours, :func:`.rule_reading.read_possible_rule`)
  as ``may-be-standing``, unless the message withdraws, reverses or asks for something once. ``rule`` on a
  message neither reading picks is marked ``reads-as-request`` (TAKEOVER-4). A ``rule`` label on words
  :mod:`.one_offs` reads as a one-off request records no rule at all (verify.py); only the words a rule
  would record are judged (the whole of a short message, the quoted sentence of a long one).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from longhaul_daemon.passes.answers.events import NewRule, PossibleWithdrawal, Question, RuleDoubt
from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.labels import Label
from longhaul_daemon.passes.answers.lifts import may_withdraw
from longhaul_daemon.passes.answers.one_offs import one_off_request
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE, OfferedMessage, quotable_text
from longhaul_daemon.passes.answers.reversals import cued_sentences
from longhaul_daemon.passes.answers.rule_reading import Reading, read_possible_rule, read_standing_rule
from longhaul_daemon.passes.answers.withdrawal_reading import (
    StandingRule,
    WithdrawalCandidate,
    forgets,
    standing_rules,
    withdrawal_candidates,
    withdrawal_question_text,
)
from longhaul_daemon.state.clean import clean_line, clean_span
from longhaul_daemon.state.model import CarriedMessage, Rule

__all__ = [
    "SecondLook",
    "doubted_reading",
    "flag_carried_withdrawals",
    "flag_withdrawn_carried",
    "reads_as_request",
    "rule_doubts",
    "second_look_rule",
    "withdrawal_look",
]


def doubted_reading(text: str, read: Callable[[str], Reading] = read_standing_rule) -> tuple[int, int] | None:
    """The range of ``quotable_text(text)`` to record when code's reading ``read`` (the takeover's, or the
    wider :func:`read_possible_rule`) picks a message the model called no rule; None when it picks nothing
    in the judged text (quoted text orders nothing)."""
    judged, quotable = judged_text(text), quotable_text(text)
    reading = read(judged)
    if not reading.picked:
        return None
    if quotable != judged:  # the usual message holds no quoted text: one reading serves both
        reading = read(quotable)
    if not reading.picked or not 0 <= reading.start < reading.end <= reading.start + LONG_MESSAGE:
        return None  # a long stretch (a pasted log full of "must") is no rule code can name on its own
    return reading.start, reading.end


def _withdrawing(judged: str) -> bool:
    """A message that withdraws or reverses something: its cues read as standing ("… is fine from now on")."""
    withdraws = may_withdraw(judged)
    return withdraws or forgets(judged) or bool(cued_sentences(judged, withdrawing=withdraws))


def _doubted(text: str) -> tuple[int, int, RuleDoubt] | None:
    """Where code reads a standing rule in a message the model labeled ``not a rule``, and how sure it is:
    the takeover's reading (``model-read-one-off``), else the wider one (``may-be-standing``), which passes
    over a message that withdraws or reverses a rule, or is a one-off request, in any of its words."""
    found = doubted_reading(text)
    if found is not None:
        return (*found, "model-read-one-off")
    found = doubted_reading(text, read_possible_rule)
    if found is None:
        return None  # the usual message: no cue at all, so no need to weigh what else it does
    judged = judged_text(text)
    if _withdrawing(judged) or one_off_request(judged):
        return None
    return (*found, "may-be-standing")


@dataclass(frozen=True)
class SecondLook:
    """The rule code keeps from a message the model labeled ``not a rule``: the words, their range in
    ``quotable_text(text)``, and how sure code is."""

    words: str
    start: int
    end: int
    doubt: RuleDoubt


def second_look_rule(text: str) -> SecondLook | None:
    """Code's second look at a message labeled ``not a rule``: the rule it keeps (:func:`_doubted`), unless
    the words it would record read as a one-off request (the words, not the text around them). The one
    decision :func:`rule_doubts` makes per message and ``bench/rule_readings.py`` counts."""
    found = _doubted(text)
    if found is None:
        return None
    start, end, doubt = found
    words = clean_span(quotable_text(text), start, end)
    if one_off_request(words):
        return None
    return SecondLook(words, start, end, doubt)


def reads_as_request(text: str) -> bool:
    """A message labeled ``rule`` that neither of code's readings picks: no standing cue in its own words."""
    return not read_possible_rule(judged_text(text)).picked


def withdrawal_look(
    offered: Sequence[OfferedMessage],
    labels: Mapping[str, Label],
    rules: Sequence[StandingRule],
    asked: Collection[tuple[str, str]] = (),
) -> tuple[tuple[Question, ...], tuple[PossibleWithdrawal, ...]]:
    """The questions code asks about possible withdrawals, and the flags that stand if none is confirmed.

    Only a candidate whose words already pass the lift check is asked: a confirmed lift of any other would
    be refused by the store (LIFT-1, LIFT-16), so its question could change nothing, and neither is a pair
    ``asked`` already holds (``(msg, target)``, the target by rule id or by its message: a LIFT-10 question
    about the same two). Every candidate is flagged; a lift the reply adds removes its flag, for the answer
    is evaluated again after the reply.
    """
    questions: list[Question] = []
    flags: list[PossibleWithdrawal] = []
    for candidate in withdrawal_candidates(offered, rules):
        label = labels.get(candidate.msg)
        labeled_rule = label is not None and label.records_rule
        rule = candidate.rule
        repeated = (candidate.msg, rule.name) in asked or (candidate.msg, rule.message) in asked
        if candidate.passes and not repeated:
            name = rule.name
            answer = f"rule and lifts {name}" if labeled_rule else f"lifts {name}"
            text = withdrawal_question_text(candidate, label)
            questions.append(Question(candidate.msg, name, "withdrawal", text, answer_label=answer))
        flags.append(PossibleWithdrawal(candidate.rule.name, candidate.msg, candidate.words))
    return tuple(questions), tuple(flags)


def _plain(text: str) -> str:
    """The comparison form of rule words: case and spacing ignored."""
    return " ".join(text.casefold().split())


class _HeldWords:
    """Rule words already held, asked whether any stands in a text: indexed by their first two words, so a
    span of many messages costs what its messages cost, not messages times rules."""

    def __init__(self, words: Iterable[str] = ()) -> None:
        self._by_start: dict[tuple[str, ...], list[str]] = {}
        for plain in words:
            self.add(plain)

    def add(self, plain: str) -> None:
        self._by_start.setdefault(tuple(plain.split(" ", 2)[:2]), []).append(plain)

    def any_in(self, plain_text: str) -> bool:
        tokens = plain_text.split(" ")
        starts = {tuple(tokens[at : at + 2]) for at in range(len(tokens))} | {(token,) for token in tokens}
        return any(words in plain_text for start in starts for words in self._by_start.get(start, ()))


def rule_doubts(
    labels: Sequence[tuple[str, Label]],
    offered: Mapping[str, OfferedMessage],
    recorded: Mapping[str, NewRule],
    excluded: Collection[str],
    held_words: Sequence[str] = (),
) -> tuple[tuple[str, NewRule], ...]:
    """The rules a disputed label gives, by message: a ``not a rule`` message code reads as a standing rule
    (recorded from the reading's range, ``model-read-one-off``), and a ``rule`` message with no standing
    marker (its recorded rule, ``reads-as-request``). ``excluded``: messages the model decides alone.
    ``held_words``: the words of the rules in force; a ``not a rule`` message that holds one of them (the
    rule bound to a newer message holding the same words, QUOTE-7) loses nothing, so it is not doubted."""
    held = _HeldWords(_plain(words) for words in held_words if words.strip())
    out: list[tuple[str, NewRule]] = []
    for msg, label in labels:
        message = offered.get(msg)
        if message is None or msg in excluded:
            continue
        if label.kind == "not-a-rule":
            if held.any_in(_plain(message.text)):
                continue
            found = second_look_rule(message.text)
            if found is None:
                continue
            held.add(_plain(found.words))
            out.append((msg, NewRule(msg, found.words, found.start, found.end, doubt=found.doubt)))
        elif label.kind == "rule":
            own = recorded.get(msg)
            if (
                own is not None
                and own.message == msg
                and own.doubt is None
                and reads_as_request(message.text)
            ):
                out.append((msg, replace(own, doubt="reads-as-request")))
    return tuple(out)


def _flagged(rules: Sequence[Rule]) -> set[str]:
    return {r.id for r in rules if r.possiblyWithdrawnBy is not None}


def flag_carried_withdrawals(rules: Sequence[Rule], carried: Mapping[str, str]) -> list[Rule]:
    """The rules with each rule in force that a carried message (``u<n>`` -> its text) may withdraw flagged
    (not lifted: only a verified label lifts); ``rules`` are not changed, a flagged rule is a copy."""
    offered = [OfferedMessage(uid, text) for uid, text in carried.items()]
    standing = [r for r in standing_rules(rules) if r.name not in _flagged(rules)]
    flags = {c.rule.name: c for c in withdrawal_candidates(offered, standing) if clean_line(c.words).strip()}
    return _with_flags(rules, flags)


_Flagged = TypeVar("_Flagged", Rule, CarriedMessage)


def _with_flags(items: Sequence[_Flagged], flags: Mapping[str, WithdrawalCandidate]) -> list[_Flagged]:
    """``items`` with each one ``flags`` names by id copied with its flag (who, and the user's words)."""
    return [
        item.model_copy(
            update={
                "possiblyWithdrawnBy": flags[item.id].msg,
                "withdrawalWords": clean_line(flags[item.id].words),
            }
        )
        if item.id in flags
        else item
        for item in items
    ]


def flag_withdrawn_carried(
    carried: Sequence[CarriedMessage], texts: Mapping[str, str]
) -> list[CarriedMessage]:
    """The carried messages with each one a later message may withdraw flagged, as a rule in force would be.

    Ours: a span that closed narrative-less or partial shows the user's carried words verbatim, a rule among
    them included, and the later message withdrawing it may be carried too, or judged and gone. Read as a
    rule whose words are the whole carried text, each unlabeled carried message gets the first later message
    (``texts``: this span's user messages; the carried ones besides) that withdraws or reverses it, so the
    summary shows the user's sentence under it instead of a rule that looks standing. A flag is kept."""
    open_ = [m for m in carried if not m.labeled and m.text and m.possiblyWithdrawnBy is None]
    if not open_:
        return list(carried)
    said = {m.id: m.text for m in carried if not m.labeled and m.text}
    said.update(texts)
    offered = [OfferedMessage(uid, text) for uid, text in said.items()]
    standing = [StandingRule(m.id, m.id, m.text) for m in open_]
    flags: dict[str, WithdrawalCandidate] = {}
    for candidate in withdrawal_candidates(offered, standing):
        if candidate.rule.name not in flags and clean_line(candidate.words).strip():
            flags[candidate.rule.name] = candidate
    return _with_flags(carried, flags)
