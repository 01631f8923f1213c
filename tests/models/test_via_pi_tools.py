"""Turns mode's ``show`` tool through ``model.complete`` (PASS-22, TURNS-7): specs, calls and results travel.

The shim is the edge here (its side is covered by client_shim/test/modelcall.test.mjs and the e2e suite), so a
scripted peer stands in for it and records what the daemon sent.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import pytest
from pydantic import SecretStr

from longhaul_daemon.models import (
    Budget,
    FatalError,
    Message,
    ModelRequest,
    ModelTarget,
    complete,
    make_client,
)
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.tool_calls import ToolCall, ToolResult, ToolSpec
from longhaul_daemon.models.via_pi import TOOLS_NOT_CARRIED, NoteSink
from longhaul_daemon.secrets.redaction import MARK, Redactor

pytestmark = pytest.mark.anyio

SHOW = ToolSpec("show", "Show one id.", {"type": "object", "properties": {"ref": {"type": "string"}}})


class Peer:
    """Answers every ``model.complete`` with ``reply`` and keeps the params it got."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.params: list[dict[str, Any]] = []

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        self.params.append(params)
        return self.reply


def ask(tools: tuple[ToolSpec, ...] = (SHOW,)) -> ModelRequest:
    target = ModelTarget(
        api="bedrock-converse-stream", provider="aws", model_id="m1", base_url="", api_key=SecretStr("k" * 12)
    )
    messages = (
        Message("user", "Digest"),
        Message("assistant", "", tool_calls=(ToolCall("call_1", "show", {"ref": "u3"}),)),
        Message("user", "Now the narrative.", tool_results=(ToolResult("call_1", "show", "u3 text", True),)),
    )
    return ModelRequest(target=target, system="SYS", messages=messages, max_output_tokens=64, tools=tools)


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


async def test_turns7_tools_calls_and_results_go_to_the_shim_and_calls_come_back(client: HttpClient) -> None:
    reply = {
        "text": "",
        "stopReason": "toolUse",
        "usage": {"input": 5, "output": 2},
        "toolCalls": [
            {"id": "call_7", "name": "show", "arguments": {"ref": "E2"}},
            {"id": 3, "name": "show"},
        ],
        "toolsCarried": True,
    }
    peer = Peer(reply)
    with anyio.fail_after(10):
        result = await complete(ask(), budget=Budget.after(10), client=client, peer=peer)
    assert [(c.id, c.name, dict(c.arguments)) for c in result.tool_calls] == [
        ("call_7", "show", {"ref": "E2"}),
        ("call_2", "show", {}),  # a made-up id for one that was not a string; missing arguments are {}
    ]
    [sent] = peer.params
    assert sent["tools"] == [
        {"name": "show", "description": "Show one id.", "parameters": dict(SHOW.parameters)}
    ]
    assert sent["messages"] == [
        {"role": "user", "text": "Digest"},
        {
            "role": "assistant",
            "text": "",
            "toolCalls": [{"id": "call_1", "name": "show", "arguments": {"ref": "u3"}}],
        },
        {
            "role": "user",
            "text": "Now the narrative.",
            "toolResults": [{"id": "call_1", "name": "show", "text": "u3 text", "isError": True}],
        },
    ]


async def test_a_shim_that_did_not_carry_the_tools_is_refused_by_name(client: HttpClient) -> None:
    peer = Peer({"text": "{}", "stopReason": "stop", "usage": {}})
    with anyio.fail_after(10), pytest.raises(FatalError) as caught:
        await complete(ask(), budget=Budget.after(10), client=client, peer=peer)
    assert caught.value.code == TOOLS_NOT_CARRIED
    plain = await complete(ask(tools=()), budget=Budget.after(10), client=client, peer=peer)
    assert plain.text == "{}" and "tools" not in peer.params[-1]


async def test_through_pi_both_routes_keys_leave_neither_the_request_nor_the_reply(
    client: HttpClient,
) -> None:
    """A call made by pi is scrubbed like one the daemon makes: the other route's key (the pass's redactor)
    and pi's own are taken out of what the shim is sent and of the calls it hands back."""
    other = "sk-summarizer-Hh3Jj8Gg2Ff6"
    echoed = {"id": other, "name": f"x{other}", "arguments": {"ref": other}}
    reply = {"text": other, "stopReason": "toolUse", "toolCalls": [echoed], "toolsCarried": True}
    peer = Peer(reply)
    request = ask()
    leaky = (Message("user", f"the key is {other}"), *request.messages[1:])
    with anyio.fail_after(10):
        result = await complete(
            replace(request, messages=leaky),
            budget=Budget.after(10),
            client=client,
            peer=peer,
            redactor=Redactor([other]),
        )
    assert other[:12] not in json.dumps(peer.params) and MARK in json.dumps(peer.params)
    [call] = result.tool_calls
    assert (call.id, call.name, dict(call.arguments), result.text) == (MARK, f"x{MARK}", {"ref": MARK}, MARK)
