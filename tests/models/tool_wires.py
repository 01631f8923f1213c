"""Replies that make tool calls, in each provider's own wire format, whole and streamed.

A reply here may hold some text, some calls of offered tools, and (for Anthropic and Gemini, whose answer
travels as a tool's input when tools are offered) the answer as a call of the answer tool. Every byte is what
that provider sends: Chat Completions ``delta.tool_calls`` pieces, Anthropic ``tool_use`` blocks with
``input_json_delta``, Responses ``function_call`` output items, Gemini ``functionCall`` parts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .scripted_http import Reply, json_reply, sse, sse_data, sse_reply
from .wires import _AN_START_USAGE, _G_USAGE, Wire, _oc_usage, _resp_body

__all__ = ["Call", "tool_reply"]


@dataclass(frozen=True)
class Call:
    """One call in a scripted reply: its id, the tool's name and its arguments."""

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    signature: str | None = None  # Gemini's thoughtSignature


def tool_reply(
    wire: Wire,
    calls: list[Call],
    *,
    text: str = "",
    stream: bool = True,
    answer: str | None = None,
    answer_tool: str = "section",
) -> Reply:
    """``calls`` (and ``text``) in ``wire``'s format; ``answer`` is the input of the tool ``answer_tool``
    (Anthropic, Gemini) or, for the OpenAI formats, more text."""
    builders = {
        "openai-completions": (_oc_stream, _oc_whole),
        "anthropic-messages": (_an_stream, _an_whole),
        "openai-responses": (_resp_stream, _resp_whole),
        "google-generative-ai": (_g_stream, _g_whole),
    }
    streamed, whole = builders[wire.api]
    headers = {wire.request_id_header: "req_tools"}
    named = _Answer(answer, answer_tool)
    if stream:
        return sse_reply(streamed(calls, text, named), headers=headers)
    return json_reply(whole(calls, text, named), headers=headers)


@dataclass(frozen=True)
class _Answer:
    """The answer a reply carries (None: none) and the tool it travels in where the wire uses one."""

    text: str | None
    tool: str = "section"

    def __bool__(self) -> bool:
        return self.text is not None


# --- OpenAI Chat Completions ---
def _oc_chunk(delta: dict[str, Any], finish: str | None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return sse_data({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]})


def _oc_stream(calls: list[Call], text: str, answer: _Answer) -> list[bytes]:
    out = [_oc_chunk({"role": "assistant", "content": text + (answer.text or "") or None}, None)]
    for index, call in enumerate(calls):
        args = json.dumps(call.arguments)
        function = {"name": call.name, "arguments": ""}
        head = {"index": index, "id": call.id, "type": "function", "function": function}
        out.append(_oc_chunk({"tool_calls": [head]}, None))
        half = len(args) // 2
        out += [
            _oc_chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}, None)
            for piece in (args[:half], args[half:])
        ]
    out.append(_oc_chunk({}, "tool_calls" if calls else "stop"))
    out.append(sse_data({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": _oc_usage()}))
    out.append(b"data: [DONE]\n\n")
    return out


def _oc_whole(calls: list[Call], text: str, answer: _Answer) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": (text + (answer.text or "")) or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
            }
            for c in calls
        ]
    choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
    return {"id": "c1", "object": "chat.completion", "choices": [choice], "usage": _oc_usage()}


# --- Anthropic Messages ---
def _an_blocks(calls: list[Call], text: str, answer: _Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    if answer.text is not None:
        blocks.append(
            {"type": "tool_use", "id": "toolu_answer", "name": answer.tool, "input": json.loads(answer.text)}
        )
    blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in calls]
    return blocks


def _an_stream(calls: list[Call], text: str, answer: _Answer) -> list[bytes]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "m"}
    start = {"type": "message_start", "message": {**message, "usage": _AN_START_USAGE}}
    out = [sse("message_start", start)]
    for index, block in enumerate(_an_blocks(calls, text, answer)):
        opening: dict[str, Any]
        if block["type"] == "text":
            opening = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(
            sse(
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opening},
            )
        )
        out.append(
            sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if calls or answer else "end_turn"
    delta_event = {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 7}}
    out += [sse("message_delta", delta_event), sse("message_stop", {"type": "message_stop"})]
    return out


def _an_whole(calls: list[Call], text: str, answer: _Answer) -> Any:
    stop = "tool_use" if calls or answer else "end_turn"
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": _an_blocks(calls, text, answer),
        "stop_reason": stop,
        "usage": {**_AN_START_USAGE, "output_tokens": 7},
    }


# --- OpenAI Responses ---
def _resp_items(calls: list[Call]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": c.id,
            "name": c.name,
            "arguments": json.dumps(c.arguments),
            "status": "completed",
        }
        for n, c in enumerate(calls)
    ]


def _resp_whole(calls: list[Call], text: str, answer: _Answer) -> Any:
    body = _resp_body(text + (answer.text or ""), False)
    if not (text or answer.text):
        body["output"] = [item for item in body["output"] if item["type"] != "message"]
    body["output"] += _resp_items(calls)
    return body


def _resp_stream(calls: list[Call], text: str, answer: _Answer) -> list[bytes]:
    out = [sse("response.created", {"type": "response.created", "response": {"id": "resp_1", "output": []}})]
    if text or answer.text:
        delta = {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "delta": text + (answer.text or ""),
        }
        out.append(sse("response.output_text.delta", delta))
    for n, item in enumerate(_resp_items(calls)):
        added = {
            "type": "response.output_item.added",
            "output_index": n + 1,
            "item": {**item, "arguments": ""},
        }
        out.append(sse("response.output_item.added", added))
        arg_delta = {
            "type": "response.function_call_arguments.delta",
            "item_id": item["id"],
            "delta": item["arguments"],
        }
        out.append(sse("response.function_call_arguments.delta", arg_delta))
        out.append(sse("response.output_item.done", {"type": "response.output_item.done", "item": item}))
    final = {"type": "response.completed", "response": _resp_whole(calls, text, answer)}
    out.append(sse("response.completed", final))
    return out


# --- Google Generative AI ---
def _g_parts(calls: list[Call], text: str, answer: _Answer) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    if answer.text is not None:
        parts.append({"functionCall": {"name": answer.tool, "args": json.loads(answer.text)}})
    for call in calls:
        part: dict[str, Any] = {"functionCall": {"name": call.name, "args": call.arguments}}
        if call.signature:
            part["thoughtSignature"] = call.signature
        parts.append(part)
    return parts


def _g_response(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": _G_USAGE, "modelVersion": "gemini-test"}


def _g_stream(calls: list[Call], text: str, answer: _Answer) -> list[bytes]:
    out = [sse_data(_g_response([part], None)) for part in _g_parts(calls, text, answer)]
    out.append(sse_data(_g_response([], "STOP")))
    return out


def _g_whole(calls: list[Call], text: str, answer: _Answer) -> Any:
    return _g_response(_g_parts(calls, text, answer), "STOP")
