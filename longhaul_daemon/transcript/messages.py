"""The span a pass summarizes, each message tied to its branch entry, and stable ``u<n>`` user ids.

pi hands the daemon the span's messages without their entry ids (``preparation.messagesToSummarize`` and
``turnPrefixMessages`` are bare ``AgentMessage`` objects), and the branch entries separately. ``select_span``
re-attaches each message to the ``message`` entry that holds an identical copy, scanning forward in branch
order, so every id the pass issues (u, C, E) is tied to an entry (PASS-4). A message with no identical entry
gets ``entry_id=None``; nothing here raises on transcript content.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from longhaul_daemon import jsoncodec
from longhaul_daemon.protocol import SPAN_REF, Preparation
from longhaul_daemon.transcript.entries import Message, parse_message

__all__ = [
    "SpanMessage",
    "messages_before_span",
    "select_span",
    "span_messages",
    "span_refs",
    "unseen_start",
    "unseen_start_at",
    "user_ids",
    "user_text",
]


@dataclass(frozen=True)
class SpanMessage:
    """One span message: its branch entry id (None when unmatched), role, raw message and ``u<n>`` id.

    ``parsed`` is the lenient reading of ``message``, made once: every step of a pass reads the same
    messages, and parsing them again for each would cost more than the steps themselves.
    """

    entry_id: str | None
    role: str
    message: dict[str, Any]
    user_id: str | None = None

    @cached_property
    def parsed(self) -> Message:
        """The message read leniently (role ``unknown`` when unreadable), parsed once."""
        return parse_message(self.message) or Message(role="unknown")

    @cached_property
    def text(self) -> str:
        """The message's text (a user message: what the user wrote)."""
        return self.parsed.text


def _role(message: object) -> str | None:
    """A message object's role as the lenient parser reads it, without parsing the rest of it."""
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    return role if isinstance(role, str) else "unknown"


def _message_role(raw: object) -> str | None:
    """The role of a ``message`` entry's message; None for any other entry."""
    if not isinstance(raw, dict) or raw.get("type") != "message":
        return None
    return _role(raw.get("message"))


def user_ids(branch: list[dict[str, Any]]) -> dict[str, str]:
    """Entry id -> ``u<n>`` for every user message on the branch (FOLD-10).

    n is the 1-based position among ``message`` entries whose message has role ``user``, counted from the root
    and including messages earlier compactions summarized, so an id never changes between passes.
    ``bashExecution`` messages and ``custom_message`` entries are not user messages. A user message entry
    without an id still takes its position, so the ids after it never shift.
    """
    ids: dict[str, str] = {}
    n = 0
    for raw in branch:  # the checks of _message_role, inlined: this runs over every entry of the branch
        if not isinstance(raw, dict) or raw.get("type") != "message":
            continue
        message = raw.get("message")
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        n += 1
        entry_id = raw.get("id")
        if isinstance(entry_id, str) and entry_id not in ids:
            ids[entry_id] = f"u{n}"
    return ids


def _key(message: object) -> bytes | None:
    """A canonical JSON text for equality lookups, or None when the value cannot be serialized."""
    return jsoncodec.canonical(message)


class _BranchIndex:
    """The branch's ``message`` entries, looked up by message content in branch order."""

    def __init__(self, branch: Iterable[object]) -> None:
        self._candidates: list[tuple[str | None, object]] = []
        self._by_key: dict[bytes, list[int]] = {}
        for raw in branch:
            if (
                not isinstance(raw, dict)
                or raw.get("type") != "message"
                or not isinstance(raw.get("message"), dict)
            ):
                continue
            entry_id = raw.get("id")
            position = len(self._candidates)
            self._candidates.append((entry_id if isinstance(entry_id, str) else None, raw["message"]))
            key = _key(raw["message"])
            if key is not None:
                self._by_key.setdefault(key, []).append(position)
        self._cursor = 0

    def take(self, message: object) -> str | None:
        """The entry id of the first identical message after the last one taken; None when there is none."""
        key = _key(message)
        if key is not None:
            positions = self._by_key.get(key, [])
            at = bisect.bisect_left(positions, self._cursor)
            if at == len(positions):
                return None
            found = positions[at]
        else:
            found = next(
                (i for i in range(self._cursor, len(self._candidates)) if self._candidates[i][1] == message),
                -1,
            )
            if found < 0:
                return None
        self._cursor = found + 1
        return self._candidates[found][0]


def span_messages(messages: Iterable[object], branch: list[dict[str, Any]]) -> list[SpanMessage]:
    """Tie each message to its branch entry, in order; a non-object message is skipped."""
    index = _BranchIndex(branch)
    ids = user_ids(branch)
    span: list[SpanMessage] = []
    for raw in messages:
        parsed = parse_message(raw)
        if parsed is None or not isinstance(raw, dict):
            continue
        entry_id = index.take(raw)
        user_id = ids.get(entry_id) if entry_id is not None and parsed.role == "user" else None
        span.append(SpanMessage(entry_id=entry_id, role=parsed.role, message=raw, user_id=user_id))
    return span


def span_refs(preparation: Preparation) -> list[str]:
    """The entry ids the span names by reference (``{"entryRef": id}``), in span order."""
    items = list(preparation.messagesToSummarize)
    if preparation.isSplitTurn:
        items.extend(preparation.turnPrefixMessages)
    return [ref for item in items if isinstance(ref := item.get(SPAN_REF), str)]


def select_span(
    preparation: Preparation, branch: list[dict[str, Any]], users: Mapping[str, str] | None = None
) -> list[SpanMessage]:
    """The span (PASS-4): ``messagesToSummarize``, then ``turnPrefixMessages`` when the turn was split.

    A message sent by reference is the message of the branch entry it names; one sent whole is tied to the
    first identical branch message after the previous one. A reference the branch lacks, or that names no
    message entry, is left out.
    """
    items: list[dict[str, Any]] = list(preparation.messagesToSummarize)
    if preparation.isSplitTurn:
        items.extend(preparation.turnPrefixMessages)
    if not any(SPAN_REF in item for item in items):
        return span_messages(items, branch)
    by_id = _message_entries(branch, {ref for item in items if isinstance(ref := item.get(SPAN_REF), str)})
    users = user_ids(branch) if users is None else users
    span: list[SpanMessage] = []
    for item in items:
        ref = item.get(SPAN_REF)
        if ref is None:
            parsed = parse_message(item)
            if parsed is not None:  # no entry holds it (pi built it from a custom_message entry)
                span.append(SpanMessage(entry_id=None, role=parsed.role, message=item))
            continue
        entry = by_id.get(ref) if isinstance(ref, str) else None
        message = entry.get("message") if entry is not None else None
        role = _role(message)
        if not isinstance(ref, str) or not isinstance(message, dict) or role is None:
            continue
        span.append(
            SpanMessage(
                entry_id=ref, role=role, message=message, user_id=users.get(ref) if role == "user" else None
            )
        )
    return span


def _message_entries(branch: Sequence[object], ids: set[str]) -> dict[str, dict[str, Any]]:
    """The ``message`` entries with these ids, the last one where an id repeats. Searched from the leaf, where
    a span lies, and only until every id is found: a pass costs its span, not the whole branch."""
    found: dict[str, dict[str, Any]] = {}
    for entry in reversed(branch):
        if len(found) == len(ids):
            break
        if isinstance(entry, dict) and entry.get("type") == "message":
            entry_id = entry.get("id")  # only a string id can be referenced; a list one would not even hash
            if isinstance(entry_id, str) and entry_id in ids and entry_id not in found:
                found[entry_id] = entry
    return found


def messages_before_span(
    branch: list[dict[str, Any]],
    base_compaction_id: str | None,
    span: list[SpanMessage],
    users: Mapping[str, str] | None = None,
) -> list[SpanMessage]:
    """Messages no Longhaul pass saw: after the base compaction's kept boundary and before the span.

    They exist when a pass fell back to pi's own compaction (or before Longhaul's first pass, when another
    compactor ran): pi summarized them, so no later span offers them again. The ledger reads them so a command
    run there still gets its id; its dedup makes this a no-op when there is no such gap.
    """
    first_span_entry = next((m.entry_id for m in span if m.entry_id is not None), None)
    if first_span_entry is None:
        return []
    ids = [raw.get("id") if isinstance(raw, dict) else None for raw in branch]
    if first_span_entry not in ids:
        return []
    end = ids.index(first_span_entry)
    start = _unseen_start(branch, ids, base_compaction_id)
    users = user_ids(branch) if users is None else users
    found: list[SpanMessage] = []
    for raw in branch[start:end]:
        role = _message_role(raw)
        if role is None:
            continue
        message = raw.get("message")
        if not isinstance(message, dict):
            continue
        entry_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        user_id = users.get(entry_id) if entry_id is not None and role == "user" else None
        found.append(SpanMessage(entry_id=entry_id, role=role, message=message, user_id=user_id))
    return found


def unseen_start(branch: Sequence[Mapping[str, Any]], base_compaction_id: str | None) -> int:
    """Where the messages no Longhaul pass judged begin: the base compaction's first kept entry when it lies
    before the base on the branch, else the entry after the base; the root when there is no base."""
    if base_compaction_id is None:
        return 0
    return _unseen_start(
        branch, [raw.get("id") if isinstance(raw, Mapping) else None for raw in branch], base_compaction_id
    )


def _unseen_start(
    branch: Sequence[Mapping[str, Any]], ids: list[object], base_compaction_id: str | None
) -> int:
    """:func:`unseen_start` given the branch's entry ids, for a caller that listed them already."""
    if base_compaction_id is None:
        return 0
    if base_compaction_id not in ids:
        return 0
    base_at = ids.index(base_compaction_id)
    return unseen_start_at(ids, base_at, branch[base_at].get("firstKeptEntryId"))


def unseen_start_at(ids: Sequence[object], base_at: int, kept: object) -> int:
    """:func:`unseen_start` given the branch's entry ids, the base's position and its ``firstKeptEntryId``."""
    if isinstance(kept, str):
        for at in range(base_at - 1, -1, -1):  # the kept entry lies shortly before the base
            if ids[at] == kept:
                first = ids.index(kept)  # a repeated id: the first one, as a search from the root finds it
                return first
    return base_at + 1


def user_text(message: dict[str, Any]) -> str:
    """The text of a user message: string content as it is, or its text blocks joined by newlines."""
    parsed = parse_message(message)
    return parsed.text if parsed is not None else ""
