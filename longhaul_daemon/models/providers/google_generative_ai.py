"""Google Gemini ``generateContent`` / ``streamGenerateContent?alt=sse`` with ``x-goog-api-key``.

Thought parts (``thought: true``) are skipped; ``thoughtsTokenCount`` is added to output usage because Gemini
bills it as output. Every stream chunk is a whole ``GenerateContentResponse``. An output schema goes as
``generationConfig.responseSchema`` in Gemini's OpenAPI dialect, with ``responseMimeType: application/json``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

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
from longhaul_daemon.models.structured import gemini_schema

__all__ = ["API", "PROVIDER", "GoogleStream", "parse", "prepare"]

API = "google-generative-ai"
# Gemini 2.5 takes a token budget; 0 turns thinking off where the model allows it (not on 2.5 Pro).
_THINKING_BUDGETS = {"none": 0, "minimal": 128, "low": 1024, "medium": 8192, "high": 24576}


def prepare(request: ModelRequest) -> tuple[PreparedCall, str | None]:
    target = request.target
    headers = merge_headers(
        {"x-goog-api-key": target.secret(), "content-type": "application/json"},
        target.headers,
    )
    config: dict[str, Any] = {"maxOutputTokens": request.max_output_tokens}
    plan = plan_reasoning(target, request.reasoning)
    if plan.wire is not None and target.compat.google_thinking == "level":
        config["thinkingConfig"] = {"thinkingLevel": plan.wire.upper(), "includeThoughts": False}
    elif plan.wire is not None:
        budget = _THINKING_BUDGETS.get(plan.wire, _THINKING_BUDGETS["low"])
        config["thinkingConfig"] = {"thinkingBudget": budget, "includeThoughts": False}
    schema = request.schema_to_send
    if schema is not None:
        config["responseMimeType"] = "application/json"
        config["responseSchema"] = gemini_schema(schema.schema)
    body: dict[str, Any] = {
        "contents": [
            {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.text}]}
            for m in request.messages
        ],
        "generationConfig": config,
    }
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    model = quote(target.model_id.removeprefix("models/"), safe="-._~")
    path = (
        f"/models/{model}:streamGenerateContent?alt=sse"
        if request.stream
        else f"/models/{model}:generateContent"
    )
    call = PreparedCall(
        url=join_url(target.base_url, path),
        headers=headers,
        body=body,
        stream=request.stream,
        structured="response_schema" if schema is not None else None,
    )
    return call, plan.recorded


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    cached = int_field(raw, "cachedContentTokenCount")
    thoughts = int_field(raw, "thoughtsTokenCount")
    return Usage(
        input=max(0, int_field(raw, "promptTokenCount") - cached),
        output=int_field(raw, "candidatesTokenCount") + thoughts,
        cache_read=cached,
        reasoning=thoughts,
    )


def _chunk(data: dict[str, Any]) -> tuple[str, str | None]:
    """The visible text and finish reason of one response (or stream chunk)."""
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        feedback = data.get("promptFeedback")
        blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
        return "", ("SAFETY" if isinstance(blocked, str) else None)
    candidate = candidates[0]
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    text = "".join(
        str(part.get("text", ""))
        for part in parts or []
        if isinstance(part, dict) and not part.get("thought") and isinstance(part.get("text"), str)
    )
    reason = candidate.get("finishReason")
    return text, reason if isinstance(reason, str) else None


def parse(body: Any) -> CompletionResult:
    data = require_dict(body)
    if "error" in data:
        raise FatalError(code=error_code_of(data))
    text, raw_stop = _chunk(data)
    return completion(API, text, raw_stop, _usage(data.get("usageMetadata")))


class GoogleStream:
    """Each ``data:`` is a partial response; the last one carries ``finishReason`` and the final usage."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._usage = Usage()
        self._raw_stop: str | None = None

    def feed(self, event: SseEvent) -> str:
        if not event.data:
            return ""
        data = parse_event_json(event)
        if "error" in data:
            raise stream_error(error_code_of(data), got_text=bool(self._parts))
        text, raw_stop = _chunk(data)
        if text:
            self._parts.append(text)
        if raw_stop is not None:
            self._raw_stop = raw_stop
        if isinstance(data.get("usageMetadata"), dict):
            self._usage = _usage(data["usageMetadata"])
        return text

    def partial(self) -> CompletionResult:
        return early_result("".join(self._parts), self._usage)

    def finish(self) -> CompletionResult:
        if self._raw_stop is None:
            raise StreamError(got_text=bool(self._parts), code="incomplete_stream")
        return completion(API, "".join(self._parts), self._raw_stop, self._usage)


PROVIDER = Provider(api=API, prepare=prepare, parse=parse, new_stream=GoogleStream)
