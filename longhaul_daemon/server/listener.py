"""Gets the daemon a listening socket: adopt systemd's, or bind one safely behind a single-instance lock.

Binding is done by hand rather than with ``anyio.create_unix_listener``, which unlinks whatever socket sits at
the path and would let a second daemon silently steal a live one. Order of operations: private directory,
``flock`` on ``<socket>.lock`` (the kernel drops it even on SIGKILL, so a free lock means any leftover socket
is stale), probe the leftover socket (refused → unlink; answered → refuse to start), bind under
``umask 0o177`` so the socket is born 0600, listen. At exit the socket is unlinked only if it is still the
inode we bound, and never when systemd owns it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import stat
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

import structlog
from anyio.abc import SocketListener

from longhaul_daemon import systemd
from longhaul_daemon.errors import AlreadyRunning, SocketPathInvalid, StartupError
from longhaul_daemon.server.paths import check_socket_path_length, ensure_private_dir, lock_path_for

__all__ = ["OpenedListener", "acquire_instance_lock", "open_listener", "remove_stale_socket"]

_log = structlog.get_logger("longhaul.server")

_BACKLOG = 1024  # a burst of connections queues rather than failing with EAGAIN (capped at somaxconn)
_PROBE_TIMEOUT_S = 1.0


@dataclass
class OpenedListener:
    """A listening socket plus what must be undone at exit (the socket file, the lock)."""

    listener: SocketListener
    path: Path
    activated: bool
    lock_fd: int | None
    bound_inode: tuple[int, int] | None

    def release(self) -> None:
        """Unlink our socket file (unless systemd owns it or it was replaced), drop the lock. Never raises."""
        if not self.activated and self.bound_inode is not None:
            with contextlib.suppress(OSError):
                st = os.lstat(self.path)
                if (st.st_dev, st.st_ino) == self.bound_inode:
                    os.unlink(self.path)
        if self.lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.lock_fd)  # closing the last fd releases the flock
            self.lock_fd = None


def acquire_instance_lock(lock_path: Path, *, uid: int) -> int:
    """Take ``flock(LOCK_EX|LOCK_NB)`` on ``lock_path`` and return its fd (held for the process's life)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(lock_path, flags, 0o600)
    except OSError as exc:
        reason = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror
        raise StartupError(f"cannot open lock file {lock_path}: {reason}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != uid:
            raise StartupError(f"lock file {lock_path} is not a regular file owned by uid {uid}")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder_pid(fd)
            raise AlreadyRunning(
                f"another longhaul-daemon{holder} is already serving this socket (lock {lock_path} is held)"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_holder_pid(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        return f" (pid {int(os.pread(fd, 32, 0).decode().strip())})"
    return ""


def remove_stale_socket(path: Path) -> None:
    """Unlink a socket nobody answers on; refuse to touch a live socket or a non-socket file."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise SocketPathInvalid(f"{path} exists and is not a socket; refusing to replace it")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(_PROBE_TIMEOUT_S)
        try:
            probe.connect(os.fspath(path))
        except ConnectionRefusedError:
            os.unlink(path)
            _log.info("stale_socket_removed", socket=str(path))
            return
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StartupError(f"cannot probe the existing socket {path}: {exc.strerror or exc}") from None
    raise AlreadyRunning(f"something already answers on {path}; refusing to take over its socket")


def _bind(path: Path) -> tuple[socket.socket, tuple[int, int]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        previous_umask = os.umask(0o177)
        try:
            sock.bind(os.fspath(path))
        finally:
            os.umask(previous_umask)
        sock.listen(_BACKLOG)
        st = os.lstat(path)
    except OSError as exc:
        sock.close()
        raise StartupError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    return sock, (st.st_dev, st.st_ino)


async def open_listener(
    socket_path: Path,
    *,
    uid: int,
    may_narrow_dir: bool,
    env: MutableMapping[str, str] | None = None,
) -> OpenedListener:
    """The daemon's listener: systemd's socket when activated, else our own at ``socket_path``."""
    activated = systemd.listen_sockets(env)
    if activated:
        return await _adopt(activated, uid=uid)
    check_socket_path_length(socket_path)
    ensure_private_dir(socket_path.parent, uid=uid, may_narrow=may_narrow_dir)
    lock_fd = acquire_instance_lock(lock_path_for(socket_path), uid=uid)
    try:
        remove_stale_socket(socket_path)
        sock, inode = _bind(socket_path)
        listener = await SocketListener.from_socket(sock)
    except BaseException:
        os.close(lock_fd)
        raise
    return OpenedListener(listener, socket_path, activated=False, lock_fd=lock_fd, bound_inode=inode)


async def _adopt(sockets: list[socket.socket], *, uid: int) -> OpenedListener:
    """Use the first socket systemd passed (the unit declares one) and close any others."""
    sock, extra = sockets[0], sockets[1:]
    for other in extra:
        other.close()
    name = sock.getsockname()
    path = Path(name) if isinstance(name, str) and name.startswith("/") else Path(str(name))
    lock_fd = None
    if path.is_absolute():
        # systemd owns the socket, but a hand-started `serve` on the same path must still see it is taken.
        lock_fd = acquire_instance_lock(lock_path_for(path), uid=uid)
    try:
        listener = await SocketListener.from_socket(sock)
    except (ValueError, OSError) as exc:
        if lock_fd is not None:
            os.close(lock_fd)
        raise StartupError(f"the socket systemd passed (fd 3) cannot be listened on: {exc}") from None
    except BaseException:
        if lock_fd is not None:
            os.close(lock_fd)
        raise
    _log.info("socket_activated", socket=str(path), extra_fds=len(extra))
    return OpenedListener(listener, path, activated=True, lock_fd=lock_fd, bound_inode=None)
