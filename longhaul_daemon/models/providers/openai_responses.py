"""OpenAI Responses API: ``POST /responses`` with ``store: false``; text comes from ``output_text`` parts.

``output_text`` as a top-level field exists only in the SDKs, so the reply is read from ``output[]``; a cut
reply is ``status: "incomplete"`` with ``incomplete_details.reason == "max_output_tokens"``. An output schema
goes as ``text.format: {type: "json_schema", name, schema, strict: true}``.

Tools go as ``tools: [{type: "function", name, description, parameters}]``. A call is an output item of type
``function_call`` (``call_id``, ``name``, ``arguments`` as JSON text), read from the final response of a
stream; it goes back as an input item of the same type, and its result as a ``function_call_output`` item.
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

__all__ = ["API", "PROVIDER", "ResponsesStream", "parse", "prepare"]

API = "openai-responses"


def prepare(request: ModelRequest) -> tuple[PreparedCall, str | None]:
    """Build the Responses API call for ``request``, with the reasoning setting it records (or None)."""
    target = request.target
    secret = target.secret()
    headers = merge_headers(
        {"authorization": f"Bearer {secret}" if secret else "", "content-type": "application/json"},
        target.headers,
    )
    body: dict[str, Any] = {
        "model": target.model_id,
        "input": [item for m in request.messages for item in _input_items(m)],
        "max_output_tokens": request.max_output_tokens,
        "store": False,
        "stream": request.stream,
    }
    if request.system:
        body["instructions"] = request.system
    schema = request.schema_to_send
    if schema is not None:
        wire_format = {"type": "json_schema", "name": schema.name, "schema": dict(schema.schema)}
        body["text"] = {"format": {**wire_format, "strict": True}}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            }
            for t in request.tools
        ]
        if request.tool_choice == "none":
            body["tool_choice"] = "none"
    recorded: str | None = None
    if target.reasoning and target.compat.supports_reasoning_effort:
        plan = plan_reasoning(target, request.reasoning)
        if plan.wire == "none":
            body["reasoning"] = {"effort": "none"}
        elif plan.wire is not None:  # as pi-ai asks for a level: with its summary and the encrypted content
            body["reasoning"] = {"effort": plan.wire, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        recorded = plan.recorded
    elif target.reasoning:
        recorded = "default"
    call = PreparedCall(
        url=join_url(target.base_url, "/responses"),
        headers=headers,
        body=body,
        stream=request.stream,
        structured="json_schema" if schema is not None else None,
    )
    return call, recorded


def _input_items(message: Message) -> list[dict[str, Any]]:
    """One turn as input items: results ahead of a user turn's text, calls after an assistant turn's text."""
    items: list[dict[str, Any]] = [
        {"type": "function_call_output", "call_id": r.call_id, "output": r.text} for r in message.tool_results
    ]
    if message.text or not (message.tool_calls or message.tool_results):
        items.append({"role": message.role, "content": message.text})
    items += [
        {"type": "function_call", "call_id": c.id, "name": c.name, "arguments": encode_arguments(c.arguments)}
        for c in message.tool_calls
    ]
    return items


def _calls(response: dict[str, Any]) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for item in response.get("output") or []:
        if (
            isinstance(item, dict)
            and item.get("type") == "function_call"
            and isinstance(item.get("name"), str)
        ):
            call_id = synthetic_id(item.get("call_id"), calls)
            calls.append(ToolCall(call_id, item["name"], decode_arguments(item.get("arguments"))))
    return tuple(calls)


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    cached = int_field(raw, "input_tokens_details", "cached_tokens")
    return Usage(
        input=max(0, int_field(raw, "input_tokens") - cached),
        output=int_field(raw, "output_tokens"),
        cache_read=cached,
        reasoning=int_field(raw, "output_tokens_details", "reasoning_tokens"),
    )


def _text(response: dict[str, Any]) -> str:
    items = [i for i in response.get("output") or [] if isinstance(i, dict) and i.get("type") == "message"]
    return "".join(
        str(part.get("text", ""))
        for item in items
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    )


def _raw_stop(response: dict[str, Any]) -> str | None:
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return reason if isinstance(reason, str) else "incomplete"
    return status if isinstance(status, str) else None


def _result(response: dict[str, Any], text: str | None = None) -> CompletionResult:
    if response.get("status") == "failed":
        raise FatalError(code=error_code_of(response) or "failed")
    raw_stop = _raw_stop(response)
    reply = _text(response) if text is None else text
    return completion(API, reply, raw_stop, _usage(response.get("usage")), _calls(response))


def parse(body: Any, call: PreparedCall | None = None) -> CompletionResult:
    """Read a whole Responses API reply; raise ``FatalError`` for an error or malformed body."""
    data = require_dict(body)
    if isinstance(data.get("error"), dict) and data.get("status") != "failed":
        raise FatalError(code=error_code_of(data))
    if not isinstance(data.get("output"), list):
        raise FatalError(code="malformed_reply")
    return _result(data)


class ResponsesStream:
    """``response.output_text.delta`` events, then ``response.completed``/``incomplete``/``failed``."""

    def __init__(self, call: PreparedCall | None = None) -> None:
        self._parts: list[str] = []
        self._final: dict[str, Any] | None = None

    def feed(self, event: SseEvent) -> str:
        """Fold one stream event in; return the answer text it added."""
        if not event.data or event.data.strip() == "[DONE]":
            return ""
        data = parse_event_json(event)
        kind = data.get("type", event.event)
        if kind == "error":
            raise stream_error(error_code_of(data), got_text=bool(self._parts))
        if kind == "response.output_text.delta" and data.get("delta"):
            self._parts.append(str(data["delta"]))
            return self._parts[-1]
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            response = require_dict(data.get("response"))
            if kind == "response.failed":
                raise stream_error(error_code_of(response), got_text=bool(self._parts))
            self._final = response
        return ""

    def partial(self) -> CompletionResult:
        """The text so far (no usage until the final event), for a stream ended early."""
        return early_result("".join(self._parts), Usage())

    def finish(self) -> CompletionResult:
        """The result read from the final response event; ``StreamError`` when none came."""
        if self._final is None:
            raise StreamError(got_text=bool(self._parts), code="incomplete_stream")
        streamed = "".join(self._parts)
        return _result(self._final, streamed or None)


PROVIDER = Provider(api=API, prepare=prepare, parse=parse, new_stream=ResponsesStream)
