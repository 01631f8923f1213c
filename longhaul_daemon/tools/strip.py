"""Decide which old reasoning leaves the kept window when pi builds the model's context (TOOLS-9, TOOLS-10).

After a Longhaul compaction pi sends the model its summary, then the kept window (the messages from
``firstKeptEntryId`` up to the compaction entry), then what came after. Thinking blocks of assistant messages
in that kept window are left out, except in the turn still in progress (the messages after the last user
message, which some providers need replayed with their reasoning). Nothing here touches the transcript: the
plan names the context messages whose thinking blocks the shim drops from the copy pi is about to send.

Kept-window messages are recognised by role and timestamp (pi copies the message objects of the branch entries
into the context), so a context built from anything else is left alone rather than guessed at.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.state.entry_kinds import is_longhaul_compaction

__all__ = ["StripPlan", "WindowMemory", "has_thinking", "plan_strip"]


@dataclass(frozen=True)
class StripPlan:
    """What to leave out: ``indexes`` of context messages whose thinking blocks go, and the LOG-21 counts."""

    cutoff: str | None  # the Longhaul compaction entry that starts this kept window (TOOLS-9)
    indexes: tuple[int, ...]
    stripped_blocks: int
    stripped_chars: int
    context_messages: int


def _is_thinking(block: object) -> bool:
    return isinstance(block, Mapping) and block.get("type") == "thinking"


def has_thinking(message: Mapping[str, Any]) -> bool:
    """Whether an assistant message carries at least one thinking block."""
    content = message.get("content")
    return (
        message.get("role") == "assistant"
        and isinstance(content, list)
        and any(_is_thinking(block) for block in content)
    )


def _newest_compaction(entries: Sequence[Mapping[str, Any]]) -> int | None:
    for index in range(len(entries) - 1, -1, -1):
        if entries[index].get("type") == "compaction":
            return index
    return None


def _kept_assistant_stamps(entries: Sequence[Mapping[str, Any]], at: int) -> set[int]:
    """Timestamps of the assistant messages pi keeps from before the compaction at ``entries[at]``."""
    first_kept = entries[at].get("firstKeptEntryId")
    start = next((i for i in range(at) if entries[i].get("id") == first_kept), None)
    if start is None:  # pi keeps nothing when the id is not on the path
        return set()
    stamps: set[int] = set()
    for entry in entries[start:at]:
        message = entry.get("message")
        # == rather than a set lookup: the type is whatever the client sent, a list or a dict included
        if entry.get("type") == "message" and isinstance(message, Mapping):
            stamp = message.get("timestamp")
            if message.get("role") == "assistant" and type(stamp) is int:
                stamps.add(stamp)
    return stamps


def _thinking_chars(block: Mapping[str, Any]) -> int:
    text = block.get("thinking")
    return len(text) if isinstance(text, str) else 0  # code points, the spec's unit


def plan_strip(messages: list[dict[str, Any]], branch: list[dict[str, Any]]) -> StripPlan:
    """The plan for one context build; empty (nothing left out) unless the newest compaction is Longhaul's."""
    entries = [e for e in branch if isinstance(e, Mapping)]
    count = len(messages)
    at = _newest_compaction(entries)
    if at is None or not is_longhaul_compaction(entries[at]):
        return StripPlan(None, (), 0, 0, count)
    cutoff_id = entries[at].get("id")
    cutoff = cutoff_id if isinstance(cutoff_id, str) else None
    kept = _kept_assistant_stamps(entries, at)
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    indexes: list[int] = []
    blocks = chars = 0
    for index, message in enumerate(
        messages[: max(last_user, 0)]
    ):  # the turn in progress keeps its reasoning
        stamp = message.get("timestamp")
        if type(stamp) is not int or stamp not in kept or not has_thinking(message):
            continue
        thinking = [b for b in message["content"] if _is_thinking(b)]
        indexes.append(index)
        blocks += len(thinking)
        chars += sum(_thinking_chars(b) for b in thinking)
    return StripPlan(cutoff, tuple(indexes), blocks, chars, count)


class WindowMemory:
    """Which kept windows already had their ``kept-window-strip`` record (TOOLS-10), per daemon, bounded.

    A cache, not truth: after a daemon restart a window may be logged once more, which costs one record.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._seen: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._limit = limit

    def first_time(self, session_id: str, cutoff: str) -> bool:
        """True the first time a (session, window) pair is offered; it is remembered from then on."""
        key = (session_id, cutoff)
        if key in self._seen:
            self._seen.move_to_end(key)
            return False
        self._seen[key] = None
        while len(self._seen) > self._limit:
            self._seen.popitem(last=False)
        return True
