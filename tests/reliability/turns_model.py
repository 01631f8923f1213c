"""A turns-mode model for the reliability runs: answers each section, or plays one hostile behaviour.

It speaks Chat Completions as the real API streams it (SSE content deltas, ``delta.tool_calls``, a finish
chunk, a usage chunk, ``[DONE]``) on 127.0.0.1. Which section a request asks for is read from its
structured-output schema (``<section>_section``), the offered labels from that schema's ``enum``; a good
answer is built from them, so a conversation the model plays straight closes whole. A :data:`Behaviour`
decides per request what goes back instead: crafted ``show`` calls, a loop of calls, a 5 MB argument, 300
calls in one reply, the API key the request carried echoed into ids, names and arguments, errors, a 429
asking for an hour, a stream that hangs or never ends. Every request is kept, with the key it carried.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Ask", "Behaviour", "Kept", "Reply", "TurnsModel", "good_answer", "turns_model"]


@dataclass(frozen=True)
class Ask:
    """What one request asks: its section, the labels it offers, whether a tool call is allowed, whether it
    answers tool results (else it opens a turn), and the key it was sent with."""

    section: str
    label_ids: tuple[str, ...]
    open_errors: tuple[str, ...]
    tools_allowed: bool
    after_tools: bool
    key: str
    number: int  # requests to this model so far, this one included


@dataclass(frozen=True)
class Reply:
    """What to send back: text and calls streamed, an error status, or a stream that hangs or never ends."""

    text: str = ""
    calls: tuple[tuple[str, str, str], ...] = ()  # (id, name, arguments as sent: any text)
    status: int = 200
    error_body: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    hang: bool = False
    endless: bool = False


Behaviour = Callable[[Ask, random.Random], Reply]


@dataclass(frozen=True)
class Kept:
    """One request as received: the key in its Authorization header and its body as text."""

    key: str
    body: str


def good_answer(ask: Ask) -> Reply:
    """A passing answer of the asked section."""
    answers: dict[str, Any] = {
        "narrative": {"narrative": "Read the logs and ran the tests.", "excuses": []},
        "objective": {"objective": None},
        "labels": {"labels": [{"msg": uid, "label": "not a rule", "words": None} for uid in ask.label_ids]},
        "decisions": {
            "decisions": [],
            "deadEnds": [],
            "openErrors": list(ask.open_errors),
            "fixed": [],
            "excuses": [],
        },
        "now": {"now": "Keep the tests green.", "excuses": []},
    }
    return Reply(text=json.dumps(answers.get(ask.section, {})))


def _ask(body: dict[str, Any], key: str, number: int) -> Ask:
    schema = ((body.get("response_format") or {}).get("json_schema") or {}) if isinstance(body, dict) else {}
    name = str(schema.get("name") or "")
    properties = (schema.get("schema") or {}).get("properties") or {}
    labels = (((properties.get("labels") or {}).get("items") or {}).get("properties") or {}).get("msg") or {}
    errors = ((properties.get("openErrors") or {}).get("items") or {}).get("enum") or []
    messages = body.get("messages") or []
    return Ask(
        section=name.removesuffix("_section"),
        label_ids=tuple(labels.get("enum") or ()),
        open_errors=tuple(errors),
        tools_allowed=body.get("tool_choice") != "none",
        after_tools=bool(messages) and messages[-1].get("role") == "tool",
        key=key,
        number=number,
    )


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice: dict[str, Any] = {"index": 0, "delta": delta}
    if finish is not None:
        choice["finish_reason"] = finish
    data = {"id": "chatcmpl-t", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    return b"data: " + json.dumps(data).encode() + b"\n\n"


def _events(reply: Reply) -> bytes:
    parts = [_chunk({"role": "assistant", "content": reply.text})]
    if reply.calls:
        calls = [
            {
                "index": n,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            for n, (call_id, name, arguments) in enumerate(reply.calls)
        ]
        parts.append(_chunk({"tool_calls": calls}))
    parts.append(_chunk({}, "tool_calls" if reply.calls else "stop"))
    usage = {"id": "u", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": 9}}
    parts.append(b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n")
    return b"".join(parts)


@dataclass
class TurnsModel:
    """The running server: its base URL, the behaviour in force and every request kept."""

    base_url: str
    behaviour: Behaviour
    kept: list[Kept] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _rng: random.Random = field(default_factory=random.Random)

    def play(self, behaviour: Behaviour, seed: int) -> None:
        """Answer every later request with ``behaviour``; forget the requests kept so far."""
        with self._lock:
            self.behaviour, self.kept, self._rng = behaviour, [], random.Random(seed)

    def decide(self, body: dict[str, Any], key: str, raw: str) -> Reply:
        with self._lock:
            self.kept.append(Kept(key, raw))
            ask = _ask(body, key, len(self.kept))
            return self.behaviour(ask, self._rng)


def _handler(model: TurnsModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0)).decode("utf-8", "replace")
            key = (self.headers.get("authorization") or "").removeprefix("Bearer ")
            try:
                body = json.loads(raw)
            except ValueError:
                body = {}
            reply = model.decide(body if isinstance(body, dict) else {}, key, raw)
            if reply.status != 200:
                data = reply.error_body.encode()
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            if reply.hang or reply.endless:
                self.send_header("connection", "close")
                self.end_headers()
                self._hold(reply)
                return
            data = _events(reply)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _hold(self, reply: Reply) -> None:
            """A stream that never finishes: one delta, then nothing (``hang``) or deltas without end."""
            piece = _chunk({"role": "assistant", "content": '{"narr'})
            try:
                self.wfile.write(piece)
                self.wfile.flush()
                while not model.stop.is_set():
                    if reply.endless:
                        self.wfile.write(_chunk({"content": "ative ative ative " * 50}))
                        self.wfile.flush()
                    else:
                        time.sleep(0.05)
            except OSError:
                return  # the daemon went away: what a hanging or endless stream is for

    return Handler


@contextmanager
def turns_model() -> Iterator[TurnsModel]:
    """Serve on 127.0.0.1 until the block ends; the model plays straight until told otherwise."""
    model = TurnsModel(base_url="", behaviour=_straight)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield model
    finally:
        model.stop.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _straight(ask: Ask, _rng: random.Random) -> Reply:
    return good_answer(ask)
