"""A user reverses a rule in words no withdrawal expression covers: code flags that rule, it never lifts it.

Users rarely say "no longer applies". They say "feel free to use print again", "you can go back to tabs",
"I changed my mind about the changelog", "stop running black before commits". None of these passes the lift
check (LIFT-1, LIFT-2; LIFT-6 refuses a permission), and a weak model often labels them ``not a rule``, so
the withdrawn rule would stand in every later summary. Code reads each sentence of a later message's judged
text for a *reversal* of a rule in force and, when it finds one, the rule is shown with the user's sentence
under it (``possibly withdrawn by``), exactly like a withdrawal candidate the model did not confirm
(:mod:`~longhaul_daemon.passes.answers.doubts`). Only the user's own words and a verified label lift a rule.

Ours, in one sentence (a line break or ``. ! ?`` ends one) that is neither a question nor scoped to this once
(:data:`ONCE`):

- it holds a cue of one kind: a strong one, a :data:`CHANGES_OF_MIND` cue not ordered away ("changed my
  mind about", "never mind the …", "forget the …") or a LIFT-2 withdrawal expression that tied no rule by
  LIFT-4's exact words ("drop the indentation rule" against "indent with 4 spaces"); a :data:`PERMISSIONS`
  cue, with no negation in its clause, against a rule that forbids or restricts ("print statements are fine
  now" against "never use print"; "go ahead and push, no need to wait" against "pushing is my job only"); a
  permission to change something (:data:`ALTERATIONS`: "feel free to change the format"), against any rule;
  a :data:`RETURNS` cue with no negation ("go back to tabs"; "don't go back to tabs" restates); or a release
  against a rule that orders something done (:data:`RELEASES`, "stop running black"; a
  :data:`CLAUSE_END_RELEASES` phrase that ends its clause, "the test-first routine can go"; "no prefix
  needed"), while "no more new dependencies" restates "never add dependencies";
- and it is tied to the rule by shared word stems, the cue's own words left out: LIFT-4's significant words,
  an identifier's parts apart, plural and -ed/-ing endings cut, so "messages" meets "message"; a stem meets
  the same stem with a word's own ending (:data:`DERIVED_ENDINGS`: "indent", "indentation"; never another
  word: "change", "changelog"), and two neighbouring words meet the one word they write ("unit tests",
  "unittest"). A strong cue needs two shared stems, one of :data:`MIN_LONE_STEM` characters, or half the
  rule's ("ignore my note about tabs" against "indent with tabs"); the other, weaker cues, common in plain
  work requests ("you can run the tests now", "back to the parser bug"), need two, or one of
  :data:`MIN_LONE_STEM_WEAK`. For a rule that replaced others only what it set beyond them ties (LIFT-8).

A sentence holding the rule's recorded words whole restates it, and reverses nothing. Each message's cued
sentences and each rule's shape are read once (:func:`cued_sentences`, :func:`rule_shape`), so a span costs
what its messages cost, and a message with no cue costs no rule anything. Pure; nothing raises.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.answers.lifts import may_withdraw, significant_words, words_of

__all__ = [
    "ALTERATIONS",
    "CHANGES_OF_MIND",
    "CLAUSE_END_RELEASES",
    "DERIVED_ENDINGS",
    "MIN_LONE_STEM",
    "MIN_LONE_STEM_WEAK",
    "MIN_PREFIX_STEM",
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
    "shared_stems",
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
# releases that end their clause ("the test-first routine can go, just fix things"): followed by more words
# they are plain work ("it can go in utils.py", "the build is over budget")
CLAUSE_END_RELEASES: tuple[str, ...] = ("can go", "is over", "are over", "is history", "are history")
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
    "this particular",
)
ONCE: tuple[str, ...] = (*THIS_ONCE, "for the moment", "right now", "just now", "today only")
# a rule that forbids: a release cue against it restates it ("no more new dependencies")
_FORBIDDING = re.compile(
    r"(?<![\w'-])(?:never|don't|do not|doesn't|does not|no|avoid|without|nothing|mustn't|must not|"
    r"shouldn't|should not|cannot|can't|nobody|forbidden|only)(?![\w'-])",
    re.IGNORECASE,
)
SENTENCE = re.compile(r"[^.!?…\n]+(?:[.!?…]+|$)", re.MULTILINE)  # a sentence, as LIFT-3 ends one
_ENDINGS = ("ies", "es", "s", "ed", "ing")
MIN_PREFIX_STEM = 6  # a stem this long ties a longer one it begins ("indent": "indentation"; "chang" never)
# what may follow it then: a word's own endings ("indentation", "generator"), never another word ("changelog")
DERIVED_ENDINGS: tuple[str, ...] = (
    "ation",
    "ition",
    "ion",
    "or",
    "er",
    "ment",
    "al",
    "ity",
    "ive",
    "ure",
    "e",
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
    r"(?<![\w'-])no\s+(?:[\w-]+\s+){1,2}(?:needed|required|necessary)(?![\w-])", re.IGNORECASE
)
_ALTERATION = re.compile(
    r"(?<![\w'-])(?:free to|fine to|ok to|okay to|allowed to|welcome to|can|may|could)\s+(?:[\w-]+\s+)?"
    rf"(?:{'|'.join(ALTERATIONS)})(?![\w-])",
    re.IGNORECASE,
)
_NEGATION = re.compile(rf"(?<![\w'-])(?:{'|'.join(NEGATIONS)})(?![\w'-])|\w+n't(?![\w'-])", re.IGNORECASE)
_ORDERED_AWAY = re.compile(r"(?:\b\w+n't|\bnot|\bnever)\s+\Z", re.IGNORECASE)
_CUES = (_PERMISSION, _RETURN, _CHANGE, _RELEASE, _CLAUSE_END_RELEASE)


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)] + ("y" if ending == "ies" else "")
    return word


def _parts(word: str) -> list[str]:
    """A word's stems; an identifier's parts apart ("_generated" is "generated")."""
    return [_stem(part) for part in word.split("_") if len(part) >= 3]


def stems(text: str) -> frozenset[str]:
    """LIFT-4's significant words of ``text`` with a plural or -ed/-ing ending cut: a crude stem, enough to
    tie "commit messages" to "every commit message"."""
    return frozenset(stem for word in significant_words(text) for stem in _parts(word))


def _joined(text: str) -> frozenset[str]:
    """Each two neighbouring significant words written as one, stemmed: "unit tests" meets "unittest"."""
    kept = significant_words(text)
    folded = [text[a:b].casefold() for a, b in words_of(text)]
    pairs = itertools.pairwise(folded)
    return frozenset(_stem(a + b) for a, b in pairs if a in kept and b in kept)


def forbids(rule_words: str) -> bool:
    """Whether the rule forbids or restricts ("never …", "don't …", "no …", "… only") rather than orders."""
    return _FORBIDDING.search(rule_words.replace("\u2019", "'")) is not None


@dataclass(frozen=True, slots=True)
class CuedSentence:
    """A sentence of a message that holds a reversal cue, read once whatever the rules: its ``stems`` (the
    cue's own words left out), its neighbouring words ``joined``, and which cues it holds (``change``: a
    change of mind or withdrawal expression not ordered away; the others only where the module's reading
    lets them count; ``alteration``: a permission to change something, against any rule)."""

    text: str
    stems: frozenset[str]
    joined: frozenset[str]
    plain: str
    change: bool
    permission: bool
    back: bool
    release: bool
    alteration: bool = False


@dataclass(frozen=True, slots=True)
class RuleShape:
    """What a reversal is read against, read once per rule: its stems, whether it forbids, its words."""

    stems: frozenset[str]
    forbidding: bool
    restated: str
    joined: frozenset[str] = frozenset()


def rule_shape(rule_words: str, replaced: Sequence[str] = ()) -> RuleShape:
    """``replaced``: the words of rules this one replaced; as LIFT-8 has it, only what this rule set beyond
    them can tie a reversal to it."""
    plain = _plain(rule_words)
    before = frozenset(stem for words in replaced for stem in stems(words))
    return RuleShape(stems(rule_words) - before, forbids(rule_words), plain.rstrip(".!?… "), _joined(plain))


def _permitted(sentence: str, pattern: re.Pattern[str]) -> bool:
    """A permission cue in a clause with no negation: "go ahead and push, no need to wait" permits."""
    for clause in _CLAUSE.finditer(sentence):
        part = clause.group()
        if pattern.search(part) and not _NEGATION.search(part):
            return True
    return False


def _cue_words_out(sentence: str, patterns: Sequence[re.Pattern[str]]) -> str:
    """The sentence with its cues' own words blanked, so "changed my mind" ties no rule about minds."""
    for pattern in patterns:
        sentence = pattern.sub(lambda m: " " * len(m.group()), sentence)
    return sentence


def cued_sentences(judged: str, *, withdrawing: bool | None = None) -> tuple[CuedSentence, ...]:
    """The sentences of ``judged`` that may reverse some rule: not a question, not scoped to this once, and
    holding a cue. A message without one costs no rule anything more. ``withdrawing``: whether ``judged``
    holds a LIFT-2 expression, when the caller knows (a sentence can hold one only when the text does)."""
    text = judged.replace("\u2019", "'")
    withdrawing = may_withdraw(text) if withdrawing is None else withdrawing
    out: list[CuedSentence] = []
    for match in SENTENCE.finditer(text):
        sentence = match.group().strip()
        if not sentence or sentence.endswith("?") or _ONCE.search(sentence):
            continue
        change = any(not _ORDERED_AWAY.search(sentence[: m.start()]) for m in _CHANGE.finditer(sentence))
        change = change or (withdrawing and may_withdraw(sentence))
        negated = _NEGATION.search(sentence) is not None
        permission = _permitted(sentence, _PERMISSION)
        alteration = _permitted(sentence, _ALTERATION)
        back = not negated and _RETURN.search(sentence) is not None
        release = any(p.search(sentence) for p in (_RELEASE, _CLAUSE_END_RELEASE, _NOT_NEEDED))
        if change or permission or alteration or back or release:
            bare = _cue_words_out(sentence, _CUES)
            out.append(
                CuedSentence(
                    sentence,
                    stems(bare),
                    _joined(bare),
                    _plain(sentence),
                    change,
                    permission,
                    back,
                    release,
                    alteration,
                )
            )
    return tuple(out)


def _derived(short: str, long: str) -> bool:
    """Whether ``long`` is ``short`` with one of a word's own endings, a doubled last letter allowed."""
    if len(short) < MIN_PREFIX_STEM or not long.startswith(short):
        return False
    rest = long[len(short) :]
    rest = rest[1:] if rest[:1] == short[-1:] else rest  # "commit": "committ(ed)"
    return rest == "" or rest in DERIVED_ENDINGS


def _prefixed(stem: str, others: frozenset[str]) -> bool:
    """Whether a stem is another with a word's own ending, or another is the stem with one."""
    return any(other != stem and (_derived(stem, other) or _derived(other, stem)) for other in others)


def shared_stems(sentence: CuedSentence, rule: RuleShape) -> frozenset[str]:
    """The rule's stems the sentence meets: the same, one beginning the other, or one written as two words."""
    exact = sentence.stems & rule.stems
    near = {s for s in rule.stems - exact if s in sentence.joined or _prefixed(s, sentence.stems)}
    near |= {s for s in sentence.stems - exact if s in rule.joined}
    return exact | near


def _tied(shared: frozenset[str], rule_stems: frozenset[str], lone: int, *, half: bool = False) -> bool:
    if half and shared and 2 * len(shared) >= len(rule_stems):
        return True
    return len(shared) >= 2 or any(len(stem) >= lone for stem in shared)


def _reverses(sentence: CuedSentence, rule: RuleShape) -> bool:
    shared = shared_stems(sentence, rule)
    if sentence.change:
        return _tied(shared, rule.stems, MIN_LONE_STEM, half=True)
    weak = (
        (rule.forbidding and sentence.permission)
        or sentence.alteration
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
