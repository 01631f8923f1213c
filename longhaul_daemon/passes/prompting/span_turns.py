"""What the verifiers search: each turn's own text for values, and carried messages in full for quotes.

A value is kept only when it stands verbatim in the turn the model names (VALUE-2), so code needs each turn's
searchable text: the proposal of VALUE-3, a turn opened by a user message ``u<n>`` running to the next user
message, holding user text, assistant text, tool-call arguments, tool results and bash commands with their
output. Each piece stays separate, so a value can never be stitched together across two of them. Carried
messages (FAIL-11) are looked up on the branch by their ``u<n>`` and offered whole (DIFF-8).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from longhaul_daemon.passes.answers.values import Turn
from longhaul_daemon.passes.prompting.prompt import OfferedMessage
from longhaul_daemon.transcript.entries import Message, TextBlock
from longhaul_daemon.transcript.messages import SpanMessage, user_ids, user_text

__all__ = ["carried_messages", "message_pieces", "span_turns"]


def _string_leaves(value: object) -> Iterable[str]:
    """Every string in a tool call's arguments, raw (JSON escaping would hide a value behind backslashes)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _string_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _string_leaves(item)


def message_pieces(message: Message) -> tuple[str, ...]:
    """The searchable pieces of one message (VALUE-3); thinking is not searchable, nothing else is added."""
    pieces: list[str] = []
    if message.role in ("user", "assistant", "custom"):
        pieces.append(message.text)
    if message.role == "assistant":
        for call in message.tool_calls:
            pieces.extend(_string_leaves(call.arguments))
    elif message.role == "toolResult":
        pieces.extend(b.text for b in message.blocks if isinstance(b, TextBlock))
    elif message.role == "bashExecution" and not message.excludeFromContext:
        pieces.extend([message.command or "", message.output or ""])
    return tuple(p for p in pieces if p)


def span_turns(span: Sequence[SpanMessage], carried: Sequence[OfferedMessage] = ()) -> tuple[Turn, ...]:
    """The turns a value may name: one per ``u<n>`` of the span, plus carried messages (their text only).

    Messages before the span's first user message belong to a turn that opened in an earlier span; they have
    no ``u<n>`` here, so no value can be credited to them.
    """
    turns: dict[str, list[str]] = {m.user_id: [m.text] for m in carried}
    current: list[str] | None = None
    for item in span:
        if item.role == "user" and item.user_id is not None:
            current = turns.setdefault(item.user_id, [])
            current.clear()
        if current is not None:
            current.extend(message_pieces(item.parsed))
    return tuple(Turn(id=uid, pieces=tuple(pieces)) for uid, pieces in turns.items())


def carried_messages(
    branch: list[dict[str, Any]],
    carried_ids: Sequence[str],
    span: Sequence[SpanMessage] = (),
    users: Mapping[str, str] | None = None,
) -> list[OfferedMessage]:
    """FAIL-11: the carried ``u<n>`` messages with their full text, oldest first; ids the span holds again, or
    that the branch no longer has, are left out. ``users``: :func:`user_ids` of ``branch``, when known."""
    wanted = set(carried_ids) - {m.user_id for m in span if m.user_id is not None}
    if not wanted:
        return []
    by_entry = user_ids(branch) if users is None else users
    found: list[OfferedMessage] = []
    for raw in branch:
        if not isinstance(raw, dict):
            continue
        entry_id = raw.get("id")
        uid = by_entry.get(entry_id) if isinstance(entry_id, str) else None
        message = raw.get("message")
        if uid in wanted and isinstance(message, dict):
            wanted.discard(uid)
            found.append(OfferedMessage(user_id=uid, text=user_text(message)))
    return found
