"""A scripted OpenAI-compatible chat-completions server on loopback, so e2e tests control what the model says.

pi talks to it through a custom ``openai-completions`` provider; the Longhaul daemon may call it too (the
session's own model). Every request is classified and recorded so tests can assert what was sent:

* ``pi-summary``: pi's own summariser (system prompt contains "context summarization assistant"). It gets a
  canned ``## Goal`` summary holding :data:`PI_OWN_MARKER`, numbered so no two are equal.
* ``agent``: pi's agent loop (pi's system prompt, or pi's built-in tools attached). It takes the next
  scripted reply from the queue, else a default: a tool result gets ``TOOL-SEEN: …``, else ``ACK: …``.
* ``other``: anything else, i.e. the daemon's own model call. It gets a JSON answer in the shape of the
  Diff answer schema, labelling every ``u<n>`` it finds in the prompt as ``not a rule``, unless a test set
  :meth:`ModelServer.on_daemon_call` (see ``diff_script.py``), whose replies may also be an HTTP error status
  (:func:`http_error`), a reply cut at the output limit (:func:`cut_off`) or a delayed one (:func:`delayed`).

``[[tokens=N]]`` in the last user message makes the usage report ``prompt_tokens=N`` (drives pi's threshold
auto-compaction). Streaming answers use the real SSE framing: role/content deltas, tool calls as
``delta.tool_calls``, a finish chunk, a usage chunk (pi sends ``stream_options.include_usage``), ``[DONE]``.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

__all__ = [
    "PI_OWN_MARKER",
    "PI_SUMMARY_SYSTEM_MARKER",
    "ModelServer",
    "RecordedRequest",
    "Reply",
    "RequestKind",
    "cut_off",
    "delayed",
    "http_error",
    "text",
    "tool_call",
    "with_reasoning",
]

PI_SUMMARY_SYSTEM_MARKER = "context summarization assistant"
PI_OWN_MARKER = "PI-OWN-SUMMARY"
_PI_AGENT_SYSTEM_MARKER = "operating inside pi"
_TOKENS_RE = re.compile(r"\[\[tokens=(\d+)\]\]")
_USER_ID_RE = re.compile(r"\bu(\d+)\b")

RequestKind = Literal["agent", "pi-summary", "other"]


@dataclass(frozen=True)
class Reply:
    """One scripted assistant turn: either text, or one tool call (name + JSON arguments)."""

    content: str | None = None
    tool: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    call_id: str | None = None  # filled in by the server, unique per server
    reasoning: str | None = None  # streamed first as ``reasoning_content`` deltas (pi makes a thinking block)
    finish_reason: str | None = None  # overrides "stop"/"tool_calls"; "length" = cut at the output limit
    status: int | None = None  # an HTTP error status instead of a completion
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers (e.g. ``retry-after-ms``)
    error_code: str | None = None  # ``error.code`` in the error body of a ``status`` reply
    error_message: str | None = None  # ``error.message`` there (default: "scripted HTTP <status>")
    delay_s: float = 0.0  # wait this long before answering (cut short when the server closes)


def text(content: str) -> Reply:
    """A plain text answer."""
    return Reply(content=content)


def tool_call(name: str, **arguments: Any) -> Reply:
    """A tool call, e.g. ``tool_call("bash", command="echo ok")``."""
    return Reply(tool=name, arguments=arguments)


def with_reasoning(reasoning: str, reply: Reply) -> Reply:
    """``reply`` preceded by reasoning, e.g. ``with_reasoning("THOUGHT", text("answer"))``."""
    return replace(reply, reasoning=reasoning)


def cut_off(content: str) -> Reply:
    """A text reply that stops with ``finish_reason: "length"``, as when the output budget ran out."""
    return Reply(content=content, finish_reason="length")


def http_error(
    status: int, *, code: str | None = None, headers: dict[str, str] | None = None, message: str | None = None
) -> Reply:
    """An HTTP error answer (``{"error": {...}}`` body) instead of a completion, e.g. 500 or 429."""
    return Reply(
        status=status, error_code=code, error_message=message, headers=tuple((headers or {}).items())
    )


def delayed(seconds: float, reply: Reply) -> Reply:
    """``reply``, sent only after ``seconds`` (a slow model); the wait ends early when the server closes."""
    return replace(reply, delay_s=seconds)


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
    user_agent: str | None = None  # which HTTP client sent it: pi's OpenAI JS SDK, or the daemon's httpx

    @property
    def messages(self) -> list[dict[str, Any]]:
        msgs = self.body.get("messages")
        return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []

    def texts(self, role: str | None = None) -> list[str]:
        """The text of every message (optionally only those with ``role``)."""
        return [
            content_text(m.get("content")) for m in self.messages if role is None or m.get("role") == role
        ]

    def all_text(self) -> str:
        return "\n".join(self.texts())


def content_text(content: object) -> str:
    """Text of an OpenAI message ``content`` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


def classify(body: dict[str, Any]) -> RequestKind:
    msgs = body.get("messages") if isinstance(body.get("messages"), list) else []
    system = " ".join(
        content_text(m.get("content"))
        for m in msgs or []
        if isinstance(m, dict) and m.get("role") in ("system", "developer")
    )
    if PI_SUMMARY_SYSTEM_MARKER in system:
        return "pi-summary"
    if _PI_AGENT_SYSTEM_MARKER in system or {"bash", "read"} <= _tool_names(body):
        return "agent"
    return "other"


def _tool_names(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return set()
    names = set()
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names


def diff_answer(prompt: str) -> str:
    """A Diff-schema answer for the daemon's model call: every u<n> in the prompt labelled ``not a rule``."""
    ids = sorted({int(m.group(1)) for m in _USER_ID_RE.finditer(prompt)})
    answer = {
        "labels": [{"msg": f"u{n}", "label": "not a rule"} for n in ids],
        "decisions": [],
        "deadEnds": [],
        "narrative": "E2E scripted narrative for this span.",
        "now": "E2E scripted now.",
    }
    return json.dumps(answer)


class ModelServer:
    """The server plus its script: :meth:`start` (or use as a context manager), then :meth:`close`."""

    def __init__(self, *, model_id: str = "fake-model") -> None:
        self.model_id = model_id
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self._rules: list[tuple[Callable[[dict[str, Any]], bool], Reply]] = []
        self._requests: list[RecordedRequest] = []
        self._seq = itertools.count(1)
        self._call_ids = itertools.count(1)
        self._summaries = itertools.count(1)
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._daemon_hook: Callable[[dict[str, Any]], Reply | None] | None = None
        self.closing = threading.Event()  # set by close(): delayed replies stop waiting

    # ---- script ---------------------------------------------------------------------------------------
    def enqueue(self, *replies: Reply) -> None:
        """Replies for the next agent requests, in order (consumed one per request)."""
        with self._lock:
            self._queue.extend(replies)

    def add_rule(self, predicate: Callable[[dict[str, Any]], bool], reply: Reply) -> None:
        """A standing reply for agent requests whose body matches ``predicate`` (checked before the queue)."""
        with self._lock:
            self._rules.append((predicate, reply))

    def on_daemon_call(self, hook: Callable[[dict[str, Any]], Reply | None] | None) -> None:
        """Answer the daemon's calls (kind ``other``) with ``hook(body)``; None falls back to the default."""
        with self._lock:
            self._daemon_hook = hook

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # ---- records --------------------------------------------------------------------------------------
    def requests(self, kind: RequestKind | None = None) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._requests if kind is None or r.kind == kind]

    # ---- lifecycle ------------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ModelServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="e2e-model-server", daemon=True
        )
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

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- decisions ------------------------------------------------------------------------------------
    def _decide(self, body: dict[str, Any], kind: RequestKind) -> Reply:
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last = msgs[-1] if msgs else {}
        if kind == "pi-summary":
            n = next(self._summaries)
            return text(
                f"## Goal\n{PI_OWN_MARKER} #{n}: canned summary from the e2e model server.\n\n"
                "## Progress\n### Done\n- [x] scripted\n"
            )
        if kind == "other":
            with self._lock:
                hook = self._daemon_hook
            scripted = hook(body) if hook is not None else None
            if scripted is not None:
                return scripted
            return text(diff_answer("\n".join(content_text(m.get("content")) for m in msgs)))
        with self._lock:
            for predicate, reply in self._rules:
                if predicate(body):
                    return reply
            if self._queue:
                return self._queue.popleft()
        last_text = content_text(last.get("content")).replace("\n", " ")
        if last.get("role") == "tool":
            return text("TOOL-SEEN: " + last_text[:80])
        return text("ACK: " + last_text[:60])

    def _handle(
        self, path: str, body: dict[str, Any], authorization: str | None, user_agent: str | None = None
    ) -> RecordedRequest:
        kind = classify(body)
        reply = self._decide(body, kind)
        if reply.tool is not None:
            reply = replace(reply, call_id=f"call_e2e_{next(self._call_ids)}")
        msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        last = msgs[-1] if msgs else {}
        match = _TOKENS_RE.search(content_text(last.get("content"))) if last.get("role") == "user" else None
        prompt_tokens = int(match.group(1)) if match else max(1, len(json.dumps(body)) // 4)
        record = RecordedRequest(
            seq=next(self._seq),
            path=path,
            kind=kind,
            body=body,
            authorization=authorization,
            reply=reply,
            prompt_tokens=prompt_tokens,
            user_agent=user_agent,
        )
        with self._lock:
            self._requests.append(record)
        return record


def _chunks(record: RecordedRequest, model: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The SSE chunk objects (without the final [DONE]) and the non-streaming response body."""
    reply = record.reply
    usage = {
        "prompt_tokens": record.prompt_tokens,
        "completion_tokens": 9,
        "total_tokens": record.prompt_tokens + 9,
    }
    base = {
        "id": f"chatcmpl-e2e-{record.seq}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    if reply.tool is not None:
        call_id = reply.call_id or "call_e2e"
        args = json.dumps(reply.arguments)
        split = len(args) // 2
        deltas: list[dict[str, Any]] = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": reply.tool, "arguments": ""},
                    }
                ],
            },
            {"tool_calls": [{"index": 0, "function": {"arguments": args[:split]}}]},
            {"tool_calls": [{"index": 0, "function": {"arguments": args[split:]}}]},
        ]
        finish = "tool_calls"
        message: dict[str, Any] = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": reply.tool, "arguments": args}}
            ],
        }
    else:
        body_text = reply.content or ""
        third = max(1, len(body_text) // 3)
        parts = [body_text[:third], body_text[third : 2 * third], body_text[2 * third :]]
        deltas = [{"role": "assistant", "content": parts[0]}] + [{"content": p} for p in parts[1:] if p]
        finish = "stop"
        message = {"role": "assistant", "content": body_text}
    if reply.finish_reason is not None:
        finish = reply.finish_reason
    if reply.reasoning:
        half = max(1, len(reply.reasoning) // 2)
        pieces = [reply.reasoning[:half], reply.reasoning[half:]]
        deltas = [{"role": "assistant", "reasoning_content": p} for p in pieces if p] + deltas
        message["reasoning_content"] = reply.reasoning
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({**base, "choices": [], "usage": usage})
    whole = {
        **base,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }
    return chunks, whole


def _make_handler(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            return

        def _send_json(self, code: int, obj: object) -> None:
            data = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_error(self, reply: Reply) -> None:
            status = reply.status or 500
            message = reply.error_message or f"scripted HTTP {status}"
            error = {"message": message, "type": "server_error", "code": reply.error_code}
            data = json.dumps({"error": error}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in reply.headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": [{"id": server.model_id, "object": "model"}]})
            else:
                self._send_json(404, {"error": {"message": "not found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send_json(400, {"error": {"message": "body is not JSON"}})
                return
            if not isinstance(body, dict) or not self.path.rstrip("/").endswith("/chat/completions"):
                self._send_json(404, {"error": {"message": f"unknown path {self.path}"}})
                return
            record = server._handle(
                self.path, body, self.headers.get("Authorization"), self.headers.get("User-Agent")
            )
            if record.reply.delay_s > 0:
                server.closing.wait(record.reply.delay_s)
            if record.reply.status is not None:
                self._send_error(record.reply)
                return
            model = str(body.get("model") or server.model_id)
            chunks, whole = _chunks(record, model)
            if not body.get("stream"):
                self._send_json(200, whole)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            for chunk in chunks:
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

    return Handler
