"""A scripted HTTP/1.1 server on 127.0.0.1:0 with real sockets, for provider wire tests without MockTransport.

Each POST takes the next ``Reply`` from the script: a whole body, chunked SSE, or a hang, or a stream that
never ends (``repeat``: a model looping until someone stops reading). The server records every request and
notices when a client closes a connection it is still holding open or still writing to.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Recorded",
    "Reply",
    "ScriptedServer",
    "json_reply",
    "scripted_server",
    "sse",
    "sse_data",
    "sse_reply",
]


@dataclass
class Reply:
    """What to answer: ``body`` (whole) or ``chunks`` (chunked, e.g. SSE), optionally hanging around them."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    chunks: list[bytes] = field(default_factory=list)
    hang_before_headers: bool = False
    hang_after_chunks: bool = False
    repeat: bytes | None = None  # after ``chunks``, sent again and again until the client goes away


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


def sse(event: str | None, data: Any) -> bytes:
    """One SSE event; ``data`` is JSON-encoded unless it is already a string."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event is not None else ""
    return (head + f"data: {payload}\n\n").encode()


def sse_data(data: Any) -> bytes:
    return sse(None, data)


def json_reply(body: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers={"content-type": "application/json", **(headers or {})},
        body=json.dumps(body).encode(),
    )


def sse_reply(
    chunks: list[bytes],
    *,
    headers: dict[str, str] | None = None,
    hang: bool = False,
    repeat: bytes | None = None,
) -> Reply:
    return Reply(
        headers={"content-type": "text/event-stream", **(headers or {})},
        chunks=chunks,
        hang_after_chunks=hang,
        repeat=repeat,
    )


class ScriptedServer:
    """Serves the script in order; ``requests`` grows with every POST, in arrival order."""

    def __init__(self, script: list[Reply]) -> None:
        self.script = list(script)
        self.requests: list[Recorded] = []
        self.disconnected = threading.Event()
        self.holding = threading.Event()
        self.stop = threading.Event()
        self.repeats = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05})

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if not self.script:
                return Reply(status=418, body=b'{"error": {"type": "script_exhausted"}}')
            return self.script.pop(0)

    def stream_until_client_leaves(self, write: Callable[[bytes], None], chunk: bytes) -> None:
        """Keep sending ``chunk`` (a model that never stops); set ``disconnected`` once a write fails.

        ``repeats`` counts the chunks sent, so a test can tell the client stopped reading long before a
        real server's output limit, without timing anything.
        """
        self.holding.set()
        while not self.stop.is_set():
            try:
                write(chunk)
            except OSError:  # BrokenPipe / ConnectionReset: the client closed the connection
                self.disconnected.set()
                return
            self.repeats += 1
            time.sleep(0.002)  # a generating model's pace; also keeps this thread from spinning

    def hold_until_client_leaves(self, conn: socket.socket) -> None:
        """Keep the connection open without writing; set ``disconnected`` once the client closes it."""
        self.holding.set()
        while not self.stop.is_set():
            readable, _, _ = select.select([conn], [], [], 0.02)
            if not readable:
                continue
            try:
                if conn.recv(1, socket.MSG_PEEK) == b"":
                    self.disconnected.set()
                    return
            except OSError:
                self.disconnected.set()
                return
            # the client sent bytes on a connection we hold: it will not be read; keep waiting for EOF
            conn.recv(65536)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                raw = self.rfile.read(length) if length else b""
                recorded = Recorded(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=json.loads(raw) if raw else None,
                )
                reply = server.next_reply(recorded)
                if reply.hang_before_headers:
                    server.hold_until_client_leaves(self.connection)
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                if reply.body is not None:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    self.wfile.flush()
                    return
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                try:
                    for chunk in reply.chunks:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                        self.wfile.flush()
                except OSError:  # the client left mid-reply (it had what it wanted): note it, no traceback
                    server.disconnected.set()
                    self.close_connection = True
                    return
                if reply.repeat is not None:

                    def write(data: bytes) -> None:
                        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                        self.wfile.flush()

                    server.stream_until_client_leaves(write, reply.repeat)
                    self.close_connection = True
                    return
                if reply.hang_after_chunks:
                    server.hold_until_client_leaves(self.connection)
                    self.close_connection = True
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


@contextmanager
def scripted_server(script: list[Reply]) -> Iterator[ScriptedServer]:
    server = ScriptedServer(script)
    server.start()
    try:
        yield server
    finally:
        server.close()
