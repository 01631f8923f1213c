"""The fuzzer's load phases: a burst of connections sending large frames at once, then slow-loris clients.

The burst opens many connections together, each sending one large frame, and records what each got: a reply
(by code), or -32005 ``Server busy`` (the connection cap or the daemon-wide byte budget), and never silence.
Slow-loris clients begin a frame and stop, or connect and send nothing; the daemon must close every one of
them within its stall and idle timeouts. Both only observe: the verdicts are in the report.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

__all__ = ["burst", "slow_loris"]

_WAIT_S = 60.0


def _busy_or_code(line: bytes) -> str:
    try:
        reply = json.loads(line)
    except ValueError:
        return "not-json"
    error = reply.get("error") if isinstance(reply, dict) else None
    if isinstance(error, dict):
        data = error.get("data")
        if error.get("code") == -32005 and isinstance(data, dict):
            return f"busy:{data.get('limit')}"
        return str(error.get("code"))
    return "result" if isinstance(reply, dict) and "result" in reply else "other"


def _one_burst_client(path: Path, frame: bytes) -> str:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(_WAIT_S)
    try:
        sock.connect(str(path))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused mid-send: read why
            sock.sendall(frame)
        buffer = b""
        while b"\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                return "closed-without-reply"
            buffer += chunk
        return _busy_or_code(buffer.split(b"\n", 1)[0])
    except TimeoutError:
        return "no-reply-in-time"
    except OSError as exc:
        return f"os-error:{type(exc).__name__}"
    finally:
        sock.close()


def burst(path: Path, connections: int, frame_bytes: int) -> Counter[str]:
    """``connections`` clients at once, each sending one frame of about ``frame_bytes``; outcomes counted."""
    session = {"cwd": "/nonexistent", "sessionId": "burst", "agentDir": "/nonexistent", "piVersion": "0.73.1"}
    frames = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "remember",
                "params": {"session": session, "text": "z" * frame_bytes},
            }
        ).encode()
        + b"\n"
        for n in range(connections)
    ]
    with ThreadPoolExecutor(max_workers=connections) as pool:
        outcomes = list(pool.map(lambda frame: _one_burst_client(path, frame), frames))
    return Counter(outcomes)


def slow_loris(path: Path, clients: int, wait_s: float) -> int:
    """Open ``clients`` connections (half begin a frame and stop, half send nothing) and return how many the
    daemon still holds open after ``wait_s``."""
    socks: list[socket.socket] = []
    for n in range(clients):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(path))
        if n % 2 == 0:
            sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "meth')
        socks.append(sock)
    deadline = time.monotonic() + wait_s
    open_socks = list(socks)
    while open_socks and time.monotonic() < deadline:
        still: list[socket.socket] = []
        for sock in open_socks:
            sock.settimeout(max(0.01, min(0.2, deadline - time.monotonic())))
            try:
                closed = sock.recv(4096) == b""
            except TimeoutError:
                closed = False
            except OSError:
                closed = True
            if not closed:
                still.append(sock)
        open_socks = still
    for sock in socks:
        sock.close()
    return len(open_socks)
