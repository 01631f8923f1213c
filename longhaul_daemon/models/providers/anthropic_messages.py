"""Anthropic Messages API: ``POST /v1/messages``, streamed as typed events, including errors after HTTP 200.

No sampling parameters are sent (``anthropic-version`` 2026-10-21 rejects them even at defaults), thinking is
disabled where the model allows it, and ``overloaded_error`` before any text is retried like a 529.

An output schema goes as the one tool offered, forced with ``tool_choice``; the answer then arrives as that
tool call's input (``input_json_delta`` pieces when streamed), which is read as the reply's text. A forced
tool cannot be combined with thinking, so a model that cannot turn thinking off is asked without the schema.
"""

from __future__ import annotations

import json
from typing import Any

from longhaul_daemon.models.errors import FatalError, StreamError
from longhaul_daemon.models.http import PreparedCall, SseEvent
from longhaul_daemon.models.providers.base import (
    Provider,
    completion,
    early_result,
    error_code_of,
    join_url,
    merge_headers,
    parse_event_json,
    require_dict,
    stream_error,
)
from longhaul_daemon.models.request import ModelRequest, plan_reasoning
from longhaul_daemon.models.result import CompletionResult, Usage, int_field

__all__ = ["API", "PROVIDER", "AnthropicStream", "parse", "prepare"]

API = "anthropic-messages"


def prepare(request: ModelRequest) -> tuple[PreparedCall, str | None]:
    target = request.target
    headers = merge_headers(
        {
            "x-api-key": target.secret(),
            "anthropic-version": target.compat.anthropic_version,
            "content-type": "application/json",
            "accept": "text/event-stream" if request.stream else "application/json",
        },
        target.headers,
    )
    body: dict[str, Any] = {
        "model": target.model_id,
        "max_tokens": request.max_output_tokens,
        "messages": [{"role": m.role, "content": m.text} for m in request.messages],
        "stream": request.stream,
    }
    if request.system:
        body["system"] = request.system
    plan = plan_reasoning(target, request.reasoning)
    if plan.wire == "none":
        body["thinking"] = {"type": "disabled"}
    elif plan.wire is not None:
        body["thinking"] = {"type": "adaptive"}
        body["output_config"] = {"effort": plan.wire}
    schema = request.schema_to_send
    thinking = plan.wire not in (None, "none")
    if schema is not None and not thinking:
        body["tools"] = [
            {
                "name": schema.name,
                "description": schema.description or "Send the answer.",
                "input_schema": dict(schema.schema),
            }
        ]
        body["tool_choice"] = {"type": "tool", "name": schema.name}
    call = PreparedCall(
        url=join_url(target.base_url, "/v1/messages"),
        headers=headers,
        body=body,
        stream=request.stream,
        structured="tool" if "tools" in body else None,
        structured_skip="thinking" if schema is not None and thinking else None,
    )
    return call, plan.recorded


def _usage(raw: Any, previous: Usage | None = None) -> Usage:
    """Anthropic reports input in ``message_start`` and cumulative output in ``message_delta``; merge both."""
    base = previous or Usage()
    if not isinstance(raw, dict):
        return base

    def pick(key: str, old: int, *path: str) -> int:
        return int_field(raw, key, *path) if key in raw else old

    details = raw.get("output_tokens_details")
    reasoning = int_field(details, "thinking_tokens") if isinstance(details, dict) else base.reasoning
    return Usage(
        input=pick("input_tokens", base.input),
        output=pick("output_tokens", base.output),
        cache_read=pick("cache_read_input_tokens", base.cache_read),
        cache_write=pick("cache_creation_input_tokens", base.cache_write),
        reasoning=reasoning,
    )


def parse(body: Any) -> CompletionResult:
    data = require_dict(body)
    if data.get("type") == "error":
        raise FatalError(code=error_code_of(data))
    content = data.get("content")
    if not isinstance(content, list):
        raise FatalError(code="malformed_reply")
    blocks = [block for block in content if isinstance(block, dict)]
    text = "".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")
    tools = [  # the forced tool's input is the answer
        json.dumps(block["input"], ensure_ascii=False)
        for block in blocks
        if block.get("type") == "tool_use" and isinstance(block.get("input"), dict)
    ]
    text = "\n".join(part for part in (text, *tools) if part)
    raw_stop = data.get("stop_reason") if isinstance(data.get("stop_reason"), str) else None
    return completion(API, text, raw_stop, _usage(data.get("usage")))


class AnthropicStream:
    """message_start → content_block_delta* → message_delta → message_stop; ``error`` may come anywhere."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._usage = Usage()
        self._raw_stop: str | None = None
        self._stopped = False

    def feed(self, event: SseEvent) -> str:
        if event.event == "ping" or not event.data:
            return ""
        data = parse_event_json(event)
        kind = data.get("type", event.event)
        if kind == "error" or event.event == "error":
            raise stream_error(error_code_of(data), got_text=bool(self._parts))
        if kind == "message_start":
            message = data.get("message")
            self._usage = _usage(message.get("usage") if isinstance(message, dict) else None, self._usage)
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("type") == "text_delta" and delta.get("text"):
                self._parts.append(str(delta.get("text", "")))
                return self._parts[-1]
            tool_input = delta.get("partial_json") if isinstance(delta, dict) else None
            if isinstance(delta, dict) and delta.get("type") == "input_json_delta" and tool_input:
                self._parts.append(str(tool_input))  # the forced tool's input, piece by piece
                return self._parts[-1]
        elif kind == "message_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self._raw_stop = delta["stop_reason"]
            self._usage = _usage(data.get("usage"), self._usage)
        elif kind == "message_stop":
            self._stopped = True
        return ""

    def partial(self) -> CompletionResult:
        return early_result("".join(self._parts), self._usage)

    def finish(self) -> CompletionResult:
        if not self._stopped:
            raise StreamError(got_text=bool(self._parts), code="incomplete_stream")
        return completion(API, "".join(self._parts), self._raw_stop, self._usage)


PROVIDER = Provider(api=API, prepare=prepare, parse=parse, new_stream=AnthropicStream)
