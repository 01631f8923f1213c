"""``longhaul-daemon status``: ask the running daemon how it is, over a blocking socket with a short timeout.

Exit codes follow the LSB convention for status actions: 0 the daemon answered, 3 no daemon is running (no
socket, connection refused), 1 anything else (a timeout, a foreign daemon, a garbled answer), with a message
on stderr. Before trusting an answer, the server's uid is checked with SO_PEERCRED, so a socket squatted by
another user is reported instead of believed.

Only the standard library is imported up front, so that asking when no daemon runs costs little more than the
interpreter's start. The protocol's pydantic model, which checks an answer and feeds the table, is imported
once a daemon has answered.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.server.peercred import peer_allowed, peer_credentials

__all__ = [
    "EXIT_ERROR",
    "EXIT_NOT_RUNNING",
    "EXIT_RUNNING",
    "DaemonNotRunning",
    "StatusQueryFailed",
    "query_status",
    "run_status",
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


def query_status(socket_path: Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
    """Call ``status`` and return the raw result object (already checked against :class:`StatusResult`)."""
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
        _check_server_uid(sock, socket_path)
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
    return _parse_reply(reply)


def _check_server_uid(sock: socket.socket, socket_path: Path) -> None:
    try:
        server = peer_credentials(sock)
    except OSError as exc:
        raise StatusQueryFailed(f"cannot tell who serves {socket_path}: {exc.strerror or exc}") from None
    if not peer_allowed(server.uid, os.getuid()):
        raise StatusQueryFailed(
            f"{socket_path} is served by uid {server.uid} (pid {server.pid}), not by you (uid {os.getuid()})"
        )


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


def run_status(
    socket_path: Path, *, as_json: bool, out: TextIO, err: TextIO, timeout_s: float = DEFAULT_TIMEOUT_S
) -> int:
    """The ``status`` subcommand: print the daemon's status and return the exit code."""
    try:
        result = query_status(socket_path, timeout_s=timeout_s)
    except DaemonNotRunning as exc:
        print(f"longhaul-daemon: {exc}", file=err)
        return EXIT_NOT_RUNNING
    except StatusQueryFailed as exc:
        print(f"longhaul-daemon: {exc}", file=err)
        return EXIT_ERROR
    if as_json:
        print(json.dumps(result, indent=2, sort_keys=True), file=out)
    else:
        from longhaul_daemon.ops.status_view import format_status
        from longhaul_daemon.protocol import StatusResult

        print(format_status(StatusResult.model_validate(result)), file=out)
    return EXIT_RUNNING
