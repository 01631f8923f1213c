"""The compactions recorded on a transcript's branch, each with the span it summarized, as pi chose it.

facts and score judge a compaction by what it had to summarize, so both need the span exactly as pi 0.73.1
cut it (pi-api.md §2.2): a first compaction summarizes from the root, a later one from the previous
compaction's ``firstKeptEntryId`` (or, when that id is not on the branch, from the entry after the previous
compaction), and every span ends where the compaction's own ``firstKeptEntryId`` starts the kept messages.
Message text is split into pieces, so a value can be told apart by where it stood (tool output or not).
Nothing here raises on a malformed entry: what cannot be read is left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from longhaul_daemon.state.entry_kinds import is_longhaul_compaction

__all__ = [
    "COMPACTORS",
    "Compactor",
    "Piece",
    "RecordedCompaction",
    "compactor_of",
    "find_compactions",
    "message_of",
    "message_pieces",
    "text_of",
]

Compactor = Literal["longhaul", "pi", "other"]
COMPACTORS: tuple[Compactor, ...] = ("longhaul", "pi", "other")


@dataclass(frozen=True)
class Piece:
    """One stretch of a message's text; ``tool_output`` for what a tool or a user command printed."""

    text: str
    tool_output: bool = False


@dataclass(frozen=True)
class RecordedCompaction:
    """A compaction entry on the branch and the branch positions of its span, ``[start, end)``."""

    n: int  # 1-based among the compactions of the branch
    entry_id: str
    compactor: Compactor
    summary: str
    position: int  # the compaction entry's position on the branch
    span_start: int
    span_end: int


def compactor_of(entry: Mapping[str, Any]) -> Compactor:
    """Who wrote a compaction: Longhaul (its tag), pi (``fromHook`` false or absent) or another extension."""
    if is_longhaul_compaction(entry):
        return "longhaul"
    return "other" if entry.get("fromHook") is True else "pi"


def message_of(entry: Mapping[str, Any]) -> dict[str, Any] | None:
    """The message an entry puts into the conversation: a ``message`` entry's, or a ``custom_message``."""
    if entry.get("type") == "message":
        message = entry.get("message")
        return message if isinstance(message, dict) else None
    if entry.get("type") == "custom_message":
        return {"role": "custom", "content": entry.get("content")}
    return None


def text_of(content: object) -> str:
    """The text of a message ``content``: a string, or the text blocks of a list joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        return "\n".join(parts)
    return ""


def _assistant_pieces(content: object) -> list[Piece]:
    pieces: list[Piece] = []
    if isinstance(content, str):
        return [Piece(content)]
    if not isinstance(content, list):
        return pieces
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            pieces.append(Piece(block["text"]))
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            pieces.append(Piece(block["thinking"]))
        elif kind == "toolCall":
            arguments = block.get("arguments")
            if isinstance(arguments, dict):
                for value in arguments.values():
                    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                    pieces.append(Piece(text))
    return pieces


def message_pieces(message: Mapping[str, Any]) -> list[Piece]:
    """VALUE-3's searchable text of one message, piece by piece, with what tools printed marked."""
    role = message.get("role")
    if role == "assistant":
        return _assistant_pieces(message.get("content"))
    if role == "toolResult":
        return [Piece(text_of(message.get("content")), tool_output=True)]
    if role == "bashExecution":
        command = message.get("command")
        output = message.get("output")
        pieces = [Piece(command)] if isinstance(command, str) else []
        if isinstance(output, str):
            pieces.append(Piece(output, tool_output=True))
        return pieces
    if role in ("user", "custom"):
        return [Piece(text_of(message.get("content")))]
    return []


def _position_of(branch: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    found: dict[str, int] = {}
    for position, entry in enumerate(branch):
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            found[entry_id] = position
    return found


def find_compactions(branch: Sequence[Mapping[str, Any]]) -> list[RecordedCompaction]:
    """Every compaction on ``branch`` (root first) with the span pi summarized for it (pi-api.md §2.2)."""
    position_of = _position_of(branch)
    found: list[RecordedCompaction] = []
    previous: tuple[int, int | None] | None = None  # (position, its firstKeptEntryId's position)
    for position, entry in enumerate(branch):
        if entry.get("type") != "compaction":
            continue
        if previous is None:
            start = 0
        else:
            prev_at, prev_kept = previous
            start = prev_kept if prev_kept is not None and prev_kept < prev_at else prev_at + 1
        kept_id = entry.get("firstKeptEntryId")
        kept = position_of.get(kept_id) if isinstance(kept_id, str) else None
        # A kept id that is not an earlier entry of the branch means pi summarized everything up to here.
        end = kept if kept is not None and start <= kept < position else position
        summary = entry.get("summary")
        entry_id = entry.get("id")
        found.append(
            RecordedCompaction(
                n=len(found) + 1,
                entry_id=entry_id if isinstance(entry_id, str) else "",
                compactor=compactor_of(entry),
                summary=summary if isinstance(summary, str) else "",
                position=position,
                span_start=start,
                span_end=end,
            )
        )
        previous = (position, kept if kept is not None and kept < position else None)
    return found
