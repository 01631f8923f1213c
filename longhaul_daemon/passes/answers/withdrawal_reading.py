"""Which later user messages may withdraw which rules in force, read by code before and after the model.

The withdrawal half of code's second look (:mod:`.doubts` has the rest): a weak model misses withdrawals, so
code reads every later message of a chunk against the rules in force itself. Decisions:

- A withdrawal candidate is a later message whose judged text passes the lift check against a rule in force
  (LIFT-1, LIFT-2, LIFT-4, QUOTE-12..15), or that names the rule by id, or shares a word with it after a
  :data:`FORGET_MARKERS` word. Only one whose lift check passes is asked about (LIFT-18); the others flag.
- Ours: a sentence that reverses the rule in words no withdrawal expression covers (:mod:`.reversals`) is a
  candidate that can only be flagged, never asked nor lifted (LIFT-6: a permission still lifts nothing).
- Ours: a sentence that says its change lasts but that no rule's stems tie is tied loosely, to the rules
  its words are most about (:func:`.reversals.closest_rules`), flagged only.
- A message that states a withdrawal no lift check passes for (:func:`untied_withdrawal`) is offered the
  rules in force by the call's schema (call_schemas.py); the rule the model names is flagged (verify.py).

Pure functions over one chunk's offered messages and rules; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.answers.judged import judged_text
from longhaul_daemon.passes.answers.labels import Label, format_label, id_number
from longhaul_daemon.passes.answers.lifts import may_withdraw, passes_lift_check, significant_words
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.reversal_cues import forbids, may_state_withdrawal
from longhaul_daemon.passes.answers.reversals import (
    SENTENCE,
    CuedSentence,
    RuleShape,
    closest_rules,
    cued_sentences,
    reversal_tie,
    rule_shape,
    rule_topics,
)
from longhaul_daemon.state.model import Rule
from longhaul_daemon.state.sanitize import sanitize

__all__ = [
    "FORGET_MARKERS",
    "WITHDRAWAL_WORDS_CHARS",
    "StandingRule",
    "WithdrawalCandidate",
    "forgets",
    "lift_checked",
    "message_number",
    "standing_rules",
    "untied_withdrawal",
    "withdrawal_candidates",
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
        reversed_: list[tuple[WithdrawalCandidate, int]] = []
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
            reversing = reversal_tie(cued, shape)  # ours: flagged only, the lift check never passes
            if reversing is not None:
                words = _cut(" ".join(reversing[0].split()))
                reversed_.append((WithdrawalCandidate(message.id, rule, False, words), reversing[1]))
        out += _best_tied(reversed_)
        if len(out) == before:
            out += _loosely_tied(message.id, cued, eligible, topics)
    return tuple(out)


def _best_tied(reversed_: Sequence[tuple[WithdrawalCandidate, int]]) -> list[WithdrawalCandidate]:
    """The reversals of one message tied more than half as strongly as the best: "tests go next to the module,
    the tests/ directory rule is over" shares "test" with every rule about tests, but more with one."""
    best = max((tie for _, tie in reversed_), default=0)
    return [candidate for candidate, tie in reversed_ if 2 * tie > best]


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
