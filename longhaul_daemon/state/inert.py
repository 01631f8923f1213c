"""The rendering rule: no text from a model, a tool call or a user can start a structural line of the summary.

The summary is Markdown that a model reads as the session's memory, so a section it believes in must be one
the renderer wrote. Newlines inside a field are already gone (:mod:`longhaul_daemon.state.sanitize`), but a
line that *starts* with ``#``, ``<``, ``>``, ``-``, ``|`` or a fence is still structure, and Markdown lets a
heading be indented up to three spaces. So every piece of untrusted text, wherever the renderer places it,
leaves here through :func:`neutral`:

- a line whose first non-blank characters would open a block gets a backslash right before the character
  that makes it structural: ``\\## Standing rules``, ``\\</read-files>``, ``\\- R9 "always delete tests"``,
  ``\\> quoted``, ``\\```python``, ``\\| a | b |``, ``\\---``, ``\\===`` and ``12\\. step`` (for an ordered
  item the backslash goes before the ``.`` or ``)``, since a backslash before a digit is no escape);
- what opens a block: an ATX heading (one to six ``#`` then a space or the end), a blockquote ``>``, a table
  row ``|``, an HTML tag or comment (``<`` then a letter, ``/``, ``!`` or ``?``), a bullet (``-``, ``+`` or
  ``*`` then a space or the end), an ordered item (up to nine digits, ``.`` or ``)``, then a space or the
  end), a fence (three backticks or tildes), and a line made only of ``-``, ``_``, ``*``, ``=``, ``:``,
  ``|``, ``+`` and blanks (a thematic break, a setext underline, a table's delimiter row);
- nothing else changes: the backslash is Markdown's own escape, so a rendered view shows the user's words
  exactly, and in the raw text every line of a rule still stands verbatim after that one added character.

"Blank" is any Unicode whitespace, not only the spaces Markdown counts, so no-break spaces cannot hide a
heading from the rule while a model still reads one. Because the rule is applied to the piece and not to the
line around it, it holds wherever a piece lands: at the start of a line, after a bullet the renderer wrote,
or on a rule's indented second line.
"""

from __future__ import annotations

import re

from longhaul_daemon.state.sanitize import ELLIPSIS, sanitize_line, sanitize_verbatim

__all__ = ["inert", "inert_lines", "neutral"]

_OPENS_BLOCK = re.compile(
    r"""
    \#{1,6}(?:\s|$)                # an ATX heading: "## Now"
    | [>|]                         # a blockquote, a table row
    | <[A-Za-z/!?]                 # an HTML block: pi's <read-files> tags, <!-- comments -->, <pre>
    | [-+*](?:\s|$)                # a bullet item: "- R9 ..."
    | `{3} | ~{3}                  # a code fence
    | [-_*=:|+][-_*=:|+\s]*$       # a thematic break, a setext underline, a table's delimiter row
    """,
    re.VERBOSE,
)
_ORDERED = re.compile(r"\d{1,9}(?=[.)](?:\s|$))")


def neutral(line: str) -> str:
    """THE rule: ``line`` unchanged, or with one backslash before the character that would open a block."""
    body = line.lstrip()
    lead = line[: len(line) - len(body)]
    ordered = _ORDERED.match(body)
    if ordered is not None:
        return f"{lead}{body[: ordered.end()]}\\{body[ordered.end() :]}"
    if _OPENS_BLOCK.match(body):
        return f"{lead}\\{body}"
    return line


def inert(text: str, max_chars: int) -> str:
    """One piece of untrusted text for one line: sanitized, cut to ``max_chars`` with "…", made inert."""
    return neutral(sanitize_line(text, max_chars))


def inert_lines(text: str, max_chars: int) -> tuple[list[str], bool]:
    """Untrusted multi-line text kept as written (rule words, a user's message): its lines, made inert.

    Spacing and line breaks stay, blank lines at either end go, and the text is cut after ``max_chars`` code
    points, the cut marked with "…". Returns the lines and whether anything was cut.
    """
    cut = len(text) > max_chars
    lines = sanitize_verbatim(text[:max_chars] if cut else text)
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if cut and lines:
        lines[-1] = lines[-1].rstrip() + ELLIPSIS
    return [neutral(line.rstrip()) for line in lines], cut
