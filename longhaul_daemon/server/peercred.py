"""Who is on the other end of a Unix socket (SO_PEERCRED), and the rule that only our own uid may talk."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

__all__ = ["PeerCredentials", "peer_allowed", "peer_credentials"]

_UCRED = struct.Struct("3i")  # struct ucred {pid_t pid; uid_t uid; gid_t gid;} on Linux


@dataclass(frozen=True)
class PeerCredentials:
    """The peer's pid, uid and gid, as the kernel recorded them at ``connect()``/``listen()`` time."""

    pid: int
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCredentials:
    """Read SO_PEERCRED from a connected AF_UNIX socket (Linux). Raises OSError if the kernel cannot say."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size)
    pid, uid, gid = _UCRED.unpack(raw)
    return PeerCredentials(pid=pid, uid=uid, gid=gid)


def peer_allowed(peer_uid: int, own_uid: int) -> bool:
    """Only the daemon's own user may talk to it: not other users, and not root talking to a user's daemon."""
    return peer_uid == own_uid
