"""Append one line to a record-log file without ever following a link, blocking, or raising (LOG-8..LOG-13).

Every write opens the directory, then the file relative to that directory's fd, with ``O_NOFOLLOW`` and
``O_NONBLOCK``; only a regular file with one link that the daemon's user owns is written, in one ``os.write``
of a whole line. Opening per write (records are a few per compaction) means a file swapped, deleted or
replaced by a link between two writes is looked at afresh each time, and no descriptor is held open for the
daemon's life. Anything that goes wrong counts as one dropped line, is noted (rate-limited, no path) in the
operational log, and is never raised to the caller: a failed log write must not touch the compaction (LOG-12).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BACKUP_SUFFIX", "DIR_MODE", "FILE_MODE", "ROTATE_BYTES", "LogSink", "SinkRefused"]

ROTATE_BYTES = 5 * 1024 * 1024  # LOG-9: 5 MB = 5,242,880 bytes
BACKUP_SUFFIX = ".1"
FILE_MODE = 0o600
DIR_MODE = 0o700
_NOTE_EVERY_S = 60.0
NO_PARENT = "no-parent-directory"  # no agent directory: nothing in the way, just nowhere to log; not noted


class SinkRefused(Exception):
    """The path is not something we may write to (a link, not a regular file, not ours); the code says why."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class LogSink:
    """One record-log file.

    ``strict_dir``: the directory is Longhaul's own (``<agentDir>/logs``): it is created 0700, must not be a
    symlink, must be owned by us, and a broader mode is narrowed (LOG-8, LOG-10). An explicit
    ``PI_COMPACT_STATE_DEBUG`` path's directory is the user's choice (their project, ``/tmp``): a missing one
    is created 0700, an existing one is used as it is.
    """

    path: Path
    strict_dir: bool = True
    limit: int = ROTATE_BYTES
    dropped: int = 0
    written: int = 0
    last_refusal: str | None = None
    _last_note: float = field(default=-_NOTE_EVERY_S * 2, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def write_line(self, line: str) -> bool:
        """Append ``line`` plus a newline; True when written whole, False when dropped. Never raises."""
        try:
            data = (line.replace("\n", " ") + "\n").encode("utf-8", "backslashreplace")
            with self._lock:
                self._append(data)
                self.written += 1
            return True
        except Exception as exc:  # a failed log write never reaches the compaction (LOG-12)
            self._drop(exc)
            return False

    def size(self) -> int:
        """The current file's size in bytes (0 when absent or unreadable); never follows a link."""
        try:
            st = os.lstat(self.path)
        except OSError:
            return 0
        return st.st_size if stat.S_ISREG(st.st_mode) else 0

    # ---- internals ---------------------------------------------------------------------------------------
    def _drop(self, exc: Exception) -> None:
        self.dropped += 1
        code = (
            exc.code if isinstance(exc, SinkRefused) else errno.errorcode.get(getattr(exc, "errno", 0) or 0)
        )
        self.last_refusal = code or type(exc).__name__
        now = time.monotonic()
        if self.last_refusal != NO_PARENT and now - self._last_note >= _NOTE_EVERY_S:
            self._last_note = now
            with contextlib.suppress(Exception):
                # imported here: `longhaul-daemon report` reads this module's constants without structlog
                import structlog

                structlog.get_logger("longhaul.recordlog").warning(
                    "record_dropped", why=self.last_refusal, dropped=self.dropped
                )

    def _open_dir(self) -> int:
        directory = self.path.parent
        if not directory.exists() and not directory.is_symlink():
            if not directory.parent.is_dir():
                # One level only: pi's agent directory (or the user's chosen parent) must exist already.
                raise SinkRefused(NO_PARENT)
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, DIR_MODE)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
        if self.strict_dir:
            flags |= os.O_NOFOLLOW
        try:
            dir_fd = os.open(directory, flags)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and self.strict_dir:
                raise SinkRefused("dir-not-a-directory") from exc
            raise
        try:
            if self.strict_dir:
                st = os.fstat(dir_fd)
                if st.st_uid != os.getuid():
                    raise SinkRefused("dir-not-ours")
                if stat.S_IMODE(st.st_mode) & 0o077:
                    os.fchmod(dir_fd, DIR_MODE)
        except BaseException:
            os.close(dir_fd)
            raise
        return dir_fd

    def _open_file(self, dir_fd: int) -> int:
        name = self.path.name
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, FILE_MODE, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SinkRefused("symlink") from exc
            if exc.errno in (errno.ENXIO, errno.EISDIR, errno.EOPNOTSUPP, errno.ENODEV):
                raise SinkRefused("not-a-regular-file") from exc
            raise
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SinkRefused("not-a-regular-file")
            if st.st_uid != os.getuid():
                raise SinkRefused("file-not-ours")
            if st.st_nlink != 1:
                raise SinkRefused("hard-linked")
            if stat.S_IMODE(st.st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _rotate(self, dir_fd: int) -> None:
        """``name`` → ``name.1`` relative to the directory fd; a link at the backup name refuses (LOG-10)."""
        backup = self.path.name + BACKUP_SUFFIX
        try:
            st = os.stat(backup, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise SinkRefused("backup-not-a-regular-file")
        os.rename(self.path.name, backup, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)

    def _append(self, data: bytes) -> None:
        dir_fd = self._open_dir()
        try:
            fd = self._open_file(dir_fd)
            try:
                size = os.fstat(fd).st_size
                if size > 0 and size + len(data) > self.limit:
                    os.close(fd)
                    fd = -1
                    self._rotate(dir_fd)
                    fd = self._open_file(dir_fd)
                    size = os.fstat(fd).st_size
                self._write_whole(fd, data, size)
            finally:
                if fd >= 0:
                    os.close(fd)
        finally:
            os.close(dir_fd)

    @staticmethod
    def _write_whole(fd: int, data: bytes, size_before: int) -> None:
        """One ``os.write``; a short write (disk full, file size limit) is cut back so no torn line stays."""
        try:
            done = os.write(fd, data)
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size_before)
            raise
        if done != len(data):
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size_before)
            raise SinkRefused("short-write")
