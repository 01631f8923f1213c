"""Whole top-level JSON objects found in text that arrives piece by piece, so a stream can end at the answer.

A small model asked for one JSON object often sends it and then keeps going (prose, the object again, padding)
until the output limit, and every token of that is paid for. :class:`ObjectScanner` reads the reply as it
streams and hands back each top-level ``{...}`` group the moment its closing brace arrives, with where it
ended, so the caller can end the request there. The same scanner finds objects in a whole reply
(:func:`top_level_groups`), so a streamed reply and a stored one are read alike.

The rules are those of DIFF-17's extraction: each ``{`` outside an earlier group starts a candidate; inside a
group JSON strings are read (a brace or quote inside a string, or escaped, counts for nothing); a group ends
when its braces balance. A group is handed back as text whether or not it is valid JSON: deciding that, and
whether the object is the one wanted, is the caller's business. Text outside groups is skipped unread, so a
quote in prose never opens a string. A group that never closes is left open (:meth:`ObjectScanner.pending`).

A scanner made with ``watch_strings`` also reads each string value inside a group (not a key) for a model
looping in it (:mod:`.string_loops`) and stops at the first such loop (:attr:`ObjectScanner.string_loop`):
the stream is to end there, so nothing after it is read.
"""

from __future__ import annotations

import json
import re

from longhaul_daemon.models.string_loops import LoopFinder, StringLoop

__all__ = ["SALVAGE_TRIES", "ObjectScanner", "closed_in_string", "closed_prefix", "top_level_groups"]

_SPECIAL = re.compile(r'[{}"\\]')  # the only characters that change the scanner's state inside a group
_IN_STRING = re.compile(r'["\\]')
_WATCHED = re.compile(r'[{}\[\]:,"\\]')  # and, to tell a value from a key, what comes before a string


class ObjectScanner:
    """Feed text in any chunking; :meth:`feed` returns the top-level groups completed by that piece.

    Work is linear in the text fed: each character is looked at once, and text outside groups is skipped
    with ``str.find``. Only the open group's text is kept. With ``watch_strings``, string values are read
    for loops too (the module docstring), and feeding stops at the first.
    """

    def __init__(self, *, watch_strings: bool = False) -> None:
        self._group: list[str] = []  # pieces of the open group, from its "{"
        self._group_chars = 0  # characters in ``_group``
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self.consumed = 0  # characters fed so far
        self._item_start = 0  # where the open item (an object inside the group's object) began, in the group
        # the last item closed: where it starts and ends in the group, its text unspaced, its text
        self._last_item: tuple[int, int, str, str] | None = None
        # the open group cut after an item the next one copied, closed: the latest loop's, so a loop in a list
        # written before what the caller wants (the labels, before the prose) does not hide a later one
        self.repeated: str | None = None
        self._looping: str | None = (
            None  # the item of the loop ``repeated`` cut; its further copies add nothing
        )
        self._special = _WATCHED if watch_strings else _SPECIAL
        self._containers: list[str] = []  # the group's open "{" and "[", innermost last (watched only)
        self._value_next = False  # a string opening now is a value, not a key (watched only)
        self._finder: LoopFinder | None = None  # reads the open string value (watched only)
        self._string_from = 0  # where the open string's text unread by ``_finder`` starts, in the piece
        self._string_start = 0  # the open string's first character, as an offset in all text fed
        # the first loop inside a string value, offsets in all text fed; nothing after it is read
        self.string_loop: StringLoop | None = None

    @property
    def pending(self) -> str | None:
        """The text of the group still open (the reply was cut or never closed it), or None."""
        return "".join(self._group) if self._depth else None

    def feed(self, piece: str) -> list[tuple[str, int]]:
        """The groups this piece completed, each with the offset just past its ``}`` in all text fed."""
        base = self.consumed
        self.consumed += len(piece)
        if self.string_loop is not None:
            return []  # stopped at a loop: the stream ends there
        done: list[tuple[str, int]] = []
        at = 0
        size = len(piece)
        while at < size:
            if not self._depth:
                start = piece.find("{", at)
                if start < 0:
                    return done
                self._depth, self._in_string, self._escaped = 1, False, False
                self._group, self._group_chars, self._last_item = [], 0, None
                self._containers, self._value_next = ["{"], False
                at = start + 1
                group_start = start
            else:
                group_start = at
            end = self._scan(piece, at, group_start)
            if end is None:
                stop = size if self.string_loop is None else self.string_loop.found - base
                self._group.append(piece[group_start:stop])
                self._group_chars += stop - group_start
                return done
            self._group.append(piece[group_start:end])
            done.append(("".join(self._group), base + end))
            self._group, self._group_chars, self._last_item = [], 0, None
            at = end
        return done

    def _item_closed(self, piece: str, group_start: int, end: int) -> None:
        """An object directly inside the group's object closed at ``piece[end - 1]``: when it copies the item
        before it in the same array, keep the group cut after that item and closed (a looping model).

        Only the text since the previous item's end is put together, so a reply of many items is read in
        time linear in its length."""
        last = self._last_item
        since = last[1] if last is not None else self._item_start
        text = self._group_tail(since, piece, group_start, end)
        start, stop = self._item_start, since + len(text)
        raw = text[start - since :]
        squeezed = "".join(raw.split())
        self._last_item = (start, stop, squeezed, raw)
        if last is None or last[2] != squeezed or squeezed == self._looping:
            return
        if text[: start - since].strip() == "," and _item_value(last[3]) == _item_value(raw):
            self.repeated = ("".join(self._group) + piece[group_start:end])[: last[1]] + "]}"
            self._looping = squeezed

    def _group_tail(self, since: int, piece: str, group_start: int, end: int) -> str:
        """The open group's text from offset ``since``, ``piece[group_start:end]`` being what the current
        piece adds; only what is needed is copied, since a whole reply may come as one piece."""
        need = self._group_chars + (end - group_start) - since
        if need <= end - group_start:
            return piece[end - need : end]
        tail = piece[group_start:end]
        parts, have, at = [tail], len(tail), len(self._group) - 1
        while have < need and at >= 0:
            parts.append(self._group[at])
            have += len(self._group[at])
            at -= 1
        text = "".join(reversed(parts))
        return text[len(text) - need :]

    def _scan(self, piece: str, at: int, group_start: int) -> int | None:
        """Advance through ``piece`` from ``at`` inside an open group; the index after its closing brace.

        None when the piece ends first, or when a watched string loops (:attr:`string_loop` says where)."""
        size = len(piece)
        self._string_from = at
        while at < size:
            if self._escaped:
                self._escaped = False
                at += 1
                continue
            pattern = _IN_STRING if self._in_string else self._special
            found = pattern.search(piece, at)
            if found is None:
                break
            ch = found.group()
            at = found.end()
            if self._in_string:
                if ch == "\\":
                    self._escaped = True
                    continue
                self._in_string = False
                if self._finder is not None and self._string_looped(self._finder, piece, at - 1):
                    return None
                self._finder = None
            elif ch == '"':
                self._in_string = True
                if self._value_next:
                    self._finder, self._string_from = LoopFinder(), at
                    self._string_start = self.consumed - size + at
                self._value_next = False
            elif ch == "{":
                self._depth += 1
                if self._depth == 2:
                    self._item_start = self._group_chars + at - 1 - group_start
                self._containers.append("{")
                self._value_next = False
            elif ch == "}":
                self._depth -= 1
                while self._containers and self._containers.pop() != "{":
                    pass  # an array left open inside the object closes with it (the group will not decode)
                self._value_next = False
                if self._depth == 0:
                    return at
                if self._depth == 1:
                    self._item_closed(piece, group_start, at)
            else:
                self._punctuation(ch)
            # a backslash outside a string is not JSON; it changes nothing and the group will not decode
        if self._in_string and self._finder is not None:
            self._string_looped(self._finder, piece, size)
        return None

    def _punctuation(self, ch: str) -> None:
        """``[``, ``]``, ``:`` or ``,`` (read only when watching strings): whether a value comes next."""
        if ch == "[":
            self._containers.append("[")
            self._value_next = True
        elif ch == "]":
            if self._containers and self._containers[-1] == "[":
                self._containers.pop()
            self._value_next = False
        elif ch == ":":
            self._value_next = True
        elif ch == ",":
            self._value_next = bool(self._containers) and self._containers[-1] == "["

    def _string_looped(self, finder: LoopFinder, piece: str, stop: int) -> bool:
        """Give the open string value's text up to ``piece[stop]`` to its finder; True when it looped."""
        loop = finder.extend(piece[self._string_from : stop])
        self._string_from = stop
        if loop is None:
            return False
        start = self._string_start
        self.string_loop = StringLoop(start + loop.cut, start + loop.found, loop.unit)
        return True


def _item_value(text: str) -> object:
    """An item as JSON reads it, so spacing between tokens does not count; its text when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def top_level_groups(text: str) -> tuple[list[str], str | None]:
    """Every complete top-level group of ``text`` in order, and the group left open at its end (or None)."""
    scanner = ObjectScanner()
    groups = [group for group, _ in scanner.feed(text)]
    return groups, scanner.pending


_CLOSERS = {"{": "}", "[": "]"}
SALVAGE_TRIES = 64  # cut points tried, newest first: a reply's last items are where it was cut


def _boundary(stack: list[str]) -> bool:
    """Whether a cut here falls between list items or between the group's own members."""
    return bool(stack) and (stack[-1] == "[" or len(stack) == 1)


def _cuts(group: str) -> tuple[list[tuple[int, str]], bool]:
    """Where ``group`` may be cut and the closers each cut needs (see :func:`closed_prefix`), and whether it
    ends inside a string that is the value of one of the group's own members."""
    stack: list[str] = []
    cuts: list[tuple[int, str]] = []
    in_string = escaped = False
    member_value = False  # the open string is a value of the group's own object
    last = ""  # the last character outside strings that is not a space
    for at, ch in enumerate(group):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
                last = '"'
            continue
        if ch.isspace():
            continue
        if ch == '"':
            in_string, member_value = True, len(stack) == 1 and last == ":"
        elif ch in _CLOSERS:
            stack.append(ch)
        elif ch in "}]":
            if not stack:
                return [], False
            stack.pop()
            if _boundary(stack):
                cuts.append((at + 1, "".join(_CLOSERS[c] for c in reversed(stack))))
        elif ch == "," and _boundary(stack):
            cuts.append((at, "".join(_CLOSERS[c] for c in reversed(stack))))
        last = ch
    return cuts, in_string and member_value and not escaped


def closed_prefix(group: str) -> str | None:
    """The open ``group`` (a reply cut at its output limit) cut back to the last member or item that was
    whole, with its open brackets closed; None when no such cut decodes.

    Cut points are just before a ``,`` and just after a ``}`` or ``]``, where everything before is complete
    JSON but for the brackets still open, and only between the items of a list or the members of the group
    itself: a cut between the members of an item would keep half an item, which reads as a defect. They are
    tried from the newest, at most :data:`SALVAGE_TRIES`, so the cost is bounded by the reply, not by how
    often a cut fails to decode.
    """
    cuts, _ = _cuts(group)
    for end, closers in reversed(cuts[-SALVAGE_TRIES:]):
        text = group[:end] + closers
        try:
            json.loads(text, strict=False)
        except (ValueError, RecursionError):
            continue
        return text
    return None


def closed_in_string(group: str) -> str | None:
    """The open ``group`` closed where it was cut, when that was inside a string value of one of its own
    members (a model writing one member, its prose, on and on to the limit): the string ends there and the
    group closes after it. None otherwise, or when the result does not decode."""
    _, in_member_string = _cuts(group)
    if not in_member_string:
        return None
    text = group + '"}'
    try:
        json.loads(text, strict=False)
    except (ValueError, RecursionError):
        return None
    return text
