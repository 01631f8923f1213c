"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, answering pi and the daemon.

pi reaches it through a custom ``openai-completions`` provider; the daemon calls it as the session's model,
itself or through pi. Each request is told apart by :func:`~.callers.classify` and answered:

* pi's agent loop: a standing rule whose predicate matches, else the next queued reply, else
  :func:`~.answers.agent_answer` (counted in :attr:`ModelServer.unscripted`);
* pi's summarizer: ``pi_summary(body)`` when given, else a numbered canned summary;
* the daemon (kind ``other``): ``longhaul(body)`` when given and it answers, else
  :func:`~.answers.daemon_answer` (REPLAY-4's fixed answer, or a turn's passing section).

``[[tokens=N]]`` in the last user message makes the usage say ``prompt_tokens=N`` (pi's threshold
compaction reads it); otherwise tokens are characters / 4, in and out. A :class:`Speed` makes pi's summarizer
and the daemon's calls take as long as a real model would. Requests are recorded (with ``keep_requests``)
and counted by kind.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler
from typing import Any

from longhaul_daemon.evaluation.harness.answers import agent_answer, daemon_answer, pi_summary
from longhaul_daemon.evaluation.harness.callers import RequestKind, chat_messages, classify, content_text
from longhaul_daemon.evaluation.harness.loopback_http import LoopbackHttp
from longhaul_daemon.evaluation.harness.replies import (
    Reply,
    Usage,
    error_body,
    stream_chunks,
    text,
    whole_completion,
)

__all__ = ["DaemonAnswer", "KindStats", "ModelServer", "RecordedRequest", "Speed", "SummaryAnswer", "tokens"]

DaemonAnswer = Callable[[dict[str, Any]], "str | Reply | None"]  # None: the default answer
SummaryAnswer = Callable[[dict[str, Any]], str]
_TOKENS = re.compile(r"\[\[tokens=(\d+)\]\]")
_PACED_CHARS = 16  # characters a delta when a speed is set


@dataclass(frozen=True)
class Speed:
    """Simulated model speed: tokens a second read and written."""

    input_tps: float
    output_tps: float


@dataclass
class KindStats:
    """Totals for one request kind: calls, estimated tokens and seconds spent."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


def tokens(chars: int) -> int:
    """A token estimate for ``chars`` characters (four to a token, rounded up)."""
    return -(-chars // 4)


@dataclass(frozen=True)
class RecordedRequest:
    """A request as the server saw it, with the reply it chose."""

    seq: int
    path: str
    kind: RequestKind
    body: dict[str, Any]
    authorization: str | None
    reply: Reply
    prompt_tokens: int
    user_agent: str | None = None  # which client sent it: pi's OpenAI JS SDK, or the daemon's httpx

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's chat messages, whatever wire format it came in."""
        return chat_messages(self.body)

    def texts(self, role: str | None = None) -> list[str]:
        """The text of every message (optionally only those with ``role``)."""
        return [
            content_text(m.get("content")) for m in self.messages if role is None or m.get("role") == role
        ]

    def all_text(self) -> str:
        """Every message's text in one string, for a test to search."""
        return "\n".join(self.texts())


def _prompt_tokens(body: dict[str, Any]) -> int:
    messages = chat_messages(body)
    last = messages[-1] if messages else {}
    marked = _TOKENS.search(content_text(last.get("content"))) if last.get("role") == "user" else None
    if marked:
        return int(marked.group(1))
    return max(1, tokens(sum(len(content_text(m.get("content"))) for m in messages)))


class ModelServer:
    """The server and its script: :meth:`start` (or ``with``), then :meth:`close`."""

    def __init__(
        self,
        *,
        model_id: str = "fake-model",
        pi_summary: SummaryAnswer | None = None,
        longhaul: DaemonAnswer | None = None,
        speed: Speed | None = None,
        keep_requests: bool = True,
    ) -> None:
        self.model_id = model_id
        self.speed = speed
        self.keep_requests = keep_requests
        self.unscripted = 0  # agent requests answered by the default: nothing was queued for them
        self.closing = threading.Event()  # set by close(): delayed and paced replies stop waiting
        self._pi_summary = pi_summary
        self._longhaul = longhaul
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._rules: list[tuple[Callable[[dict[str, Any]], bool], Reply]] = []
        self._requests: list[RecordedRequest] = []
        self._stats: dict[str, KindStats] = {}
        self._seq = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._summaries = itertools.count(1)
        self._http = LoopbackHttp(_handler(self), name="model-server")

    # ---- the script -------------------------------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        """Replies for the next agent requests, in order (one per request)."""
        with self._lock:
            self._queue.extend(replies)

    def add_rule(self, predicate: Callable[[dict[str, Any]], bool], reply: Reply) -> None:
        """A standing reply for agent requests whose body matches ``predicate`` (before the queue)."""
        with self._lock:
            self._rules.append((predicate, reply))

    def on_daemon_call(self, hook: DaemonAnswer | None) -> None:
        """Answer the daemon's calls with ``hook(body)``; a None from it leaves the default answer."""
        with self._lock:
            self._longhaul = hook

    def pending(self) -> int:
        """How many scripted replies are still queued."""
        with self._lock:
            return len(self._queue)

    def drop_pending(self) -> int:
        """Forget the queued replies no request took; how many there were."""
        with self._lock:
            left = len(self._queue)
            self._queue.clear()
            return left

    # ---- what was asked ---------------------------------------------------------------------------------
    def requests(self, kind: RequestKind | None = None) -> list[RecordedRequest]:
        """The requests received so far, optionally only those of one kind."""
        with self._lock:
            return [r for r in self._requests if kind is None or r.kind == kind]

    def stats(self) -> dict[str, KindStats]:
        """Calls, tokens and seconds by kind of caller."""
        with self._lock:
            return {k: replace(v) for k, v in self._stats.items()}

    # ---- lifecycle --------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The port the server listens on."""
        return self._http.port

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL a provider config points at."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ModelServer:
        """Start serving; returns the server so it can be chained."""
        self._http.start()
        return self

    def close(self) -> None:
        """Stop serving; delayed and paced replies stop waiting."""
        self.closing.set()
        self._http.close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- answering --------------------------------------------------------------------------------------
    def _decide(self, body: dict[str, Any], kind: RequestKind) -> Reply:
        if kind == "pi-summary":
            if self._pi_summary is not None:
                return text(self._pi_summary(body))
            return text(pi_summary(next(self._summaries)))
        if kind == "other":
            with self._lock:
                hook = self._longhaul
            scripted = hook(body) if hook is not None else None
            if scripted is None:
                return text(daemon_answer(body))
            return text(scripted) if isinstance(scripted, str) else scripted
        with self._lock:
            for predicate, reply in self._rules:
                if predicate(body):
                    return reply
            if self._queue:
                return self._queue.popleft()
            self.unscripted += 1
        return text(agent_answer(body))

    def _record(self, path: str, body: dict[str, Any], headers: Any) -> RecordedRequest:
        kind = classify(body)
        reply = self._decide(body, kind)
        if any(call.id is None for call in reply.calls):
            calls = tuple(
                c if c.id else replace(c, id=f"call_fake_{next(self._call_ids)}") for c in reply.calls
            )
            reply = replace(reply, calls=calls)
        record = RecordedRequest(
            seq=next(self._seq),
            path=path,
            kind=kind,
            body=body if self.keep_requests else {},
            authorization=headers.get("Authorization"),
            reply=reply,
            prompt_tokens=_prompt_tokens(body),
            user_agent=headers.get("User-Agent"),
        )
        if self.keep_requests:
            with self._lock:
                self._requests.append(record)
        return record

    def _count(self, kind: RequestKind, usage: Usage, seconds: float) -> None:
        with self._lock:
            stats = self._stats.setdefault(kind, KindStats())
            stats.calls += 1
            stats.input_tokens += usage.prompt_tokens
            stats.output_tokens += usage.completion_tokens
            stats.seconds += seconds


def _handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # nothing about the requests is printed

        def _json(self, code: int, document: object, headers: Sequence[tuple[str, str]] = ()) -> None:
            data = json.dumps(document).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": server.model_id, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            started = time.monotonic()
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(404, {"error": {"message": "not a chat completions path"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict):
                self._json(400, {"error": {"message": "the body is not a JSON object"}})
                return
            record = server._record(self.path, body, self.headers)
            reply = record.reply
            if reply.delay_s > 0:
                server.closing.wait(reply.delay_s)
            if reply.status is not None:
                self._json(reply.status, error_body(reply), reply.headers)
                return
            usage = Usage(record.prompt_tokens, tokens(reply.output_chars()))
            speed = server.speed if record.kind != "agent" else None
            if speed is not None:
                server.closing.wait(usage.prompt_tokens / speed.input_tps)
            model = str(body.get("model") or server.model_id)
            if body.get("stream"):
                self._stream(reply, record.seq, model, usage, speed)
            else:
                self._json(200, whole_completion(reply, seq=record.seq, model=model, usage=usage))
            server._count(record.kind, usage, time.monotonic() - started)

        def _stream(self, reply: Reply, seq: int, model: str, usage: Usage, speed: Speed | None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            step = _PACED_CHARS if speed is not None else None
            for chunk in stream_chunks(reply, seq=seq, model=model, usage=usage, step=step):
                if speed is not None and chunk["choices"]:
                    delta = chunk["choices"][0]["delta"]
                    chars = len(str(delta.get("content") or delta.get("reasoning_content") or ""))
                    server.closing.wait(tokens(chars) / speed.output_tps)
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler
