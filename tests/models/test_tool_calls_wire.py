"""Turns mode's ``show`` tool on the real tool-calling wire of each of the four APIs (TURNS-7).

Each provider is sent a conversation that offers a tool, holds an earlier call of it and that call's result,
against a scripted loopback server speaking the provider's own format. The request must carry the tool, the
call and the result in that provider's shapes; the reply's calls must come back as calls, its answer (for
Anthropic and Gemini, the answer tool's input) as text; ``tool_choice`` ``none`` must ask for the answer now.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import pytest

from longhaul_daemon.models import Budget, CallTrace, Message, complete, make_client
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.request import ModelRequest
from longhaul_daemon.models.structured import OutputSchema, StructuredMemory, gemini_schema, strict_schema
from longhaul_daemon.models.tool_calls import (
    MAX_ARGUMENT_CHARS,
    ToolCall,
    ToolResult,
    ToolSpec,
    decode_arguments,
)

from .scripted_http import scripted_server
from .tool_wires import Call, tool_reply
from .wires import WIRES, Wire, request

pytestmark = pytest.mark.anyio

WIRE_IDS = [w.api for w in WIRES]
SHOW = ToolSpec(
    name="show",
    description="Show one message, command, error or tool call by its id.",
    parameters=strict_schema(
        {"type": "object", "properties": {"ref": {"type": "string"}}, "required": ["ref"]}
    ),
)
SECTION = OutputSchema(
    name="section",
    schema=strict_schema(
        {"type": "object", "properties": {"narrative": {"type": "string"}}, "required": ["narrative"]}
    ),
    description="Send the section.",
)
EARLIER = ToolCall("call_a1", "show", {"ref": "u3"}, signature="sig-a1")
HISTORY = (
    Message("user", "Digest. Write the narrative."),
    Message("assistant", "", tool_calls=(EARLIER,)),
    Message("user", "", tool_results=(ToolResult("call_a1", "show", "u3: never push to main"),)),
)


def turn(wire: Wire, base_url: str, *, stream: bool = True, schema: bool = False, **kw: Any) -> ModelRequest:
    base = request(wire, base_url, stream=stream)
    return replace(base, messages=HISTORY, tools=(SHOW,), output_schema=SECTION if schema else None, **kw)


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


def check_history(wire: Wire, body: dict[str, Any]) -> None:
    """The earlier call and its result, in ``wire``'s own shapes."""
    if wire.api == "openai-completions":
        messages = body["messages"][1:]
        assert messages[0] == {"role": "user", "content": "Digest. Write the narrative."}
        assert messages[1] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a1",
                    "type": "function",
                    "function": {"name": "show", "arguments": '{"ref":"u3"}'},
                }
            ],
        }
        assert messages[2] == {"role": "tool", "tool_call_id": "call_a1", "content": "u3: never push to main"}
        assert len(messages) == 3
    elif wire.api == "anthropic-messages":
        assert body["messages"][1] == {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_a1", "name": "show", "input": {"ref": "u3"}}],
        }
        assert body["messages"][2] == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_a1",
                    "content": "u3: never push to main",
                    "is_error": False,
                }
            ],
        }
    elif wire.api == "openai-responses":
        assert body["input"] == [
            {"role": "user", "content": "Digest. Write the narrative."},
            {"type": "function_call", "call_id": "call_a1", "name": "show", "arguments": '{"ref":"u3"}'},
            {"type": "function_call_output", "call_id": "call_a1", "output": "u3: never push to main"},
        ]
    else:
        assert body["contents"] == [
            {"role": "user", "parts": [{"text": "Digest. Write the narrative."}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "show", "args": {"ref": "u3"}}, "thoughtSignature": "sig-a1"}
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "show", "response": {"output": "u3: never push to main"}}}
                ],
            },
        ]


def check_tools(wire: Wire, body: dict[str, Any], *, answer_tool: bool) -> None:
    """The offered tool (and the answer tool, where the answer travels as one) in ``wire``'s form."""
    params = dict(SHOW.parameters)
    if wire.api == "openai-completions":
        assert body["tools"] == [
            {
                "type": "function",
                "function": {"name": "show", "description": SHOW.description, "parameters": params},
            }
        ]
    elif wire.api == "openai-responses":
        assert body["tools"] == [
            {"type": "function", "name": "show", "description": SHOW.description, "parameters": params}
        ]
    elif wire.api == "anthropic-messages":
        names = [t["name"] for t in body["tools"]]
        assert names == (["section", "show"] if answer_tool else ["show"])
        assert body["tools"][-1]["input_schema"] == params
    else:
        [tools] = body["tools"]
        names = [d["name"] for d in tools["functionDeclarations"]]
        assert names == (["section", "show"] if answer_tool else ["show"])
        assert tools["functionDeclarations"][-1]["parameters"] == gemini_schema(params)


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_turns7_a_reply_that_calls_show_comes_back_as_calls_over_each_wire(
    wire: Wire, stream: bool, client: HttpClient
) -> None:
    calls = [
        Call("call_b1", "show", {"ref": "C4"}, signature="sig-b1"),
        Call("call_b2", "show", {"ref": "E1"}),
    ]
    traces: list[CallTrace] = []
    with scripted_server([tool_reply(wire, calls, stream=stream)]) as server, anyio.fail_after(10):
        result = await complete(
            turn(wire, server.url, stream=stream),
            budget=Budget.after(10),
            client=client,
            on_trace=traces.append,
        )
    gemini = wire.api == "google-generative-ai"
    # Gemini gives no call ids: they are made up, by position
    ids = ["call_1", "call_2"] if gemini else ["call_b1", "call_b2"]
    assert [(c.id, c.name, dict(c.arguments)) for c in result.tool_calls] == [
        (ids[0], "show", {"ref": "C4"}),
        (ids[1], "show", {"ref": "E1"}),
    ]
    assert result.tool_calls[0].signature == ("sig-b1" if gemini else None)  # Gemini's, to send back
    assert result.text == "" and result.stop_reason == "stop"
    [sent] = server.requests
    check_history(wire, sent.body)
    check_tools(wire, sent.body, answer_tool=False)
    assert "tool_choice" not in sent.body or wire.api == "anthropic-messages"
    if wire.api == "anthropic-messages":
        assert sent.body["tool_choice"] == {"type": "auto"}
    if wire.api == "google-generative-ai":
        assert sent.body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    assert traces[0].as_dict()["toolCalls"] == 2


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_turns7_with_a_schema_the_answer_is_text_and_the_calls_are_calls(
    wire: Wire, stream: bool, client: HttpClient
) -> None:
    """Structured output per turn (issue 14 point 6) beside the offered tool: the answer is read as text."""
    answer = json.dumps({"narrative": "Fixed the export."})
    calls = [Call("call_c1", "show", {"ref": "u2"})]
    reply = tool_reply(wire, calls, stream=stream, answer=answer)
    with scripted_server([reply]) as server, anyio.fail_after(10):
        result = await complete(
            turn(wire, server.url, stream=stream, schema=True),
            budget=Budget.after(10),
            client=client,
            structured=StructuredMemory(),
        )
    assert json.loads(result.text) == {"narrative": "Fixed the export."}
    assert [(c.name, dict(c.arguments)) for c in result.tool_calls] == [("show", {"ref": "u2"})]
    [sent] = server.requests
    body = sent.body
    answer_tool = wire.api in ("anthropic-messages", "google-generative-ai")
    check_tools(wire, body, answer_tool=answer_tool)
    if wire.api == "anthropic-messages":
        assert body["tool_choice"] == {"type": "any"}  # the show tool or the answer, nothing else
    elif wire.api == "google-generative-ai":
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
        assert "responseSchema" not in body["generationConfig"]  # Gemini refuses JSON mode with functions
    elif wire.api == "openai-completions":
        assert body["response_format"]["json_schema"]["name"] == "section"
    else:
        assert body["text"]["format"]["name"] == "section"


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
@pytest.mark.parametrize("schema", [True, False], ids=["schema", "plain"])
async def test_turns8_tool_choice_none_keeps_the_tool_declared_but_asks_for_the_answer(
    wire: Wire, schema: bool, client: HttpClient
) -> None:
    answer = json.dumps({"narrative": "Done."})
    reply = tool_reply(wire, [], answer=answer if schema else None, text="" if schema else answer)
    with scripted_server([reply]) as server, anyio.fail_after(10):
        result = await complete(
            turn(wire, server.url, schema=schema, tool_choice="none"),
            budget=Budget.after(10),
            client=client,
            structured=StructuredMemory(),
        )
    assert json.loads(result.text) == {"narrative": "Done."} and result.tool_calls == ()
    body = server.requests[0].body
    if wire.api in ("openai-completions", "openai-responses"):
        assert body["tool_choice"] == "none"
    elif wire.api == "anthropic-messages":
        expected = {"type": "tool", "name": "section"} if schema else {"type": "none"}
        assert body["tool_choice"] == expected
    else:
        calling = {"mode": "ANY", "allowedFunctionNames": ["section"]} if schema else {"mode": "NONE"}
        assert body["toolConfig"] == {"functionCallingConfig": calling}


def test_arguments_that_are_not_a_json_object_decode_to_an_empty_object() -> None:
    assert decode_arguments('{"ref": "u1"}') == {"ref": "u1"}
    assert decode_arguments({"ref": "C2"}) == {"ref": "C2"}
    for hostile in ('["u1"]', "not json", "", None, 7, '{"ref": '):
        assert decode_arguments(hostile) == {}
    # arguments larger than any offered tool takes are not decoded at all (a 5 MB one held the loop)
    assert decode_arguments(json.dumps({"ref": "u1", "pad": "x" * MAX_ARGUMENT_CHARS})) == {}
