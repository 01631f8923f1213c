"""A recording pass-through between the scored model and everyone who calls it, for ``score``'s accounting.

pi does not report what its own summarizer call cost (the usage is dropped inside its compaction code), and
Longhaul's compaction line has only a total. To count both compactors the same way, ``score`` points the
scored model's ``baseUrl`` at this proxy on 127.0.0.1: every call of pi's summarizer and of the daemon goes
through it unchanged, bytes streamed as they arrive, while the proxy reads the usage the provider reports
(OpenAI chat and responses, Anthropic messages, Google generative AI all put it in a JSON ``usage`` or
``usageMetadata``) and times the call. A path prefix tags each replay, so calls are attributed to the
compactor and run that made them. Request bodies and credentials pass through and are never stored.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from longhaul_daemon.evaluation.harness.loopback_http import LoopbackHttp

__all__ = ["CallRecord", "RecordingProxy", "usage_of"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",
        "content-encoding",
    }
)
_INPUT_KEYS = ("prompt_tokens", "input_tokens", "promptTokenCount")
_OUTPUT_KEYS = ("completion_tokens", "output_tokens", "candidatesTokenCount")
_TIMEOUT = httpx.Timeout(900.0, connect=30.0)


@dataclass
class CallRecord:
    """One forwarded model call: HTTP status, tokens the provider reported, seconds taken."""

    status: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


def _walk(value: object) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for inner in value.values():
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def usage_of(document: object, record: CallRecord) -> None:
    """Fold the usage a provider reported in one JSON document (a stream event or a whole body) into
    ``record``: providers report running totals, so the largest figure seen is the call's."""
    for obj in _walk(document):
        for key in _INPUT_KEYS:
            if type(obj.get(key)) is int:
                record.input_tokens = max(record.input_tokens, obj[key])
        for key in _OUTPUT_KEYS:
            if type(obj.get(key)) is int:
                record.output_tokens = max(record.output_tokens, obj[key])


class _UsageScanner:
    """Reads usage out of a response as it streams: SSE ``data:`` lines, or a whole JSON body at the end."""

    def __init__(self, record: CallRecord) -> None:
        self.record = record
        self._pending = b""
        self._body = bytearray()

    def feed(self, chunk: bytes) -> None:
        self._body += chunk if len(self._body) < 4_000_000 else b""
        self._pending += chunk
        *lines, self._pending = self._pending.split(b"\n")
        for line in lines:
            self._line(line)

    def _line(self, line: bytes) -> None:
        text = line.strip()
        if text.startswith(b"data:"):
            text = text[5:].strip()
        if text.startswith(b"{"):
            try:
                usage_of(json.loads(text), self.record)
            except ValueError:
                return

    def close(self) -> None:
        self._line(self._pending)
        try:
            usage_of(json.loads(bytes(self._body)), self.record)
        except ValueError:
            return  # a stream, already read line by line


@dataclass
class RecordingProxy:
    """``start()``, then :meth:`base_url` per tag; :meth:`calls` gives what each tag's calls cost."""

    upstream: str
    _calls: dict[str, list[CallRecord]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _http: LoopbackHttp | None = None
    _client: httpx.Client | None = None

    def base_url(self, tag: str) -> str:
        """The base URL whose calls are recorded under ``tag``."""
        if self._http is None:
            raise RuntimeError("proxy not started")
        return f"http://127.0.0.1:{self._http.port}/{tag}"

    def calls(self, tag: str) -> list[CallRecord]:
        """The calls recorded under ``tag`` so far."""
        with self._lock:
            return list(self._calls.get(tag, []))

    def add(self, tag: str, record: CallRecord) -> None:
        """Record one call under ``tag``."""
        with self._lock:
            self._calls.setdefault(tag, []).append(record)

    def start(self) -> RecordingProxy:
        """Start forwarding on a free loopback port; returns the proxy so it can be chained."""
        self._client = httpx.Client(timeout=_TIMEOUT)
        self._http = LoopbackHttp(_handler(self, self._client), name="score-proxy")
        self._http.start()
        return self

    def close(self) -> None:
        """Stop forwarding and close the upstream client."""
        if self._http is not None:
            self._http.close()
            self._http = None
        if self._client is not None:
            self._client.close()  # after the server: no handler is still forwarding through it
            self._client = None

    def __enter__(self) -> RecordingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(proxy: RecordingProxy, client: httpx.Client) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.0"  # the response ends when the connection closes: any stream fits

        def log_message(self, format: str, *args: Any) -> None:
            return  # nothing about the calls is printed

        def _forward(self) -> None:
            tag, _, rest = self.path.lstrip("/").partition("/")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            headers["Accept-Encoding"] = "identity"  # usage is read from the bytes as they pass
            record = CallRecord()
            scanner = _UsageScanner(record)
            started = time.monotonic()
            url = proxy.upstream.rstrip("/") + "/" + rest
            try:
                with client.stream(self.command, url, headers=headers, content=body) as response:
                    record.status = response.status_code
                    self.send_response(response.status_code)
                    for name, value in response.headers.items():
                        if name.lower() not in _HOP_BY_HOP:
                            self.send_header(name, value)
                    self.end_headers()
                    for chunk in response.iter_raw():
                        scanner.feed(chunk)
                        self.wfile.write(chunk)
                        self.wfile.flush()
            except (httpx.HTTPError, OSError):
                if not record.status:
                    record.status = 502
                    self.send_error(502, "upstream unreachable")
            finally:
                scanner.close()
                record.seconds = time.monotonic() - started
                if self.command == "POST":
                    proxy.add(tag, record)

        def do_POST(self) -> None:
            self._forward()

        def do_GET(self) -> None:
            self._forward()

    return Handler
