"""Code, not the model, decides a rule's text: it copies verified words from the user's own message (QUOTE-*).

Pure functions over strings; nothing raises on model output. Offsets and lengths are in code points of a
message's *quotable text*: CRLF turned into LF (QUOTE-5) and, for a pi-goal ``/goal`` message, only the
objective between :data:`GOAL_TAGS` (QUOTE-10). Decisions (the proposals unless said otherwise):

- By length (QUOTE-2..4): up to 300 characters the whole message is recorded when words fail; up to 600,
  words cut inside a word are sent back once (QUOTE-6), else the whole message is recorded; over that,
  missing or unverifiable words are a defect, and on the last answer the label is dropped.
- QUOTE-6: word characters are Unicode letters with their marks, decimal digits, ``_`` and an apostrophe
  between two letters.
- QUOTE-7, QUOTE-9, QUOTE-11: binding searches every offered message, newest first, and records the first
  occurrence that respects word boundaries; the holder's own length rule then applies.
- QUOTE-16: a takeover message shown only as an excerpt needs verified words whatever its length.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "GOAL_TAGS",
    "LONG_MESSAGE",
    "SHORT_MESSAGE",
    "OfferedMessage",
    "QuoteVerdict",
    "WordsIssue",
    "WordsMatch",
    "cut_at",
    "find_words",
    "goal_objective_range",
    "is_word_char_at",
    "normalize_newlines",
    "quotable_text",
    "resolve_rule_words",
]

SHORT_MESSAGE = 300  # QUOTE-2: at most this many characters: the whole message is the rule
LONG_MESSAGE = 600  # QUOTE-4: over this many characters: exact words are required

# QUOTE-10: pi-goal's goal tags. pi-goal's templates (the goal continuation and time-limit prompts) wrap the
# user's objective, XML-escaped, between exactly these tags; the rest of such a message is pi-goal's own text.
GOAL_TAGS: tuple[str, str] = ("<untrusted_objective>", "</untrusted_objective>")

_APOSTROPHES = frozenset("'\u2019")
_CRLF = re.compile(r"\r+\n")

WordsIssue = Literal["not-found", "starts-inside-word", "ends-inside-word"]
QuoteOutcome = Literal["record", "defect", "dropped"]
QuoteReason = Literal[
    "whole-short",  # QUOTE-2: message of at most 300 characters, recorded whole
    "whole-no-words",  # QUOTE-3: 301..600 characters, no words given
    "whole-unverified",  # QUOTE-3: 301..600 characters, words did not verify
    "words",  # the verified words are the rule
    "words-missing",  # QUOTE-4/QUOTE-16: words required and not given
    "words-not-found",  # QUOTE-4/QUOTE-8: words required and no offered message holds them
    "starts-inside-word",  # QUOTE-6
    "ends-inside-word",  # QUOTE-6
    "unknown-message",  # the label names no offered message
    "empty-message",  # nothing quotable in the message
]


def normalize_newlines(text: str) -> str:
    """QUOTE-5: the only normalization before matching: CRLF becomes LF.

    A run of CRs before an LF goes too, so normalizing twice changes nothing.
    """
    return _CRLF.sub("\n", text) if "\r" in text else text


def _is_letter(ch: str) -> bool:
    return unicodedata.category(ch).startswith("L")


def is_word_char_at(text: str, i: int) -> bool:
    """QUOTE-6: a Unicode letter or combining mark, a decimal digit, ``_``, an apostrophe between letters."""
    if i < 0 or i >= len(text):
        return False
    ch = text[i]
    category = unicodedata.category(ch)
    if ch == "_" or category[0] in "LM" or category == "Nd":
        return True
    if ch in _APOSTROPHES:
        return 0 < i < len(text) - 1 and _is_letter(text[i - 1]) and _is_letter(text[i + 1])
    return False


def cut_at(text: str, i: int) -> bool:
    """Whether the position before ``text[i]`` lies inside a word (both neighbours are word characters)."""
    return 0 < i < len(text) and is_word_char_at(text, i - 1) and is_word_char_at(text, i)


@dataclass(frozen=True, slots=True)
class WordsMatch:
    """Where given words stand in a text: ``start``/``end`` of the first boundary-respecting occurrence."""

    found: bool
    start: int = -1
    end: int = -1
    issue: WordsIssue | None = None


def find_words(text: str, words: str) -> WordsMatch:
    """QUOTE-5, QUOTE-6, QUOTE-11: the first exact occurrence of ``words`` in ``text`` at word boundaries.

    Both strings are CRLF-normalized first. When every occurrence is cut inside a word, the issue names how
    the first one is cut; when there is none, the issue is ``not-found``. An empty ``words`` is never found.
    """
    text = normalize_newlines(text)
    words = normalize_newlines(words)
    if not words:
        return WordsMatch(found=False, issue="not-found")
    first_issue: WordsIssue | None = None
    at = text.find(words)
    while at != -1:
        end = at + len(words)
        if cut_at(text, at):
            first_issue = first_issue or "starts-inside-word"
        elif cut_at(text, end):
            first_issue = first_issue or "ends-inside-word"
        else:
            return WordsMatch(found=True, start=at, end=end)
        at = text.find(words, at + 1)
    return WordsMatch(found=False, issue=first_issue or "not-found")


def goal_objective_range(text: str) -> tuple[int, int] | None:
    """QUOTE-10: the objective's range in the CRLF-normalized text of a pi-goal message, or ``None``.

    The objective is what stands between the first opening tag and the first closing tag after it, without the
    whitespace around it. A message lacking either tag is an ordinary message.
    """
    text = normalize_newlines(text)
    opening, closing = GOAL_TAGS
    head = text.find(opening)
    if head == -1:
        return None
    start = head + len(opening)
    end = text.find(closing, start)
    if end == -1:
        return None
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end)


def quotable_text(text: str) -> str:
    """The text a rule may be copied from: CRLF-normalized, and only the objective of a pi-goal message."""
    normalized = normalize_newlines(text)
    objective = goal_objective_range(normalized)
    if objective is None:
        return normalized
    return normalized[objective[0] : objective[1]]


@dataclass(frozen=True, slots=True)
class OfferedMessage:
    """A user message the Diff labels (span, carried or takeover-earlier), with its full text as written.

    ``excerpt_only`` marks a takeover earlier message longer than the excerpt the prompt showed (QUOTE-16).
    """

    id: str
    text: str
    excerpt_only: bool = False


@dataclass(frozen=True, slots=True)
class QuoteVerdict:
    """What code makes of one rule label's words.

    ``record``: store ``text`` (a substring of the holder's quotable text at ``start:end``) as the rule of
    ``message``. ``defect``: send ``reason`` back in the retry note (FAIL-1). ``dropped``: no rule, the label
    is counted as dropped. ``rejected_quote`` says words were given and discarded (counted, QUOTE-17), and
    ``words_issue`` says why. ``message`` differs from ``cited`` when the words were bound elsewhere
    (QUOTE-7).
    """

    outcome: QuoteOutcome
    reason: QuoteReason
    cited: str
    message: str | None = None
    text: str | None = None
    start: int = -1
    end: int = -1
    rejected_quote: bool = False
    words_issue: WordsIssue | None = None

    @property
    def rebound(self) -> bool:
        """Whether the quote was found in another message than the one cited."""
        return self.message is not None and self.message != self.cited


def _failure(
    cited: str, message: str | None, reason: QuoteReason, issue: WordsIssue | None, final: bool
) -> QuoteVerdict:
    return QuoteVerdict(
        outcome="dropped" if final else "defect",
        reason=reason,
        cited=cited,
        message=message,
        rejected_quote=issue is not None,
        words_issue=issue,
    )


def _issue_reason(issue: WordsIssue | None) -> QuoteReason:
    if issue == "starts-inside-word":
        return "starts-inside-word"
    if issue == "ends-inside-word":
        return "ends-inside-word"
    return "words-not-found"


def _record_whole(
    cited: str, message: str, text: str, reason: QuoteReason, issue: WordsIssue | None
) -> QuoteVerdict:
    return QuoteVerdict(
        outcome="record",
        reason=reason,
        cited=cited,
        message=message,
        text=text,
        start=0,
        end=len(text),
        rejected_quote=issue is not None,
        words_issue=issue,
    )


def _find_holder(
    cited: OfferedMessage, words: str, offered: Sequence[OfferedMessage]
) -> tuple[OfferedMessage | None, WordsMatch, WordsIssue | None]:
    """QUOTE-7/QUOTE-9: the cited message if it holds the words, else the newest offered message that does."""
    own = find_words(quotable_text(cited.text), words)
    if own.found:
        return cited, own, None
    issue = own.issue if own.issue != "not-found" else None
    for candidate in reversed(offered):
        if candidate is cited:
            continue
        match = find_words(quotable_text(candidate.text), words)
        if match.found:
            return candidate, match, None
        if issue is None and match.issue != "not-found":
            issue = match.issue
    return None, own, issue or "not-found"


def resolve_rule_words(
    cited_id: str, words: str | None, offered: Sequence[OfferedMessage], *, final: bool
) -> QuoteVerdict:
    """QUOTE-1..QUOTE-11, QUOTE-16: decide the text of the rule a label gives message ``cited_id``.

    ``offered`` lists every offered message in message order (oldest first); ``final`` says this is the
    chunk's last answer, so nothing can be sent back any more.
    """
    cited = next((m for m in offered if m.id == cited_id), None)
    if cited is None:
        return QuoteVerdict(outcome="dropped", reason="unknown-message", cited=cited_id)
    given = normalize_newlines(words) if words is not None else ""
    if not given:
        quotable = quotable_text(cited.text)
        if not quotable:
            return QuoteVerdict(outcome="dropped", reason="empty-message", cited=cited_id, message=cited_id)
        if cited.excerpt_only or len(quotable) > LONG_MESSAGE:
            return _failure(cited_id, cited_id, "words-missing", None, final)
        reason: QuoteReason = "whole-short" if len(quotable) <= SHORT_MESSAGE else "whole-no-words"
        return _record_whole(cited_id, cited_id, quotable, reason, None)

    holder, match, issue = _find_holder(cited, given, offered)
    if holder is None:
        # No offered message holds the words: the cited message's length rule decides (QUOTE-2..4, QUOTE-8).
        quotable = quotable_text(cited.text)
        if not quotable:
            return QuoteVerdict(
                outcome="dropped", reason="empty-message", cited=cited_id, message=cited_id, words_issue=issue
            )
        if cited.excerpt_only or len(quotable) > LONG_MESSAGE:
            return _failure(cited_id, cited_id, _issue_reason(issue), issue, final)
        if len(quotable) <= SHORT_MESSAGE:
            return _record_whole(cited_id, cited_id, quotable, "whole-short", issue)
        if issue in ("starts-inside-word", "ends-inside-word") and not final:
            return _failure(cited_id, cited_id, _issue_reason(issue), issue, final)
        return _record_whole(cited_id, cited_id, quotable, "whole-unverified", issue)

    quotable = quotable_text(holder.text)
    if len(quotable) <= SHORT_MESSAGE:
        return _record_whole(cited_id, holder.id, quotable, "whole-short", None)
    return QuoteVerdict(
        outcome="record",
        reason="words",
        cited=cited_id,
        message=holder.id,
        text=quotable[match.start : match.end],
        start=match.start,
        end=match.end,
    )
