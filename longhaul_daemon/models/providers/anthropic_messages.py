"""Anthropic Messages API: ``POST /v1/messages``, streamed as typed events, including errors after HTTP 200.

No sampling parameters are sent (``anthropic-version`` 2026-10-21 rejects them even at defaults), thinking is
disabled where the model allows it, and ``overloaded_error`` before any text is retried like a 529.

An output schema goes as the one tool offered, forced with ``tool_choice``; the answer then arrives as that
tool call's input (``input_json_delta`` pieces when streamed), which is read as the reply's text. A forced
tool cannot be combined with thinking, so a model that cannot turn thinking off is asked without the schema.

Offered tools go beside it, and ``tool_choice: {type: "any"}`` then lets the model either call one of them or
send the answer; with ``tool_choice`` ``none`` the answer tool is forced again. A ``tool_use`` block of an
offered tool is a call; it goes back as a ``tool_use`` block of the assistant turn, and its result as a
``tool_result`` block opening the next user turn. Without the answer tool (thinking on, or a route that
refused the schema) the offered tools go with ``auto`` or ``none``.
"""

from __future__ import annotations

import json
from typing import Any

from longhaul_daemon.models.call_errors import FatalError, StreamError
from longhaul_daemon.models.completion import CompletionResult, Usage, int_field
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
from longhaul_daemon.models.request import Message, ModelRequest, plan_reasoning
from longhaul_daemon.models.tool_calls import ToolCall, decode_arguments, synthetic_id

__all__ = ["API", "PROVIDER", "AnthropicStream", "parse", "prepare"]

API = "anthropic-messages"


# pi-ai 0.73.1's betas for a key (providers/anthropic.js createClient): interleaved thinking on every model
# but the adaptive-thinking ones, fine-grained tool streaming when tools go to a model that streams no input.
_ADAPTIVE = ("opus-4-6", "opus-4.6", "opus-4-7", "opus-4.7", "sonnet-4-6", "sonnet-4.6")
_INTERLEAVED_BETA = "interleaved-thinking-2025-05-14"
_TOOL_STREAMING_BETA = "fine-grained-tool-streaming-2025-05-14"


def betas(request: ModelRequest) -> str:
    """The ``anthropic-beta`` header pi sends for this request ("" for none)."""
    target = request.target
    chosen: list[str] = []
    if request.tools and target.pi_compat.get("supportsEagerToolInputStreaming") is False:
        chosen.append(_TOOL_STREAMING_BETA)
    if not any(marker in target.model_id for marker in _ADAPTIVE):
        chosen.append(_INTERLEAVED_BETA)
    return ",".join(chosen)


def prepare(request: ModelRequest) -> tuple[PreparedCall, str | None]:
    """Build the Messages API call for ``request``, with the reasoning setting it records (or None)."""
    target = request.target
    headers = merge_headers(
        {
            "x-api-key": target.secret(),
            "anthropic-version": target.compat.anthropic_version,
            "anthropic-beta": betas(request),
            "content-type": "application/json",
            "accept": "text/event-stream" if request.stream else "application/json",
        },
        target.headers,
    )
    body: dict[str, Any] = {
        "model": target.model_id,
        "max_tokens": request.max_output_tokens,
        "messages": [_wire_message(m) for m in request.messages],
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
    answer_tool = schema.name if schema is not None and not thinking else None
    tools: list[dict[str, Any]] = []
    if schema is not None and answer_tool is not None:
        tools.append(
            {
                "name": schema.name,
                "description": schema.description or "Send the answer.",
                "input_schema": dict(schema.schema),
            }
        )
    tools += [
        {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}
        for t in request.tools
    ]
    if tools:
        body["tools"] = tools
        body["tool_choice"] = _tool_choice(request, answer_tool)
    call = PreparedCall(
        url=join_url(target.base_url, "/v1/messages"),
        headers=headers,
        body=body,
        stream=request.stream,
        structured="tool" if answer_tool is not None else None,
        structured_skip="thinking" if schema is not None and thinking else None,
        answer_tool=answer_tool,
    )
    return call, plan.recorded


def _tool_choice(request: ModelRequest, answer_tool: str | None) -> dict[str, Any]:
    """Forced answer tool; or any tool when offered ones may be called too; else auto or none."""
    if answer_tool is not None:
        if request.tools and request.tool_choice == "auto":
            return {"type": "any"}
        return {"type": "tool", "name": answer_tool}
    return {"type": request.tool_choice}


def _wire_message(message: Message) -> dict[str, Any]:
    """One turn: plain text, or blocks when it carries tool calls or tool results."""
    if message.role == "assistant" and message.tool_calls:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
        blocks += [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments)}
            for c in message.tool_calls
        ]
        return {"role": "assistant", "content": blocks}
    if message.role == "user" and message.tool_results:
        blocks = [
            {"type": "tool_result", "tool_use_id": r.call_id, "content": r.text, "is_error": r.is_error}
            for r in message.tool_results
        ]
        if message.text:
            blocks.append({"type": "text", "text": message.text})
        return {"role": "user", "content": blocks}
    return {"role": message.role, "content": message.text}


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


def _is_answer(name: object, call: PreparedCall | None) -> bool:
    """Whether a ``tool_use`` block carries the answer: the answer tool's, or the only tool the call sent."""
    if call is None or call.answer_tool is None:
        return call is None or "tools" not in call.body
    return name == call.answer_tool


def parse(body: Any, call: PreparedCall | None = None) -> CompletionResult:
    """Read a whole Messages API reply; raise ``FatalError`` for an error or malformed body."""
    data = require_dict(body)
    if data.get("type") == "error":
        raise FatalError(code=error_code_of(data))
    content = data.get("content")
    if not isinstance(content, list):
        raise FatalError(code="malformed_reply")
    blocks = [block for block in content if isinstance(block, dict)]
    text = "".join(str(block.get("text", "")) for block in blocks if block.get("type") == "text")
    answers: list[str] = []
    calls: list[ToolCall] = []
    for block in blocks:
        if block.get("type") != "tool_use" or not isinstance(block.get("input"), dict):
            continue
        if _is_answer(block.get("name"), call):  # the forced tool's input is the answer
            answers.append(json.dumps(block["input"], ensure_ascii=False))
        elif isinstance(block.get("name"), str):
            calls.append(ToolCall(synthetic_id(block.get("id"), calls), block["name"], dict(block["input"])))
    text = "\n".join(part for part in (text, *answers) if part)
    raw_stop = data.get("stop_reason") if isinstance(data.get("stop_reason"), str) else None
    return completion(API, text, raw_stop, _usage(data.get("usage")), tuple(calls))


class AnthropicStream:
    """message_start → content_block_delta* → message_delta → message_stop; ``error`` may come anywhere."""

    def __init__(self, call: PreparedCall | None = None) -> None:
        self._call = call
        self._parts: list[str] = []
        self._usage = Usage()
        self._raw_stop: str | None = None
        self._stopped = False
        self._blocks: dict[int, dict[str, Any]] = {}  # offered tools' tool_use blocks: id, name, input

    def feed(self, event: SseEvent) -> str:
        """Fold one stream event in; return the answer text it added."""
        if event.event == "ping" or not event.data:
            return ""
        data = parse_event_json(event)
        kind = data.get("type", event.event)
        if kind == "error" or event.event == "error":
            raise stream_error(error_code_of(data), got_text=bool(self._parts))
        if kind == "message_start":
            message = data.get("message")
            self._usage = _usage(message.get("usage") if isinstance(message, dict) else None, self._usage)
        elif kind == "content_block_start":
            self._start_block(data)
        elif kind == "content_block_delta":
            delta = data.get("delta")
            if isinstance(delta, dict) and delta.get("type") == "text_delta" and delta.get("text"):
                self._parts.append(str(delta.get("text", "")))
                return self._parts[-1]
            tool_input = delta.get("partial_json") if isinstance(delta, dict) else None
            if isinstance(delta, dict) and delta.get("type") == "input_json_delta" and tool_input:
                index = data.get("index")
                block = self._blocks.get(index) if isinstance(index, int) else None
                if block is not None:  # an offered tool's call: its input is not the answer
                    block["input"].append(str(tool_input))
                    return ""
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

    def _start_block(self, data: dict[str, Any]) -> None:
        block = data.get("content_block")
        index = data.get("index")
        if not isinstance(block, dict) or block.get("type") != "tool_use" or not isinstance(index, int):
            return
        if not _is_answer(block.get("name"), self._call) and isinstance(block.get("name"), str):
            self._blocks[index] = {"id": block.get("id"), "name": block["name"], "input": []}

    def _tool_calls(self) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        for _, block in sorted(self._blocks.items()):
            arguments = decode_arguments("".join(block["input"]) or "{}")
            calls.append(ToolCall(synthetic_id(block["id"], calls), block["name"], arguments))
        return tuple(calls)

    def partial(self) -> CompletionResult:
        """The text and usage so far, for a stream ended early."""
        return early_result("".join(self._parts), self._usage)

    def finish(self) -> CompletionResult:
        """The result of a stream that ended; ``StreamError`` when it never said it stopped."""
        if not self._stopped:
            raise StreamError(got_text=bool(self._parts or self._blocks), code="incomplete_stream")
        return completion(API, "".join(self._parts), self._raw_stop, self._usage, self._tool_calls())


PROVIDER = Provider(api=API, prepare=prepare, parse=parse, new_stream=AnthropicStream)
