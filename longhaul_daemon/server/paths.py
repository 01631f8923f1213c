"""Where the daemon's socket lives, and the checks that keep its directory private to this user (as tmux)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from longhaul_daemon.errors import SocketPathInvalid, UnsafeSocketDir

__all__ = [
    "PRIVATE_DIR_HINT",
    "SOCKET_ENV",
    "SOCKET_NAME",
    "check_socket_path_length",
    "default_socket_path",
    "ensure_private_dir",
    "lock_path_for",
    "resolve_socket_path",
]

SOCKET_ENV = "LONGHAUL_SOCKET"
SOCKET_NAME = "daemon.sock"
_RUNTIME_SUBDIR = "longhaul"
_MAX_SUN_PATH = 107  # sockaddr_un.sun_path holds 108 bytes including the terminating NUL
PRIVATE_DIR_HINT = (
    "put the socket in a directory only you can reach, e.g. 'mkdir -m 700 ~/.longhaul' and "
    "--socket ~/.longhaul/daemon.sock, or leave out --socket and $LONGHAUL_SOCKET for the default "
    "($XDG_RUNTIME_DIR/longhaul/daemon.sock)"
)


def default_socket_path(env: Mapping[str, str], uid: int) -> Path:
    """``$XDG_RUNTIME_DIR/longhaul/daemon.sock``, else ``/tmp/longhaul-<uid>/daemon.sock``.

    A relative ``$XDG_RUNTIME_DIR`` is ignored, as the XDG base directory specification requires.
    """
    runtime_dir = env.get("XDG_RUNTIME_DIR", "")
    if runtime_dir and os.path.isabs(runtime_dir):
        return Path(runtime_dir) / _RUNTIME_SUBDIR / SOCKET_NAME
    return Path(f"/tmp/longhaul-{uid}") / SOCKET_NAME


def resolve_socket_path(cli_value: str | None, env: Mapping[str, str], uid: int) -> Path:
    """``--socket``, else ``$LONGHAUL_SOCKET``, else :func:`default_socket_path`; made absolute."""
    if cli_value:
        return Path(cli_value).absolute()
    from_env = env.get(SOCKET_ENV, "")
    if from_env:
        return Path(from_env).absolute()
    return default_socket_path(env, uid)


def lock_path_for(socket_path: Path) -> Path:
    """The single-instance lock file beside the socket."""
    return socket_path.with_name(socket_path.name + ".lock")


def check_socket_path_length(socket_path: Path) -> None:
    """AF_UNIX paths are short; say so plainly instead of failing at ``bind`` with a cryptic error."""
    if len(os.fsencode(socket_path)) > _MAX_SUN_PATH:
        raise SocketPathInvalid(
            f"socket path {socket_path} is longer than {_MAX_SUN_PATH} bytes; "
            "choose a shorter one with --socket"
        )


def ensure_private_dir(directory: Path, *, uid: int, may_narrow: bool) -> None:
    """Make ``directory`` exist as a real directory owned by ``uid`` with mode 0700, or raise UnsafeSocketDir.

    The directory is created 0700 when missing (parents with default modes). An existing one must not be a
    symlink and must be owned by ``uid``. Group/other bits are removed when we created the directory or
    ``may_narrow`` is set (the default locations, which are ours by name); an explicitly chosen directory that
    others can reach is refused rather than changed, so ``--socket /tmp/x.sock`` never chmods ``/tmp``.
    """
    created = _make_dir(directory)
    try:
        st = os.lstat(directory)
    except OSError as exc:
        raise UnsafeSocketDir(f"cannot inspect socket directory {directory}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeSocketDir(f"socket directory {directory} is a symbolic link; refusing to use it")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeSocketDir(f"socket directory {directory} exists and is not a directory")
    if st.st_uid != uid:
        raise UnsafeSocketDir(
            f"socket directory {directory} is owned by uid {st.st_uid}, not by uid {uid}; {PRIVATE_DIR_HINT}"
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077 == 0:
        return
    if not (created or may_narrow) or mode & stat.S_ISVTX:
        # Never advise changing the directory: it may be /tmp or a project dir that others rely on.
        raise UnsafeSocketDir(
            f"socket directory {directory} is accessible by other users (mode {mode:04o}); {PRIVATE_DIR_HINT}"
        )
    _narrow(directory, expected=st)


def _make_dir(directory: Path) -> bool:
    """Create ``directory`` with mode 0700; whether we created it."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        return False
    except FileNotFoundError:
        try:
            os.makedirs(directory.parent, exist_ok=True)
            os.mkdir(directory, 0o700)
        except FileExistsError:
            return False
        except OSError as exc:
            raise UnsafeSocketDir(f"cannot create socket directory {directory}: {exc.strerror}") from None
    except OSError as exc:
        raise UnsafeSocketDir(f"cannot create socket directory {directory}: {exc.strerror}") from None
    return True


def _narrow(directory: Path, *, expected: os.stat_result) -> None:
    """chmod 0700 through an O_NOFOLLOW fd, after checking it is still the directory we inspected."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(directory, flags)
    except OSError as exc:
        raise UnsafeSocketDir(f"cannot open socket directory {directory}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino, st.st_uid) != (expected.st_dev, expected.st_ino, expected.st_uid):
            raise UnsafeSocketDir(f"socket directory {directory} changed while it was being checked")
        os.fchmod(fd, 0o700)
    except OSError as exc:
        raise UnsafeSocketDir(
            f"cannot set mode 0700 on socket directory {directory}: {exc.strerror}"
        ) from None
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
