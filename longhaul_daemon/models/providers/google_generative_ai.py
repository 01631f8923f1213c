"""Google Gemini ``generateContent`` / ``streamGenerateContent?alt=sse`` with ``x-goog-api-key``.

Thought parts (``thought: true``) are skipped; ``thoughtsTokenCount`` is added to output usage because Gemini
bills it as output. Every stream chunk is a whole ``GenerateContentResponse``. An output schema goes as
``generationConfig.responseSchema`` in Gemini's OpenAPI dialect, with ``responseMimeType: application/json``.

Gemini refuses a JSON response type together with function calling, so when tools are offered the schema
goes as one more function, the answer function, and ``toolConfig.functionCallingConfig`` mode ``ANY`` makes
the model call either an offered tool or that one (only that one when ``tool_choice`` is ``none``); the
answer function's ``args`` are the reply's text. A ``functionCall`` part of an offered tool is a call; it is
sent back in the model turn with its ``thoughtSignature``, and its result as a ``functionResponse`` part
(``{output}`` or ``{error}``) opening the next user turn. Calls and responses pair by name and order, as
pi's own Gemini provider sends them: no call id goes back.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

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
from longhaul_daemon.models.structured import gemini_schema
from longhaul_daemon.models.tool_calls import ToolCall, decode_arguments, synthetic_id

__all__ = ["API", "PROVIDER", "GoogleStream", "parse", "prepare"]

API = "google-generative-ai"
# Thinking as pi-ai 0.73.1 sets it (providers/google.js): off is a zero budget; a level is a thinkingLevel on
# Gemini 3 Pro/Flash and Gemma 4, else a token budget by model family, with thought summaries asked for.
_LEVEL_MODELS = re.compile(r"gemini-3(?:\.\d+)?-(?:pro|flash)|gemma-?4")
_PRO_LEVELS = {"minimal": "LOW", "low": "LOW", "medium": "HIGH", "high": "HIGH"}
_GEMMA_LEVELS = {"minimal": "MINIMAL", "low": "MINIMAL", "medium": "HIGH", "high": "HIGH"}
_BUDGETS = (
    ("2.5-pro", {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}),
    ("2.5-flash-lite", {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}),
    ("2.5-flash", {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}),
)


def thinking_config(model_id: str, wire: str) -> dict[str, Any]:
    """``thinkingConfig`` for a planned reasoning level (``none`` = off), exactly as pi-ai builds it."""
    if wire == "none":
        return {"thinkingBudget": 0}
    lowered = model_id.lower()
    if _LEVEL_MODELS.search(lowered):
        if re.search(r"gemini-3(?:\.\d+)?-pro", lowered):
            level = _PRO_LEVELS.get(wire, wire.upper())
        elif re.search(r"gemma-?4", lowered):
            level = _GEMMA_LEVELS.get(wire, wire.upper())
        else:
            level = wire.upper()
        return {"includeThoughts": True, "thinkingLevel": level}
    budget = next((b.get(wire, -1) for family, b in _BUDGETS if family in model_id), -1)
    return {"includeThoughts": True, "thinkingBudget": budget}


def prepare(request: ModelRequest) -> tuple[PreparedCall, str | None]:
    """Build the Gemini call for ``request``, with the reasoning setting it records (or None)."""
    target = request.target
    headers = merge_headers(
        {"x-goog-api-key": target.secret(), "content-type": "application/json"},
        target.headers,
    )
    config: dict[str, Any] = {"maxOutputTokens": request.max_output_tokens}
    plan = plan_reasoning(target, request.reasoning)
    if plan.wire is not None:
        config["thinkingConfig"] = thinking_config(target.model_id, plan.wire)
    schema = request.schema_to_send
    answer_tool = schema.name if schema is not None and request.tools else None
    if schema is not None and answer_tool is None:
        config["responseMimeType"] = "application/json"
        config["responseSchema"] = gemini_schema(schema.schema)
    body: dict[str, Any] = {
        "contents": [_content(m) for m in request.messages],
        "generationConfig": config,
    }
    if request.tools:
        declarations = [
            {"name": t.name, "description": t.description, "parameters": gemini_schema(t.parameters)}
            for t in request.tools
        ]
        calling: dict[str, Any] = {"mode": "NONE" if request.tool_choice == "none" else "AUTO"}
        if schema is not None and answer_tool is not None:
            answer = {"name": answer_tool, "description": schema.description or "Send the answer."}
            declarations.insert(0, {**answer, "parameters": gemini_schema(schema.schema)})
            calling = {"mode": "ANY"}
            if request.tool_choice == "none":
                calling["allowedFunctionNames"] = [answer_tool]
        body["tools"] = [{"functionDeclarations": declarations}]
        body["toolConfig"] = {"functionCallingConfig": calling}
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
        structured=("function" if answer_tool else "response_schema") if schema is not None else None,
        answer_tool=answer_tool,
    )
    return call, plan.recorded


def _content(message: Message) -> dict[str, Any]:
    """One turn: function responses ahead of a user turn's text, calls after a model turn's text."""
    parts: list[dict[str, Any]] = []
    for result in message.tool_results:
        response = {"error": result.text} if result.is_error else {"output": result.text}
        parts.append({"functionResponse": {"name": result.name, "response": response}})
    if message.text or not (message.tool_calls or message.tool_results):
        parts.append({"text": message.text})
    for call in message.tool_calls:
        part: dict[str, Any] = {"functionCall": {"name": call.name, "args": dict(call.arguments)}}
        if call.signature:
            part["thoughtSignature"] = call.signature
        parts.append(part)
    return {"role": "model" if message.role == "assistant" else "user", "parts": parts}


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


def _chunk(data: dict[str, Any], call: PreparedCall | None, calls: list[ToolCall]) -> tuple[str, str | None]:
    """The visible text and finish reason of one response (or stream chunk); its calls join ``calls``.

    The answer function's arguments are text: the reply's answer, written as JSON."""
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        feedback = data.get("promptFeedback")
        blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
        return "", ("SAFETY" if isinstance(blocked, str) else None)
    candidate = candidates[0]
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    pieces: list[str] = []
    for part in parts or []:
        if not isinstance(part, dict) or part.get("thought"):
            continue
        if isinstance(part.get("text"), str):
            pieces.append(part["text"])
        function = part.get("functionCall")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        arguments = decode_arguments(function.get("args"))
        if call is not None and function["name"] == call.answer_tool:
            pieces.append(json.dumps(arguments, ensure_ascii=False))
        else:
            signature = part.get("thoughtSignature")
            call_id = synthetic_id(function.get("id"), calls)
            sig = signature if isinstance(signature, str) else None
            calls.append(ToolCall(call_id, function["name"], arguments, sig))
    reason = candidate.get("finishReason")
    return "".join(pieces), reason if isinstance(reason, str) else None


def parse(body: Any, call: PreparedCall | None = None) -> CompletionResult:
    """Read a whole Gemini reply; raise ``FatalError`` for an error or malformed body."""
    data = require_dict(body)
    if "error" in data:
        raise FatalError(code=error_code_of(data))
    calls: list[ToolCall] = []
    text, raw_stop = _chunk(data, call, calls)
    return completion(API, text, raw_stop, _usage(data.get("usageMetadata")), tuple(calls))


class GoogleStream:
    """Each ``data:`` is a partial response; the last one carries ``finishReason`` and the final usage."""

    def __init__(self, call: PreparedCall | None = None) -> None:
        self._call = call
        self._parts: list[str] = []
        self._calls: list[ToolCall] = []
        self._usage = Usage()
        self._raw_stop: str | None = None

    def feed(self, event: SseEvent) -> str:
        """Fold one stream chunk in; return the answer text it added."""
        if not event.data:
            return ""
        data = parse_event_json(event)
        if "error" in data:
            raise stream_error(error_code_of(data), got_text=bool(self._parts))
        text, raw_stop = _chunk(data, self._call, self._calls)
        if text:
            self._parts.append(text)
        if raw_stop is not None:
            self._raw_stop = raw_stop
        if isinstance(data.get("usageMetadata"), dict):
            self._usage = _usage(data["usageMetadata"])
        return text

    def partial(self) -> CompletionResult:
        """The text and usage so far, for a stream ended early."""
        return early_result("".join(self._parts), self._usage)

    def finish(self) -> CompletionResult:
        """The result of a stream that ended; ``StreamError`` when no chunk gave a finish reason."""
        if self._raw_stop is None:
            raise StreamError(got_text=bool(self._parts or self._calls), code="incomplete_stream")
        return completion(API, "".join(self._parts), self._raw_stop, self._usage, tuple(self._calls))


PROVIDER = Provider(api=API, prepare=prepare, parse=parse, new_stream=GoogleStream)
