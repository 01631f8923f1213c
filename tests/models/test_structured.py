"""Issue 11: the answer's schema on the wire of every provider, and the routes that refuse it.

Each provider is asked with an output schema against a scripted loopback server speaking its own wire format:
the request must carry that provider's structured-output form (``response_format``, ``text.format``,
``responseSchema``, a forced tool), the answer must come back as the reply's text (for Anthropic: the tool
call's input), and the trace must name the form. A route that answers the schema with a 400 is asked again
without it and remembered, so the next call goes without it at once.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import pytest
from pydantic import BaseModel, Field

from longhaul_daemon.models import Budget, CallTrace, FatalError, complete, make_client
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.request import ModelRequest
from longhaul_daemon.models.structured import (
    OutputSchema,
    StructuredMemory,
    gemini_schema,
    strict_schema,
)
from longhaul_daemon.models.via_pi import NoteSink, PiPeer

from .scripted_http import Reply, json_reply, scripted_server
from .wires import (
    ANTHROPIC_MESSAGES,
    FORMS,
    OPENAI_COMPLETIONS,
    WIRES,
    Wire,
    answer_stream,
    answer_whole,
    check_structured,
    check_unstructured,
    request,
)

pytestmark = pytest.mark.anyio

WIRE_IDS = [w.api for w in WIRES]


class _Item(BaseModel):
    msg: str
    words: str | None = None


class _Shape(BaseModel):
    labels: list[_Item] = Field(default_factory=list, max_length=4)
    narrative: str
    objective: str | None = Field(default=None, max_length=300)


SCHEMA = OutputSchema(name="diff_answer", schema=strict_schema(_Shape.model_json_schema()))
ANSWER = {"labels": [{"msg": "u1", "words": None}], "narrative": "Did it.", "objective": None}


def structured(wire: Wire, base_url: str, *, stream: bool = True, **kw: Any) -> ModelRequest:
    return replace(request(wire, base_url, stream=stream, **kw), output_schema=SCHEMA)


def refusal() -> Reply:
    """How OpenAI-style servers reject a parameter they do not take."""
    body = {"error": {"message": "response_format is not supported", "type": "invalid_request_error"}}
    body["error"]["param"] = "response_format"
    return json_reply(body, status=400)


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


def test_strict_schema_closes_every_object_and_makes_optional_fields_nullable() -> None:
    schema = SCHEMA.schema
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)
    assert schema["required"] == ["labels", "narrative", "objective"]
    assert schema["additionalProperties"] is False
    item = schema["properties"]["labels"]["items"]
    assert item["required"] == ["msg", "words"] and item["additionalProperties"] is False
    assert item["properties"]["words"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    # OpenAI's strict mode rejects string-length keywords with a 400: code enforces those (DIFF-16); array
    # bounds stay, since every route takes them and they stop a model repeating items
    assert "maxLength" not in json.dumps(schema) and "title" not in json.dumps(schema)
    assert schema["properties"]["labels"]["maxItems"] == 4


def test_gemini_schema_is_the_openapi_dialect() -> None:
    gemini = gemini_schema(SCHEMA.schema)
    assert gemini["type"] == "OBJECT" and gemini["propertyOrdering"] == ["labels", "narrative", "objective"]
    assert gemini["properties"]["objective"] == {"type": "STRING", "nullable": True}
    assert gemini["properties"]["labels"]["items"]["properties"]["msg"] == {"type": "STRING"}
    assert gemini["properties"]["labels"]["maxItems"] == 4
    assert "additionalProperties" not in json.dumps(gemini)


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_each_provider_sends_its_structured_form_and_reads_the_answer(
    wire: Wire, stream: bool, client: HttpClient
) -> None:
    text = json.dumps(ANSWER)
    reply = answer_stream(wire, [text[:9], text[9:]]) if stream else answer_whole(wire, text)
    traces: list[CallTrace] = []
    with scripted_server([reply]) as server, anyio.fail_after(10):
        result = await complete(
            structured(wire, server.url, stream=stream),
            budget=Budget.after(10),
            client=client,
            on_trace=traces.append,
            structured=StructuredMemory(),
        )
    assert json.loads(result.text) == ANSWER  # for Anthropic: the forced tool's input
    assert result.stop_reason == "stop"
    [recorded] = server.requests
    wire.check(recorded, stream)
    check_structured(wire, recorded, SCHEMA)
    [trace] = traces
    assert (trace.structured, trace.structured_skip) == (FORMS[wire.api], None)
    assert trace.as_dict()["structured"] == FORMS[wire.api]


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_a_route_that_refuses_the_schema_is_asked_without_it_and_remembered(
    wire: Wire, client: HttpClient
) -> None:
    memory = StructuredMemory()
    traces: list[CallTrace] = []
    script = [refusal(), wire.stream_reply(["plain answer"]), wire.stream_reply(["next pass"])]
    with scripted_server(script) as server, anyio.fail_after(10):
        first = await complete(
            structured(wire, server.url),
            budget=Budget.after(10),
            client=client,
            on_trace=traces.append,
            structured=memory,
        )
        # the next pass (a new request, the same daemon-wide memory) goes without the schema at once
        second = await complete(
            structured(wire, server.url),
            budget=Budget.after(10),
            client=client,
            on_trace=traces.append,
            structured=memory,
        )
    assert (first.text, second.text) == ("plain answer", "next pass")
    refused, plain, next_pass = server.requests
    check_structured(wire, refused, SCHEMA)
    check_unstructured(plain)
    check_unstructured(next_pass)
    assert [(t.structured, t.structured_skip, t.error) for t in traces] == [
        (FORMS[wire.api], None, "FatalError"),
        (None, "refused", None),
        (None, "refused", None),
    ]
    assert len(memory) == 1


async def test_a_400_that_the_call_without_the_schema_gets_too_is_not_blamed_on_the_schema(
    client: HttpClient,
) -> None:
    memory = StructuredMemory()
    with (
        scripted_server([refusal(), refusal()]) as server,
        anyio.fail_after(10),
        pytest.raises(FatalError) as raised,
    ):
        await complete(
            structured(OPENAI_COMPLETIONS, server.url),
            budget=Budget.after(10),
            client=client,
            structured=memory,
        )
    assert raised.value.status == 400
    assert len(server.requests) == 2 and len(memory) == 0


async def test_without_the_memory_a_refusal_is_an_ordinary_client_error(client: HttpClient) -> None:
    with scripted_server([refusal()]) as server, anyio.fail_after(10), pytest.raises(FatalError):
        await complete(structured(OPENAI_COMPLETIONS, server.url), budget=Budget.after(10), client=client)
    assert len(server.requests) == 1


async def test_anthropic_that_cannot_turn_thinking_off_is_asked_without_the_forced_tool(
    client: HttpClient,
) -> None:
    traces: list[CallTrace] = []
    wire = ANTHROPIC_MESSAGES
    with scripted_server([wire.stream_reply([json.dumps(ANSWER)])]) as server, anyio.fail_after(10):
        result = await complete(
            structured(wire, server.url, reasoning=True, reasoning_levels=("low", "high")),
            budget=Budget.after(10),
            client=client,
            on_trace=traces.append,
            structured=StructuredMemory(),
        )
    assert json.loads(result.text) == ANSWER
    [recorded] = server.requests
    check_unstructured(recorded)
    assert recorded.body["thinking"] == {"type": "adaptive"}
    assert (traces[0].structured, traces[0].structured_skip) == (None, "thinking")


async def test_a_call_through_pi_carries_the_schema_as_pi_payload_and_its_trace_says_so(
    client: HttpClient,
) -> None:
    sent: list[dict[str, Any]] = []

    class Shim:
        async def request(
            self,
            method: str,
            params: dict[str, Any],
            *,
            on_note: NoteSink | None = None,
            stop: anyio.Event | None = None,
        ) -> Any:
            sent.append(params)
            return {"text": json.dumps(ANSWER), "stopReason": "stop", "usage": {"output": 5}}

    peer: PiPeer = Shim()
    traces: list[CallTrace] = []
    result = await complete(
        structured(OPENAI_COMPLETIONS, "http://127.0.0.1:9"),
        budget=Budget.after(10),
        client=client,
        on_trace=traces.append,
        peer=peer,
        via_pi_apis={"openai-completions"},
        structured=StructuredMemory(),
    )
    assert json.loads(result.text) == ANSWER
    [params] = sent
    response_format = params["payload"]["response_format"]
    assert response_format["type"] == "json_schema" and response_format["json_schema"]["strict"] is True
    assert set(params["payload"]) == {"response_format"}  # only what the daemon's own client would add
    assert (traces[0].via, traces[0].structured, traces[0].structured_skip) == ("pi", "json_schema", None)
