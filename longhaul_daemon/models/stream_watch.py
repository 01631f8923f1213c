"""Where a streamed reply may end: at the first whole answer object, at a list item the model repeats, or
at a loop inside one of the object's strings.

A model that sends its answer and keeps going (prose, the answer again, padding) until its output limit is
paid for every token, and a small model held to the schema by a grammar can loop inside the object, writing
the same item, or the same few characters inside a string, until the limit. :class:`StreamWatch` reads the
answer text piece by piece (whether the daemon streams it itself or pi streams it and the shim forwards the
pieces) and says when the stream should end; the caller then closes the connection, or tells the shim to
stop (:mod:`.via_pi`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import orjson

from longhaul_daemon.models.completion import CompletionResult
from longhaul_daemon.models.json_scan import ObjectScanner, closed_in_string, closed_prefix, top_level_groups

__all__ = ["TRAILING_CHARS", "StreamWatch", "estimated"]

_CHARS_PER_TOKEN = 3  # the planner's rate (diff/chunks.py): an estimate that never understates the cost
TRAILING_CHARS = 64  # text allowed after the wanted object before a stream is ended: a fence, a newline


class StreamWatch:
    """Feed it the reply's answer text as it arrives; :meth:`feed` says when to end the stream.

    ``stop_at`` accepts a complete top-level JSON object; once one has arrived and more than
    :data:`TRAILING_CHARS` of text followed it, the stream should end. ``cut_at`` (optional) accepts the
    object cut after a list item that the model then wrote again word for word: the stream should end
    there too, and the reply is that cut object (:attr:`cut`). A loop it refuses (the labels looping before
    the prose came) leaves the next loop to be looked at.

    With ``cut_at`` (a caller that takes loop cuts: the Diff's calls), a string value of the object that
    ends in a short unit written again and again (:mod:`.string_loops`) ends the stream too, when the
    reply cut there still holds an answer ``cut_at`` takes (closed as the Diff salvages it): the reply is
    the text cut just after the unit's first copy, inside the string, and it counts as cut off
    (:attr:`looped`), so the caller salvages what came before rather than paying for more of the loop. A
    loop before the prose is refused, and the stream reads on. A caller without ``cut_at`` (turns mode)
    reads such a reply to its output limit, as before: it raises the budget for any reply cut off.
    """

    def __init__(
        self,
        stop_at: Callable[[dict[str, Any]], bool],
        cut_at: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self._stop_at = stop_at
        self._cut_at = cut_at
        self._scanner = ObjectScanner(watch_strings=cut_at is not None)
        self._answer_end: int | None = None  # where the wanted object ended, in characters of reply text
        self._seen = 0
        self._item_loop: str | None = None  # the last item loop cut looked at, so each is decoded once
        self._parts: list[str] = []
        self.cut: str | None = None
        self.looped = False  # ended at a loop inside a string: ``cut`` stops in that string
        self._loop_refused = False  # a string loop the cut would keep nothing of: the stream reads on
        self.ended = False

    @property
    def text(self) -> str:
        """Everything fed so far."""
        return "".join(self._parts)

    def feed(self, piece: str) -> bool:
        """Take the next piece of answer text; True once the stream should end (and from then on)."""
        if self.ended or not piece:
            return self.ended
        self._parts.append(piece)
        self._seen += len(piece)
        if self._answer_end is None:  # past the answer, only the length of what follows matters
            self._answer_end = _accepted(self._scanner.feed(piece), self._stop_at)
        if self._answer_end is not None and self._seen - self._answer_end > TRAILING_CHARS:
            self.ended = True
        elif (
            self._answer_end is None
            and self._cut_at is not None
            and self._scanner.repeated is not self._item_loop
        ):
            self._item_loop = (
                self._scanner.repeated
            )  # a new loop: an earlier one the caller refused stays refused
            self.cut = _item_cut(self._scanner, self._cut_at)
            self.ended = self.cut is not None
        loop = self._scanner.string_loop
        if not self.ended and self._answer_end is None and loop is not None and not self._loop_refused:
            # the scanner read nothing past the loop, so an item loop or answer it saw came before it
            cut = self.text[: loop.cut]
            if self._cut_at is not None and _kept_at_loop(cut, self._cut_at):
                self.cut, self.looped, self.ended = cut, True, True
            else:
                self._loop_refused = True  # a loop before the prose (in a label's words): read on as before
        return self.ended

    def result(self, partial: CompletionResult) -> CompletionResult:
        """The reply of a stream ended here: the partial result, cut at the loop when it looped, with its
        usage estimated where the server had not counted it yet (from all the text read, which was paid
        for). A reply cut inside a looping string is cut off (``"length"``, ``looped``): its answer never
        closed, and more room would only buy more of the loop."""
        result = estimated(partial)
        if self.looped and self.cut is not None:
            return replace(
                result, text=self.cut, stop_reason="length", raw_stop=None, stopped_early=True, looped=True
            )
        # ended at a whole answer: finished, even when pi's stop came at its limit as the daemon stopped it
        whole = replace(result, stop_reason="stop", stopped_early=True)
        return replace(whole, text=self.cut) if self.cut is not None else whole


def _accepted(groups: list[tuple[str, int]], stop_at: Callable[[dict[str, Any]], bool]) -> int | None:
    """Where the first group just completed that is a JSON object ``stop_at`` wants ends (model text is
    hostile: anything that does not decode is skipped), or None."""
    for group, end in groups:
        try:
            value = orjson.loads(group)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and stop_at(value):
            return end
    return None


def _kept_at_loop(cut: str, wanted: Callable[[dict[str, Any]], bool]) -> bool:
    """Whether a reply cut inside a looping string still holds an answer the caller takes, closed the way
    the Diff salvages a cut reply: right there when the string is one of the object's own members, a Now
    it never reached left empty; or back to its last whole member or item. A loop before the prose (in a
    label's ``words``) keeps no answer: ending the stream there would throw the whole reply away, so it is
    read on as it was before loops were cut."""
    groups, pending = top_level_groups(cut)
    if groups or pending is None:
        return False
    for closed, now in ((closed_in_string(pending), ""), (closed_prefix(pending), None)):
        try:
            value = orjson.loads(closed) if closed is not None else None
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict) and "labels" in value:
            if now is not None:
                value.setdefault("now", now)
            if wanted(value):
                return True
    return False


def _item_cut(scanner: ObjectScanner, stop_at: Callable[[dict[str, Any]], bool]) -> str | None:
    """The reply cut after a list item the model then wrote again, when that cut is an object ``stop_at``
    wants: a looping model repeats an item until its output limit, and a copy says nothing new."""
    if scanner.repeated is None:
        return None
    try:
        value = orjson.loads(scanner.repeated)
    except orjson.JSONDecodeError:
        return None
    return scanner.repeated if isinstance(value, dict) and stop_at(value) else None


def estimated(result: CompletionResult) -> CompletionResult:
    """Usage of a stream ended early: servers report output tokens last, so count the reply's characters.

    Never below what the server did report; the trace marks the call ``stoppedEarly``.
    """
    estimate = -(-len(result.text) // _CHARS_PER_TOKEN)
    if result.usage.output >= estimate:
        return result
    return replace(result, usage=replace(result.usage, output=estimate))
