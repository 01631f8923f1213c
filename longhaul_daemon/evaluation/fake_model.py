"""A model on loopback speaking OpenAI chat completions the way pi expects, for replay, score and the bench.

pi always streams (pi-api.md §6), so answers go out as SSE: role and content deltas, ``reasoning_content``
for thinking, ``delta.tool_calls`` for tool calls, a finish chunk, a usage chunk and ``[DONE]``. Requests are
told apart by who sent them (REPLAY-4, REPLAY-5):

* ``agent`` (pi's agent loop: its system prompt, or its tools attached) gets the next recorded assistant
  message the replay queued for the current prompt;
* ``pi-summary`` (pi's summarizer system prompt) gets ``pi_summary(body)``, by default a short unique text;
* ``longhaul`` (anything else: the daemon's Diff) gets ``longhaul(body)``, by default REPLAY-4's fixed valid
  answer labelling every offered message ``not a rule``.

A :class:`Speed` makes the two summarizer kinds take as long as a real model would: input tokens at one rate
before the first byte, output tokens streamed at another. Token counts are characters / 4, for both kinds
alike. The server binds 127.0.0.1 only.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from longhaul_daemon.evaluation.script import RecordedReply

__all__ = [
    "PI_SUMMARY_MARKER",
    "Answerer",
    "FakeModel",
    "KindStats",
    "RequestKind",
    "Speed",
    "classify",
    "content_text",
    "fixed_diff_answer",
    "tokens",
]

PI_SUMMARY_MARKER = "context summarization assistant"  # in pi's SUMMARIZATION_SYSTEM_PROMPT
_PI_AGENT_MARKER = "operating inside pi"  # in pi's agent system prompt
_LABEL_LIST = re.compile(r"^Label exactly these messages: (.*)\.$", re.M)
_CHUNK_CHARS = 16  # characters per streamed delta when a speed is set

RequestKind = Literal["agent", "pi-summary", "longhaul"]
Answerer = Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Speed:
    """Simulated model speed: tokens per second read and written."""

    input_tps: float
    output_tps: float


@dataclass
class KindStats:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0


def tokens(chars: int) -> int:
    return -(-chars // 4)


def content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    raw = body.get("messages")
    return [m for m in raw if isinstance(m, dict)] if isinstance(raw, list) else []


def classify(body: dict[str, Any]) -> RequestKind:
    system = " ".join(
        content_text(m.get("content")) for m in _messages(body) if m.get("role") in ("system", "developer")
    )
    if PI_SUMMARY_MARKER in system:
        return "pi-summary"
    if _PI_AGENT_MARKER in system or body.get("tools"):
        return "agent"
    return "longhaul"


def fixed_diff_answer(body: dict[str, Any]) -> str:
    """REPLAY-4: every message the prompt asks about labeled ``not a rule``; nothing else claimed."""
    prompt = "\n".join(content_text(m.get("content")) for m in _messages(body) if m.get("role") == "user")
    asked = _LABEL_LIST.findall(prompt)
    ids = re.findall(r"u\d+", asked[-1]) if asked else []
    answer = {
        "labels": [{"msg": i, "label": "not a rule"} for i in ids],
        "decisions": [],
        "deadEnds": [],
        "narrative": "Replayed span.",
        "now": "Continue the replayed session.",
    }
    return json.dumps(answer)


@dataclass
class _Answer:
    text: str = ""
    reasoning: str = ""
    calls: tuple[tuple[str, str, str], ...] = ()  # (id, name, JSON arguments)
    finish: str = "stop"
    status: int | None = None  # an HTTP error instead of a completion


def _from_reply(reply: RecordedReply) -> _Answer:
    if reply.stop == "error":
        return _Answer(status=500)
    calls = tuple((c.id, c.name, json.dumps(dict(c.arguments), ensure_ascii=False)) for c in reply.calls)
    finish = "tool_calls" if calls else ("length" if reply.stop == "length" else "stop")
    return _Answer(text=reply.text, reasoning=reply.thinking, calls=calls, finish=finish)


@dataclass
class FakeModel:
    """The server and its script; :meth:`start`, then :meth:`close` (or use it as a context manager)."""

    model_id: str = "replay"
    pi_summary: Answerer | None = None
    longhaul: Answerer | None = None
    speed: Speed | None = None
    divergences: int = 0  # agent requests the recording had no answer for
    _queue: deque[RecordedReply] = field(default_factory=deque)
    _stats: dict[str, KindStats] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _summaries: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _httpd: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    closing: threading.Event = field(default_factory=threading.Event)

    def script(self, replies: Sequence[RecordedReply]) -> None:
        """The recorded assistant messages of the next prompt, in order (the last prompt's leftovers go)."""
        with self._lock:
            self._queue = deque(replies)

    def leftover(self) -> int:
        with self._lock:
            return len(self._queue)

    def stats(self) -> dict[str, KindStats]:
        with self._lock:
            return {k: KindStats(**vars(v)) for k, v in self._stats.items()}

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeModel:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-model", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def decide(self, body: dict[str, Any]) -> tuple[RequestKind, _Answer]:
        kind = classify(body)
        if kind == "pi-summary":
            if self.pi_summary is not None:
                return kind, _Answer(text=self.pi_summary(body))
            n = next(self._summaries)
            return kind, _Answer(text=f"## Goal\nReplay summary {n}.\n\n## Next Steps\n1. Continue.")
        if kind == "longhaul":
            return kind, _Answer(text=(self.longhaul or fixed_diff_answer)(body))
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
            if reply is None:
                self.divergences += 1
        if reply is None:
            return kind, _Answer(text="(replay: the recording has no answer here)")
        return kind, _from_reply(reply)

    def record(self, kind: RequestKind, input_tokens: int, output_tokens: int, seconds: float) -> None:
        with self._lock:
            stats = self._stats.setdefault(kind, KindStats())
            stats.calls += 1
            stats.input_tokens += input_tokens
            stats.output_tokens += output_tokens
            stats.seconds += seconds


def _input_tokens(body: dict[str, Any]) -> int:
    return tokens(sum(len(content_text(m.get("content"))) for m in _messages(body)))


def _deltas(answer: _Answer, paced: bool) -> list[dict[str, Any]]:
    step = _CHUNK_CHARS if paced else max(1, len(answer.text) // 3 or 1)
    deltas: list[dict[str, Any]] = [
        {"role": "assistant", "reasoning_content": answer.reasoning[at : at + step]}
        for at in range(0, len(answer.reasoning), step)
    ]
    deltas += [
        {"role": "assistant", "content": answer.text[at : at + step]}
        for at in range(0, len(answer.text), step)
    ]
    for index, (call_id, name, arguments) in enumerate(answer.calls):
        head = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        deltas.append({"role": "assistant", "tool_calls": [head]})
        deltas.append({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})
    return deltas or [{"role": "assistant", "content": ""}]


def _handler(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return  # a replay prints counts only

        def _json(self, code: int, document: object) -> None:
            data = json.dumps(document).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [{"id": model.model_id, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            started = time.monotonic()
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if not isinstance(body, dict) or not self.path.rstrip("/").endswith("/chat/completions"):
                self._json(400, {"error": {"message": "not a chat completions request"}})
                return
            kind, answer = model.decide(body)
            if answer.status is not None:
                self._json(answer.status, {"error": {"message": "recorded error", "type": "server_error"}})
                return
            input_tokens = _input_tokens(body)
            output_tokens = tokens(
                len(answer.text) + len(answer.reasoning) + sum(len(c[2]) for c in answer.calls)
            )
            paced = model.speed is not None and kind != "agent"
            if paced and model.speed is not None:
                model.closing.wait(input_tokens / model.speed.input_tps)
            self._stream(body, answer, input_tokens, output_tokens, paced)
            model.record(kind, input_tokens, output_tokens, time.monotonic() - started)

        def _stream(self, body: dict[str, Any], answer: _Answer, n_in: int, n_out: int, paced: bool) -> None:
            base = {"id": "chatcmpl-replay", "object": "chat.completion.chunk", "created": int(time.time())}
            base["model"] = str(body.get("model") or model.model_id)
            usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
            if not body.get("stream"):
                message: dict[str, Any] = {"role": "assistant", "content": answer.text}
                self._json(
                    200,
                    {
                        **base,
                        "object": "chat.completion",
                        "usage": usage,
                        "choices": [{"index": 0, "message": message, "finish_reason": answer.finish}],
                    },
                )
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            speed = model.speed
            for delta in _deltas(answer, paced):
                if paced and speed is not None:
                    chars = len(str(delta.get("content") or delta.get("reasoning_content") or ""))
                    model.closing.wait(tokens(chars) / speed.output_tps)
                self._event({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            self._event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": answer.finish}]})
            self._event({**base, "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _event(self, chunk: dict[str, Any]) -> None:
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()

    return Handler
