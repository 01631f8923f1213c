"""Loopback stand-ins for real providers: each mounted at a path prefix, each strict (:mod:`.strict_checks`),
each answering in its API's real streaming wire format.

One server hosts any number of stand-ins. A request under a stand-in's prefix is checked; a refused one gets
the real API's status and error body, an accepted one a streamed answer: pi's own agent turns get ``ACK: …``,
pi's summariser a canned summary, and the daemon's model calls a Diff-shaped answer, as a forced answer tool's
input where the request forced one; who called is decided by the shared harness's rule
(:func:`~longhaul_daemon.evaluation.harness.callers.kind_of`) over each API's system prompt. Every request is
recorded with the stand-in's verdict, so a test can assert that nothing pi would not send arrived.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from longhaul_daemon.evaluation.harness.answers import PI_OWN_MARKER, diff_answer
from longhaul_daemon.evaluation.harness.callers import RequestKind, content_text, kind_of

from .strict_checks import Check, Refusal

__all__ = ["Seen", "StandIn", "StrictServer"]

ANSWER_TOOL = "diff_answer"


@dataclass(frozen=True)
class StandIn:
    """A provider at ``prefix``: its API's wire format and the check it applies."""

    name: str
    api: str  # anthropic-messages, openai-completions, openai-responses, google-generative-ai
    prefix: str
    check: Check
    refuse: Callable[[Mapping[str, str], Mapping[str, Any]], Refusal | None] | None = None  # a test's own
    trailing: int = 0  # characters of prose a text answer to the daemon goes on with (a model that rambles)


@dataclass(frozen=True)
class Seen:
    """One request as a stand-in saw it: headers lower-cased, who it was for, and the verdict."""

    stand_in: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    kind: RequestKind
    refusal: Refusal | None

    @property
    def structured(self) -> bool:
        """Whether the request carries the answer schema in its API's structured-output form."""
        body = self.body
        tools = json.dumps(body.get("tools") or [])
        config = body.get("generationConfig") or {}
        return bool(
            body.get("response_format")
            or (body.get("text") or {}).get("format")
            or config.get("responseSchema")
            or ANSWER_TOOL in tools
        )


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(
            _text(v) for k, v in value.items() if k in ("text", "content", "parts", "input_text")
        )
    return ""


def _system_parts(api: str, body: Mapping[str, Any]) -> list[str]:
    """The request's system prompt, block by block, in its API's own form."""
    if api == "anthropic-messages":
        system = body.get("system")
        return (
            [system] if isinstance(system, str) else [_text(b) for b in system or [] if isinstance(b, dict)]
        )
    if api == "google-generative-ai":
        return [_text(body.get("systemInstruction"))]
    if api == "openai-responses":
        items = [
            i
            for i in body.get("input") or []
            if isinstance(i, dict) and i.get("role") in ("system", "developer")
        ]
        return [_text(body.get("instructions")), *(_text(i.get("content")) for i in items)]
    messages = body.get("messages") or []
    system = [m for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    return [content_text(m.get("content")) for m in system]


def _prompt(api: str, body: Mapping[str, Any]) -> str:
    if api == "google-generative-ai":
        return _text(body.get("contents"))
    if api == "openai-responses":
        return _text(body.get("input"))
    return _text(body.get("messages"))


def _sse(event: str | None, data: Any) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _pieces(text: str) -> list[str]:
    step = max(1, len(text) // 4)
    return [text[i : i + step] for i in range(0, len(text), step)]


def _anthropic(answer: str, forced: str | None, seq: int) -> list[bytes]:
    usage = {"input_tokens": 120, "output_tokens": 1}
    out = [_sse("message_start", {"type": "message_start", "message": {"id": f"msg_{seq}", "usage": usage}})]
    if forced is not None:
        block = {"type": "tool_use", "id": f"toolu_{seq}", "name": forced, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(answer)]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": p} for p in _pieces(answer)]
    out.append(
        _sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
    )
    out += [
        _sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": d}) for d in deltas
    ]
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    stop = "tool_use" if forced is not None else "end_turn"
    delta = {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 40}}
    return [*out, _sse("message_delta", delta), _sse("message_stop", {"type": "message_stop"})]


def _completions(answer: str, model: str, seq: int) -> list[bytes]:
    base = {"id": f"chatcmpl-{seq}", "object": "chat.completion.chunk", "created": 1, "model": model}
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{**base, "choices": [{"index": 0, "delta": {"content": p}}]} for p in _pieces(answer)]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    usage = {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160}
    chunks.append({**base, "choices": [], "usage": usage})
    return [_sse(None, c) for c in chunks] + [b"data: [DONE]\n\n"]


def _responses(answer: str, seq: int) -> list[bytes]:
    rid, mid = f"resp_{seq}", f"msg_{seq}"
    item = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
    part = {"type": "output_text", "text": "", "annotations": []}
    out = [
        _sse(
            "response.created", {"type": "response.created", "response": {"id": rid, "status": "in_progress"}}
        ),
        _sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ),
        _sse(
            "response.content_part.added",
            {"type": "response.content_part.added", "item_id": mid, "part": part},
        ),
    ]
    for piece in _pieces(answer):
        delta = {"type": "response.output_text.delta", "item_id": mid, "output_index": 0, "delta": piece}
        out.append(_sse("response.output_text.delta", delta))
    done = {**item, "status": "completed", "content": [{**part, "text": answer}]}
    out.append(_sse("response.output_item.done", {"type": "response.output_item.done", "item": done}))
    usage = {"input_tokens": 120, "output_tokens": 40, "total_tokens": 160}
    final = {"id": rid, "status": "completed", "output": [done], "usage": usage}
    return [*out, _sse("response.completed", {"type": "response.completed", "response": final})]


def _google(answer: str, seq: int) -> list[bytes]:
    out = []
    for piece in _pieces(answer):
        chunk = {"candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}]}
        out.append(_sse(None, {**chunk, "responseId": f"g-{seq}"}))
    usage = {"promptTokenCount": 120, "candidatesTokenCount": 40, "totalTokenCount": 160}
    last = {"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}]}
    return [*out, _sse(None, {**last, "usageMetadata": usage, "responseId": f"g-{seq}"})]


def _forced_tool(body: Mapping[str, Any]) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool" and isinstance(choice.get("name"), str):
        return str(choice["name"])
    return None


class StrictServer:
    """The stand-ins on one loopback port; use as a context manager."""

    def __init__(self, *stand_ins: StandIn) -> None:
        self.stand_ins = list(stand_ins)
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._seq = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def add(self, stand_in: StandIn) -> None:
        with self._lock:
            self.stand_ins.append(stand_in)

    def requests(self, stand_in: str, kind: str | None = None) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.stand_in == stand_in and (kind is None or s.kind == kind)]

    def refused(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.refusal is not None]

    def __enter__(self) -> StrictServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _route(self, path: str) -> StandIn | None:
        with self._lock:
            return next(
                (s for s in self.stand_ins if path == s.prefix or path.startswith(s.prefix + "/")), None
            )

    def _answer(
        self, stand_in: StandIn, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[Seen, list[bytes]]:
        refusal = stand_in.check(path, headers, body)
        if refusal is None and stand_in.refuse is not None:
            refusal = stand_in.refuse(headers, body)
        kind = kind_of(_system_parts(stand_in.api, body))
        if kind == "other":
            answer = diff_answer(_prompt(stand_in.api, body))
            if stand_in.trailing and _forced_tool(body) is None:
                answer += "\n\nThat is the answer; let me explain it at some length. " * (
                    stand_in.trailing // 50
                )
        elif kind == "pi-summary":
            answer = f"## Goal\n{PI_OWN_MARKER} from a strict stand-in.\n"
        else:
            answer = "ACK: " + _prompt(stand_in.api, body)[-60:].replace("\n", " ")
        seen = Seen(stand_in.name, path, headers, body, kind, refusal)
        with self._lock:
            self.seen.append(seen)
        seq = next(self._seq)
        if refusal is not None:
            return seen, []
        if stand_in.api == "anthropic-messages":
            return seen, _anthropic(answer, _forced_tool(body), seq)
        if stand_in.api == "openai-responses":
            return seen, _responses(answer, seq)
        if stand_in.api == "google-generative-ai":
            return seen, _google(answer, seq)
        return seen, _completions(answer, str(body.get("model")), seq)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                stand_in = server._route(self.path)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = None
                if stand_in is None or not isinstance(body, dict):
                    self._json(
                        404 if stand_in is None else 400,
                        {"error": {"message": "not a request for a stand-in"}},
                    )
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                seen, events = server._answer(stand_in, self.path, headers, body)
                if seen.refusal is not None:
                    self._json(seen.refusal.status, seen.refusal.body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for event in events:
                    self.wfile.write(event)
                    self.wfile.flush()

        return Handler
