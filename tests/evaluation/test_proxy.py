"""The recording proxy passes a streamed answer through and reads the usage each wire format reports."""

from __future__ import annotations

import json

import httpx

from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.proxy import CallRecord, RecordingProxy, usage_of
from longhaul_daemon.passes.prompting.instructions import SYSTEM_PROMPT


def test_usage_is_read_from_each_providers_own_shape() -> None:
    anthropic = CallRecord()
    usage_of(
        {"type": "message_start", "message": {"usage": {"input_tokens": 812, "output_tokens": 1}}}, anthropic
    )
    usage_of({"type": "message_delta", "usage": {"output_tokens": 97}}, anthropic)
    assert (anthropic.input_tokens, anthropic.output_tokens) == (812, 97)

    responses = CallRecord()
    usage_of(
        {"type": "response.completed", "response": {"usage": {"input_tokens": 40, "output_tokens": 7}}},
        responses,
    )
    assert (responses.input_tokens, responses.output_tokens) == (40, 7)

    google = CallRecord()
    usage_of({"usageMetadata": {"promptTokenCount": 55, "candidatesTokenCount": 3}}, google)
    usage_of({"usageMetadata": {"promptTokenCount": 55, "candidatesTokenCount": 12}}, google)
    assert (google.input_tokens, google.output_tokens) == (55, 12)

    ignored = CallRecord()
    usage_of({"usage": {"prompt_tokens": "many", "completion_tokens": True}}, ignored)
    assert (ignored.input_tokens, ignored.output_tokens) == (0, 0)


def test_a_streamed_call_passes_through_and_is_counted_under_its_tag() -> None:
    body = {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": "hello " * 40},
        ],
    }
    with ModelServer(longhaul=lambda _: "the answer text") as model, RecordingProxy(model.base_url) as proxy:
        url = proxy.base_url("run-7") + "/chat/completions"
        with httpx.stream(
            "POST", url, json=body, headers={"Authorization": "Bearer k"}, timeout=30
        ) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            raw = b"".join(response.iter_bytes())
        events = [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: {")]
        text = "".join(c["delta"].get("content", "") for e in events for c in e["choices"])
        assert text == "the answer text"
        [call] = proxy.calls("run-7")
        assert proxy.calls("other") == []
        served = model.stats()["other"]  # the daemon's call
        assert (call.status, call.input_tokens, call.output_tokens) == (
            200,
            served.input_tokens,
            served.output_tokens,
        )
        assert call.input_tokens > 0 and call.seconds > 0
