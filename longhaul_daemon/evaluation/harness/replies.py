"""One scripted reply of the model, and how it goes out on OpenAI's chat-completions wire.

pi always streams (pi-api.md §6), so a reply is sent as SSE the way OpenAI streams: the role and reasoning
(``reasoning_content``, which pi keeps as a thinking block) first, then the text, then each tool call as a
``delta.tool_calls`` head with its id and name followed by its arguments, a finish chunk, a usage chunk
(pi asks for it with ``stream_options.include_usage``) and ``[DONE]``. A request without ``stream`` gets the
whole completion as one JSON body. A reply may instead be an HTTP error with the provider's error body.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = [
    "Reply",
    "ToolCall",
    "Usage",
    "cut_off",
    "delayed",
    "error_body",
    "http_error",
    "stream_chunks",
    "text",
    "tool_call",
    "whole_completion",
    "with_reasoning",
]


@dataclass(frozen=True)
class ToolCall:
    """One call the model makes; ``id`` is filled in by the server when the script leaves it out."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class Reply:
    """One assistant turn: text, reasoning and tool calls, or an HTTP error status."""

    content: str = ""
    calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""
    finish_reason: str | None = None  # overrides "stop"/"tool_calls"; "length" = cut at the output limit
    status: int | None = None  # an HTTP error status instead of a completion
    headers: tuple[tuple[str, str], ...] = ()  # extra headers of an error (e.g. ``retry-after-ms``)
    error_code: str | None = None  # ``error.code`` in an error's body
    error_message: str | None = None  # ``error.message`` there (default: "scripted HTTP <status>")
    delay_s: float = 0.0  # wait this long before answering (cut short when the server closes)

    @property
    def finish(self) -> str:
        """The finish reason to send: the scripted one, else ``tool_calls`` or ``stop``."""
        return self.finish_reason or ("tool_calls" if self.calls else "stop")

    def output_chars(self) -> int:
        """The characters the reply produces, for its token estimate."""
        return len(self.content) + len(self.reasoning) + sum(len(json.dumps(c.arguments)) for c in self.calls)


def text(content: str) -> Reply:
    """A plain text answer."""
    return Reply(content=content)


def tool_call(name: str, **arguments: Any) -> Reply:
    """One tool call, e.g. ``tool_call("bash", command="echo ok")``."""
    return Reply(calls=(ToolCall(name, arguments),))


def with_reasoning(reasoning: str, reply: Reply) -> Reply:
    """``reply`` preceded by reasoning, which pi records as a thinking block."""
    return replace(reply, reasoning=reasoning)


def cut_off(content: str) -> Reply:
    """A text reply that stops with ``finish_reason: "length"``, as when the output budget ran out."""
    return Reply(content=content, finish_reason="length")


def http_error(
    status: int, *, code: str | None = None, headers: dict[str, str] | None = None, message: str | None = None
) -> Reply:
    """An HTTP error answer (``{"error": {...}}``) instead of a completion, e.g. 500 or 429."""
    return Reply(
        status=status, error_code=code, error_message=message, headers=tuple((headers or {}).items())
    )


def delayed(seconds: float, reply: Reply) -> Reply:
    """``reply``, sent only after ``seconds`` (a slow model); the wait ends early when the server closes."""
    return replace(reply, delay_s=seconds)


def error_body(reply: Reply) -> dict[str, Any]:
    """The JSON body of a scripted HTTP error, shaped like a provider's."""
    status = reply.status or 500
    message = reply.error_message or f"scripted HTTP {status}"
    return {"error": {"message": message, "type": "server_error", "code": reply.error_code}}


@dataclass(frozen=True)
class Usage:
    """Token counts a scripted reply reports."""

    prompt_tokens: int
    completion_tokens: int

    def wire(self) -> dict[str, int]:
        """The counts as an OpenAI ``usage`` object."""
        total = self.prompt_tokens + self.completion_tokens
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": total,
        }


def _pieces(value: str, step: int | None, parts: int) -> list[str]:
    if not value:
        return []
    size = step or max(1, -(-len(value) // parts))
    return [value[at : at + size] for at in range(0, len(value), size)]


def _head(seq: int, model: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{seq}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }


def stream_chunks(
    reply: Reply, *, seq: int, model: str, usage: Usage, step: int | None = None
) -> list[dict[str, Any]]:
    """The SSE chunk objects of ``reply`` (``[DONE]`` is the caller's); ``step`` characters a delta when
    pacing, else reasoning in two pieces and text in three."""
    deltas: list[dict[str, Any]] = [{"reasoning_content": p} for p in _pieces(reply.reasoning, step, 2)]
    deltas += [{"content": p} for p in _pieces(reply.content, step, 3)]
    for index, call in enumerate(reply.calls):
        arguments = json.dumps(call.arguments)
        head = {
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        deltas.append({"content": None, "tool_calls": [head]})
        deltas += [
            {"tool_calls": [{"index": index, "function": {"arguments": p}}]}
            for p in _pieces(arguments, step, 2)
        ]
    deltas = deltas or [{"content": ""}]
    deltas[0] = {"role": "assistant", **deltas[0]}
    base = _head(seq, model)
    chunks = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": reply.finish}]})
    chunks.append({**base, "choices": [], "usage": usage.wire()})
    return chunks


def whole_completion(reply: Reply, *, seq: int, model: str, usage: Usage) -> dict[str, Any]:
    """The non-streaming body of ``reply``."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content if not reply.calls else reply.content or None,
    }
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in reply.calls
        ]
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    base = {**_head(seq, model), "object": "chat.completion"}
    return {
        **base,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish}],
        "usage": usage.wire(),
    }
