"""OpenAI Chat Completions, also spoken by most OpenAI-compatible servers (llama.cpp, vLLM, Ollama ``/v1``).

Per-model ``Compat`` flags decide ``max_completion_tokens`` vs ``max_tokens``, whether ``reasoning_effort``
and ``stream_options.include_usage`` are sent, and the system role; usage fields are all optional. An output
schema goes as ``response_format: {type: "json_schema", json_schema: {name, schema, strict: true}}``, the form
OpenAI, llama.cpp, vLLM and Ollama all read.
"""

from __future__ import annotations

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

__all__ = ["API", "PROVIDER", "CompletionsStream", "parse", "prepare", "usage_of"]

API = "openai-completions"


def prepare(request: ModelRequest) -> tuple[PreparedCall, str | None]:
    target = request.target
    compat = target.compat
    secret = target.secret()
    headers = merge_headers(
        {"authorization": f"Bearer {secret}" if secret else "", "content-type": "application/json"},
        target.headers,
    )
    messages: list[dict[str, str]] = []
    if request.system:
        messages.append(
            {"role": "developer" if compat.supports_developer_role else "system", "content": request.system}
        )
    messages.extend({"role": m.role, "content": m.text} for m in request.messages)
    body: dict[str, Any] = {
        "model": target.model_id,
        "messages": messages,
        compat.max_tokens_field: request.max_output_tokens,
        "stream": request.stream,
    }
    if request.stream and compat.supports_usage_in_streaming:
        body["stream_options"] = {"include_usage": True}
    schema = request.schema_to_send
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema.name, "schema": dict(schema.schema), "strict": True},
        }
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


def parse(body: Any) -> CompletionResult:
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
    return completion(API, content if isinstance(content, str) else "", raw_stop, usage_of(data.get("usage")))


class CompletionsStream:
    """``data:`` chunks with ``choices[0].delta``, a usage-only chunk when asked, then ``data: [DONE]``."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._usage = Usage()
        self._raw_stop: str | None = None
        self._done = False

    def feed(self, event: SseEvent) -> str:
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
        if isinstance(delta, dict) and isinstance(delta.get("content"), str) and delta["content"]:
            self._parts.append(delta["content"])
            return str(delta["content"])
        return ""

    def partial(self) -> CompletionResult:
        return early_result("".join(self._parts), self._usage)

    def finish(self) -> CompletionResult:
        if not self._done and self._raw_stop is None:
            raise StreamError(got_text=bool(self._parts), code="incomplete_stream")
        return completion(API, "".join(self._parts), self._raw_stop, self._usage)


PROVIDER = Provider(api=API, prepare=prepare, parse=parse, new_stream=CompletionsStream)
