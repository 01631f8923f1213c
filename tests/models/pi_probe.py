"""pi-ai itself, run from the tests: its built-in model list, and the requests it sends (``pi_ai_probe.mjs``).

``pi_models()`` is pi-ai 0.73.1's own list (``getProviders()``/``getModels()``), read by node from the
installed package. ``pi_requests(cases)`` has pi-ai's ``streamSimple`` send each case to a capturing
loopback server that answers every request with a 400, and returns what arrived: path, headers, JSON body.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIM_DIR = REPO_ROOT / "client_shim"
PROBE = Path(__file__).with_name("pi_ai_probe.mjs")
_PI_AI = SHIM_DIR / "node_modules" / "@mariozechner" / "pi-ai" / "package.json"


def require_pi_ai() -> None:
    """Fail (never skip) when node or pi-ai is missing: ``make test`` installs both."""
    assert shutil.which("node"), "node is not on PATH"
    assert _PI_AI.exists(), f"pi-ai is not installed at {_PI_AI.parent}: run `cd client_shim && npm ci`"


def _node(mode: str, stdin: str = "") -> Any:
    require_pi_ai()
    env = {**os.environ, "LONGHAUL_SHIM_DIR": str(SHIM_DIR)}
    done = subprocess.run(
        ["node", str(PROBE), mode], input=stdin, capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@functools.cache
def pi_models() -> tuple[tuple[str, ...], tuple[dict[str, Any], ...]]:
    """pi-ai's providers and every built-in model, as pi's registry loads them."""
    data = _node("models")
    return tuple(data["providers"]), tuple(data["models"])


@dataclass(frozen=True)
class Captured:
    """One request as it reached the loopback server; header names lower-cased."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class CaptureServer:
    """Records every request and answers it with a 400 in the OpenAI error shape (no SDK retries a 400)."""

    def __init__(self) -> None:
        self.requests: list[Captured] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(Captured("POST", self.path, headers, json.loads(raw or b"{}")))
                data = json.dumps(
                    {"error": {"message": "captured", "type": "invalid_request_error"}}
                ).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> CaptureServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@contextmanager
def capture() -> Iterator[CaptureServer]:
    with CaptureServer() as server:
        yield server


def pi_requests(server: CaptureServer, cases: list[dict[str, Any]]) -> list[Captured]:
    """What pi-ai sends for each case (``{model, apiKey, headers?, system, text, maxTokens, reasoning?,
    payload?}``), in order: one request per case."""
    before = len(server.requests)
    results = _node("requests", json.dumps({"cases": cases}))
    assert len(results) == len(cases)
    got = server.requests[before:]
    assert len(got) == len(cases), f"pi-ai sent {len(got)} requests for {len(cases)} cases: {results}"
    return got
