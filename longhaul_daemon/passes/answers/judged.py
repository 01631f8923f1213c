"""Only the user's own words withdraw a rule: find the quoted, pasted and fenced text a lift check must skip.

The *judged text* (QUOTE-15) is what a rule records, less the passages of QUOTE-12 and QUOTE-13; exclusions
are computed on the whole quotable text first, so words inside a quoted passage are excluded too. Pure
functions; nothing raises. Decisions (the proposals unless said otherwise):

- QUOTE-12: a passage has six or more tokens between its marks: straight double quotes, “…”, „…“ (also
  closed by ”), «…», »…« and inline code (backtick runs of equal length); single quotes are not marks, and a
  mark with no closer on the same stretch is an ordinary character.
- QUOTE-13: a blockquoted line starts with ``>``; a fence opens at three or more backticks or tildes and
  closes at a line of the same character at least as long, or at the end. Inline passages never span a
  left-out line.
- Left-out text becomes one space, so the words either side never join.
"""

from __future__ import annotations

from collections.abc import Sequence

from longhaul_daemon.passes.answers.quotes import quotable_text

__all__ = [
    "MIN_QUOTED_WORDS",
    "excluded_ranges",
    "judged_text",
]

MIN_QUOTED_WORDS = 6  # QUOTE-12: a quoted passage of this many words or more is left out

# QUOTE-12: opening mark -> the marks that close it.
_PAIRS: dict[str, str] = {
    '"': '"',
    "\u201c": "\u201d",  # “…”
    "\u201e": "\u201c\u201d",  # „…“ (and „…”)
    "\u00ab": "\u00bb",  # «…»
    "\u00bb": "\u00ab",  # »…«
}


def _lines(text: str) -> list[tuple[int, int]]:
    """Each line's range, without its line break."""
    out: list[tuple[int, int]] = []
    start = 0
    while True:
        end = text.find("\n", start)
        if end == -1:
            out.append((start, len(text)))
            return out
        out.append((start, end))
        start = end + 1


def _fence_run(line: str) -> tuple[str, int] | None:
    stripped = line.lstrip()
    if not stripped or stripped[0] not in "`~":
        return None
    ch = stripped[0]
    run = len(stripped) - len(stripped.lstrip(ch))
    return (ch, run) if run >= 3 else None


def _line_exclusions(text: str) -> list[tuple[int, int]]:
    """QUOTE-13: the ranges of fenced blocks and blockquoted lines."""
    out: list[tuple[int, int]] = []
    fence: tuple[str, int] | None = None
    for start, end in _lines(text):
        line = text[start:end]
        if fence is not None:
            out.append((start, end))
            stripped = line.strip()
            ch, run = fence
            if stripped and stripped == ch * len(stripped) and len(stripped) >= run:
                fence = None
            continue
        opened = _fence_run(line)
        if opened is not None:
            fence = opened
            out.append((start, end))
        elif line.lstrip().startswith(">"):
            out.append((start, end))
    return out


def _word_count(passage: str) -> int:
    return len(passage.split())


def _backtick_run(text: str, i: int, end: int) -> int:
    j = i
    while j < end and text[j] == "`":
        j += 1
    return j - i


def _inline_exclusions(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """QUOTE-12: quoted passages of six or more words within ``text[lo:hi]``, marks included."""
    out: list[tuple[int, int]] = []
    i = lo
    while i < hi:
        ch = text[i]
        if ch == "`":
            run = _backtick_run(text, i, hi)
            j = i + run
            close = -1
            while j < hi:
                if text[j] == "`":
                    other = _backtick_run(text, j, hi)
                    if other == run:
                        close = j
                        break
                    j += other
                else:
                    j += 1
            if close == -1:
                i += run
                continue
            if _word_count(text[i + run : close]) >= MIN_QUOTED_WORDS:
                out.append((i, close + run))
            i = close + run
            continue
        closers = _PAIRS.get(ch)
        if closers is not None:
            close = next((j for j in range(i + 1, hi) if text[j] in closers), -1)
            if close != -1:
                if _word_count(text[i + 1 : close]) >= MIN_QUOTED_WORDS:
                    out.append((i, close + 1))
                i = close + 1
                continue
        i += 1
    return out


def excluded_ranges(text: str) -> tuple[tuple[int, int], ...]:
    """QUOTE-12, QUOTE-13: the left-out ranges of a message's quotable text, sorted and disjoint."""
    quotable = quotable_text(text)
    lines = _line_exclusions(quotable)
    out = list(lines)
    lo = 0
    for start, end in [*lines, (len(quotable), len(quotable))]:
        if lo < start:
            out.extend(_inline_exclusions(quotable, lo, start))
        lo = max(lo, end)
    return tuple(sorted(r for r in out if r[0] < r[1]))


def _cut(text: str, lo: int, hi: int, excluded: Sequence[tuple[int, int]]) -> str:
    pieces: list[str] = []
    at = lo
    for start, end in excluded:
        if end <= at or start >= hi:
            continue
        if start > at:
            pieces.append(text[at:start])
        pieces.append(" ")
        at = max(at, min(end, hi))
    pieces.append(text[at:hi])
    return "".join(pieces)


def judged_text(text: str, start: int | None = None, end: int | None = None) -> str:
    """QUOTE-14, QUOTE-15: the text a lift check reads for a message's recorded range.

    ``text`` is the message as written; ``start``/``end`` are offsets in its quotable text (as a
    :class:`~longhaul_daemon.passes.answers.quotes.QuoteVerdict` gives them), the whole quotable text when
    omitted. Out-of-range offsets are clamped.
    """
    quotable = quotable_text(text)
    lo = 0 if start is None else min(max(start, 0), len(quotable))
    hi = len(quotable) if end is None else min(max(end, lo), len(quotable))
    return _cut(quotable, lo, hi, excluded_ranges(text))
