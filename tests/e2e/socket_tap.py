"""A transparent Unix-socket relay between the shim and the daemon that keeps the shim's requests.

It lets a test take the very ``compact`` request a real pi sent and hand it to a second daemon, so two daemons
(one with a warm session-file index, one cold) can be compared on identical input. Bytes pass through
unchanged in both directions; complete lines from the shim are recorded, and with ``keep_replies`` every byte
the daemon sent back too (the credential canaries search them).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path
from typing import Any

__all__ = ["SocketTap", "send_line"]


class SocketTap:
    """Listens at ``listen``; each connection is relayed to ``upstream``; requests are kept in order."""

    def __init__(self, listen: Path, upstream: Path, *, keep_replies: bool = False) -> None:
        self.listen = listen
        self.upstream = upstream
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._keep_replies = keep_replies
        self._replies = bytearray()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(listen))
        self._server.listen(16)
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def requests(self, method: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self._requests if r.get("method") == method]

    def replies(self) -> bytes:
        """Everything the daemon sent to the shim so far (with ``keep_replies``)."""
        with self._lock:
            return bytes(self._replies)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(str(self.upstream))
            except OSError:
                client.close()
                upstream.close()
                continue
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, record: bool) -> None:
        pending = b""
        try:
            while True:
                data = source.recv(1 << 20)
                if not data:
                    break
                if record:
                    pending += data
                    *lines, pending = pending.split(b"\n")
                    self._keep(lines)
                elif self._keep_replies:
                    with self._lock:
                        self._replies += data
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (sink, source):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    def _keep(self, lines: list[bytes]) -> None:
        for line in lines:
            with contextlib.suppress(ValueError):
                value = json.loads(line)
                if isinstance(value, dict):
                    with self._lock:
                        self._requests.append(value)

    def close(self) -> None:
        self._closed.set()
        self._server.close()
        self._thread.join(timeout=5)


def send_line(path: Path, request: dict[str, Any], *, timeout: float = 120.0) -> dict[str, Any]:
    """Send one request to the daemon at ``path`` and return its reply; requests it sends go unanswered."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout)
        conn.connect(str(path))
        conn.sendall(json.dumps(request).encode() + b"\n")
        buffer = b""
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                raise ConnectionError("the daemon closed the connection before replying")
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                reply = json.loads(line)
                if isinstance(reply, dict) and reply.get("id") == request.get("id") and "method" not in reply:
                    return reply
