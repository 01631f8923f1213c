"""A value is kept only where the turn it names shows it verbatim: the summary points, not vouches (VALUE-*).

Pure functions over strings and the state's :class:`~longhaul_daemon.state.model.Value`; nothing raises.
Decisions (the proposals unless said otherwise):

- VALUE-1, VALUE-2: the answer gives ``{"name", "value", "turn"}``; a value not standing in its turn is
  dropped and counted, never retried.
- VALUE-3: a turn runs from its ``u<n>`` to the next user message; a value stands inside one of its pieces
  (user or assistant text, tool-call arguments, tool results, bash commands and output), exact after CRLF→LF.
- VALUE-4: not flanked by a letter or digit; the first unflanked occurrence counts; a blank value never does.
- VALUE-6: a takeover value is checked against the earlier turn it names, never the earlier summary.
- VALUE-7: learned values are FACTS-3 tokens: runs of letters and digits joined by single dots, of 3 or more
  characters, holding a digit (``v1.2.3``, ``a1b2c3d``).
- VALUE-8: values stay across spans; a same-named one (case and spacing ignored) replaces the older; the
  newest :data:`MAX_VALUES` are kept.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from longhaul_daemon.passes.answers.quotes import normalize_newlines
from longhaul_daemon.state.model import Value

__all__ = [
    "MAX_VALUES",
    "Turn",
    "ValueCandidate",
    "ValueCheck",
    "ValueVerdict",
    "check_value",
    "check_values",
    "find_value",
    "learn_values",
    "merge_values",
    "value_tokens",
]

MAX_VALUES = 20  # VALUE-8
MIN_LEARNED = 3  # FACTS-3: a learned value has at least this many characters

ValueReason = Literal["kept", "empty-value", "unknown-turn", "not-in-turn", "flanked"]

_LEARNED = re.compile(r"[^\W_]+(?:\.[^\W_]+)*")


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn's searchable text (VALUE-3), as separate pieces a value may not straddle."""

    id: str
    pieces: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ValueCandidate:
    """One value from a model answer: its name, its text and the turn it names."""

    name: str
    value: str
    turn: str


@dataclass(frozen=True, slots=True)
class ValueVerdict:
    """Whether a value stands in the turn it names, and where: the piece index and the offset in it."""

    kept: bool
    reason: ValueReason
    piece: int = -1
    start: int = -1


@dataclass(frozen=True, slots=True)
class ValueCheck:
    """The values of one answer that verified, and how many were dropped (``narrative.dropped``)."""

    kept: tuple[ValueCandidate, ...]
    dropped: int


def _flanked(text: str, start: int, end: int) -> bool:
    return (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum())


def find_value(text: str, value: str) -> ValueVerdict:
    """VALUE-2, VALUE-4: the first occurrence of ``value`` in ``text`` not flanked by a letter or digit."""
    text = normalize_newlines(text)
    value = normalize_newlines(value)
    if not value.strip():
        return ValueVerdict(kept=False, reason="empty-value")
    seen = False
    at = text.find(value)
    while at != -1:
        if not _flanked(text, at, at + len(value)):
            return ValueVerdict(kept=True, reason="kept", piece=0, start=at)
        seen = True
        at = text.find(value, at + 1)
    return ValueVerdict(kept=False, reason="flanked" if seen else "not-in-turn")


def check_value(value: str, turn_id: str, turns: Mapping[str, Turn]) -> ValueVerdict:
    """VALUE-2..VALUE-4, VALUE-6: does ``value`` stand verbatim in the turn ``turn_id`` names?"""
    if not value.strip():
        return ValueVerdict(kept=False, reason="empty-value")
    turn = turns.get(turn_id)
    if turn is None:
        return ValueVerdict(kept=False, reason="unknown-turn")
    reason: ValueReason = "not-in-turn"
    for index, piece in enumerate(turn.pieces):
        found = find_value(piece, value)
        if found.kept:
            return ValueVerdict(kept=True, reason="kept", piece=index, start=found.start)
        if found.reason == "flanked":
            reason = "flanked"
    return ValueVerdict(kept=False, reason=reason)


def check_values(candidates: Sequence[ValueCandidate], turns: Sequence[Turn]) -> ValueCheck:
    """VALUE-2: keep the candidates that verify, in answer order; count the rest as dropped (no retry)."""
    by_id = {turn.id: turn for turn in turns}
    kept = tuple(c for c in candidates if check_value(c.value, c.turn, by_id).kept)
    return ValueCheck(kept=kept, dropped=len(candidates) - len(kept))


def _name_key(name: str) -> str:
    return " ".join(name.split()).casefold()


def merge_values(
    existing: Sequence[Value], new: Sequence[Value], limit: int = MAX_VALUES
) -> tuple[list[Value], int]:
    """VALUE-8: the values carried after a Close, newest first, and how many were left out.

    A value replaces any value of the same name with a lower ``seq`` (for equal ``seq`` the one listed later
    wins). Replaced values are not counted as left out; only those cut by ``limit`` are.
    """
    latest: dict[str, tuple[int, Value]] = {}
    for order, value in enumerate([*existing, *new]):
        key = _name_key(value.what)
        held = latest.get(key)
        if held is None or (value.seq, order) >= (held[1].seq, held[0]):
            latest[key] = (order, value)
    ranked = sorted(latest.values(), key=lambda item: (item[1].seq, item[0]), reverse=True)
    keep = max(limit, 0)
    return [value for _, value in ranked[:keep]], max(len(ranked) - keep, 0)


def value_tokens(text: str, among: Container[str] | None = None) -> Iterator[tuple[str, int]]:
    """VALUE-7 (FACTS-3): every value token of ``text`` (already CRLF-normalized) with where it starts, in
    order, repeats included; one pass over the text. With ``among`` (value tokens only), just those.

    A token is a whole run of letters and digits joined by single dots, so no letter or digit flanks it
    where it is found: :func:`find_value` keeps every token of a text in that text (VALUE-4).
    """
    for match in _LEARNED.finditer(text):
        token = match.group(0)
        if among is not None:
            if token in among:
                yield token, match.start()
        elif len(token) >= MIN_LEARNED and any(map(str.isdigit, token)):
            yield token, match.start()


def learn_values(text: str) -> tuple[str, ...]:
    """VALUE-7 (FACTS-3): the value tokens of tool output, each once, in order of first appearance."""
    return tuple(dict.fromkeys(token for token, _ in value_tokens(normalize_newlines(text))))
