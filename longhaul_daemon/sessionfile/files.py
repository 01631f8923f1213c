"""Read the branch a pass needs from pi's own session file, so a ``compact`` request carries the span only.

The shim names the session file and the leaf; the daemon opens the file itself, never following a symlink,
and only when it is a regular file owned by the daemon's own user (the peer check already made the caller
that user). The first line must be pi's header for the session that asked. Each file keeps a
:class:`~longhaul_daemon.sessionfile.index.SessionIndex` in a small per-daemon cache, so a later pass parses
only what was appended since. A pass gets every light entry whole, the heavy entries whole only from where
the state stops knowing the messages (the base compaction's kept boundary) on, and skeletons before that; a
long stretch no pass ever saw (many fallbacks in a row, or a first takeover) is read whole for its newest
:data:`UNSEEN_BYTES` only. Any refusal is a :class:`SessionFileRefused` with a reason code; the shim then
sends the entries inline. This is one of the places that touch the world (see docs/architecture.md).
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from longhaul_daemon.errors import DomainError
from longhaul_daemon.sessionfile.index import Row, SessionIndex, skeleton
from longhaul_daemon.state.entry_kinds import is_longhaul_compaction
from longhaul_daemon.transcript.jsonl import walk_branch
from longhaul_daemon.transcript.messages import unseen_start

__all__ = [
    "MAX_CACHED_SESSIONS",
    "SESSION_VERSION",
    "UNSEEN_BYTES",
    "BranchRead",
    "SessionFileRefused",
    "SessionFiles",
]

MAX_CACHED_SESSIONS = 32  # indexes kept; the least recently used one is dropped past this
UNSEEN_BYTES = 8 * 1024 * 1024  # of a stretch no pass saw, the newest this many bytes are read whole
SESSION_VERSION = 3  # the header version pi 0.73.1 writes (older files are migrated by pi when opened)
_NOT_PIS = frozenset({"not-a-session", "other-session", "unknown-version"})
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class SessionFileRefused(DomainError):
    """The session file cannot be used for this request; ``data.reason`` says why, and the shim resends
    the branch inline. Reasons: ``not-absolute``, ``missing``, ``symlink``, ``not-regular``,
    ``foreign-owner``, ``unreadable``, ``not-a-session``, ``other-session``, ``unknown-version``,
    ``leaf-missing``, ``entry-missing``."""

    code: ClassVar[int] = -32004
    default_message: ClassVar[str] = "Session file refused"

    def __init__(self, reason: str) -> None:
        super().__init__(f"Session file refused: {reason}", data={"reason": reason})
        self.reason = reason


@dataclass(frozen=True)
class BranchRead:
    """The branch as a pass reads it, root first, and what reading it cost (for the pass's record)."""

    entries: list[dict[str, Any]]
    cold: bool  # the file was indexed from its first byte
    read_bytes: int  # bytes indexed by this read
    whole: int  # entries on the branch handed over whole
    skeletons: int  # heavy entries handed over as skeletons
    capped: bool  # a stretch no pass saw was longer than UNSEEN_BYTES

    def stats(self) -> dict[str, Any]:
        return {
            "source": "file",
            "cold": self.cold,
            "readBytes": self.read_bytes,
            "entries": len(self.entries),
            "whole": self.whole,
            "skeletons": self.skeletons,
            "capped": self.capped,
        }


def _open_checked(path: str) -> tuple[int, os.stat_result]:
    if not os.path.isabs(path):
        raise SessionFileRefused("not-absolute")
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise SessionFileRefused("missing") from None
    except OSError as exc:
        raise SessionFileRefused("symlink" if exc.errno == errno.ELOOP else "unreadable") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SessionFileRefused("not-regular")
        if info.st_uid != os.geteuid():
            raise SessionFileRefused("foreign-owner")
    except BaseException:
        os.close(fd)
        raise
    return fd, info


class SessionFiles:
    """The daemon's session-file indexes, least recently used first; safe to use from worker threads."""

    def __init__(self, max_sessions: int = MAX_CACHED_SESSIONS) -> None:
        self._max = max_sessions
        self._lock = threading.Lock()
        self._indexes: OrderedDict[str, SessionIndex] = OrderedDict()

    def __len__(self) -> int:
        return len(self._indexes)

    def _index_for(self, path: str) -> SessionIndex:
        with self._lock:
            index = self._indexes.pop(path, None) or SessionIndex()
            self._indexes[path] = index
            while len(self._indexes) > self._max:
                self._indexes.popitem(last=False)
            return index

    def forget(self, path: str) -> None:
        with self._lock:
            self._indexes.pop(path, None)

    def read_branch(
        self, path: str, *, session_id: str, leaf_id: str, span_ids: Sequence[str] = (), whole: bool = True
    ) -> BranchRead:
        """The branch ending at ``leaf_id``; with ``whole`` false only light entries come whole (recall).

        ``span_ids`` are the span's entries as the shim named them: every heavy entry from the state's
        unseen boundary (capped at :data:`UNSEEN_BYTES` before the span) to the leaf is read whole.
        Raises :class:`SessionFileRefused`; never raises on the file's content.
        """
        fd, info = _open_checked(path)
        try:
            index = self._index_for(path)
            with index.lock:
                index.refresh(fd, (info.st_dev, info.st_ino), info.st_size)
                return self._read(index, fd, session_id, leaf_id, span_ids, whole)
        except SessionFileRefused as refused:
            if refused.reason in _NOT_PIS:
                self.forget(path)  # not this session's file: keep no index of it
            raise
        finally:
            os.close(fd)

    def _read(
        self,
        index: SessionIndex,
        fd: int,
        session_id: str,
        leaf_id: str,
        span_ids: Sequence[str],
        whole: bool,
    ) -> BranchRead:
        header = index.header
        if header is None:
            raise SessionFileRefused("not-a-session")
        if header.get("id") != session_id:
            raise SessionFileRefused("other-session")
        if header.get("version") != SESSION_VERSION:
            raise SessionFileRefused("unknown-version")
        leaf = index.position_of.get(leaf_id)
        if leaf is None:
            raise SessionFileRefused(
                "leaf-missing"
            )  # pi has not written it yet (no assistant message so far)
        rows = index.rows
        positions = walk_branch(leaf, lambda p: rows[p].parent_id, index.position_of).positions
        path_rows = [rows[p] for p in positions]
        entries = [row.body if row.body is not None else skeleton(row) for row in path_rows]
        start, capped = _whole_from(entries, path_rows, span_ids) if whole else (len(entries), False)
        for at in range(start, len(entries)):
            if path_rows[at].body is None:
                found = index.entry(fd, positions[at])
                if found is None:
                    raise SessionFileRefused("entry-missing")
                entries[at] = found
        heavy = sum(1 for row in path_rows if row.body is None)
        read_whole = sum(1 for row in path_rows[start:] if row.body is None)
        return BranchRead(
            entries=entries,
            cold=index.last_refresh_cold,
            read_bytes=index.last_read_bytes,
            whole=len(entries) - heavy + read_whole,
            skeletons=heavy - read_whole,
            capped=capped,
        )


def _whole_from(
    entries: list[dict[str, Any]], path_rows: list[Row], span_ids: Sequence[str]
) -> tuple[int, bool]:
    """Where heavy entries start being read whole; True when the unseen stretch was cut to its newest part."""
    wanted = set(span_ids)
    span_first = next((at for at, row in enumerate(path_rows) if row.entry_id in wanted), None)
    if span_first is None:
        return len(entries), False  # the span came inline: nothing heavy is read from the file
    base_id = next(
        (e.get("id") for e in reversed(entries) if is_longhaul_compaction(e)),
        None,
    )
    start = min(unseen_start(entries, base_id if isinstance(base_id, str) else None), span_first)
    budget = UNSEEN_BYTES
    at = span_first
    while at > start:
        row = path_rows[at - 1]
        if row.body is None:
            if row.length > budget:
                return at, True
            budget -= row.length
        at -= 1
    return start, False
