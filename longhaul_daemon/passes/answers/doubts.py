"""Code looks for withdrawals and disputed rule labels itself, so one a model misses is never left unseen.

A weak model may miss a withdrawal, call a standing instruction ``not a rule``, or label a one-off ``rule``;
each would put a wrong rule before the agent after every later compaction. Pure functions over one chunk's
offered messages and rules, called by :mod:`~longhaul_daemon.passes.answers.verify` once labels are judged,
so the Diff and turns mode both get them (docs/how-it-works.md, "Code's second look"). Decisions:

- A withdrawal candidate is a later message whose judged text passes the lift check against a rule in force
  its label does not lift (LIFT-1, LIFT-2, LIFT-4, QUOTE-12..15), or that names the rule by id, or after a
  :data:`FORGET_MARKERS` word; each becomes one question in the chunk's question call (LIFT-18), and a
  confirmed lift passes every store check again (LIFT-16).
- A candidate left unlifted flags its rule *possibly withdrawn* with the message id and sentence, carried
  messages included (FAIL-11, :func:`flag_carried_withdrawals`). Ours besides: a sentence that reverses the
  rule in words no withdrawal expression covers (a permission against a rule that forbids, "go back to",
  "changed my mind about", "stop …" against a rule that orders; :mod:`.reversals`) is a candidate that can
  only be flagged, never asked nor lifted (LIFT-6: a permission still lifts nothing).
- Rule doubts cost no call: ``not a rule`` on a message the standing-rule reading picks records the rule as
  ``model-read-one-off``; on one only the wider reading picks (ours, :func:`.rule_reading.read_possible_rule`)
  as ``may-be-standing``, unless the message withdraws, reverses or asks for something once. ``rule`` on a
  message neither reading picks is marked ``reads-as-request`` (TAKEOVER-4). A ``rule`` label on words
  :mod:`.one_offs` reads as a one-off request records no rule at all (verify.py); only the words a rule
  would record are judged (the whole of a short message, the quoted sentence of a long one).
- A message that states a withdrawal code ties to no rule (:func:`untied_withdrawal`) is offered the rules
  in force by the call's schema; the rule the model names is flagged, never lifted (verify.py). Ours
  besides: when its sentence says the change lasts and no rule's stems tie it, the rules its words are
  loosely about (:func:`.reversals.closest_rules`) are flagged whatever the model says.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from longhaul_daemon.passes.answers.events import NewRule, PossibleWithdrawal, Question, RuleDoubt
from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.labels import Label, format_label, id_number
from longhaul_daemon.passes.answers.lifts import may_withdraw, passes_lift_check, significant_words
from longhaul_daemon.passes.answers.one_offs import one_off_request
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE, OfferedMessage, quotable_text
from longhaul_daemon.passes.answers.reversal_cues import forbids, may_state_withdrawal
from longhaul_daemon.passes.answers.reversals import (
    SENTENCE,
    CuedSentence,
    RuleShape,
    closest_rules,
    cued_sentences,
    reversal_of,
    rule_shape,
    rule_topics,
)
from longhaul_daemon.passes.answers.rule_reading import Reading, read_possible_rule, read_standing_rule
from longhaul_daemon.state.clean import clean_line, clean_span
from longhaul_daemon.state.model import CarriedMessage, Rule
from longhaul_daemon.state.sanitize import sanitize

__all__ = [
    "FORGET_MARKERS",
    "WITHDRAWAL_WORDS_CHARS",
    "StandingRule",
    "WithdrawalCandidate",
    "doubted_reading",
    "flag_carried_withdrawals",
    "flag_withdrawn_carried",
    "forgets",
    "lift_checked",
    "message_number",
    "reads_as_request",
    "rule_doubts",
    "standing_rules",
    "untied_withdrawal",
    "withdrawal_candidates",
    "withdrawal_look",
    "withdrawal_question_text",
    "withdrawing_sentence",
]

WITHDRAWAL_WORDS_CHARS = 300  # how much of the user's withdrawing sentence a flag keeps

FORGET_MARKERS: tuple[str, ...] = ("forget", "disregard", "scratch")
_FORGET = re.compile(r"(?<![\w'’-])(?:" + "|".join(FORGET_MARKERS) + r")(?![\w'’-])", re.IGNORECASE)
_ORDER_NOT_TO = re.compile(r"(?:\bdon['’]t|\bdo\s+not|\bnever)\s+$", re.IGNORECASE)


@dataclass(frozen=True)
class StandingRule:
    """A rule in force a later message may withdraw: ``name`` is how the chunk knows it (``R<n>``, or the
    ``u<n>`` of a rule new in this pass), ``message`` the ``u<n>`` that gave it."""

    name: str
    message: str
    words: str
    replaced_words: tuple[str, ...] = ()


@dataclass(frozen=True)
class WithdrawalCandidate:
    """``msg`` may withdraw ``rule``; ``passes`` says the store's lift check already passes on its words."""

    msg: str
    rule: StandingRule
    passes: bool
    words: str  # the user's sentence that withdraws, from the judged text, cut


def forgets(judged: str) -> bool:
    """A "forget/disregard/scratch" marker that is not itself ordered away ("don't forget the DRY rule")."""
    return any(not _ORDER_NOT_TO.search(judged[: m.start()]) for m in _FORGET.finditer(judged))


def _names(judged: str, rule: StandingRule) -> bool:
    ids = {rule.name, rule.message}
    return any(re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", judged) for i in ids)


def withdrawing_sentence(judged: str) -> str:
    """The user's own words that withdraw: the first sentence with a marker, else the whole judged text."""
    for match in SENTENCE.finditer(judged):
        sentence = match.group().strip()
        if sentence and (may_withdraw(sentence) or forgets(sentence)):
            return _cut(sentence)
    return _cut(" ".join(judged.split()))


def _cut(text: str) -> str:
    return text if len(text) <= WITHDRAWAL_WORDS_CHARS else text[: WITHDRAWAL_WORDS_CHARS - 1] + "…"


def message_number(msg: str) -> int:
    """The n of a ``u<n>`` id (0 for anything else), for ordering messages."""
    return id_number(msg, "u") or 0


def withdrawal_candidates(
    offered: Sequence[OfferedMessage], rules: Sequence[StandingRule]
) -> tuple[WithdrawalCandidate, ...]:
    """The (message, rule) pairs code reads as a possible withdrawal, in message order.

    ``rules`` are the rules in force the chunk knows (the state's and this answer's), less those the answer
    lifted. A message never withdraws a rule it gave, nor one given after it.
    """
    out: list[WithdrawalCandidate] = []
    shapes: dict[str, RuleShape] = {}  # each rule read once, and only when some message may reverse it
    topics: dict[str, frozenset[str]] = {}  # and its topics, only when a message states a withdrawal
    for message in sorted(offered, key=lambda m: message_number(m.id)):
        judged = judged_text(message.text)
        withdraws, forgotten_marker = may_withdraw(judged), forgets(judged)
        cued = cued_sentences(judged, withdrawing=withdraws)
        if not withdraws and not forgotten_marker and not cued:
            continue  # LIFT-6: text without a marker or a reversal cue raises nothing
        here = message_number(message.id)
        own_words = significant_words(judged)
        before = len(out)
        eligible = [r for r in rules if r.message != message.id and message_number(r.message) < here]
        for rule in eligible:
            if withdraws or forgotten_marker:
                verdict = passes_lift_check(judged, rule.words, rule.replaced_words)
                named = withdraws and _names(judged, rule)
                forgotten = forgotten_marker and bool(own_words & significant_words(rule.words))
                if verdict.passed or named or forgotten:
                    words = withdrawing_sentence(judged)
                    out.append(WithdrawalCandidate(message.id, rule, verdict.passed, words))
                    continue
            if not cued:
                continue
            if rule.name not in shapes:
                shapes[rule.name] = rule_shape(rule.words, rule.replaced_words)
            shape = shapes[rule.name]
            reversing = reversal_of(cued, shape)  # ours: flagged only, the lift check never passes
            if reversing is not None:
                out.append(WithdrawalCandidate(message.id, rule, False, _cut(" ".join(reversing.split()))))
        if len(out) == before:
            out += _loosely_tied(message.id, cued, eligible, topics)
    return tuple(out)


def _loosely_tied(
    msg: str, cued: Sequence[CuedSentence], rules: Sequence[StandingRule], known: dict[str, frozenset[str]]
) -> list[WithdrawalCandidate]:
    """A message that states a lasting withdrawal no rule's stems tie: the rules its first such sentence is
    most likely about (:func:`.reversals.closest_rules`), flagged only (ours)."""
    stated = next((c for c in cued if c.cues.states_withdrawal), None)
    if stated is None:
        return []
    cues = stated.cues
    if not (cues.change or cues.permission or cues.alteration or cues.about_order):
        # a release of the act alone restates a prohibition ("we don't push to main anymore"), unlike one
        # of the order itself ("the no-external-libraries restriction is gone")
        rules = [r for r in rules if not forbids(r.words)]
    for rule in rules:  # ``known``: each rule's topics, read once a chunk
        if rule.name not in known:
            known[rule.name] = rule_topics(rule.words, rule.replaced_words)
    names = set(closest_rules(stated.text, {r.name: known[r.name] for r in rules}))
    words = _cut(" ".join(stated.text.split()))
    return [WithdrawalCandidate(msg, r, False, words) for r in rules if r.name in names]


def lift_checked(candidates: Iterable[WithdrawalCandidate]) -> frozenset[str]:
    """The messages some candidate's lift check passes for: none of them is untied."""
    return frozenset(c.msg for c in candidates if c.passes)


def untied_withdrawal(message: OfferedMessage, lifted: Collection[str]) -> bool:
    """A message whose judged text states a withdrawal (LIFT-2: "no longer applies", "is withdrawn"; ours: a
    change, release or permission said to last, :attr:`.reversal_cues.Cues.states_withdrawal`) that no
    lift check passes for (``lifted``: :func:`lift_checked` of this chunk's :func:`withdrawal_candidates`,
    read once for the chunk): the user withdrew something in words that name no rule's distinctive words,
    so only the model can say which."""
    if message.id in lifted:
        return False
    judged = judged_text(message.text)
    if may_withdraw(judged):
        return True
    if not may_state_withdrawal(judged):
        return False  # the usual message: no marker, so no sentence need be read
    return any(c.cues.states_withdrawal for c in cued_sentences(judged, withdrawing=False))


def withdrawal_question_text(candidate: WithdrawalCandidate, given: Label | None) -> str:
    """One focused question in the style of LIFT-12: does this message, in the user's own words, withdraw
    that rule? ``given`` is the message's label in the answer, shown as the other questions show theirs."""
    name = candidate.rule.name
    labeled_rule = given is not None and given.records_rule
    lifts = f"rule and lifts {name}" if labeled_rule else f"lifts {name}"
    keeps = "rule" if labeled_rule else "not a rule"
    shown = format_label(given) if given is not None else "not a rule"
    return (
        f"{candidate.msg} is labeled `{shown}` and may withdraw the rule {name} "
        f"({sanitize(candidate.rule.words)}) in the user's own words: answer `{lifts}` if it does, "
        f"or `{keeps}` if that rule still stands"
    )


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
            found = _doubted(message.text)
            if found is None or held.any_in(_plain(message.text)):
                continue
            start, end, doubt = found
            words = clean_span(quotable_text(message.text), start, end)
            if one_off_request(words):  # the words code would record, not the text around them
                continue
            held.add(_plain(words))
            out.append((msg, NewRule(msg, words, start, end, doubt=doubt)))
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


def standing_rules(rules: Sequence[Rule]) -> list[StandingRule]:
    """The rules in force of a state as a later message may withdraw them, each with the words of the rules
    it replaced (LIFT-8: naming only those lifts nothing)."""
    replaced: dict[str, list[str]] = {}
    for lifted in rules:
        if lifted.liftedBy is not None:
            replaced.setdefault(lifted.liftedBy, []).append(lifted.words)
    return [
        StandingRule(r.id, r.message, r.words, tuple(replaced.get(r.message, ())))
        for r in rules
        if not r.lifted
    ]


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
