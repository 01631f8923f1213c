"""A user reverses a rule in words no withdrawal expression covers: code flags that rule, it never lifts it.

Users rarely say "no longer applies". They say "feel free to use print again", "you can go back to tabs",
"I changed my mind about the changelog", "stop running black before commits". None of these passes the lift
check (LIFT-1, LIFT-2; LIFT-6 refuses a permission), and a weak model often labels them ``not a rule``, so
the withdrawn rule would stand in every later summary. Code reads each sentence of a later message's judged
text for a *reversal* of a rule in force and, when it finds one, the rule is shown with the user's sentence
under it (``possibly withdrawn by``), exactly like a withdrawal candidate the model did not confirm
(:mod:`~longhaul_daemon.passes.answers.doubts`). Only the user's own words and a verified label lift a rule.

Ours, in one sentence (a line break or ``. ! ?`` ends one) that is neither a question nor scoped to this once
(:data:`~longhaul_daemon.passes.answers.doubts.ONE_OFF_MARKERS` style, :data:`ONCE`):

- it holds a cue of one kind: a :data:`CHANGES_OF_MIND` cue not ordered away ("changed my mind about",
  "ignore my earlier note"); a :data:`PERMISSIONS` cue, with no negation in the sentence, against a rule that
  forbids ("print statements are fine now" against "never use print statements"); a :data:`RETURNS` cue with
  no negation ("go back to tabs"; "don't go back to tabs" restates); or a :data:`RELEASES` cue against a rule
  that orders something done ("stop running black" reverses "always run black"; "no more new dependencies"
  restates "never add dependencies");
- and it is tied to the rule by shared word stems (LIFT-4's significant words, plural and -ed/-ing endings
  cut, so "messages" meets "message"): a change of mind needs two, one of :data:`MIN_LONE_STEM`
  characters, or half the rule's ("ignore my note about tabs" against "indent with tabs"); the other,
  weaker cues, common in plain work requests ("you can run the tests now", "back to the parser bug"),
  need two, or one of :data:`MIN_LONE_STEM_WEAK`.

A sentence holding the rule's recorded words whole restates it, and reverses nothing. Each message's cued
sentences and each rule's shape are read once (:func:`cued_sentences`, :func:`rule_shape`), so a span costs
what its messages cost, and a message with no cue costs no rule anything. Pure; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.answers.lifts import significant_words

__all__ = [
    "CHANGES_OF_MIND",
    "MIN_LONE_STEM",
    "MIN_LONE_STEM_WEAK",
    "NEGATIONS",
    "ONCE",
    "PERMISSIONS",
    "RELEASES",
    "RETURNS",
    "SENTENCE",
    "THIS_ONCE",
    "CuedSentence",
    "RuleShape",
    "cued_sentences",
    "forbids",
    "reversal_in",
    "reversal_of",
    "rule_shape",
    "stems",
]

MIN_LONE_STEM = 5  # one shared stem this long ties a change of mind to a rule ("print" does, "use" never)
MIN_LONE_STEM_WEAK = 7  # and a weaker cue: "changelog" does, "commit" and "server" do not

PERMISSIONS: tuple[str, ...] = (
    "you may",
    "you can",
    "you could",
    "feel free",
    "go ahead",
    "free to",
    "fine to",
    "ok to",
    "okay to",
    "allowed",
    "permitted",
    "welcome to",
    "is fine",
    "are fine",
    "is ok",
    "are ok",
    "is okay",
    "are okay",
    "is acceptable",
    "are acceptable",
)
RETURNS: tuple[str, ...] = ("go back to", "back to", "switch back", "revert to", "as before")
CHANGES_OF_MIND: tuple[str, ...] = (
    "changed my mind",
    "change of plan",
    "change of plans",
    "on second thought",
    "on second thoughts",
    "take that back",
    "take back",
    "scratch that",
    "disregard",
    "ignore my",
    "ignore the earlier",
    "ignore the previous",
    "ignore what i",
    "done with",
    "over with",
    "the opposite",
)
RELEASES: tuple[str, ...] = (
    "stop",
    "skip",
    "no more",
    "optional",
    "don't bother",
    "do not bother",
    "no need",
    "not needed",
    "not necessary",
    "unnecessary",
    "not required",
    "don't have to",
    "do not have to",
    "needn't",
)
NEGATIONS: tuple[str, ...] = ("not", "never", "no", "cannot", "nobody", "nothing", "nowhere")  # and any n't
# the scope phrases a request for this once holds; doubts.py's one-off reading uses them too
THIS_ONCE: tuple[str, ...] = (
    "this once",
    "this one time",
    "this time",
    "for now",
    "for this change",
    "for this commit",
    "for this fix",
    "for the next commit",
)
ONCE: tuple[str, ...] = (*THIS_ONCE, "for the moment", "right now", "just now", "today only")
# a rule that forbids: a release cue against it restates it ("no more new dependencies")
_FORBIDDING = re.compile(
    r"(?<![\w'-])(?:never|don't|do not|doesn't|does not|no|avoid|without|nothing|mustn't|must not|"
    r"shouldn't|should not|cannot|can't|nobody|forbidden)(?![\w'-])",
    re.IGNORECASE,
)
SENTENCE = re.compile(r"[^.!?…\n]+(?:[.!?…]+|$)", re.MULTILINE)  # a sentence, as LIFT-3 ends one
_ENDINGS = ("ies", "es", "s", "ed", "ing")


def _cue(phrases: Iterable[str]) -> re.Pattern[str]:
    body = "|".join(r"\s+".join(map(re.escape, p.split())) for p in phrases)
    return re.compile(rf"(?<![\w'-])(?:{body})(?![\w-])", re.IGNORECASE)


_PERMISSION = _cue(PERMISSIONS)
_RETURN = _cue(RETURNS)
_CHANGE = _cue(CHANGES_OF_MIND)
_RELEASE = _cue(RELEASES)
_ONCE = _cue(ONCE)
_NEGATION = re.compile(rf"(?<![\w'-])(?:{'|'.join(NEGATIONS)})(?![\w'-])|\w+n't(?![\w'-])", re.IGNORECASE)
_ORDERED_AWAY = re.compile(r"(?:\b\w+n't|\bnot|\bnever)\s+\Z", re.IGNORECASE)


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)] + ("y" if ending == "ies" else "")
    return word


def stems(text: str) -> frozenset[str]:
    """LIFT-4's significant words of ``text`` with a plural or -ed/-ing ending cut: a crude stem, enough to
    tie "commit messages" to "every commit message"."""
    return frozenset(_stem(word) for word in significant_words(text))


def forbids(rule_words: str) -> bool:
    """Whether the rule forbids something ("never …", "don't …", "no …", "avoid …") rather than orders it."""
    return _FORBIDDING.search(rule_words.replace("\u2019", "'")) is not None


@dataclass(frozen=True, slots=True)
class CuedSentence:
    """A sentence of a message that holds a reversal cue, read once whatever the rules: its ``stems`` and
    which cues it holds (``change``: a change of mind not ordered away; the others only where the module's
    reading lets them count)."""

    text: str
    stems: frozenset[str]
    plain: str
    change: bool
    permission: bool
    back: bool
    release: bool


@dataclass(frozen=True, slots=True)
class RuleShape:
    """What a reversal is read against, read once per rule: its stems, whether it forbids, its words."""

    stems: frozenset[str]
    forbidding: bool
    restated: str


def rule_shape(rule_words: str) -> RuleShape:
    return RuleShape(stems(rule_words), forbids(rule_words), _plain(rule_words).rstrip(".!?… "))


def cued_sentences(judged: str) -> tuple[CuedSentence, ...]:
    """The sentences of ``judged`` that may reverse some rule: not a question, not scoped to this once, and
    holding a cue. A message without one costs no rule anything more."""
    text = judged.replace("\u2019", "'")
    out: list[CuedSentence] = []
    for match in SENTENCE.finditer(text):
        sentence = match.group().strip()
        if not sentence or sentence.endswith("?") or _ONCE.search(sentence):
            continue
        change = any(not _ORDERED_AWAY.search(sentence[: m.start()]) for m in _CHANGE.finditer(sentence))
        negated = _NEGATION.search(sentence) is not None
        permission = not negated and _PERMISSION.search(sentence) is not None
        back = not negated and _RETURN.search(sentence) is not None
        release = _RELEASE.search(sentence) is not None
        if change or permission or back or release:
            out.append(
                CuedSentence(sentence, stems(sentence), _plain(sentence), change, permission, back, release)
            )
    return tuple(out)


def _tied(shared: frozenset[str], rule_stems: frozenset[str], lone: int, *, half: bool = False) -> bool:
    if half and shared and 2 * len(shared) >= len(rule_stems):
        return True
    return len(shared) >= 2 or any(len(stem) >= lone for stem in shared)


def _reverses(sentence: CuedSentence, rule: RuleShape) -> bool:
    shared = sentence.stems & rule.stems
    if sentence.change:
        return _tied(shared, rule.stems, MIN_LONE_STEM, half=True)
    weak = (
        (rule.forbidding and sentence.permission)
        or sentence.back
        or (not rule.forbidding and sentence.release)
    )
    return weak and _tied(shared, rule.stems, MIN_LONE_STEM_WEAK)


def _plain(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").casefold().split())


def reversal_of(cued: Sequence[CuedSentence], rule: RuleShape) -> str | None:
    """The first of ``cued`` (:func:`cued_sentences`) that reverses ``rule`` (:func:`rule_shape`), as the
    module reads it; None when none does."""
    if not rule.stems:
        return None
    for sentence in cued:
        if rule.restated and rule.restated in sentence.plain:
            continue  # the rule's words whole: a restatement
        if _reverses(sentence, rule):
            return sentence.text
    return None


def reversal_in(judged: str, rule_words: str) -> str | None:
    """The first sentence of ``judged`` that reverses the rule recorded as ``rule_words``, stripped."""
    return reversal_of(cued_sentences(judged), rule_shape(rule_words))
