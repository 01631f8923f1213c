"""Picks, with no model call, the earlier user messages that read as standing rules when Longhaul takes over.

When another compactor wrote the newest compaction, code reads the user's messages before the span
(TAKEOVER-4); a message it picks is listed in full and recorded as a rule unless the model calls it a
one-off. The reading goes sentence by sentence, clause by clause (TAKEOVER-6); pure, nothing raises, and the
same text always reads the same way (TAKEOVER-15). Decisions (the proposals unless said otherwise):

- Sentences end as in LIFT-3; a question's closing marks hold a ``?``, and a tag ("ok?", "right?" …) after
  a separator or alone after a sentence is ignored (TAKEOVER-7).
- TAKEOVER-11: the markers are "forget it/that", "scratch that", "ignore that" and the LIFT-2 expressions
  (ours included: a released obligation, "drop the indentation rule", "the logging rule is dropped" …), not
  "instead of" (it needs a target rule; TAKEOVER-20 picks "… instead of tabs from now on").
- TAKEOVER-13: judged per rule word; the word before "that"/"which"/"who" is a noun unless it is a function
  word, a verb or adjective taking a that-clause, or ends in "ed".
- TAKEOVER-14: clauses split at ``,`` ``;`` ``:``, dashes, spaced hyphen runs and "but".
- TAKEOVER-22: a message records whole up to ``LONG_MESSAGE``, else first to last qualifying sentence.
- Ours, the wider reading (:func:`read_possible_rule`, code's second look only): the takeover's reading,
  the cues of :data:`POSSIBLE_RULE_PHRASES` and :data:`QUANTIFIERS`, and :mod:`.norm_reading`'s norms with
  no rule word. A sentence with a clause opening on a back reference ("Reminder: …", "Again, …", "same as
  main") echoes a rule already in force and takes no wider cue; nor does a clause saying "still"/"again",
  closing on "too"/"either"/"as well", or naming "the new …" thing of the work in hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from longhaul_daemon.passes.answers.lifts import (
    WITHDRAWAL_EXPRESSIONS,
    released_obligations_in,
    rule_withdrawals_in,
    words_of,
)
from longhaul_daemon.passes.answers.norm_reading import order_start, reads_as_norm, states_no_subject
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE
from longhaul_daemon.passes.answers.rule_words import (
    BACK_REFERENCES,
    ECHO_WORDS,
    EXTENSION_ENDINGS,
    NEW_WORK,
    NOT_NOUNS,
    POSSIBLE_RULE_PHRASES,
    QUANTIFIERS,
    STATEMENT_OPENERS,
    Phrase,
)

__all__ = [
    "POSSIBLE_RULE_PHRASES",
    "QUANTIFIERS",
    "Reading",
    "read_possible_rule",
    "read_standing_rule",
    "sentence_texts",
]


@dataclass(frozen=True)
class Reading:
    """What the reading made of one message: picked or not, and the range a picked message records."""

    picked: bool  # TAKEOVER-6: at least one sentence qualifies
    start: int = -1  # TAKEOVER-22: whole message up to 600 characters, else the qualifying stretch
    end: int = -1


_NOT_PICKED = Reading(picked=False)

_END_RUN = r"[.!?…]+(?=\s|\Z)"
_LINE_BREAK = r"[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]"  # what str.splitlines splits at
_SENTENCE_END = re.compile(rf"(?P<marks>{_END_RUN})|{_LINE_BREAK}")
_CLOSING_TAG = r"(?:ok|okay|right|alright)\s*\?+"
_TAG_ALONE = re.compile(_CLOSING_TAG, re.IGNORECASE)
_TAG_AFTER_SEPARATOR = re.compile(r"(?:[,;:\u2014\u2013]|\s-+)\s*" + _CLOSING_TAG + r"\Z", re.IGNORECASE)
_END_MARKS = re.compile(r"[.!?…]+\Z")
_CLAUSE_SEPARATOR = re.compile(r"[,;:\u2014\u2013]|(?<!\S)-+(?!\S)")

_SINGLE_RULE_WORDS = frozenset({"never", "always", "don't", "must", "stop", "only"})
_RELATIVE_PRONOUNS = frozenset({"that", "which", "who"})
_ADJECTIVE_ONLY_AFTER = frozenset({"the", "an"})


@dataclass(frozen=True, slots=True)
class _Word:
    text: str  # case-folded, ’ read as '
    joined: bool  # only whitespace separates it from the word before it


def _fold(word: str) -> str:
    return word.replace("\u2019", "'").casefold()


def _sentences(text: str) -> list[tuple[int, int, int]]:
    """Sentence ranges (start, end, body end), trimmed; the body ends before any ignored closing tag."""
    out: list[tuple[int, int, int]] = []
    at = 0
    for match in _SENTENCE_END.finditer(text):
        # End marks stay with their sentence; a line break belongs to none.
        _add_sentence(text, at, match.end() if match.group("marks") else match.start(), out)
        at = match.end()
    _add_sentence(text, at, len(text), out)
    return out


def sentence_texts(text: str) -> list[str]:
    """The sentences of ``text`` as the readings split it (a "." inside "app.py" ends none), trimmed."""
    return [text[start:end] for start, end, _ in _sentences(text)]


def _add_sentence(text: str, start: int, end: int, out: list[tuple[int, int, int]]) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return
    start += len(piece) - len(piece.lstrip())
    end = start + len(stripped)
    if out and _TAG_ALONE.fullmatch(stripped):
        # A lone "ok?" asks nothing of its own; it belongs to the sentence it closes.
        before_start, _, before_body = out[-1]
        out[-1] = (before_start, end, before_body)
        return
    tag = _TAG_AFTER_SEPARATOR.search(stripped)
    out.append((start, end, start + tag.start() if tag else end))


def _is_question(text: str, start: int, body_end: int) -> bool:
    body = text[start:body_end].rstrip().rstrip(",;:\u2014\u2013-").rstrip()
    marks = _END_MARKS.search(body)
    return marks is not None and "?" in marks.group()


def _clauses(sentence: str) -> list[list[_Word]]:
    """The sentence's words, grouped into clauses; the word "but" and separator marks end a clause."""
    clauses: list[list[_Word]] = [[]]
    previous_end = 0
    for word_start, word_end in words_of(sentence):
        gap_start, previous_end = previous_end, word_end
        word = _fold(sentence[word_start:word_end])
        # Searched in the sentence, not the gap alone, so a hyphen's neighbours are seen ("merge-yet").
        if clauses[-1] and _CLAUSE_SEPARATOR.search(sentence, gap_start, word_start + 1):
            clauses.append([])
        if word == "but":
            if clauses[-1]:
                clauses.append([])
            continue
        joined = bool(clauses[-1]) and sentence[gap_start:word_start].isspace()
        clauses[-1].append(_Word(word, joined))
    return [clause for clause in clauses if clause]


def _phrase_at(words: list[_Word], i: int, phrase: Phrase) -> bool:
    if i + len(phrase) > len(words):
        return False
    return all(words[i + k].text == part and (k == 0 or words[i + k].joined) for k, part in enumerate(phrase))


class _Phrases:
    """A set of phrases indexed by their first word, so a clause is read in one walk over its words
    whatever the number of phrases (the wider reading weighs dozens at every word)."""

    def __init__(self, phrases: Iterable[Phrase]) -> None:
        self._by_first: dict[str, list[Phrase]] = {}
        for phrase in phrases:
            self._by_first.setdefault(phrase[0], []).append(phrase)

    def at(self, words: list[_Word], i: int) -> bool:
        return any(_phrase_at(words, i, phrase) for phrase in self._by_first.get(words[i].text, ()))

    def positions(self, words: list[_Word]) -> Iterator[int]:
        return (i for i in range(len(words)) if self.at(words, i))


def _holds(words: list[_Word], phrases: _Phrases) -> bool:
    return next(phrases.positions(words), None) is not None


_TIME_MARKERS = _Phrases((("from", "now", "on"), ("from", "here", "on"), ("going", "forward")))
_FOR_NOW_MARKERS = _Phrases((("yet",), ("for", "now"), ("this", "time")))
_WITHDRAWAL_MARKERS = _Phrases(
    (
        ("forget", "it"),
        ("forget", "that"),
        ("scratch", "that"),
        ("ignore", "that"),
        *(tuple(expression.split()) for expression in WITHDRAWAL_EXPRESSIONS),
    )
)
_NEVER_MIND = _Phrases((("never", "mind"),))


def _after_an_order_not_to(words: list[_Word], i: int) -> bool:
    """TAKEOVER-11: "don't forget it" orders the opposite of a withdrawal."""
    if not words[i].joined or i < 1:
        return False
    if words[i - 1].text == "don't":
        return True
    return i >= 2 and words[i - 1].text == "not" and words[i - 2].text == "do" and words[i - 1].joined


def _withdraws(words: list[_Word]) -> bool:
    text = " ".join(word.text for word in words)
    if released_obligations_in(text) or rule_withdrawals_in(text):
        return True  # "you don't need to ask any longer": its "don't" releases, it orders nothing
    return any(not _after_an_order_not_to(words, i) for i in _WITHDRAWAL_MARKERS.positions(words))


def _description_start(words: list[_Word]) -> int:
    """TAKEOVER-13: where the clause's first relative pronoun after a noun stands (len(words) if nowhere)."""
    for p in range(1, len(words)):
        if words[p].text in _RELATIVE_PRONOUNS and _is_noun(words[p - 1].text):
            return p
    return len(words)


def _adjective_only(words: list[_Word], i: int) -> bool:
    """TAKEOVER-13: "the only way" names a thing; it orders nothing."""
    return words[i].text == "only" and words[i].joined and words[i - 1].text in _ADJECTIVE_ONLY_AFTER


def _is_noun(word: str) -> bool:
    return word not in NOT_NOUNS and word not in _SINGLE_RULE_WORDS and not word.endswith("ed")


def _rule_word_positions(words: list[_Word]) -> list[int]:
    out: list[int] = []
    for i, word in enumerate(words):
        if word.text == "never" and _phrase_at(words, i, ("never", "mind")):
            continue  # TAKEOVER-12: "never mind" orders nothing
        if word.text in _SINGLE_RULE_WORDS or _phrase_at(words, i, ("do", "not")):
            out.append(i)
    return out


def _excluded(words: list[_Word]) -> bool:
    """A clause bounded to now, withdrawing, or "never mind": it orders nothing standing (TAKEOVER-10..12)."""
    return _holds(words, _FOR_NOW_MARKERS) or _withdraws(words) or _holds(words, _NEVER_MIND)


def _clause_qualifies(words: list[_Word]) -> bool:
    """TAKEOVER-9..TAKEOVER-13 on one clause, which :func:`_excluded` may still rule out (weighed last: most
    clauses hold no rule word); exclusions reach no other clause (TAKEOVER-14)."""
    description = _description_start(words)
    return any(i < description and not _adjective_only(words, i) for i in _rule_word_positions(words))


def _timed_sentence(clauses: list[list[_Word]]) -> bool:
    """TAKEOVER-8 reads the sentence as a whole; a clause's first word is joined to nothing, so a marker split
    by a comma ("from now, on") is no marker."""
    whole = [word for clause in clauses for word in clause]
    return _holds(whole, _TIME_MARKERS) and not _withdraws(whole)


def _sentence_qualifies(text: str, start: int, end: int, body_end: int) -> bool:
    if _is_question(text, start, body_end):
        return False  # TAKEOVER-7
    clauses = _clauses(text[start:end])
    return _timed_sentence(clauses) or any(
        _clause_qualifies(clause) and not _excluded(clause) for clause in clauses
    )


def read_standing_rule(text: str) -> Reading:
    """TAKEOVER-6..TAKEOVER-15, TAKEOVER-22: does ``text`` read as a standing rule; what would it record?"""
    return _reading(text, _sentence_qualifies)


def _reading(text: str, qualifies: Callable[[str, int, int, int], bool]) -> Reading:
    """TAKEOVER-22's range over the sentences ``qualifies`` picks: the whole of a message up to 600
    characters, else the stretch from the first picked sentence to the last."""
    qualifying = [
        (start, end) for start, end, body_end in _sentences(text) if qualifies(text, start, end, body_end)
    ]
    if not qualifying:
        return _NOT_PICKED
    if len(text) <= LONG_MESSAGE:
        return Reading(picked=True, start=0, end=len(text))
    return Reading(picked=True, start=qualifying[0][0], end=qualifying[-1][1])


_POSSIBLE_RULE_PHRASES = _Phrases(POSSIBLE_RULE_PHRASES)
_CUE_WORDS = frozenset(phrase[0] for phrase in POSSIBLE_RULE_PHRASES) | QUANTIFIERS


def _clause_may_rule(words: list[_Word]) -> bool:
    """A clause with a wider standing cue before any description (:func:`_excluded` may still rule it out)."""
    if not any(word.text in _CUE_WORDS for word in words):
        return False  # most clauses hold no cue word at all; no need to find where a description starts
    description = _description_start(words)
    for i in range(description):
        if _POSSIBLE_RULE_PHRASES.at(words, i):
            return True
        if words[i].text in QUANTIFIERS and _opens_the_order(words, i) and _is_noun(_after(words, i)):
            return True
    return False


def _after(words: list[_Word], i: int) -> str:
    return words[i + 1].text if i + 1 < len(words) else ""


def _opens_the_order(words: list[_Word], i: int) -> bool:
    """A quantifier that opens the clause ("Every fix gets a test") or stands in an order ("Keep every
    message short", "Run the linter on each commit"). A clause that opens with a subject (a pronoun or an
    article: "it reads …", "the parser hands each row …") or a verb that is no bare imperative ("formats
    each row", "fixed every test") describes, and orders nothing."""
    texts = [word.text for word in words[: i + 1]]
    lead = [text for text in texts[order_start(texts) : i] if text != "please"]
    if not lead:
        return True
    first = lead[0]
    return first not in STATEMENT_OPENERS and not first.endswith(("s", "ed"))


def _sentence_may_rule(text: str, start: int, end: int, body_end: int) -> bool:
    """The takeover's reading of the sentence, or a wider cue in a clause it did not exclude; the sentence is
    split into clauses once for both."""
    if _is_question(text, start, body_end):
        return False
    clauses = _clauses(text[start:end])
    echoed = any(_BACK_REFERENCES.at(clause, order_start([w.text for w in clause])) for clause in clauses)
    return _timed_sentence(clauses) or any(
        (
            _clause_qualifies(clause)
            or (
                not echoed
                and not _echoes(clause)
                and (_clause_may_rule(clause) or _states_a_norm(clauses, k))
            )
        )
        and not _excluded(clause)
        for k, clause in enumerate(clauses)
    )


_BACK_REFERENCES = _Phrases(BACK_REFERENCES)


_NEW_WORK = _Phrases(NEW_WORK)


def _echoes(words: list[_Word]) -> bool:
    """A clause the wider cues pass over: one that says a rule once more ("Every migration still needs …",
    in force through the message that gave it; "ever again" lasts), that stretches what was said before
    ("… a Raises: section too"), or that names a thing just made ("Make sure the new endpoint …")."""
    if any(w.text in ECHO_WORDS and not (i and words[i - 1].text == "ever") for i, w in enumerate(words)):
        return True
    ending = any(
        len(words) >= len(phrase) and _phrase_at(words, len(words) - len(phrase), phrase)
        for phrase in EXTENSION_ENDINGS
    )
    return ending or _holds(words, _NEW_WORK)


def _states_a_norm(clauses: list[list[_Word]], k: int) -> bool:
    """A norm with no cue word (:mod:`.norm_reading`); a "No …" prohibition counts only where it opens the
    sentence or follows a clause with no subject of its own ("In the firmware: no dynamic allocation")."""
    may_prohibit = k == 0 or states_no_subject([word.text for word in clauses[k - 1]])
    return reads_as_norm([word.text for word in clauses[k]], opens=k == 0, may_prohibit=may_prohibit)


def read_possible_rule(text: str) -> Reading:
    """Ours: does ``text`` read as a standing instruction, with TAKEOVER-9's rule words, the wider cues of
    :data:`POSSIBLE_RULE_PHRASES` and :data:`QUANTIFIERS`, or a norm with no cue word
    (:mod:`.norm_reading`); a sentence that echoes a rule already given takes none of the wider ones. Its
    range is chosen as :func:`read_standing_rule` chooses it. Wider and weaker than the takeover's reading:
    it only weighs a model's label, it never records a rule on its own."""
    return _reading(text, _sentence_may_rule)
