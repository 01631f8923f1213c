"""Checks the scripted model server speaks the OpenAI wire format, so failures point at pi or Longhaul."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.answers import PI_OWN_MARKER, diff_answer
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.replies import text, tool_call
from longhaul_daemon.passes.prompting.instructions import SYSTEM_PROMPT as DIFF_SYSTEM_PROMPT

pytestmark = pytest.mark.e2e

AGENT_SYSTEM = "You are an expert coding assistant operating inside pi, a coding agent harness."


def _post(server: ModelServer, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": "Bearer k"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        data: bytes = response.read()
        return data


def _sse(raw: bytes) -> list[Any]:
    events = [line[len(b"data: ") :] for line in raw.split(b"\n") if line.startswith(b"data: ")]
    assert events[-1] == b"[DONE]"
    return [json.loads(e) for e in events[:-1]]


def _agent_body(last: dict[str, Any], *, stream: bool = True) -> dict[str, Any]:
    return {
        "model": "fake-model",
        "stream": stream,
        "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {"name": "bash", "parameters": {}}}],
        "messages": [{"role": "system", "content": AGENT_SYSTEM}, last],
    }


def test_streams_text_tool_calls_and_usage(model_server: ModelServer) -> None:
    model_server.enqueue(tool_call("bash", command="echo ok"), text("done"))
    chunks = _sse(_post(model_server, _agent_body({"role": "user", "content": "go [[tokens=30000]]"})))
    calls = [tc for c in chunks for ch in c["choices"] for tc in ch["delta"].get("tool_calls", [])]
    assert calls[0]["function"]["name"] == "bash" and calls[0]["id"].startswith("call_fake_")
    assert json.loads("".join(tc["function"]["arguments"] for tc in calls)) == {"command": "echo ok"}
    finishes = [ch["finish_reason"] for c in chunks for ch in c["choices"] if ch["finish_reason"]]
    assert finishes == ["tool_calls"]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 30000

    chunks = _sse(_post(model_server, _agent_body({"role": "tool", "tool_call_id": "x", "content": "ok"})))
    content = "".join(ch["delta"].get("content") or "" for c in chunks for ch in c["choices"])
    assert content == "done"
    chunks = _sse(_post(model_server, _agent_body({"role": "tool", "tool_call_id": "y", "content": "out"})))
    content = "".join(ch["delta"].get("content") or "" for c in chunks for ch in c["choices"])
    assert content == "TOOL-SEEN: out"

    recorded = model_server.requests()
    assert [r.kind for r in recorded] == ["agent", "agent", "agent"]
    assert recorded[0].authorization == "Bearer k"


def test_non_streaming_and_request_kinds(model_server: ModelServer) -> None:
    body = _agent_body({"role": "user", "content": "hello"}, stream=False)
    answer = json.loads(_post(model_server, body))
    assert answer["choices"][0]["message"]["content"] == "ACK: hello"
    assert answer["usage"]["prompt_tokens"] > 0

    summary_body = {
        "model": "fake-model",
        "stream": True,
        "messages": [
            {"role": "system", "content": "You are a context summarization assistant. Read it."},
            {"role": "user", "content": "<conversation>...</conversation>"},
        ],
    }
    first = "".join(
        ch["delta"].get("content") or ""
        for c in _sse(_post(model_server, summary_body))
        for ch in c["choices"]
    )
    second = "".join(
        ch["delta"].get("content") or ""
        for c in _sse(_post(model_server, summary_body))
        for ch in c["choices"]
    )
    assert first.startswith("## Goal") and PI_OWN_MARKER in first and first != second

    prompt = "Messages u1, u2 and u3.\n\nLabel exactly these messages: u1, u3."
    other = {
        "model": "fake-model",
        "messages": [{"role": "system", "content": DIFF_SYSTEM_PROMPT}, {"role": "user", "content": prompt}],
    }
    reply = json.loads(_post(model_server, other))["choices"][0]["message"]["content"]
    assert reply == diff_answer(prompt)
    assert list(json.loads(reply)["labels"]) == ["u1", "u3"]  # keyed by message id, as the schema asks
    assert [r.kind for r in model_server.requests()] == ["agent", "pi-summary", "pi-summary", "other"]
