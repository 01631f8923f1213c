"""What the daemon sends a model and keeps from its reply carries no credential of the pass, and a request's
size is what goes on the wire."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from pydantic import SecretStr

from longhaul_daemon.models.call_route import provider_for, wire_chars
from longhaul_daemon.models.completion import CompletionResult, Usage
from longhaul_daemon.models.request import Message, ModelRequest, ModelTarget
from longhaul_daemon.models.scrubbing import scrubbed_reply, scrubbed_request
from longhaul_daemon.models.tool_calls import ToolCall, ToolResult
from longhaul_daemon.passes.turns.show import SHOW_TOOL
from longhaul_daemon.secrets.redaction import MARK, Redactor

OTHER_KEY = "sk-other-route-Hh3Jj8Gg2Ff6"  # the other route's key, which this provider must never see
REDACTOR = Redactor([OTHER_KEY])
APIS = ("openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai")


def target(api: str = "openai-completions") -> ModelTarget:
    return ModelTarget(
        api=api,
        provider="p",
        model_id="m",
        base_url="http://127.0.0.1:9/v1",
        api_key=SecretStr("sk-own-key-1234"),
    )


def conversation(text: str) -> tuple[Message, ...]:
    call = ToolCall(f"id-{text}", f"name-{text}", {"ref": text, "pad": [text]}, signature=f"sig{text}")
    return (
        Message("user", f"look at {text}"),
        Message("assistant", text, tool_calls=(call,)),
        Message("user", "", tool_results=(ToolResult(f"id-{text}", f"name-{text}", f"error: {text[:40]}"),)),
    )


def test_every_text_a_request_carries_is_scrubbed_ids_names_arguments_and_results_too() -> None:
    request = ModelRequest(target(), f"system {OTHER_KEY}", conversation(OTHER_KEY), max_output_tokens=64)
    scrubbed = scrubbed_request(request, REDACTOR)
    body = json.dumps(provider_for("openai-completions").prepare(scrubbed)[0].body)
    assert OTHER_KEY[:12] not in body and OTHER_KEY[-12:] not in body and MARK in body
    call = scrubbed.messages[1].tool_calls[0]
    assert (call.id, call.name, call.arguments["pad"], call.signature) == (
        f"id-{MARK}",
        f"name-{MARK}",
        [MARK],
        None,
    )
    clean = ModelRequest(target(), "system", conversation("u1"), max_output_tokens=64)
    assert scrubbed_request(clean, REDACTOR) is clean  # nothing to take out: the same object


def test_a_replys_text_calls_and_request_id_are_scrubbed_as_they_arrive() -> None:
    call = ToolCall(OTHER_KEY, OTHER_KEY, {"ref": OTHER_KEY}, signature=f"x{OTHER_KEY}")
    reply = CompletionResult(
        f"a {OTHER_KEY}", "stop", "stop", Usage(), request_id=OTHER_KEY, tool_calls=(call,)
    )
    scrubbed = scrubbed_reply(reply, REDACTOR)
    assert scrubbed.text == f"a {MARK}" and scrubbed.request_id == "redacted"
    assert scrubbed.tool_calls == (ToolCall(MARK, MARK, {"ref": MARK}, None),)


@pytest.mark.parametrize("api", APIS)
def test_a_requests_size_is_its_body_as_sent_framing_included_and_json_text_not_repr(api: str) -> None:
    """10,000 U+202E in a call's arguments are 10,000 characters of JSON text on the wire (Python's repr of
    them was 60,000), and the message framing, the tool and the schema all count."""
    messages = conversation("\u202e" * 10_000)
    request = ModelRequest(target(api), "system", messages, max_output_tokens=64, tools=(SHOW_TOOL,))
    body = provider_for(api).prepare(request)[0].body
    sent = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    assert wire_chars(request, peer=None) == len(sent)
    assert len(json.dumps(body)) > 5 * len(sent)  # escaped as \u202e, or as repr had it, it would be 6x
    plain = replace(request, messages=(Message("user", "hi"),), tools=())
    assert wire_chars(plain, peer=None) > len("system") + len("hi")  # framing counts
