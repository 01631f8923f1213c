"""A model server for the fuzzer: answers the daemon's Diff calls at once, with what a provider might send.

Fuzzed ``compact`` requests name a model on this loopback server, so the pass's model path runs too (route
plan, retries, traces, route health, redaction): a good Diff answer, garbage text, a 400, or a 401 whose
body and request-id header quote the API key the request carried. Never a 5xx or a delay, whose retries
would spend the pass budget on waiting. The choice is seeded, like the frames.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["model_stub"]


def _answer(rng: random.Random) -> str:
    choice = rng.randrange(4)
    if choice == 0:
        return json.dumps(
            {
                "labels": [{"msg": "u1", "label": "not a rule"}],
                "narrative": "ran the tests",
                "now": "fix the parser",
                "decisions": [{"text": "keep pytest", "evidence": ["u1"]}],
            }
        )
    if choice == 1:
        return "not json at all \u202e"
    if choice == 2:
        return json.dumps({"labels": "x" * rng.randrange(1, 5000), "now": [1, 2]})
    return "{" * rng.randrange(1, 3000)


def _sse(text: str) -> bytes:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text}}],
    }
    end = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in (chunk, end)) + b"data: [DONE]\n\n"


@contextmanager
def model_stub(seed: int) -> Iterator[str]:
    """Serve on 127.0.0.1; yields the base URL for ``ModelFacts.baseUrl``."""
    rng = random.Random(seed)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            auth = self.headers.get("authorization") or ""
            with lock:
                roll, text = rng.random(), _answer(rng)
            if roll < 0.15:
                body = json.dumps(
                    {"error": {"message": f"Incorrect API key provided: {auth}", "code": auth[-20:]}}
                )
                self._send(401, "application/json", body.encode(), {"x-request-id": auth[-16:]})
            elif roll < 0.25:
                self._send(400, "application/json", b'{"error": {"message": "bad request"}}', {})
            else:
                self._send(200, "text/event-stream", _sse(text), {})

        def _send(self, status: int, kind: str, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
