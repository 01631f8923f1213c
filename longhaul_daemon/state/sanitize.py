"""Make untrusted transcript text safe to print: no escape sequence or control character survives (PASS-10).

Every string the renderer copies from the transcript (rule words, commands, file names, git output) passes
through :func:`sanitize` first. The sanitizer works on one field at a time, so line breaks and tabs inside a
field become spaces: the renderer adds its own line breaks. What a line may *start with* is the rendering
rule's business (:func:`longhaul_daemon.state.render.neutral`). The inspector uses the same functions before
anything reaches a terminal (INSPECT-8). Text entering the State is cleaned by
:mod:`longhaul_daemon.state.clean` with the same :data:`ESCAPE_SEQUENCES`, :data:`LINE_BREAKS` and
:func:`is_safe_char`.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "ELLIPSIS",
    "ESCAPE_SEQUENCES",
    "LINE_BREAKS",
    "is_safe_char",
    "sanitize",
    "sanitize_block",
    "sanitize_line",
    "sanitize_verbatim",
]

ELLIPSIS = "…"

# Escape sequences are removed whole, so their parameters never leak in as text (ESC[31m goes, not just ESC).
# Bodies of string sequences are bounded, so a transcript full of unterminated introducers stays linear-time.
ESCAPE_SEQUENCES = re.compile(
    r"""
    (?:\x1b\[|\x9b)[\x30-\x3f]{0,64}[\x20-\x2f]{0,16}[\x40-\x7e]          # CSI (7- or 8-bit)
    | (?:\x1b\]|\x9d)[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)          # OSC, ended by BEL or ST
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]{0,4096}(?:\x1b\\|\x9c)  # DCS, SOS, PM, APC, ended by ST
    | \x1b[\x20-\x2f]{0,16}[\x30-\x7e]                                     # two-byte and nF escapes
    """,
    re.VERBOSE,
)

# Characters that end a line or jump a column somewhere: they become one space each.
_BREAKS = frozenset("\t\n\v\f\r\x1c\x1d\x1e\x1f\x85\u2028\u2029")

# Unicode categories that never print: controls (C0, DEL, C1), format characters (bidi overrides and isolates,
# zero-width characters, tag characters, the BOM) and lone surrogates, which cannot even be encoded as UTF-8.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

_SPACES = re.compile(r"\s+")
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
# Every character that ends a line, for cleaners that keep line breaks (CRLF is two of them, read as one).
LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


# Plain text: ASCII without a control character. Most of a transcript is plain, and plain text has no escape
# sequence, no line break and nothing that never prints, so the cleaners can hand it back as it is.
_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_plain(text: str) -> bool:
    """Whether ``text`` is ASCII with no control character: every cleaner leaves such text as it is (but for
    the spacing :func:`sanitize` collapses)."""
    return text.isascii() and _ASCII_CONTROL.search(text) is None


def is_safe_char(ch: str) -> bool:
    """Whether one character may appear in sanitized text."""
    return ch not in _BREAKS and unicodedata.category(ch) not in _UNSAFE_CATEGORIES


def sanitize(text: str) -> str:
    """One field of transcript text, printable and on one line.

    Escape sequences go first and whole; then line breaks and tabs become spaces and every other control or
    format character is dropped; runs of whitespace collapse to one space and the ends are trimmed. The result
    is idempotent: ``sanitize(sanitize(t)) == sanitize(t)``.
    """
    if not text:
        return ""
    if is_plain(text) and "  " not in text and text[0] != " " and text[-1] != " ":
        return text
    stripped = ESCAPE_SEQUENCES.sub("", text)
    kept = "".join(" " if ch in _BREAKS else ch for ch in stripped if ch in _BREAKS or is_safe_char(ch))
    return _SPACES.sub(" ", kept).strip()


def sanitize_verbatim(text: str) -> list[str]:
    """A user's words kept as written, made safe: one entry per line of ``text``.

    Escape sequences and unsafe characters go as in :func:`sanitize`, tabs become spaces, but spacing inside a
    line is kept and line breaks split the text into lines instead of vanishing. Used for rule words, which
    the summary must show verbatim; the renderer indents every line after the first, so no line of a rule can
    pose as a heading or a file block of its own.
    """
    return [
        "".join(" " if ch in _BREAKS else ch for ch in raw if ch in _BREAKS or is_safe_char(ch))
        for raw in _LINE_BREAK.split(ESCAPE_SEQUENCES.sub("", text))
    ]


def sanitize_line(text: str, max_chars: int) -> str:
    """:func:`sanitize`, then cut to at most ``max_chars`` code points, the cut marked with "…"."""
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    clean = sanitize(text)
    if len(clean) <= max_chars:
        return clean
    return clean[: max_chars - 1].rstrip() + ELLIPSIS


def sanitize_block(text: str, *, max_lines: int, max_chars: int) -> str:
    """Multi-line text (an excerpt, an earlier summary) for a reader: each line as :func:`sanitize_line`.

    Line breaks of any kind become ``\n``, runs of blank lines collapse to one, blank lines at either end go,
    and a block longer than ``max_lines`` keeps its first lines and ends with a line saying how many were cut.
    """
    if max_lines < 1:
        raise ValueError("max_lines must be at least 1")
    lines: list[str] = []
    for raw in _LINE_BREAK.split(ESCAPE_SEQUENCES.sub("", text)):
        line = sanitize_line(raw, max_chars)
        if line or (lines and lines[-1]):
            lines.append(line)
    while lines and not lines[-1]:
        lines.pop()
    if len(lines) <= max_lines:
        return "\n".join(lines)
    kept = lines[: max_lines - 1]
    return "\n".join([*kept, sanitize_line(f"{ELLIPSIS} ({len(lines) - len(kept)} more lines)", max_chars)])
