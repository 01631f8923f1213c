"""Read the branch a pass needs from pi's own session file, so a ``compact`` request carries the span only.

The shim names the session file and the leaf; the daemon opens the file itself, never following a symlink,
and only when it is a regular file owned by the daemon's own user (the peer check already made the caller
that user). The first line must be pi's header for the session that asked. Each file keeps a
:class:`~longhaul_daemon.sessionfile.index.SessionIndex` in a small per-daemon cache, so a later pass parses
only what was appended since. A pass gets every light entry (user messages, compactions, Longhaul's own
entries) and every entry from where the state stops knowing the messages (the base compaction's kept
boundary) on, all whole; the heavy entries before that are left out, since no step reads them. A long
stretch no pass ever saw (many fallbacks in a row, or a first takeover) is read for its newest
:data:`UNSEEN_BYTES` only. Any refusal is a :class:`SessionFileRefused` with a reason code; the shim then
sends the entries inline. This is one of the places that touch the world (see docs/architecture.md).
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from longhaul_daemon.collector import PAUSE
from longhaul_daemon.errors import SessionFileRefused
from longhaul_daemon.sessionfile.index import SessionIndex
from longhaul_daemon.state.entry_kinds import is_longhaul_compaction
from longhaul_daemon.state.own_entries import Refusal, read_details_state

__all__ = [
    "MAX_CACHED_SESSIONS",
    "MAX_WAITING_WARMS",
    "SESSION_VERSION",
    "UNSEEN_BYTES",
    "BranchRead",
    "SessionFileRefused",
    "SessionFiles",
    "SessionWarmer",
]

MAX_CACHED_SESSIONS = 32  # indexes kept; the least recently used one is dropped past this
MAX_WAITING_WARMS = 64  # session files waiting to be indexed after their hello; more are not queued
UNSEEN_BYTES = 8 * 1024 * 1024  # of a stretch no pass saw, the newest this many bytes are read whole
SESSION_VERSION = 3  # the header version pi 0.73.1 writes (older files are migrated by pi when opened)
_log = structlog.get_logger("longhaul.sessionfile")
_NOT_PIS = frozenset({"not-a-session", "other-session", "unknown-version"})
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


@dataclass(frozen=True)
class BranchRead:
    """The branch as a pass reads it, root first, and what reading it cost (for the pass's record)."""

    entries: list[dict[str, Any]]
    cold: bool  # the file was indexed from its first byte
    read_bytes: int  # bytes indexed by this read
    whole: int  # entries handed over (every one whole)
    whole_bytes: int  # their size in the file: what the pass will work through
    left_out: int  # heavy entries before the unseen boundary: no step of a pass reads them
    capped: bool  # a stretch no pass saw was longer than UNSEEN_BYTES
    user_ids: dict[str, str] | None = None  # u<n> of the branch's user messages, as the index counted them

    def stats(self) -> dict[str, Any]:
        """What the read cost, under the names the pass's record uses."""
        return {
            "source": "file",
            "cold": self.cold,
            "readBytes": self.read_bytes,
            "entries": len(self.entries),
            "whole": self.whole,
            "wholeBytes": self.whole_bytes,
            "leftOut": self.left_out,
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
        """Drop the index of ``path``, if one is kept."""
        with self._lock:
            self._indexes.pop(path, None)

    def warm(self, path: str, *, session_id: str) -> bool:
        """Index ``path`` ahead of the session's first pass, with the checks a pass makes; True when it
        holds an index of that session's file afterwards. Never raises: a refused file is simply not kept,
        and the pass that comes later meets the refusal itself."""
        try:
            fd, info = _open_checked(path)
        except SessionFileRefused:
            return False
        try:
            index = self._index_for(path)
            with index.lock:
                index.refresh(fd, (info.st_dev, info.st_ino), info.st_size)
                header = index.header
                if index.rows:  # pi appends, so the leaf is the newest entry or grows from it: walk it now
                    index.branch_positions(len(index.rows) - 1)
                    index.user_ids()  # and count its user messages, which the pass would count otherwise
            if header is None or header.get("id") != session_id or header.get("version") != SESSION_VERSION:
                self.forget(path)
                return False
            return True
        except OSError:
            self.forget(path)
            return False
        finally:
            os.close(fd)

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
                index.refresh(fd, (info.st_dev, info.st_ino), info.st_size, keep_parsed=True)
                try:
                    return self._read(index, fd, session_id, leaf_id, span_ids, whole)
                finally:
                    index.drop_parsed()
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
            raise SessionFileRefused("leaf-missing")  # not written yet (pi waits for an assistant message)
        positions = index.branch_positions(leaf)
        rows = index.rows
        start, capped = _whole_from(index, positions, span_ids) if whole else (len(positions), False)
        # One loop over the part before ``start``, keeping its light entries: on a long session that part is
        # most of the branch, and a pass must cost what its span costs.
        entries: list[dict[str, Any]] = []
        size = 0
        for position in itertools.islice(positions, start):
            row = rows[position]
            if row.body is not None:
                entries.append(row.body)
                size += row.length
        light = len(entries)
        users: dict[str, str] | None = index.user_ids()
        for position in itertools.islice(positions, start, None):
            row = rows[position]
            size += row.length
            body = row.body
            if body is None:
                body = index.entry(fd, position)
                if body is None:
                    raise SessionFileRefused("entry-missing")
                if _is_user_message(body):
                    users = None  # rewritten in place since it was indexed: the pass counts for itself
            entries.append(body)
        return BranchRead(
            entries=entries,
            cold=index.last_refresh_cold,
            read_bytes=index.last_read_bytes,
            whole=len(entries),
            whole_bytes=size,
            left_out=start - light,
            capped=capped,
            user_ids=users,
        )


def _is_user_message(entry: dict[str, Any]) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "user"


def _judged(base: dict[str, Any]) -> bool:
    """Whether the fold reads the base compaction's state: one it refuses (a newer format, a broken state) is
    taken over like a foreign compaction (FORMAT-3), so the messages before it are the takeover's to read,
    not judged already."""
    return not isinstance(read_details_state(base), Refusal)


def _whole_from(index: SessionIndex, positions: list[int], span_ids: Sequence[str]) -> tuple[int, bool]:
    """Where on the walk ``positions`` heavy entries start being read whole; True when the unseen stretch was
    cut to its newest part.

    Every span entry must be on the branch; the start is the state's unseen boundary (the base compaction's
    kept entry, as :func:`~longhaul_daemon.transcript.messages.unseen_start` finds it), no later than the
    span's first entry, and at most :data:`UNSEEN_BYTES` of heavy entries before the span. Looked up in the
    index, so its cost grows with the span and the stretch before it, not with the branch.
    """
    wanted = set(span_ids)
    if not wanted:
        return len(positions), False  # the span came inline: nothing heavy is read from the file
    span_first = len(positions)
    for entry_id in wanted:
        at = index.first_on_walk(entry_id)
        if at is None:
            raise SessionFileRefused("entry-missing")  # a span entry the branch does not hold
        span_first = min(span_first, at)
    rows = index.rows
    start = 0
    for base_at in range(len(positions) - 1, -1, -1):  # the fold's base: the newest Longhaul compaction
        base = rows[positions[base_at]].body
        if base is None or not is_longhaul_compaction(base):
            continue
        if _judged(base):
            kept = base.get("firstKeptEntryId")
            kept_at = index.first_on_walk(kept) if isinstance(kept, str) else None
            start = kept_at if kept_at is not None and kept_at < base_at else base_at + 1
        break
    start = min(start, span_first)
    budget = UNSEEN_BYTES
    at = span_first
    while at > start:
        row = rows[positions[at - 1]]
        if row.body is None:
            if row.length > budget:
                return at, True
            budget -= row.length
        at -= 1
    return start, False


class SessionWarmer:
    """Indexes session files after their ``hello``, one at a time on a thread of its own, so a session's
    first pass after the daemon started finds its index warm instead of reading the whole file.

    pi sends ``hello`` when a session starts or is resumed, long before its first compaction. A file already
    queued is not queued twice, and past :data:`MAX_WAITING_WARMS` waiting ones a request is dropped (that
    pass will read the file itself, as it would have anyway).
    """

    def __init__(self, files: SessionFiles) -> None:
        self._files = files
        self._cond = threading.Condition()
        self._waiting: OrderedDict[str, str] = OrderedDict()  # path -> session id
        self._thread: threading.Thread | None = None
        self._stopped = False
        self.warmed = 0  # files indexed, for status

    def submit(self, path: str, session_id: str) -> bool:
        """Queue ``path``; False when it was not queued (stopped, already waiting, or the queue is full)."""
        with self._cond:
            if self._stopped or path in self._waiting or len(self._waiting) >= MAX_WAITING_WARMS:
                return False
            self._waiting[path] = session_id
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="longhaul-warm", daemon=True)
                self._thread.start()
            self._cond.notify()
            return True

    def stop(self) -> None:
        """No more warming; a file being indexed finishes, the waiting ones are dropped."""
        with self._cond:
            self._stopped = True
            self._waiting.clear()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._waiting or self._stopped)
                if self._stopped:
                    return
                path, session_id = self._waiting.popitem(last=False)
            try:
                with PAUSE.held():
                    warmed = self._files.warm(path, session_id=session_id)
                if warmed:
                    self.warmed += 1
            except Exception as exc:  # a bug here must not end warming for every later session
                _log.error("session_warm_failed", error_class=type(exc).__name__)
