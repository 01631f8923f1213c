"""OpenAI Chat Completions, also spoken by most OpenAI-compatible servers (llama.cpp, vLLM, Ollama ``/v1``).

Per-model ``Compat`` flags decide ``max_completion_tokens`` vs ``max_tokens``, whether ``reasoning_effort``
and ``stream_options.include_usage`` are sent, and the system role; usage fields are all optional. An output
schema goes as ``response_format: {type: "json_schema", json_schema: {name, schema, strict: true}}``, the form
OpenAI, llama.cpp, vLLM and Ollama all read.

Tools go as ``tools: [{type: "function", function: {name, description, parameters}}]``; a call comes back in
``message.tool_calls`` (streamed as ``delta.tool_calls`` pieces keyed by ``index``, the arguments a JSON text
in pieces), is sent back in the assistant message's ``tool_calls``, and its result as a ``tool`` message.
"""

from __future__ import annotations

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
from longhaul_daemon.models.tool_calls import ToolCall, decode_arguments, encode_arguments, synthetic_id

__all__ = ["API", "PROVIDER", "CompletionsStream", "parse", "prepare", "usage_of"]

API = "openai-completions"


def prepare(request: ModelRequest) -> tuple[PreparedCall, str | None]:
    """Build the Chat Completions call for ``request``, with the reasoning setting it records (or None)."""
    target = request.target
    compat = target.compat
    secret = target.secret()
    headers = merge_headers(
        {"authorization": f"Bearer {secret}" if secret else "", "content-type": "application/json"},
        target.headers,
    )
    messages: list[dict[str, Any]] = []
    if request.system:
        developer = target.reasoning and compat.supports_developer_role  # pi-ai's rule (convertMessages)
        messages.append({"role": "developer" if developer else "system", "content": request.system})
    for message in request.messages:
        messages.extend(_wire_messages(message))
    body: dict[str, Any] = {
        "model": target.model_id,
        "messages": messages,
        compat.max_tokens_field: request.max_output_tokens,
        "stream": request.stream,
    }
    if request.stream and compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    if compat.supports_store:
        body["store"] = False
    schema = request.schema_to_send
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.name, "schema": dict(schema.schema), "strict": True},
        }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": dict(t.parameters)},
            }
            for t in request.tools
        ]
        if request.tool_choice == "none":
            body["tool_choice"] = "none"
    recorded: str | None = None
    if target.reasoning:
        if compat.supports_reasoning_effort:
            plan = plan_reasoning(target, request.reasoning)
            if plan.wire is not None:
                body["reasoning_effort"] = plan.wire
            recorded = plan.recorded
        else:
            recorded = "default"  # the model reasons and we cannot say how much: record that
    url = join_url(target.base_url, "/chat/completions")
    structured = "json_schema" if schema is not None else None
    call = PreparedCall(url=url, headers=headers, body=body, stream=request.stream, structured=structured)
    return call, recorded


def _wire_messages(message: Message) -> list[dict[str, Any]]:
    """One turn as Chat Completions messages: each tool result its own ``tool`` message, ahead of the text."""
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.text}
        if message.tool_calls:
            wire["content"] = message.text or None
            wire["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": encode_arguments(call.arguments)},
                }
                for call in message.tool_calls
            ]
        return [wire]
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": result.call_id, "content": result.text}
        for result in message.tool_results
    ]
    if message.text or not message.tool_results:
        out.append({"role": "user", "content": message.text})
    return out


def _calls(raw: object) -> tuple[ToolCall, ...]:
    """A message's ``tool_calls`` (whole reply) as calls; items of the wrong shape are skipped."""
    calls: list[ToolCall] = []
    for item in raw if isinstance(raw, list) else []:
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        call_id = synthetic_id(item.get("id"), calls)
        calls.append(ToolCall(call_id, function["name"], decode_arguments(function.get("arguments"))))
    return tuple(calls)


def usage_of(raw: Any) -> Usage:
    """``prompt_tokens`` includes cached tokens; ``input`` here does not."""
    if not isinstance(raw, dict):
        return Usage()
    cached = int_field(raw, "prompt_tokens_details", "cached_tokens")
    return Usage(
        input=max(0, int_field(raw, "prompt_tokens") - cached),
        output=int_field(raw, "completion_tokens"),
        cache_read=cached,
        reasoning=int_field(raw, "completion_tokens_details", "reasoning_tokens"),
    )


def parse(body: Any, call: PreparedCall | None = None) -> CompletionResult:
    """Read a whole Chat Completions reply; raise ``FatalError`` for an error or malformed body."""
    data = require_dict(body)
    if "error" in data:
        raise FatalError(code=error_code_of(data))
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise FatalError(code="malformed_reply")
    message = choices[0].get("message")
    content = message.get("content") if isinstance(message, dict) else None
    raw_stop = choices[0].get("finish_reason")
    raw_stop = raw_stop if isinstance(raw_stop, str) else None
    calls = _calls(message.get("tool_calls")) if isinstance(message, dict) else ()
    text = content if isinstance(content, str) else ""
    return completion(API, text, raw_stop, usage_of(data.get("usage")), calls)


class CompletionsStream:
    """``data:`` chunks with ``choices[0].delta``, a usage-only chunk when asked, then ``data: [DONE]``."""

    def __init__(self, call: PreparedCall | None = None) -> None:
        self._parts: list[str] = []
        self._usage = Usage()
        self._raw_stop: str | None = None
        self._done = False
        self._calls: dict[int, dict[str, Any]] = {}  # delta.tool_calls by index: id, name, argument pieces

    def feed(self, event: SseEvent) -> str:
        """Fold one stream chunk in (``[DONE]`` ends it); return the answer text it added."""
        if not event.data:
            return ""
        if event.data.strip() == "[DONE]":
            self._done = True
            return ""
        data = parse_event_json(event)
        if "error" in data or event.event == "error":
            raise stream_error(error_code_of(data), got_text=bool(self._parts))
        if isinstance(data.get("usage"), dict):
            self._usage = usage_of(data["usage"])
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            return ""
        if isinstance(choices[0].get("finish_reason"), str):
            self._raw_stop = choices[0]["finish_reason"]
        delta = choices[0].get("delta")
        if isinstance(delta, dict) and isinstance(delta.get("tool_calls"), list):
            self._call_pieces(delta["tool_calls"])
        if isinstance(delta, dict) and isinstance(delta.get("content"), str) and delta["content"]:
            self._parts.append(delta["content"])
            return str(delta["content"])
        return ""

    def _call_pieces(self, pieces: list[Any]) -> None:
        for piece in pieces:
            if not isinstance(piece, dict):
                continue
            index = piece.get("index")
            slot = self._calls.setdefault(index if isinstance(index, int) else len(self._calls), {"args": []})
            if isinstance(piece.get("id"), str):
                slot["id"] = piece["id"]
            function = piece.get("function")
            if isinstance(function, dict):
                if isinstance(function.get("name"), str) and function["name"]:
                    slot["name"] = function["name"]
                if isinstance(function.get("arguments"), str):
                    slot["args"].append(function["arguments"])

    def _tool_calls(self) -> tuple[ToolCall, ...]:
        calls: list[ToolCall] = []
        for _, slot in sorted(self._calls.items()):
            if isinstance(slot.get("name"), str):
                arguments = decode_arguments("".join(slot["args"]))
                calls.append(ToolCall(synthetic_id(slot.get("id"), calls), slot["name"], arguments))
        return tuple(calls)

    def partial(self) -> CompletionResult:
        """The text and usage so far, for a stream ended early."""
        return early_result("".join(self._parts), self._usage)

    def finish(self) -> CompletionResult:
        """The result of a stream that ended; ``StreamError`` without ``[DONE]`` or a finish reason."""
        if not self._done and self._raw_stop is None:
            raise StreamError(got_text=bool(self._parts or self._calls), code="incomplete_stream")
        return completion(API, "".join(self._parts), self._raw_stop, self._usage, self._tool_calls())


PROVIDER = Provider(api=API, prepare=prepare, parse=parse, new_stream=CompletionsStream)
