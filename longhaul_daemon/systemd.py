"""The three pieces of systemd's protocol the daemon speaks, stdlib only: notify, watchdog, socket activation.

All of them are inert outside systemd: with no ``$NOTIFY_SOCKET`` :func:`notify` does nothing, with no
``$WATCHDOG_USEC`` there is no watchdog, and with no ``$LISTEN_FDS`` for our pid the daemon binds its own
socket. References: sd_notify(3), sd_watchdog_enabled(3), sd_listen_fds(3).
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Mapping, MutableMapping

__all__ = ["LISTEN_FDS_START", "listen_sockets", "notify", "watchdog_interval"]

LISTEN_FDS_START = 3
"""The first file descriptor systemd passes (``SD_LISTEN_FDS_START``)."""

_ACTIVATION_VARS = ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES")


def _notify_address(value: str) -> str | None:
    """``$NOTIFY_SOCKET`` as an AF_UNIX address: a path, or ``@name`` for the abstract namespace."""
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None  # vsock: and other transports are not supported


def notify(*assignments: str, env: Mapping[str, str] | None = None) -> bool:
    """Send ``KEY=VALUE`` lines (``READY=1``, ``STATUS=…``, ``STOPPING=1``, ``WATCHDOG=1``) to systemd.

    Returns whether a datagram was sent. Never raises: a notify failure must not take the daemon down.
    """
    environ = os.environ if env is None else env
    address = _notify_address(environ.get("NOTIFY_SOCKET", ""))
    if address is None or not assignments:
        return False
    payload = "\n".join(assignments).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(payload)
    except OSError:
        return False
    return True


def watchdog_interval(env: Mapping[str, str] | None = None, pid: int | None = None) -> float | None:
    """Seconds between ``WATCHDOG=1`` pings (half of ``$WATCHDOG_USEC``), or ``None`` without a watchdog.

    ``$WATCHDOG_PID``, when set, must name this process; otherwise the watchdog belongs to someone else.
    """
    environ = os.environ if env is None else env
    own_pid = os.getpid() if pid is None else pid
    try:
        usec = int(environ.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    watchdog_pid = environ.get("WATCHDOG_PID")
    if watchdog_pid:
        try:
            if int(watchdog_pid) != own_pid:
                return None
        except ValueError:
            return None
    return usec / 2 / 1_000_000


def listen_sockets(
    env: MutableMapping[str, str] | None = None, pid: int | None = None
) -> list[socket.socket]:
    """The sockets systemd passed us (socket activation), as close-on-exec socket objects; ``[]`` when none.

    The fds count only when ``$LISTEN_PID`` is our pid. The activation variables are removed from ``env``
    either way, so children we start never mistake them for their own.
    """
    environ = os.environ if env is None else env
    own_pid = os.getpid() if pid is None else pid
    listen_pid = environ.get("LISTEN_PID", "")
    listen_fds = environ.get("LISTEN_FDS", "")
    for name in _ACTIVATION_VARS:
        environ.pop(name, None)
    try:
        if int(listen_pid) != own_pid:
            return []
        count = int(listen_fds)
    except ValueError:
        return []
    sockets: list[socket.socket] = []
    for fd in range(LISTEN_FDS_START, LISTEN_FDS_START + max(count, 0)):
        try:
            os.set_inheritable(fd, False)
            sockets.append(socket.socket(fileno=fd))
        except OSError:
            with contextlib.suppress(OSError):
                os.close(fd)
    return sockets
