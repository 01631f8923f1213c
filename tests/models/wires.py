"""Each provider's real wire format as the scripted server speaks it, plus the request checks per provider.

One ``Wire`` per api keeps the shared scenarios (retries, budgets, cancellation) in one parametrized test file
while every byte the server sends is in that provider's own format.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import SecretStr

from longhaul_daemon.models import Message, ModelRequest, ModelTarget
from longhaul_daemon.models.completion import Usage
from longhaul_daemon.models.request import default_compat
from longhaul_daemon.models.structured import OutputSchema, gemini_schema

from .scripted_http import Recorded, Reply, json_reply, sse, sse_data, sse_reply

KEY = "sk-test-LEAKCANARY-7f3a9c2e"
USAGE = Usage(input=40, output=7, cache_read=10, cache_write=0, reasoning=2)
ANTHROPIC_USAGE = Usage(input=40, output=7, cache_read=10, cache_write=3, reasoning=0)


@dataclass(frozen=True)
class Wire:
    api: str
    base_path: str
    request_id_header: str
    usage: Usage
    length_raw: str
    stop_raw: str
    stream: Callable[[list[str], bool], list[bytes]]  # pieces, cut_off → SSE chunks
    whole: Callable[[str, bool], Any]  # text, cut_off → JSON body
    overloaded_event: bytes  # an in-stream error before any text
    quota_body: Any
    check: Callable[[Recorded, bool], None]

    def stream_reply(self, pieces: list[str], *, cut_off: bool = False) -> Reply:
        return sse_reply(self.stream(pieces, cut_off), headers={self.request_id_header: "req_ok"})

    def json_reply(self, text: str, *, cut_off: bool = False) -> Reply:
        return json_reply(self.whole(text, cut_off), headers={self.request_id_header: "req_ok"})

    def first_event_then_hang(self) -> Reply:
        return sse_reply(self.stream(["partial"], False)[:2], hang=True)

    def error_stream_reply(self) -> Reply:
        return sse_reply([*self.stream([], False)[:1], self.overloaded_event])


def request(
    wire: Wire, base_url: str, *, stream: bool = True, reasoning: bool = False, **compat: Any
) -> ModelRequest:
    target = ModelTarget(
        api=wire.api,
        provider="test",
        model_id="test-model",
        base_url=base_url + wire.base_path,
        api_key=SecretStr(KEY),
        reasoning=reasoning,
        compat=replace(default_compat(wire.api), **compat),
    )
    return ModelRequest(
        target=target,
        system="You summarise.",
        messages=(Message("user", "hello"),),
        max_output_tokens=256,
        stream=stream,
    )


# --- OpenAI Chat Completions ---
def _oc_usage() -> dict[str, Any]:
    return {
        "prompt_tokens": 50,
        "completion_tokens": 7,
        "total_tokens": 57,
        "prompt_tokens_details": {"cached_tokens": 10},
        "completion_tokens_details": {"reasoning_tokens": 2},
    }


def _oc_stream(pieces: list[str], cut: bool) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return sse_data({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})

    out = [chunk({"role": "assistant", "content": ""}, None)]
    out += [chunk({"content": p}, None) for p in pieces]
    out.append(chunk({}, "length" if cut else "stop"))
    out.append(sse_data({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": _oc_usage()}))
    out.append(b"data: [DONE]\n\n")
    return out


def _oc_whole(text: str, cut: bool) -> Any:
    message = {"role": "assistant", "content": text, "refusal": None}
    choice = {"index": 0, "message": message, "finish_reason": "length" if cut else "stop"}
    return {"id": "c1", "object": "chat.completion", "choices": [choice], "usage": _oc_usage()}


def _oc_check(rec: Recorded, stream: bool) -> None:
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == f"Bearer {KEY}"
    assert rec.body["max_completion_tokens"] == 256
    assert rec.body["messages"][0] == {"role": "system", "content": "You summarise."}
    assert rec.body["stream"] is stream
    assert ("stream_options" in rec.body) is stream
    if stream:
        assert rec.body["stream_options"] == {"include_usage": True}


_OPENAI_QUOTA = {
    "error": {
        "message": "You exceeded your current quota",
        "type": "insufficient_quota",
        "code": "insufficient_quota",
    }
}

OPENAI_COMPLETIONS = Wire(
    api="openai-completions",
    base_path="/v1",
    request_id_header="x-request-id",
    usage=USAGE,
    length_raw="length",
    stop_raw="stop",
    stream=_oc_stream,
    whole=_oc_whole,
    overloaded_event=sse_data({"error": {"message": "overloaded", "type": "server_error", "code": None}}),
    quota_body=_OPENAI_QUOTA,
    check=_oc_check,
)


# --- Anthropic Messages ---
_AN_START_USAGE = {
    "input_tokens": 40,
    "output_tokens": 1,
    "cache_read_input_tokens": 10,
    "cache_creation_input_tokens": 3,
}


def _an_stream(pieces: list[str], cut: bool) -> list[bytes]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": "m",
            "stop_reason": None,
            "usage": _AN_START_USAGE,
        },
    }
    out = [sse("message_start", start)]
    out.append(
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        )
    )
    out.append(sse("ping", {"type": "ping"}))
    out += [
        sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in pieces
    ]
    out.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": "max_tokens" if cut else "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 7},
    }
    out.append(sse("message_delta", delta))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return out


def _an_whole(text: str, cut: bool) -> Any:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "thinking", "thinking": "hidden", "signature": "s"},
            {"type": "text", "text": text},
        ],
        "stop_reason": "max_tokens" if cut else "end_turn",
        "stop_sequence": None,
        "usage": {**_AN_START_USAGE, "output_tokens": 7},
    }


def _an_check(rec: Recorded, stream: bool) -> None:
    assert rec.path == "/v1/messages"
    assert rec.headers["x-api-key"] == KEY
    assert rec.headers["anthropic-version"] == "2023-06-01"
    assert rec.body["max_tokens"] == 256
    assert rec.body["system"] == "You summarise."
    assert rec.body["stream"] is stream
    assert not {"temperature", "top_p", "top_k"} & set(rec.body)


ANTHROPIC_MESSAGES = Wire(
    api="anthropic-messages",
    base_path="",
    request_id_header="request-id",
    usage=ANTHROPIC_USAGE,
    length_raw="max_tokens",
    stop_raw="end_turn",
    stream=_an_stream,
    whole=_an_whole,
    overloaded_event=sse(
        "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    ),
    quota_body={
        "type": "error",
        "error": {
            "type": "rate_limit_error",
            "message": "spend limit",
            "details": {"error_code": "enforced_spend_limit_reached"},
        },
    },
    check=_an_check,
)


# --- OpenAI Responses ---
def _resp_body(text: str, cut: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "status": "incomplete" if cut else "completed",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        ],
        "usage": {
            "input_tokens": 50,
            "input_tokens_details": {"cached_tokens": 10},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 2},
            "total_tokens": 57,
        },
    }
    if cut:
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    return body


def _resp_stream(pieces: list[str], cut: bool) -> list[bytes]:
    created = {
        "type": "response.created",
        "response": {"id": "resp_1", "status": "in_progress", "output": []},
    }
    out = [sse("response.created", created)]
    out += [
        sse(
            "response.output_text.delta",
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "delta": p,
            },
        )
        for p in pieces
    ]
    final = "response.incomplete" if cut else "response.completed"
    out.append(sse(final, {"type": final, "response": _resp_body("".join(pieces), cut)}))
    return out


def _resp_check(rec: Recorded, stream: bool) -> None:
    assert rec.path == "/v1/responses"
    assert rec.headers["authorization"] == f"Bearer {KEY}"
    assert rec.body["max_output_tokens"] == 256
    assert rec.body["store"] is False
    assert rec.body["instructions"] == "You summarise."
    assert rec.body["stream"] is stream


OPENAI_RESPONSES = Wire(
    api="openai-responses",
    base_path="/v1",
    request_id_header="x-request-id",
    usage=USAGE,
    length_raw="max_output_tokens",
    stop_raw="completed",
    stream=_resp_stream,
    whole=_resp_body,
    overloaded_event=sse("error", {"type": "error", "code": "server_error", "message": "overloaded"}),
    quota_body=_OPENAI_QUOTA,
    check=_resp_check,
)


# --- Google Generative AI ---
_G_USAGE = {
    "promptTokenCount": 50,
    "candidatesTokenCount": 5,
    "thoughtsTokenCount": 2,
    "cachedContentTokenCount": 10,
    "totalTokenCount": 57,
}


def _g_chunk(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": _G_USAGE, "modelVersion": "gemini-test"}


def _g_stream(pieces: list[str], cut: bool) -> list[bytes]:
    out = [sse_data(_g_chunk([{"text": "private thought", "thought": True}]))]
    out += [sse_data(_g_chunk([{"text": p}])) for p in pieces]
    out.append(sse_data(_g_chunk([], "MAX_TOKENS" if cut else "STOP")))
    return out


def _g_whole(text: str, cut: bool) -> Any:
    return _g_chunk(
        [{"text": "private thought", "thought": True}, {"text": text}], "MAX_TOKENS" if cut else "STOP"
    )


def _g_check(rec: Recorded, stream: bool) -> None:
    suffix = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    assert rec.path == "/v1beta/models/test-model" + suffix
    assert rec.headers["x-goog-api-key"] == KEY
    assert "authorization" not in rec.headers
    assert rec.body["generationConfig"]["maxOutputTokens"] == 256
    assert rec.body["systemInstruction"] == {"parts": [{"text": "You summarise."}]}
    assert rec.body["contents"] == [{"role": "user", "parts": [{"text": "hello"}]}]


GOOGLE = Wire(
    api="google-generative-ai",
    base_path="/v1beta",
    request_id_header="x-goog-request-id",
    usage=USAGE,
    length_raw="MAX_TOKENS",
    stop_raw="STOP",
    stream=_g_stream,
    whole=_g_whole,
    overloaded_event=sse_data(
        {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    ),
    quota_body={
        "error": {
            "code": 429,
            "message": "Quota exceeded",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                    "violations": [{"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}],
                }
            ],
        }
    },
    check=_g_check,
)

WIRES = [OPENAI_COMPLETIONS, ANTHROPIC_MESSAGES, OPENAI_RESPONSES, GOOGLE]


# --- Structured output (issue 11): what each provider is sent, and how the answer comes back ---
FORMS = {
    "openai-completions": "json_schema",
    "anthropic-messages": "tool",
    "openai-responses": "json_schema",
    "google-generative-ai": "response_schema",
}
# how many events open each wire's stream before the first text delta
_OPENING = {
    "openai-completions": 1,
    "anthropic-messages": 3,
    "openai-responses": 1,
    "google-generative-ai": 1,
}


def check_structured(wire: Wire, rec: Recorded, schema: OutputSchema) -> None:
    """The structured-output form of ``wire``'s API, exactly as its provider documents it."""
    body = rec.body
    if wire.api == "openai-completions":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": schema.name, "schema": dict(schema.schema), "strict": True},
        }
    elif wire.api == "openai-responses":
        wire_format = {"type": "json_schema", "name": schema.name, "schema": dict(schema.schema)}
        assert body["text"] == {"format": {**wire_format, "strict": True}}
    elif wire.api == "google-generative-ai":
        config = body["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseSchema"] == gemini_schema(schema.schema)
    else:
        [tool] = body["tools"]
        assert tool["name"] == schema.name and tool["input_schema"] == dict(schema.schema)
        assert body["tool_choice"] == {"type": "tool", "name": schema.name}


def check_unstructured(rec: Recorded) -> None:
    """No structured-output form of any provider in the body."""
    body = rec.body
    assert not {"response_format", "text", "tools", "tool_choice"} & set(body), sorted(body)
    config = body.get("generationConfig") or {}
    assert not {"responseSchema", "responseMimeType"} & set(config), sorted(config)


def _an_tool_stream(pieces: list[str], *, closing: bool = True) -> list[bytes]:
    out = _an_stream([], False)[:1]  # message_start
    block = {"type": "tool_use", "id": "toolu_1", "name": "diff_answer", "input": {}}
    start = {"type": "content_block_start", "index": 0, "content_block": block}
    out.append(sse("content_block_start", start))
    out += [_an_tool_delta(p) for p in pieces]
    if closing:
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        delta = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 7}}
        out += [sse("message_delta", delta), sse("message_stop", {"type": "message_stop"})]
    return out


def _an_tool_delta(piece: str) -> bytes:
    delta = {"type": "input_json_delta", "partial_json": piece}
    return sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})


def answer_delta(wire: Wire, piece: str) -> bytes:
    """One streamed event carrying ``piece`` of the answer (text, or the forced tool's input)."""
    if wire.api == "anthropic-messages":
        return _an_tool_delta(piece)
    return wire.stream([piece], False)[_OPENING[wire.api]]


def answer_stream(wire: Wire, pieces: list[str], *, repeat: str | None = None) -> Reply:
    """The answer streamed in ``pieces``; with ``repeat``, the stream then never ends (a looping model)."""
    if wire.api == "anthropic-messages":
        chunks = _an_tool_stream(pieces, closing=repeat is None)
    elif repeat is None:
        chunks = wire.stream(pieces, False)
    else:
        chunks = wire.stream(pieces, False)[: _OPENING[wire.api] + len(pieces)]
    again = answer_delta(wire, repeat) if repeat is not None else None
    return sse_reply(chunks, headers={wire.request_id_header: "req_ok"}, repeat=again)


def answer_whole(wire: Wire, text: str) -> Reply:
    """The answer as a whole JSON reply (for Anthropic: a ``tool_use`` block whose input is the answer)."""
    if wire.api != "anthropic-messages":
        return wire.json_reply(text)
    body = _an_whole("", False)
    body["content"] = [
        {"type": "tool_use", "id": "toolu_1", "name": "diff_answer", "input": json.loads(text)}
    ]
    body["stop_reason"] = "tool_use"
    return json_reply(body, headers={wire.request_id_header: "req_ok"})
