"""The words that mark a reversal in a user's sentence, and what a rule orders done: the vocabulary
:mod:`~longhaul_daemon.passes.answers.reversals` ties to rules.

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

Pure regular expressions over the sentence; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from longhaul_daemon.passes.answers.lifts import may_withdraw

__all__ = [
    "ALTERATIONS",
    "CHANGES_OF_MIND",
    "CLAUSE_END_RELEASES",
    "NEGATIONS",
    "ONCE",
    "PERMISSIONS",
    "PRACTICES",
    "RELEASES",
    "RETURNS",
    "THIS_ONCE",
    "Cues",
    "forbids",
    "ordered_words",
    "sentence_cues",
    "without_cue_words",
]

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
    "whatever you like",
    "whatever you want",
    "up to you",
    "welcome to",
    "is fine",
    "are fine",
    "is ok",
    "are ok",
    "is okay",
    "are okay",
    "is acceptable",
    "are acceptable",
    "fine by me",
    "fine with me",
    "ok with",
    "okay with",
    "ok by me",
    "okay by me",
    "my blessing",
    "yours to",
    "back on the table",
    "back on the menu",
    "fair game",
    "free rein",
    "your call",
    "go for it",
    "by all means",
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
    "forget",
    "never mind",
    "ignore my",
    "ignore the earlier",
    "ignore the previous",
    "ignore what i",
    "done with",
    "over with",
    "the opposite",
    # ours, beyond a change of mind: the user calls the rule itself relaxed, ended or of no weight
    "nevermind",
    "reconsidered",
    "rethought",
    "relax",
    "relaxing",
    "loosen",
    "off the hook",
    "doesn't matter",
    "don't matter",
    "does not matter",
    "do not matter",
    "no big deal",
    "not a priority",
    "not a requirement",
    "isn't a requirement",
    "aren't a requirement",
    "isn't a priority",
    "aren't a priority",
    "not worth it",
    "isn't worth",
    "aren't worth",
    "don't worry about",
    "do not worry about",
    "stop worrying",
    "no need to worry",
    "has ended",
    "have ended",
    "retired",
    "suspended",
    "waived",
    "revoked",
    "rescinded",
    "abandoned",
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
    # ours: work the rule orders, left undone from now on ("quit adding type hints", "we dropped the
    # changelog"); like every release, not after "don't" or "never" ("don't drop the prefix")
    "quit",
    "leave out",
    "omit",
    "live without",
    "do without",
    "drop",
    "dropped",
    "dropping",
    "ditch",
    "retire",
    "abandon",
)
# releases that end their clause ("the test-first routine can go, just fix things"): followed by more words
# they are plain work ("it can go in utils.py", "the build is over budget")
CLAUSE_END_RELEASES: tuple[str, ...] = (
    "can go",
    "is over",
    "are over",
    "is history",
    "are history",
)
# changes a permission can allow: "feel free to change the output format" reverses an order to keep it
ALTERATIONS: tuple[str, ...] = (
    "change",
    "drop",
    "remove",
    "skip",
    "rename",
    "rewrite",
    "reformat",
    "alter",
    "modify",
    "break",
    "ignore",
)
NEGATIONS: tuple[str, ...] = ("not", "never", "no", "cannot", "nobody", "nothing", "nowhere")  # and any n't
# the scope phrases a request for this once holds: a sentence holding one reverses nothing (one_offs.py reads
# the wider ONE_OFF_SCOPE for its own question)
THIS_ONCE: tuple[str, ...] = (
    "this once",
    "this one time",
    "this time",
    "for now",
    "for this change",
    "for this commit",
    "for this fix",
    "for the next commit",
    "this particular",
)
ONCE: tuple[str, ...] = (*THIS_ONCE, "for the moment", "right now", "just now", "today only")
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


def _cue(phrases: Iterable[str]) -> re.Pattern[str]:
    body = "|".join(r"\s+".join(map(re.escape, p.split())) for p in phrases)
    return re.compile(rf"(?<![\w'-])(?:{body})(?![\w-])", re.IGNORECASE)


_PERMISSION = _cue(PERMISSIONS)
_RETURN = _cue(RETURNS)
_CHANGE = _cue(CHANGES_OF_MIND)
_RELEASE = _cue(RELEASES)
_ONCE = _cue(ONCE)
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
# ours: a way of working said to be over ("the dry-run step is gone", "that check is off now"); a thing said
# to be gone is news ("the integration flake is gone"), so the subject must name a practice
PRACTICES: tuple[str, ...] = (
    "step",
    "check",
    "habit",
    "routine",
    "business",
    "thing",
    "arrangement",
    "process",
    "practice",
    "ritual",
    "dance",
    "stuff",
    "workflow",
    "procedure",
)
_PRACTICE_ENDED = re.compile(
    rf"(?<![\w'-])(?:{'|'.join(PRACTICES)})s?\s+(?:is|are|'s|has\s+been|have\s+been)\s+"
    r"(?:gone|off|done|dead|over|history|finished)(?![\w'-])",
    re.IGNORECASE,
)
# ours: a person no longer doing it, in one clause ("we don't run the dry run anymore", "nobody runs the
# generator any more"); a thing that no longer does something is news, not a release ("the benchmarks
# don't fail anymore"); against a rule that forbids, it restates it ("we don't push to main any more")
_NO_LONGER_DONE = re.compile(
    r"(?<![\w'-])(?:(?:we|you|i|they)(?:'re|'ll|'ve)?(?![\w'-])[^,;:\u2014\u2013]*?"
    r"(?:n't|(?<![\w'-])(?:not|never))|nobody|no\s+one)(?![\w'-])"
    r"[^,;:\u2014\u2013]*?(?<![\w'-])(?:anymore|any\s+more|any\s+longer)(?![\w'-])",
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
_NEGATION = re.compile(rf"(?<![\w'-])(?:{'|'.join(NEGATIONS)})(?![\w'-])|\w+n't(?![\w'-])", re.IGNORECASE)
_ORDERED_AWAY = re.compile(r"(?:\b\w+n't|\bnot|\bnever)\s+\Z", re.IGNORECASE)
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


def _permitted(sentence: str, pattern: re.Pattern[str]) -> bool:
    """A permission cue in a clause with no negation: "go ahead and push, no need to wait" permits."""
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

    def __bool__(self) -> bool:
        return self.change or self.permission or self.back or self.release or self.alteration


def sentence_cues(sentence: str, *, withdrawing: bool) -> Cues | None:
    """The cues of one stripped sentence (’ read as '), or None when it is a question, is scoped to this once,
    or holds none. ``withdrawing``: whether its message holds a LIFT-2 expression (then the sentence's own
    one counts as a change of mind)."""
    if not sentence or sentence.endswith("?") or _ONCE.search(sentence):
        return None
    change = any(not _ORDERED_AWAY.search(sentence[: m.start()]) for m in _CHANGE.finditer(sentence))
    change = change or (withdrawing and may_withdraw(sentence))
    negated = _NEGATION.search(sentence) is not None
    release = any(not _ORDERED_AWAY.search(sentence[: m.start()]) for m in _RELEASE.finditer(sentence))
    cues = Cues(
        change=change,
        permission=_permitted(sentence, _PERMISSION) or _permitted(sentence, _AS_YOU_LIKE),
        back=not negated and _RETURN.search(sentence) is not None,
        release=release or any(p.search(sentence) for p in _ENDED_WORK),
        alteration=_permitted(sentence, _ALTERATION),
    )
    return cues if cues else None


def without_cue_words(sentence: str) -> str:
    """The sentence with its cues' own words blanked, so "changed my mind" ties no rule about minds."""
    for pattern in _CUES:
        sentence = pattern.sub(lambda m: " " * len(m.group()), sentence)
    return sentence
