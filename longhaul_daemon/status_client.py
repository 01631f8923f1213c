"""Ask the running daemon how it is, over a blocking socket with a short timeout (``status``, ``uninstall``).

Exit codes follow the LSB convention for status actions: 0 the daemon answered, 3 no daemon is running (no
socket, connection refused), 1 anything else (a timeout, a foreign daemon, a garbled answer), with a message
on stderr. Before trusting an answer, the server's uid is checked with SO_PEERCRED, so a socket squatted by
another user is reported instead of believed.

Only the standard library is imported, so asking when no daemon runs costs the interpreter's start and, for
the hint, one ``systemctl --user`` call. The protocol's pydantic model, which checks an answer and feeds the
table, is imported once a daemon has answered.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longhaul_daemon.server.peercred import peer_allowed, peer_credentials

__all__ = [
    "EXIT_ERROR",
    "EXIT_NOT_RUNNING",
    "EXIT_RUNNING",
    "DaemonAnswer",
    "DaemonNotRunning",
    "StatusQueryFailed",
    "query_daemon",
    "query_status",
]

EXIT_RUNNING = 0
EXIT_ERROR = 1
EXIT_NOT_RUNNING = 3

DEFAULT_TIMEOUT_S = 2.0
_MAX_REPLY = 1024 * 1024


class DaemonNotRunning(Exception):
    """Nothing listens on the socket path."""


class StatusQueryFailed(Exception):
    """Something listens, but the status call did not give a usable answer."""


@dataclass(frozen=True)
class DaemonAnswer:
    """The status result (checked against :class:`StatusResult`) and the server's pid as the kernel says."""

    status: dict[str, Any]
    peer_pid: int


def query_status(socket_path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """Call ``status`` and return the raw result object (already checked against :class:`StatusResult`)."""
    return query_daemon(socket_path, timeout_s=timeout_s).status


def query_daemon(socket_path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> DaemonAnswer:
    """Call ``status``; the result and who served it."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        try:
            sock.connect(os.fspath(socket_path))
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
            raise DaemonNotRunning(f"no daemon is running on {socket_path}") from None
        except TimeoutError:
            raise StatusQueryFailed(f"connecting to {socket_path} timed out after {timeout_s:g}s") from None
        except OSError as exc:
            raise StatusQueryFailed(f"cannot connect to {socket_path}: {exc.strerror or exc}") from None
        peer_pid = _check_server_uid(sock, socket_path)
        request = {"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}}
        try:
            sock.sendall(json.dumps(request).encode() + b"\n")
            reply = _read_line(sock)
        except TimeoutError:
            raise StatusQueryFailed(
                f"the daemon on {socket_path} did not answer within {timeout_s:g}s"
            ) from None
        except OSError as exc:
            raise StatusQueryFailed(
                f"talking to the daemon on {socket_path} failed: {exc.strerror or exc}"
            ) from None
    return DaemonAnswer(_parse_reply(reply), peer_pid)


def _check_server_uid(sock: socket.socket, socket_path: Path) -> int:
    """The server's pid, once its uid is known to be ours."""
    try:
        server = peer_credentials(sock)
    except OSError as exc:
        raise StatusQueryFailed(f"cannot tell who serves {socket_path}: {exc.strerror or exc}") from None
    if not peer_allowed(server.uid, os.getuid()):
        raise StatusQueryFailed(
            f"{socket_path} is served by uid {server.uid} (pid {server.pid}), not by you (uid {os.getuid()})"
        )
    return server.pid


def _read_line(sock: socket.socket) -> bytes:
    buffer = b""
    while b"\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise StatusQueryFailed("the daemon closed the connection without answering")
        buffer += chunk
        if len(buffer) > _MAX_REPLY:
            raise StatusQueryFailed("the daemon's answer is implausibly large")
    return buffer.split(b"\n", 1)[0]


def _parse_reply(reply: bytes) -> dict[str, Any]:
    try:
        message = json.loads(reply)
    except ValueError:
        raise StatusQueryFailed("the daemon's answer is not JSON") from None
    if not isinstance(message, dict):
        raise StatusQueryFailed("the daemon's answer is not a JSON-RPC response")
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        raise StatusQueryFailed(f"the daemon answered with error {error.get('code')}: {error.get('message')}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise StatusQueryFailed("the daemon's answer has no result object")
    from pydantic import ValidationError

    from longhaul_daemon.protocol import StatusResult

    try:
        StatusResult.model_validate(result)
    except ValidationError:
        raise StatusQueryFailed("the daemon's status does not match this client's protocol") from None
    return result
