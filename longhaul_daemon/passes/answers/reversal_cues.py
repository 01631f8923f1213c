"""How a user's sentence is read for a reversal, and what a rule orders done: the cues
:mod:`~longhaul_daemon.passes.answers.reversals` ties to rules, read with :mod:`.reversal_words` and
:mod:`.order_words`.

Kept apart from the tying so the vocabulary can grow without touching how a sentence meets a rule. A cue is
read in one sentence that is neither a question nor scoped to this once (:data:`ONCE`), and comes in kinds
that weigh differently against a rule (reversals.py):

- a *change of mind* (:data:`CHANGES_OF_MIND`), not ordered away: "changed my mind about", "never mind the",
  "forget the"; ours besides, the rule called relaxed, ended or of no weight ("relax the rule about",
  "consider it retired", "doesn't matter", "not a priority any more", "off the hook"). Against any rule.
- a *permission* (:data:`PERMISSIONS`, "whatever … you like"), with no negation in its clause: "print is fine
  now", "you have my blessing to push", "back on the menu". Against a rule that forbids or restricts. Not
  "can be" nor "on you", which plain work uses ("keep the migrations idempotent so they can be rerun").
- a permission to change something (:data:`ALTERATIONS`: "feel free to change the format"). Against any rule.
- a *return* (:data:`RETURNS`) with no negation: "go back to tabs".
- a *release* of work a rule orders done: :data:`RELEASES` not ordered away ("stop running black", "quit
  adding type hints", "we dropped the changelog"), a :data:`CLAUSE_END_RELEASES` phrase ending its clause
  ("the test-first routine can go"), "no prefix needed" and "hints aren't required", a person no longer
  doing it ("we don't do dry runs anymore", "nobody runs the generator any more"), a practice said to be over
  (:data:`PRACTICES`: "the dry-run step is gone"). News about a thing is no release ("the benchmarks don't
  fail anymore", "the flake is gone"). A release counts against what a rule orders (:func:`ordered_words`):
  "no more new dependencies" restates "never add dependencies", and "no need for --dry-run any more"
  releases "never run a migration without --dry-run".

A sentence may also say that its change lasts (:attr:`Cues.states_withdrawal`, ours): a lasting time
(:data:`.order_words.LASTING`: "anymore", "from now on"), or the order itself named or said to be over
(:data:`.order_words.EARLIER_ORDERS`: "the rule I mentioned"; "the freeze is over"), unless it says the
order still stands. Such a sentence withdraws something even when no rule's stems tie it. Ours besides: an
order named and said to be over (:attr:`Cues.order_ended`: "kill the no-emoji rule", "the … requirement -
gone"; a practice only "gone" or "dropped", for "the lint check is done" is news) weighs as a change of mind.
Sentences are read with chat's missing apostrophes put back (:func:`spelled_out`).

Pure regular expressions over the sentence; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from longhaul_daemon.passes.answers.lifts import may_withdraw
from longhaul_daemon.passes.answers.order_words import (
    COMPLETED,
    EARLIER_ORDERS,
    ENDED,
    ENDING_VERBS,
    LASTING,
    ORDERS,
    PRACTICES,
)
from longhaul_daemon.passes.answers.reversal_words import (
    ALTERATIONS,
    CHANGES_OF_MIND,
    CLAUSE_END_RELEASES,
    CONDITIONS,
    NEGATIONS,
    ONCE,
    PASSING_WORK,
    PERMISSIONS,
    RELEASES,
    RETURNS,
    UNMARKED_CONTRACTIONS,
)

__all__ = [
    "Cues",
    "forbids",
    "may_state_withdrawal",
    "ordered_words",
    "sentence_cues",
    "spelled_out",
    "without_cue_words",
    "without_marker_words",
]

_PROHIBITING_WORDS = (
    "never|don't|do not|doesn't|does not|no|avoid|nothing|mustn't|must not|shouldn't|should not|cannot|can't|"
    "nobody|forbidden"
)
# a rule that forbids or restricts: a permission reverses it ("print is fine now" against "never use print")
_FORBIDDING = re.compile(rf"(?<![\w'-])(?:{_PROHIBITING_WORDS}|without|only)(?![\w'-])", re.IGNORECASE)
# a rule that prohibits something ("without" and "only" restrict, but say what to do)
_PROHIBITION = re.compile(rf"(?<![\w'-])(?:{_PROHIBITING_WORDS})(?![\w'-])", re.IGNORECASE)
_CONDITIONAL_ORDER = re.compile(
    r"(?<![\w'-])(?:never|don't|do not|no|mustn't|must not|shouldn't|should not|cannot|can't)(?![\w'-])"
    r"[^.!?;:]*?(?<![\w'-])(?:without|unless|until|before|except)(?![\w'-])(?P<condition>[^.!?;:]*)",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[^,;:\u2014\u2013]+")
_CONDITIONS = "|".join(r"\s+".join(c.split()) for c in CONDITIONS)
_CONDITIONAL_MODAL = re.compile(
    rf"(?<![\w'-])(?:{_CONDITIONS})\s+(?:you|u)\s+(?:can|could|may)(?![\w'-])", re.IGNORECASE
)


def _cue(phrases: Iterable[str], *, ends: str = r"(?![\w-])") -> re.Pattern[str]:
    """Any of ``phrases`` as whole words, any spacing between their words; ``ends``: what may not follow."""
    body = "|".join(r"\s+".join(map(re.escape, p.split())) for p in phrases)
    return re.compile(rf"(?<![\w'-])(?:{body}){ends}", re.IGNORECASE)


_PERMISSION = _cue(PERMISSIONS)
_RETURN = _cue(RETURNS)
_CHANGE = _cue(CHANGES_OF_MIND)
_RELEASE = _cue(RELEASES)
_ONCE = _cue(ONCE)
_WORK_UNIT = "|".join(r"\s+".join(unit.split()) for unit in PASSING_WORK)
_PASSING_WORK = re.compile(
    r"(?<![\w'-])(?:for|in|on|with)\s+(?:just\s+)?(?:this|that|the\s+next)\s+(?:[\w-]+\s+){0,2}?"
    rf"(?:{_WORK_UNIT})(?![\w'-])",
    re.IGNORECASE,
)
_CLAUSE_END_RELEASE = re.compile(
    r"(?<![\w'-])(?:" + "|".join(r"\s+".join(p.split()) for p in CLAUSE_END_RELEASES) + ")"
    r"(?:\s+now)?\s*(?=[,;:.!\u2014\u2013]|\Z)",
    re.IGNORECASE,
)
_NOT_NEEDED = re.compile(
    r"(?<![\w'-])no\s+(?:[\w-]+\s+){1,2}(?:needed|required|necessary)(?![\w-])"
    # "type hints aren't required any more", "the changelog isn't mandatory"
    r"|(?:n't|(?<![\w'-])not)\s+(?:be\s+)?(?:[\w-]+\s+)?(?:needed|required|necessary|mandatory|compulsory)"
    r"(?![\w-])",
    re.IGNORECASE,
)
_ORDER = "|".join(ORDERS)
_PRACTICE = "|".join((*PRACTICES, *ORDERS))
_ENDING_VERBS = "|".join(r"\s+".join(verb.split()) for verb in ENDING_VERBS)
_ENDED = "|".join(r"\s+".join(state.split()) for state in ENDED)
_NAMING = r"(?:\s+[^\s,;:.!?\u2014\u2013]+){0,4}?"  # a few naming words ("the freeze on new dependencies")
_BE = r"(?:'s\s+|\s+(?:is|are|was|were|has\s+been|have\s+been|has|have)\s+|\s*[:\u2014\u2013-]\s*)(?:now\s+)?"
# a practice or the order itself said to be over, or set off by a dash ("the top-level tests/ requirement -
# gone"); only an order is over when it is done ("the lint check is done" is news)
_PRACTICE_ENDED = re.compile(
    rf"(?<![\w'-])(?:(?:{_PRACTICE})s?{_NAMING}{_BE}(?:{_ENDED})|(?:{_ORDER})s?{_NAMING}{_BE}(?:{'|'.join(COMPLETED)}))"
    r"(?![\w'-])"
    # "keeping tests in tests/ isn't a thing here anymore", "it's not a rule anymore"
    rf"|(?:n't|(?<![\w'-])not)\s+a\s+(?:{_PRACTICE})(?:\s+\w+){{0,2}}?\s+(?:anymore|any\s+more|any\s+longer)"
    r"(?![\w'-])",
    re.IGNORECASE,
)
# ours: a verb that ends an order, aimed at it ("kill the secrets-must-be-env-vars rule")
_ORDER_ENDED = re.compile(
    rf"(?<![\w'-])(?:{_ENDING_VERBS})\s+"
    rf"(?:the|that|this|my|our|your)\s+(?:[^\s,;:.!?\u2014\u2013]+\s+){{0,4}}?(?:{_PRACTICE})s?(?![\w'-])",
    re.IGNORECASE,
)
# ours: a permission to do it without what the rule orders first ("you can delete files without asking me")
_WITHOUT_DOING = re.compile(r"(?<![\w'-])without\s+\w+ing(?![\w'-])", re.IGNORECASE)
_UNMARKED = re.compile(rf"(?<![\w'-])({'|'.join(UNMARKED_CONTRACTIONS)})(?![\w'-])", re.IGNORECASE)
_LASTING = _cue(LASTING, ends=r"(?![\w'-])")
_EARLIER_ORDER = _cue(EARLIER_ORDERS, ends=r"(?![\w'-])")
# ours: a person no longer doing it, in one clause ("we don't run the dry run anymore", "nobody runs the
# generator any more"); a thing that no longer does something is news, not a release ("the benchmarks
# don't fail anymore"); against a rule that forbids, it restates it ("we don't push to main any more")
# The spans between subject, negation and "anymore" are bounded (120 characters), so a long clause
# repeating "you can" costs each start a bounded look, not the rest of the clause (linear, not quadratic).
_NO_LONGER_DONE = re.compile(
    r"(?<![\w'-])(?:(?:we|you|i|they)(?:'re|'ll|'ve)?(?![\w'-])[^,;:\u2014\u2013]{0,120}?"
    r"(?:n't|(?<![\w'-])(?:not|never))|nobody|no\s+one)(?![\w'-])"
    r"[^,;:\u2014\u2013]{0,120}?(?<![\w'-])(?:anymore|any\s+more|any\s+longer)(?![\w'-])",
    re.IGNORECASE,
)
# ours: a permission to do it any way one likes ("write them in whatever language you like")
_AS_YOU_LIKE = re.compile(
    r"(?<![\w'-])(?:whatever|any)\s+(?:[\w-]+\s+){0,2}(?:you|u)\s+(?:like|want|prefer|choose|see\s+fit)(?![\w'-])",
    re.IGNORECASE,
)
_ALTERATION = re.compile(
    r"(?<![\w'-])(?:free to|fine to|ok to|okay to|allowed to|welcome to|can|may|could)\s+(?:[\w-]+\s+)?"
    rf"(?:{'|'.join(ALTERATIONS)})(?![\w-])",
    re.IGNORECASE,
)
# "the rule still stands otherwise": whatever else the sentence says, the order is said to hold
_STILL_HOLDS = re.compile(
    r"(?<![\w'-])still\s+(?:stands?|holds?|applies|apply|in\s+force|valid)(?![\w'-])", re.IGNORECASE
)
_NEGATION = re.compile(rf"(?<![\w'-])(?:{'|'.join(NEGATIONS)})(?![\w'-])|\w+n't(?![\w'-])", re.IGNORECASE)
_ORDERED_AWAY = re.compile(r"(?:\b\w+n't|\bnot|\bnever)\s+\Z", re.IGNORECASE)
_AWAY_REACH = 48  # how far before a cue "not"/"never" is looked for: one word and its spaces
_CUES = (_PERMISSION, _RETURN, _CHANGE, _RELEASE, _CLAUSE_END_RELEASE)
_ENDED_WORK = (_CLAUSE_END_RELEASE, _NOT_NEEDED, _NO_LONGER_DONE, _PRACTICE_ENDED)


def forbids(rule_words: str) -> bool:
    """Whether the rule forbids or restricts ("never …", "don't …", "no …", "… only") rather than orders."""
    return _FORBIDDING.search(rule_words.replace("\u2019", "'")) is not None


def ordered_words(rule_words: str) -> str:
    """What a rule orders done, which a release ("no need for --dry-run any more") reverses: the whole rule
    when it prohibits nothing ("run migrations only with --dry-run"), the condition of what it prohibits
    ("never run a migration without --dry-run": the dry run; "never add dependencies without asking me":
    the asking, so "no more new dependencies" restates it), else nothing ("never add dependencies")."""
    text = rule_words.replace("\u2019", "'")
    if _PROHIBITION.search(text) is None:
        return text
    return " ".join(m.group("condition") for m in _CONDITIONAL_ORDER.finditer(text))


def _ordered_away(sentence: str, at: int) -> bool:
    """Whether the word just before ``at`` negates the cue there ("do not forget ..."): read on a short
    window, so a sentence of many cues costs each a bounded look. A window starting inside a word starts
    after it, so "cannot" never reads as "not"."""
    start = max(0, at - _AWAY_REACH)
    while 0 < start < at and (sentence[start - 1].isalnum() or sentence[start - 1] in "'_"):
        start += 1
    return _ORDERED_AWAY.search(sentence, start, at) is not None


def _permitted(sentence: str, pattern: re.Pattern[str]) -> bool:
    """A permission cue in a clause with no negation: "go ahead and push, no need to wait" permits; "if you
    can" does not."""
    sentence = _CONDITIONAL_MODAL.sub(lambda m: " " * len(m.group()), sentence)
    for clause in _CLAUSE.finditer(sentence):
        part = clause.group()
        if pattern.search(part) and not _NEGATION.search(part):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Cues:
    """The kinds of cue one sentence holds (the module docstring says how each weighs)."""

    change: bool
    permission: bool
    back: bool
    release: bool
    alteration: bool
    lasting: bool = False  # the sentence says its change lasts (LASTING)
    about_order: bool = False  # it names the order itself (EARLIER_ORDERS) or says a practice ended
    order_ended: bool = False  # it says the order or practice itself is over ("the … rule can go")

    def __bool__(self) -> bool:
        return self.change or self.permission or self.back or self.release or self.alteration

    @property
    def states_withdrawal(self) -> bool:
        """A change, release or permission said to last: it withdraws something, named or not."""
        said = self.lasting or self.about_order
        return said and (self.change or self.release or self.permission or self.alteration)


def sentence_cues(sentence: str, *, withdrawing: bool) -> Cues | None:
    """The cues of one stripped sentence (’ read as '), or None when it is a question, is scoped to this once,
    or holds none. ``withdrawing``: whether its message holds a LIFT-2 expression (then the sentence's own
    one counts as a change of mind)."""
    if not sentence or sentence.endswith("?") or _ONCE.search(sentence) or _PASSING_WORK.search(sentence):
        return None
    ended = any(not _ordered_away(sentence, m.start()) for m in _ORDER_ENDED.finditer(sentence))
    change = ended or any(not _ordered_away(sentence, m.start()) for m in _CHANGE.finditer(sentence))
    change = change or (withdrawing and may_withdraw(sentence))
    negated = _NEGATION.search(sentence) is not None
    holds = _STILL_HOLDS.search(sentence) is not None
    release = any(not _ordered_away(sentence, m.start()) for m in _RELEASE.finditer(sentence))
    permission = _permitted(sentence, _PERMISSION) or _permitted(sentence, _AS_YOU_LIKE)
    release = release or (permission and _WITHOUT_DOING.search(sentence) is not None)
    ended = ended or _PRACTICE_ENDED.search(sentence) is not None
    named = ended or _EARLIER_ORDER.search(sentence) is not None
    cues = Cues(
        change=change,
        permission=permission,
        back=not negated and _RETURN.search(sentence) is not None,
        release=release or any(p.search(sentence) for p in _ENDED_WORK),
        alteration=_permitted(sentence, _ALTERATION),
        lasting=_LASTING.search(sentence) is not None and not holds,
        about_order=named and not holds,
        order_ended=ended and not holds,
    )
    return cues if cues else None


def may_state_withdrawal(text: str) -> bool:
    """Whether ``text`` holds a marker a sentence needs for :attr:`Cues.states_withdrawal`: when it holds
    none, no sentence of it states a withdrawal, and no sentence need be read."""
    text = spelled_out(text.replace("\u2019", "'"))
    return any(p.search(text) for p in (_LASTING, _EARLIER_ORDER, _PRACTICE_ENDED, _ORDER_ENDED))


def spelled_out(text: str) -> str:
    """``text`` with the apostrophe chat leaves out put back ("dont" is "don't"): cues are read on it."""
    return _UNMARKED.sub(lambda m: m.group()[:-1] + "'t", text) if "nt" in text.casefold() else text


def without_cue_words(sentence: str) -> str:
    """The sentence with its cues' own words blanked, so "changed my mind" ties no rule about minds."""
    for pattern in _CUES:
        sentence = pattern.sub(lambda m: " " * len(m.group()), sentence)
    return sentence


def without_marker_words(sentence: str) -> str:
    """:func:`without_cue_words`, and the lasting markers blanked too ("the rule I mentioned" names no
    topic)."""
    sentence = _LASTING.sub(lambda m: " " * len(m.group()), without_cue_words(sentence))
    return _EARLIER_ORDER.sub(lambda m: " " * len(m.group()), sentence)
