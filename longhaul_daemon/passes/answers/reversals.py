"""A user reverses a rule in words no withdrawal expression covers: code flags that rule, it never lifts it.

Users rarely say "no longer applies". They say "feel free to use print again", "you can go back to tabs",
"I changed my mind about the changelog", "stop running black before commits". None of these passes the lift
check (LIFT-1, LIFT-2; LIFT-6 refuses a permission), and a weak model often labels them ``not a rule``, so
the withdrawn rule would stand in every later summary. Code reads each sentence of a later message's judged
text for a *reversal* of a rule in force and, when it finds one, the rule is shown with the user's sentence
under it (``possibly withdrawn by``), exactly like a withdrawal candidate the model did not confirm
(:mod:`~longhaul_daemon.passes.answers.doubts`). Only the user's own words and a verified label lift a rule.

Ours: a sentence of the later message (a line break or ``. ! ?`` ends one) holds a cue
(:mod:`.reversal_cues` has the vocabulary and how each kind weighs against a rule), and it is tied to the
rule by shared word stems, the cue's own words left out: LIFT-4's significant words, an identifier's parts
apart, plural, -ed/-ing and a silent final "e" cut, so "messages" meets "message" and "typing" meets "type";
a stem meets the same stem with a word's own ending (:data:`DERIVED_ENDINGS`: "indent", "indentation";
never another word: "change", "changelog"), and two neighbouring words meet the one word they write ("unit
tests", "unittest"). A change of mind needs two shared stems, one of :data:`MIN_LONE_STEM` characters, or
half the rule's ("ignore my note about tabs" against "indent with tabs"); the other, weaker cues, common in
plain work requests ("you can run the tests now", "back to the parser bug"), need two, or one of
:data:`MIN_LONE_STEM_WEAK`, and a release must meet what the rule orders done. For a rule that replaced
others only what it set beyond them ties (LIFT-8).

A sentence that says its change lasts ("scrap the code style stuff I mentioned", "use print whenever you like
from here on": :attr:`.Cues.states_withdrawal`) withdraws something even when no rule's stems tie it. Then,
and only then, a looser tie names the rules it is most likely about (:func:`closest_rules`): the openings of
its words against each rule's ("doc" meets "docstring"), and the subjects both name in other words
(:mod:`.rule_topics`: "annotations" and "type hints"), the rules meeting most of them flagged. On a
development set of 84 such withdrawals against 12 rules in force, written by someone who never read this
vocabulary, the loose tie named the right rule in 54, a wrong one alone in 18 and none in 12; a flag shows
the user's own sentence under the rule, so a reader can tell.

A sentence holding the rule's recorded words whole restates it, and reverses nothing. Each message's cued
sentences and each rule's shape are read once (:func:`cued_sentences`, :func:`rule_shape`), so a span costs
what its messages cost, and a message with no cue costs no rule anything. Pure; nothing raises.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.answers.lifts import may_withdraw, significant_words, words_of
from longhaul_daemon.passes.answers.reversal_cues import (
    Cues,
    forbids,
    ordered_words,
    sentence_cues,
    spelled_out,
    without_cue_words,
    without_marker_words,
)
from longhaul_daemon.passes.answers.rule_topics import topic_families

__all__ = [
    "DERIVED_ENDINGS",
    "MIN_LONE_STEM",
    "MIN_LONE_STEM_WEAK",
    "MIN_PREFIX_STEM",
    "SENTENCE",
    "TOPIC_LETTERS",
    "CuedSentence",
    "RuleShape",
    "closest_rules",
    "cued_sentences",
    "reversal_in",
    "reversal_of",
    "reversal_tie",
    "rule_shape",
    "rule_topics",
    "shared_stems",
    "stems",
    "topics",
]

MIN_LONE_STEM = 5  # one shared stem this long ties a change of mind to a rule ("print" does, "use" never)
MIN_LONE_STEM_WEAK = 7  # and a weaker cue: "changelog" does, "commit" and "server" do not

# a sentence, as LIFT-3 ends one: a mark inside a word ends none ("Python 3.8", "config.py")
SENTENCE = re.compile(r"(?:[^.!?…\n]|[.!?…](?=[^\s.!?…]))+(?:[.!?…]+|$)", re.MULTILINE)
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


def _stem(word: str) -> str:
    for ending in _ENDINGS:
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            return word[: -len(ending)] + ("y" if ending == "ies" else "")
    # a silent final "e" goes too, so "type" meets "typing" and "typed", "change" meets "changing"
    return word[:-1] if word.endswith("e") and len(word) >= 4 else word


def _parts(word: str) -> list[str]:
    """A word's stems; an identifier's parts apart ("_generated" is "generated"), a possessive or "is" cut
    ("changelog's retired" names the changelog)."""
    word = word.removesuffix("'s")
    return [_stem(part) for part in word.split("_") if len(part) >= 3]


# a version number ("3.8", "2.7.18"): LIFT-4 reads no word in it, yet it names what a rule is about
_VERSION = re.compile(r"(?<![\w.])\d+(?:\.\d+)+(?![\w]|\.\d)")


def stems(text: str) -> frozenset[str]:
    """LIFT-4's significant words of ``text`` with a plural or -ed/-ing ending cut: a crude stem, enough to
    tie "commit messages" to "every commit message"; and its version numbers whole."""
    words = {stem for word in significant_words(text) for stem in _parts(word)}
    return frozenset(words | {m.group() for m in _VERSION.finditer(text)})


def _joined(text: str) -> frozenset[str]:
    """Each two neighbouring significant words written as one, stemmed: "unit tests" meets "unittest"."""
    kept = significant_words(text)
    folded = [text[a:b].casefold() for a, b in words_of(text)]
    pairs = itertools.pairwise(folded)
    return frozenset(_stem(a + b) for a, b in pairs if a in kept and b in kept)


@dataclass(frozen=True, slots=True)
class CuedSentence:
    """A sentence of a message that holds a reversal cue, read once whatever the rules: its ``stems`` (the
    cue's own words left out), its neighbouring words ``joined``, and the ``cues`` it holds."""

    text: str
    stems: frozenset[str]
    joined: frozenset[str]
    plain: str
    cues: Cues
    subjects: frozenset[str] = frozenset()  # the subjects it names (:func:`subjects`)


@dataclass(frozen=True, slots=True)
class RuleShape:
    """What a reversal is read against, read once per rule: its stems, whether it forbids, whether it orders
    something done all the same (:func:`ordered_words`), its words."""

    stems: frozenset[str]
    forbidding: bool
    restated: str
    joined: frozenset[str] = frozenset()
    ordered: frozenset[str] = frozenset()  # the stems of what it orders done; a release must meet one
    subjects: frozenset[str] = frozenset()  # the subjects it names, and of what it orders done
    ordered_subjects: frozenset[str] = frozenset()


def rule_shape(rule_words: str, replaced: Sequence[str] = ()) -> RuleShape:
    """``replaced``: the words of rules this one replaced; as LIFT-8 has it, only what this rule set beyond
    them can tie a reversal to it."""
    plain = _plain(rule_words)
    before = frozenset(stem for words in replaced for stem in stems(words))
    own = stems(rule_words) - before
    ordered_text = ordered_words(rule_words)
    ordered = own & stems(ordered_text)
    subjects = _subjects(rule_words) - frozenset(s for words in replaced for s in _subjects(words))
    return RuleShape(
        own,
        forbids(rule_words),
        plain.rstrip(".!?… "),
        _joined(plain),
        ordered,
        subjects,
        subjects & _subjects(ordered_text),
    )


def _subjects(text: str) -> frozenset[str]:
    """The subjects ``text`` names (:mod:`.rule_topics`), each as "#" and its family (no stem starts so)."""
    return frozenset(f"#{family}" for family in topic_families(text))


def cued_sentences(judged: str, *, withdrawing: bool | None = None) -> tuple[CuedSentence, ...]:
    """The sentences of ``judged`` that may reverse some rule: not a question, not scoped to this once, and
    holding a cue (:mod:`.reversal_cues`). A message without one costs no rule anything more.
    ``withdrawing``: whether ``judged`` holds a LIFT-2 expression, when the caller knows (a sentence can hold
    one only when the text does)."""
    text = judged.replace("\u2019", "'")
    withdrawing = may_withdraw(text) if withdrawing is None else withdrawing
    out: list[CuedSentence] = []
    for match in SENTENCE.finditer(text):
        sentence = match.group().strip()
        read = spelled_out(sentence)
        cues = sentence_cues(read, withdrawing=withdrawing)
        if cues is not None:
            bare = without_cue_words(read)
            subjects = _subjects(bare)
            out.append(CuedSentence(sentence, stems(bare), _joined(bare), _plain(sentence), cues, subjects))
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
    """Two things shared, or one telling one: a long stem, a version ("3.8"), and for a change of mind
    (``half``) a subject (":mod:`.rule_topics`"); or, for a change of mind, half the rule's stems."""
    if half and shared and 2 * len(shared) >= len(rule_stems):
        return True
    return len(shared) >= 2 or any(
        (len(stem) >= lone or "." in stem) if not stem.startswith("#") else half for stem in shared
    )


def _reverses(sentence: CuedSentence, rule: RuleShape) -> int:
    """How many things tie the sentence to the rule it reverses; 0 when it reverses nothing of it."""
    # a subject both name is one more thing they share ("prints are fine" and "never print statements")
    shared = shared_stems(sentence, rule) | (sentence.subjects & rule.subjects)
    cues = sentence.cues
    if cues.change or cues.order_ended:  # the order itself said to be over weighs as a change of mind
        return len(shared) if _tied(shared, rule.stems, MIN_LONE_STEM, half=True) else 0
    ordered = rule.ordered | rule.ordered_subjects
    if cues.release and _tied(shared & ordered, rule.ordered, MIN_LONE_STEM_WEAK):
        return len(shared)  # it releases what the rule orders done
    weak = (rule.forbidding and cues.permission) or cues.alteration or cues.back
    return len(shared) if weak and _tied(shared, rule.stems, MIN_LONE_STEM_WEAK) else 0


def _plain(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").casefold().split())


def reversal_tie(cued: Sequence[CuedSentence], rule: RuleShape) -> tuple[str, int] | None:
    """The first of ``cued`` (:func:`cued_sentences`) that reverses ``rule`` (:func:`rule_shape`), as the
    module reads it, and how many things tie them (stems and subjects shared); None when none does."""
    if not rule.stems:
        return None
    for sentence in cued:
        if rule.restated and rule.restated in sentence.plain:
            continue  # the rule's words whole: a restatement
        tie = _reverses(sentence, rule)
        if tie:
            return sentence.text, tie
    return None


def reversal_of(cued: Sequence[CuedSentence], rule: RuleShape) -> str | None:
    """The sentence of :func:`reversal_tie`, when there is one."""
    found = reversal_tie(cued, rule)
    return found[0] if found is not None else None


TOPIC_LETTERS = 4  # a word's opening that names its topic in the loose tie ("docs" of "docstring")


def topics(text: str) -> frozenset[str]:
    """The openings of ``text``'s significant words, cue and lasting markers left out: what a sentence
    stating a withdrawal may be about when it shares no stem with any rule ("forget the doc comments
    thing")."""
    bare = without_marker_words(text.replace("\u2019", "'"))
    openings = {part[:TOPIC_LETTERS] for word in significant_words(bare) for part in _parts(word)}
    return frozenset(openings | {f"#{family}" for family in topic_families(bare)})  # "#" starts no word


FAMILY_WEIGHT = 2  # a subject both name outweighs one shared opening ("signed" meets "signature" too)


def _meets(sentence: frozenset[str], rule: frozenset[str]) -> int:
    """How many of the sentence's topics meet one of the rule's: the same, or one beginning the other; a
    shared subject (:mod:`.rule_topics`) counts :data:`FAMILY_WEIGHT` times."""
    return sum(
        FAMILY_WEIGHT if a.startswith("#") else 1
        for a in sentence
        if any(a.startswith(b) or b.startswith(a) for b in rule)
    )


def rule_topics(rule_words: str, replaced: Sequence[str] = ()) -> frozenset[str]:
    """A rule's topics; for a rule that replaced others, only those it set beyond them (LIFT-8)."""
    before = frozenset(topic for words in replaced for topic in topics(words))
    return topics(rule_words) - before


def closest_rules(sentence: str, rules: Mapping[str, frozenset[str]]) -> tuple[str, ...]:
    """The names of ``rules`` (name -> :func:`rule_topics`) whose topics the sentence meets most, when it
    meets any: the loose tie of a stated withdrawal that no rule's stems tie (ours; flagged only)."""
    own = topics(sentence)
    scores = {name: _meets(own, theirs) for name, theirs in rules.items()}
    best = max(scores.values(), default=0)
    return tuple(name for name, score in scores.items() if best and score == best)


def reversal_in(judged: str, rule_words: str) -> str | None:
    """The first sentence of ``judged`` that reverses the rule recorded as ``rule_words``, stripped."""
    return reversal_of(cued_sentences(judged), rule_shape(rule_words))
