"""JSON the way pi 0.73.1 reads its own ``models.json``: ``//`` line comments and trailing commas allowed.

pi strips a ``//`` comment up to the end of its line and a comma before ``}`` or ``]``, leaving string
literals untouched, then parses what is left as plain JSON (its ``stripJsonComments``). Longhaul reads
``longhaul.json`` and ``score`` reads pi's ``models.json`` with this same dialect, so a file pi accepts is
accepted here and a file pi refuses (a ``/* */`` block comment, a single-quoted string) is refused too.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["loads_pi_json", "strip_pi_json"]

# A whole string literal (kept) or what pi removes; the alternation finds strings first, as pi's does.
_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*')
_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|,(\s*[}\]])')


def strip_pi_json(text: str) -> str:
    """``text`` without its ``//`` comments and trailing commas, strings untouched."""
    text = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    return _TRAILING_COMMA.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(0), text)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity; so does this


def loads_pi_json(text: str) -> Any:
    """Parse ``text`` as pi parses ``models.json``; raises ``ValueError`` (or ``RecursionError``) when pi's
    ``JSON.parse`` would throw."""
    return json.loads(strip_pi_json(text), parse_constant=_refuse_constant)
