"""A model looping inside one JSON string, found while the string streams, so the reply can end there.

A small model under a JSON-schema grammar can fall into writing one short piece of text again and again
inside a string of its answer (``"10:10:10:…"``, ``"See the build. See the build. …"``) until its output
limit; each token of that costs about 16 ms. :class:`LoopFinder` reads one string's raw text (escapes as
written) piece by piece and reports the first point at which the text ends with a short unit written again
and again, back to back, and where to cut it: just after the unit's first copy.

A unit of ``L`` characters (1 to :data:`MAX_UNIT`) counts as a loop once it has been written
``copies_needed(L)`` times in a row: at least :data:`MIN_COPIES` copies and :data:`MIN_CHARS` characters up
to :data:`SHORT_UNIT` characters, :data:`LONG_COPIES` copies of a longer one (a 110-character sentence
written over and over was seen on the second blind half), and :data:`ONE_CHAR_COPIES` for a single
character. Real content stays under that: a 32-digit hex zero, a
60-dash rule, a 16-byte row of ``00`` in a hexdump (47 characters), "ha ha", a path with a repeated segment.
A unit that is one character written ``L`` times is that character's loop, held to its own bar.

A model also counts: ``"1.2.3.4.5.…124"`` runs to the limit with no unit repeated. So a run of
:data:`COUNT_RUN` integers in a row, each one more than the one before and all parted by the same separator
of at most :data:`COUNT_GAP` characters (over :data:`MIN_CHARS` characters in all), is a loop too, cut just
after the run's first number and its separator; its ``unit`` is 0. A list a person writes ("steps 1, 2, 3")
or a version ("1.2.3") stays far under that.

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
    "COUNT_GAP",
    "COUNT_RUN",
    "LONG_COPIES",
    "MAX_UNIT",
    "MIN_CHARS",
    "MIN_COPIES",
    "ONE_CHAR_COPIES",
    "SHORT_UNIT",
    "LoopFinder",
    "StringLoop",
    "copies_needed",
]

SHORT_UNIT = 40  # up to this many characters a unit needs MIN_COPIES copies
MAX_UNIT = 160  # the longest unit looked for: a sentence or two a model writes again
LONG_COPIES = 3  # a unit over SHORT_UNIT written three times back to back is no prose either
MIN_COPIES = 6  # a long unit written six times back to back is not prose
MIN_CHARS = 64  # ~20 tokens: clears real runs of a short unit (a hexdump row, a table rule) at ~0.3 s cost
ONE_CHAR_COPIES = 120  # a rule or padding of one character may be long; 120 of them is not content
COUNT_RUN = 16  # integers counting up one by one: sixteen in a row is not a list a person writes
COUNT_GAP = 3  # the separator between two counted numbers (".", ", ", "\\n" as written)
_MAX_DIGITS = 9  # a longer number is an id, not a count


def copies_needed(unit: int) -> int:
    """How many copies in a row of a unit of ``unit`` characters make a loop."""
    if unit == 1:
        return ONE_CHAR_COPIES
    if unit > SHORT_UNIT:
        return LONG_COPIES
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
    unit: int  # 0: a count (see the module docstring)


class _Count:
    """Follows the numbers of one string as it streams, for a run counting up one by one."""

    def __init__(self) -> None:
        self.digits = ""  # the number being read
        self.number_at = 0  # where it began
        self.gap = ""  # the text since the last number ended, kept up to one character past COUNT_GAP
        self.gap_ok = False  # a previous number exists and the gap is short enough
        self.previous = -2  # the last number read
        self.separator = ""  # the run's separator, once it has two numbers
        self.run = 0  # numbers in the current run
        self.cut = 0  # just after the run's first number and its separator

    def extend(self, text: str, base: int) -> tuple[int, int] | None:
        """Read ``text`` (starting at ``base`` in the string); ``(found, cut)`` of a count, or None."""
        for offset, ch in enumerate(text, base):
            if "0" <= ch <= "9":
                if not self.digits:
                    self.number_at = offset
                self.digits += ch
                continue
            if self.digits:
                found = self._number(offset)
                if found is not None:
                    return found
            if len(self.gap) <= COUNT_GAP:
                self.gap += ch
        return None

    def _number(self, end: int) -> tuple[int, int] | None:
        number = int(self.digits) if len(self.digits) <= _MAX_DIGITS else -2
        follows = self.gap_ok and len(self.gap) <= COUNT_GAP and number == self.previous + 1 and number >= 0
        if follows and (self.run == 1 or self.gap == self.separator):
            if self.run == 1:
                self.separator = self.gap
                self.cut = self.number_at  # the run's first number and its separator stay
            self.run += 1
        else:
            self.run = 1
        self.previous, self.digits, self.gap, self.gap_ok = number, "", "", True
        if self.run >= COUNT_RUN and end - self.cut >= MIN_CHARS:
            return end, self.cut
        return None


class LoopFinder:
    """Feed one string's raw text in any chunking; :meth:`extend` returns the first loop (and from then on
    the same one), at the same point however the text was cut. Nothing in the text makes it raise."""

    def __init__(self) -> None:
        self._tail = ""  # the string's last _KEEP characters
        self._offset = 0  # where ``_tail`` starts in the string
        self._run_from = list(range(MAX_UNIT + 1))  # per unit length: where its current run begins
        self._count = _Count()
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
            if self._run_from[unit] + _RUN[unit] > end:
                continue  # its run cannot reach the bar yet: nothing to read (most units, most of the time)
            start = self._run(window, base, end, unit)
            if start is not None and (best is None or start + _RUN[unit] < best[0]):
                best = (start + _RUN[unit], unit, start)
        counted = self._count.extend(text, end - len(text))
        if counted is not None and (best is None or counted[0] < best[0]):
            best = (counted[0], 0, counted[1])
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
