"""A model looping inside one JSON string, found while the string streams, so the reply can end there.

A small model under a JSON-schema grammar can fall into writing one short piece of text again and again
inside a string of its answer (``"10:10:10:…"``, ``"See the build. See the build. …"``) until its output
limit; each token of that costs about 16 ms. :class:`LoopFinder` reads one string's raw text (escapes as
written) piece by piece and reports the first point at which the text ends with a short unit written again
and again, back to back, and where to cut it: just after the unit's first copy.

A unit of ``L`` characters (1 to :data:`MAX_UNIT`) counts as a loop once it has been written
``copies_needed(L)`` times in a row: at least :data:`MIN_COPIES` copies and :data:`MIN_CHARS` characters,
and :data:`ONE_CHAR_COPIES` for a single character. Real content stays under that: a 32-digit hex zero, a
60-dash rule, a 16-byte row of ``00`` in a hexdump (47 characters), "ha ha", a path with a repeated segment.
A unit that is one character written ``L`` times is that character's loop, held to its own bar.

The result does not depend on how the text was cut into pieces. Work is linear: for each unit length the
finder keeps where the current run of ``text[i] == text[i - L]`` began and compares a whole threshold's
worth at once (a C-level slice compare), so ordinary text costs a few steps per unit length every
threshold's worth of characters, plus one check per unit length each time the string grows; only a
bounded tail of the string is kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "MAX_UNIT",
    "MIN_CHARS",
    "MIN_COPIES",
    "ONE_CHAR_COPIES",
    "LoopFinder",
    "StringLoop",
    "copies_needed",
]

MAX_UNIT = 40  # the longest unit looked for: a sentence a model repeats is shorter
MIN_COPIES = 6  # a long unit written six times back to back is not prose
MIN_CHARS = 64  # ~20 tokens: clears real runs of a short unit (a hexdump row, a table rule) at ~0.3 s cost
ONE_CHAR_COPIES = 120  # a rule or padding of one character may be long; 120 of them is not content


def copies_needed(unit: int) -> int:
    """How many copies in a row of a unit of ``unit`` characters make a loop."""
    if unit == 1:
        return ONE_CHAR_COPIES
    return max(MIN_COPIES, -(-MIN_CHARS // unit))


# per unit length: the positions in a row where ``text[i] == text[i - L]`` that make the copies above
_RUN = [0] + [(copies_needed(unit) - 1) * unit for unit in range(1, MAX_UNIT + 1)]
# the tail kept: a run's start is at most max(_RUN) back and compares a unit further back; a cut's escape
# is read up to ONE_CHAR_COPIES back (a longer run of backslashes would have been the loop)
_KEEP = max(_RUN) + MAX_UNIT + ONE_CHAR_COPIES + 40


_SAME = re.compile(r"(.)\1*", re.DOTALL)  # a run of one character


@dataclass(frozen=True)
class StringLoop:
    """A loop: ``cut`` just after the first copy of the unit (where the text kept ends), ``found`` where
    the copies reached the bar, and the unit's length. Offsets count characters of the string's raw text,
    or of all the text fed when :class:`~.json_scan.ObjectScanner` hands it on."""

    cut: int
    found: int
    unit: int


class LoopFinder:
    """Feed one string's raw text in any chunking; :meth:`extend` returns the first loop (and from then on
    the same one), at the same point however the text was cut. Nothing in the text makes it raise."""

    def __init__(self) -> None:
        self._tail = ""  # the string's last _KEEP characters
        self._offset = 0  # where ``_tail`` starts in the string
        self._run_from = list(range(MAX_UNIT + 1))  # per unit length: where its current run begins
        self.found: StringLoop | None = None

    def extend(self, text: str) -> StringLoop | None:
        """Take the string's next raw text; the first loop found so far, or None."""
        if self.found is not None or not text:
            return self.found
        window = self._tail + text
        base = self._offset
        end = base + len(window)
        best: tuple[int, int, int] | None = None  # (found, unit, cut): the earliest; on a tie, the shortest
        for unit in range(1, MAX_UNIT + 1):
            start = self._run(window, base, end, unit)
            if start is not None and (best is None or start + _RUN[unit] < best[0]):
                best = (start + _RUN[unit], unit, start)
        if best is not None:
            found, unit, cut = best
            self.found = StringLoop(base + _past_escape(window, cut - base), found, unit)
        self._tail = window[-_KEEP:]
        self._offset = end - len(self._tail)
        return self.found

    def _run(self, window: str, base: int, end: int, unit: int) -> int | None:
        """Advance the run of ``unit`` through the text up to ``end``; where a run long enough for a loop
        began, or None. A run is followed a threshold at a time: a block that matches throughout is a loop,
        else the run restarts after the block's last mismatch (found from the block's end, so no position
        is read twice)."""
        need = _RUN[unit]
        start = self._run_from[unit]
        while start + need <= end:
            at = start - base
            if window[at : at + need] == window[at - unit : at - unit + need]:
                same = _SAME.match(window, at - unit) if unit > 1 else None
                after = same.end() if same is not None else at  # where the first copy's first character stops
                if after < at or unit == 1:
                    self._run_from[unit] = start
                    return start
                # one character written over and over: its own, higher bar decides; the run restarts after
                # the first other character (a run of one character never reaches far: at 120 it loops)
                start = base + after + 1 if after < len(window) else end - need + 1
                continue
            last = at + need - 1
            while window[last] == window[last - unit]:
                last -= 1
            start = base + last + 1
        self._run_from[unit] = start
        return None


def _past_escape(text: str, cut: int) -> int:
    """``cut`` moved to the end of the escape sequence it falls inside (a string cut inside ``\\n`` or
    ``\\u00e9`` does not decode), else ``cut``. The loop goes on well past it, so the characters are there."""
    for begin in range(cut - 1, max(cut - 6, -1), -1):
        if text[begin] != "\\" or not _escaping(text, begin):
            continue
        size = 6 if text[begin + 1 : begin + 2] == "u" else 2
        return max(cut, min(begin + size, len(text)))
    return cut


def _escaping(text: str, at: int) -> bool:
    """Whether the backslash at ``at`` starts an escape: an odd number of backslashes ends there."""
    first = at
    while first > 0 and text[first - 1] == "\\":
        first -= 1
    return (at - first) % 2 == 0
