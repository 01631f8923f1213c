"""An index of one pi session file, built once and then extended only by the bytes the file grew by.

A pass on a long session needs the shape of the whole branch (every entry's id, parent and kind, every user
message, every compaction and Longhaul entry) but the full text of only a small part of it. The index keeps
exactly that: one :class:`Row` per line with its byte offset, and the parsed entry only for the *light*
entries; a heavy entry (an assistant turn, a tool result, another extension's data) is read again from its
offset when a pass needs it whole (unless the refresh that read it was small and the pass's read still holds
its parse). pi only appends to the file, so a later pass parses just the new lines.
A file that changed in any other way (rewritten, truncated, replaced) is indexed again from the start.

This module does no opening or checking of paths: :mod:`longhaul_daemon.sessionfile.files` hands it a file
descriptor it has already checked. Nothing here raises on the file's content.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from longhaul_daemon import jsoncodec
from longhaul_daemon.state.entry_kinds import OWN_CUSTOM_PREFIX
from longhaul_daemon.transcript.jsonl import is_session_header, parse_line

__all__ = ["READ_BLOCK", "Row", "SessionIndex", "is_light"]

READ_BLOCK = 4 * 1024 * 1024  # bytes read per syscall while indexing; memory holds one block plus one line
# A refresh that reads at most this much keeps its heavy entries parsed until the read that asked for it ends,
# so a small file's span is not read and parsed a second time; a bigger one would hold too much at once.
KEEP_PARSED_BYTES = 1024 * 1024
_CHECK_BYTES = 4096  # how much of the indexed end is compared to tell an append from a rewrite
_LIGHT_TYPES = frozenset(
    {"compaction", "branch_summary", "model_change", "thinking_level_change", "label", "session_info"}
)


@dataclass(slots=True)
class Row:
    """One entry line: where it is, what links it, and the parsed entry when it is light."""

    line: int  # 1-based line number in the file
    offset: int
    length: int  # bytes, without the newline
    entry_id: str | None
    parent_id: object  # as written: None at the root; anything but a string names no entry
    kind: str  # the entry's type, "unknown" when it names none
    role: str | None  # a message entry's role
    custom_type: str | None
    body: dict[str, Any] | None  # the whole entry, kept only for light entries


def is_light(kind: object, role: object, custom_type: object) -> bool:
    """Entries every pass reads whole: user messages, compactions, Longhaul's own entries, small metadata."""
    if kind == "message":
        return role == "user"
    if kind == "custom":
        return isinstance(custom_type, str) and custom_type.startswith(OWN_CUSTOM_PREFIX)
    return kind in _LIGHT_TYPES


def _row(line: int, offset: int, raw: bytes) -> tuple[Row, dict[str, Any]] | None:
    """The line's row and its parsed entry; None for a line that holds no entry."""
    try:
        value = jsoncodec.loads(raw)  # orjson on the bytes: UTF-8 is checked there, no decode of its own
    except (ValueError, RecursionError):
        return None  # pi skips such a line too; it can hold no entry a branch reaches
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    entry_id = value.get("id")
    message = value.get("message")
    role = message.get("role") if kind == "message" and isinstance(message, dict) else None
    custom_type = value.get("customType")
    row = Row(
        line=line,
        offset=offset,
        length=len(raw),
        entry_id=entry_id if isinstance(entry_id, str) else None,
        parent_id=value.get("parentId"),
        kind=kind if isinstance(kind, str) else "unknown",
        role=role if isinstance(role, str) else ("unknown" if kind == "message" else None),
        custom_type=custom_type if isinstance(custom_type, str) else None,
        body=value if is_light(kind, role, custom_type) else None,
    )
    return row, value


def _lines(fd: int, start: int, stop: int) -> Iterator[tuple[int, bytes]]:
    """Complete lines (offset, bytes without the newline) between ``start`` and ``stop``; a last line
    without its newline is not yielded, since pi may be writing it."""
    pending = b""
    pending_at = start
    at = start
    while at < stop:
        block = os.pread(fd, min(READ_BLOCK, stop - at), at)
        if not block:
            break
        at += len(block)
        data = pending + block if pending else block
        cut = 0
        while True:
            newline = data.find(b"\n", cut)
            if newline < 0:
                break
            yield pending_at + cut, data[cut:newline]
            cut = newline + 1
        pending = data[cut:]
        pending_at += cut


class SessionIndex:
    """The rows of one session file, valid for the file identity and byte length it was last read at."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # one reader at a time: a pass and a recall may share a session
        self.rows: list[Row] = []
        self.position_of: dict[str, int] = {}
        self.header: dict[str, Any] | None = None
        self.end = 0  # bytes indexed: everything before this offset is in ``rows``
        self.lines = 0
        self.bad_lines = 0
        self._identity: tuple[int, int] | None = None
        self._head = b""  # the header line as read, newline included
        self._tail = b""  # the last bytes before ``end`` as read
        self.last_read_bytes = 0  # what the latest refresh read
        self.last_refresh_cold = False
        self._path: list[int] = []  # the latest walk, root first, and each position's place in it
        self._on_path: dict[int, int] = {}
        self._rooted = True  # the latest walk reached a root entry (no missing parent, no loop)
        self._users: dict[str, str] = {}  # u<n> of the user messages along ``_walked`` (FOLD-10)
        self._walked: list[int] | None = None  # the walk ``_users`` counts along: ``_path`` while it grows
        self._counted = 0  # positions of ``_walked`` counted
        self._user_count = 0
        self._parsed: dict[int, dict[str, Any]] = {}  # position → heavy entry parsed by a small refresh
        self.repeated_ids = False  # some id is on two lines: ``position_of`` then names only the later one

    def refresh(self, fd: int, identity: tuple[int, int], size: int, *, keep_parsed: bool = False) -> None:
        """Bring the index up to ``size`` bytes of ``fd``: only the new lines when the file just grew.

        With ``keep_parsed``, when the new lines are at most :data:`KEEP_PARSED_BYTES`, their heavy entries
        stay parsed for :meth:`entry` until :meth:`drop_parsed`; the caller holds :attr:`lock` throughout.
        """
        self._parsed = {}
        if not self._still_valid(fd, identity, size):
            self._reset()
            self._identity = identity
            self.last_refresh_cold = True
        else:
            self.last_refresh_cold = False
        start = self.end
        keep = keep_parsed and size - start <= KEEP_PARSED_BYTES
        for offset, raw in _lines(fd, start, size):
            self.lines += 1
            if self.lines == 1:
                self._read_header(raw)
            else:
                self._add(self.lines, offset, raw, keep)
            self.end = offset + len(raw) + 1
        self.last_read_bytes = size - start
        if self.end:
            check_from = max(0, self.end - _CHECK_BYTES)
            self._tail = os.pread(fd, self.end - check_from, check_from)

    def _still_valid(self, fd: int, identity: tuple[int, int], size: int) -> bool:
        if self._identity != identity or size < self.end or not self.end:
            return False
        if os.pread(fd, len(self._head), 0) != self._head:
            return False
        return os.pread(fd, len(self._tail), self.end - len(self._tail)) == self._tail

    def _reset(self) -> None:
        self._path = []
        self._on_path = {}
        self._rooted = True
        self.rows = []
        self.position_of = {}
        self.header = None
        self.end = 0
        self.lines = 0
        self.bad_lines = 0
        self._head = b""
        self._tail = b""
        self.repeated_ids = False

    def _read_header(self, raw: bytes) -> None:
        self._head = raw + b"\n"
        value, _ = parse_line(raw)
        self.header = value if is_session_header(value) else None

    def drop_parsed(self) -> None:
        """Let go of the entries a small refresh kept parsed: the index itself holds only light ones."""
        self._parsed = {}

    def _add(self, line: int, offset: int, raw: bytes, keep: bool = False) -> None:
        parsed = _row(line, offset, raw)
        if parsed is None:
            self.bad_lines += 1
            return
        row, value = parsed
        if keep and row.body is None:
            self._parsed[len(self.rows)] = value
        if row.entry_id is not None:
            if row.entry_id in self.position_of:
                self.repeated_ids = True
            self.position_of[row.entry_id] = len(self.rows)  # a repeated id: the later line wins
        self.rows.append(row)

    def branch_positions(self, leaf: int) -> list[int]:
        """The positions from the root to ``leaf``, following ``parentId``; a missing parent or a loop ends
        the branch there (INSPECT-11). The previous walk is kept: a leaf that grew from it (pi appended) or
        lies on it (``/tree`` went back) costs only the entries the walk has not seen. A walk that broke is
        never reused, since the part above an entry on it need not be that entry's own ancestry."""
        if not self._rooted:
            self._path, self._on_path, self._rooted = [], {}, True
        rows = self.rows
        climbed: list[int] = []
        seen: set[int] = set()
        at: int | None = leaf
        while at is not None and at not in self._on_path and at not in seen:
            climbed.append(at)
            seen.add(at)
            parent = rows[at].parent_id
            at = self.position_of.get(parent) if isinstance(parent, str) else None
            if at is None and parent is not None:
                self._rooted = False  # a missing parent: the branch ends here, broken
        if at is None or at in seen:  # a walk of its own: to the root, or to where it broke
            path = climbed[::-1]
            self._on_path = {p: i for i, p in enumerate(path)}
            self._rooted = at is None and self._rooted
        else:
            keep = self._on_path[at] + 1
            if keep == len(self._path):
                path = self._path  # the leaf grew from the last walk: extend it
            else:
                path = self._path[:keep]
                self._on_path = {p: i for i, p in enumerate(path)}
            for p in reversed(climbed):
                self._on_path[p] = len(path)
                path.append(p)
        self._path = path
        return list(path)

    def first_on_walk(self, entry_id: str) -> int | None:
        """Where ``entry_id`` first appears on the latest walk (an index into it), None when it is not on it.
        A lookup, unless some id is on two lines: then a search from the root, as pi's own finds it."""
        if self.repeated_ids:
            rows = self.rows
            return next((at for at, p in enumerate(self._path) if rows[p].entry_id == entry_id), None)
        position = self.position_of.get(entry_id)
        return self._on_path.get(position) if position is not None else None

    def user_ids(self) -> dict[str, str]:
        """Entry id -> ``u<n>`` for every user message on the latest walk: what
        :func:`~longhaul_daemon.transcript.messages.user_ids` finds on that branch, without going over it
        again. A walk that grew from the previous one (pi appended) counts only its new entries."""
        path = self._path
        if self._walked is not path:
            self._users, self._walked, self._counted, self._user_count = {}, path, 0, 0
        users, rows = self._users, self.rows
        for position in path[self._counted :]:
            row = rows[position]
            if row.kind == "message" and row.role == "user":
                self._user_count += 1
                if row.entry_id is not None and row.entry_id not in users:
                    users[row.entry_id] = f"u{self._user_count}"
        self._counted = len(path)
        return dict(users)  # the pass reads it in another thread while a later read may count on

    def entry(self, fd: int, position: int) -> dict[str, Any] | None:
        """The whole entry at ``position``: the kept body, or its line read again from the file."""
        row = self.rows[position]
        if row.body is not None:
            return row.body
        kept = self._parsed.get(position)
        if kept is not None:
            return kept  # parsed by this read's refresh, from the bytes the index holds the offset of
        try:
            value = jsoncodec.loads(os.pread(fd, row.length, row.offset))
        except (ValueError, RecursionError):
            return None
        if not isinstance(value, dict) or value.get("id") != row.entry_id:
            return None  # the file changed under the pass: never hand over some other line
        return value
