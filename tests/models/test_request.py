"""Request shaping: reasoning off or lowest (DIFF-18), per-model compat flags, and unsupported apis."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import replace

import anyio
import pytest

from longhaul_daemon.models import (
    Budget,
    CallTrace,
    FatalError,
    ModelRequest,
    ModelTarget,
    ProviderLimits,
    RetryableError,
    UnsupportedApi,
    complete,
    make_client,
    provider_for,
)
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.request import Compat, plan_reasoning
from longhaul_daemon.protocol import ModelFacts

from .scripted_http import Reply, scripted_server
from .wires import ANTHROPIC_MESSAGES, GOOGLE, OPENAI_COMPLETIONS, OPENAI_RESPONSES, request


def _target(reasoning: bool, levels: tuple[str, ...]) -> ModelTarget:
    return ModelTarget(
        api="x",
        provider="p",
        model_id="m",
        base_url="http://h",
        reasoning=reasoning,
        compat=Compat(reasoning_levels=levels),
    )


def test_plan_reasoning() -> None:
    assert plan_reasoning(_target(False, ("none", "low")), "off").wire is None
    off = plan_reasoning(_target(True, ("none", "low", "high")), "off")
    assert (off.wire, off.recorded) == ("none", None)
    lowest = plan_reasoning(_target(True, ("minimal", "low", "high")), "off")
    assert (lowest.wire, lowest.recorded) == ("minimal", "minimal")
    asked = plan_reasoning(_target(True, ("minimal", "low", "high")), "high")
    assert (asked.wire, asked.recorded) == ("high", "high")
    unknown = plan_reasoning(_target(True, ("none", "low", "high")), "xhigh")
    assert (unknown.wire, unknown.recorded) == ("low", "low")


def test_reasoning_on_the_wire_per_provider() -> None:
    oc_call, oc_rec = provider_for("openai-completions").prepare(
        request(OPENAI_COMPLETIONS, "http://h", reasoning=True)
    )
    assert (oc_call.body["reasoning_effort"], oc_rec) == ("minimal", "minimal")
    no_effort = request(OPENAI_COMPLETIONS, "http://h", reasoning=True, supports_reasoning_effort=False)
    call, rec = provider_for("openai-completions").prepare(no_effort)
    assert "reasoning_effort" not in call.body
    assert rec == "default"
    call, rec = provider_for("openai-completions").prepare(request(OPENAI_COMPLETIONS, "http://h"))
    assert "reasoning_effort" not in call.body and rec is None
    call, rec = provider_for("anthropic-messages").prepare(
        request(ANTHROPIC_MESSAGES, "http://h", reasoning=True)
    )
    assert (call.body["thinking"], rec) == ({"type": "disabled"}, None)
    call, rec = provider_for("openai-responses").prepare(
        request(OPENAI_RESPONSES, "http://h", reasoning=True)
    )
    assert (call.body["reasoning"], rec) == ({"effort": "minimal", "summary": "auto"}, "minimal")
    assert call.body["include"] == ["reasoning.encrypted_content"]  # as pi-ai asks for a level
    call, rec = provider_for("google-generative-ai").prepare(request(GOOGLE, "http://h", reasoning=True))
    assert call.body["generationConfig"]["thinkingConfig"] == {"thinkingBudget": 0}
    # as pi-ai: a level is a budget by model family (2.5 Pro here), a thinkingLevel on Gemini 3 and Gemma 4
    pro = request(GOOGLE, "http://h", reasoning=True, reasoning_levels=("low", "high"))
    pro = replace(pro, target=replace(pro.target, model_id="gemini-2.5-pro"))
    call, rec = provider_for("google-generative-ai").prepare(pro)
    assert (call.body["generationConfig"]["thinkingConfig"], rec) == (
        {"includeThoughts": True, "thinkingBudget": 2048},
        "low",
    )
    gemini3 = request(GOOGLE, "http://h", reasoning=True, reasoning_levels=("minimal", "low"))
    gemini3 = replace(gemini3, target=replace(gemini3.target, model_id="gemini-3-flash-preview"))
    call, rec = provider_for("google-generative-ai").prepare(gemini3)
    assert (call.body["generationConfig"]["thinkingConfig"]["thinkingLevel"], rec) == ("MINIMAL", "minimal")


def test_compat_flags_for_local_servers() -> None:
    local = request(
        OPENAI_COMPLETIONS,
        "http://h",
        max_tokens_field="max_tokens",
        supports_usage_in_streaming=False,
        supports_store=False,
    )
    call, _ = provider_for("openai-completions").prepare(local)
    assert call.body["max_tokens"] == 256
    assert "max_completion_tokens" not in call.body and "stream_options" not in call.body
    assert "store" not in call.body
    assert call.body["messages"][0]["role"] == "system"  # pi-ai: developer only for a reasoning model
    reasoning = replace(local, target=replace(local.target, reasoning=True))
    call, _ = provider_for("openai-completions").prepare(reasoning)
    assert call.body["messages"][0]["role"] == "developer"
    plain, _ = provider_for("openai-completions").prepare(request(OPENAI_COMPLETIONS, "http://h"))
    assert plain.body["store"] is False


def test_anthropic_version_is_configurable_and_extra_headers_win() -> None:
    req = request(ANTHROPIC_MESSAGES, "http://h", anthropic_version="2026-10-21")
    call, _ = provider_for("anthropic-messages").prepare(req)
    assert call.headers["anthropic-version"] == "2026-10-21"
    facts = ModelFacts(
        provider="anthropic", id="claude", api="anthropic-messages", baseUrl="https://a/", reasoning=True
    )
    target = ModelTarget.from_facts(facts, api_key=None, headers={"Authorization": "Bearer oauth"})
    call, _ = provider_for("anthropic-messages").prepare(
        ModelRequest(target=target, system="", messages=req.messages, max_output_tokens=5)
    )
    assert "x-api-key" not in call.headers and call.headers["Authorization"] == "Bearer oauth"
    assert call.url == "https://a/v1/messages" and "system" not in call.body


@pytest.mark.anyio
async def test_unsupported_api_raises_before_any_io() -> None:
    req = request(OPENAI_COMPLETIONS, "http://127.0.0.1:9")
    odd = ModelRequest(
        target=ModelTarget(api="bedrock-converse-stream", provider="b", model_id="m", base_url=""),
        system="",
        messages=req.messages,
        max_output_tokens=5,
    )
    async with make_client() as client:
        with anyio.fail_after(5), pytest.raises(UnsupportedApi) as caught:
            await complete(odd, budget=Budget.after(5), client=client)
    assert caught.value.api == "bedrock-converse-stream"


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


@pytest.mark.anyio
async def test_connection_refused_is_retried_then_given_up(client: HttpClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed when the block ends: nothing listens there
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    traces: list[CallTrace] = []
    with anyio.fail_after(10), pytest.raises(RetryableError) as caught:
        await complete(
            request(OPENAI_COMPLETIONS, f"http://127.0.0.1:{port}"),
            budget=Budget.after(30),
            client=client,
            sleep=sleep,
            rand=lambda: 0.0,
            on_trace=traces.append,
        )
    assert caught.value.code == "ConnectError"
    assert caught.value.attempts == 4 and len(waits) == 3
    assert traces[0].error == "RetryableError" and traces[0].attempts == 4


@pytest.mark.anyio
async def test_concurrency_limit_per_provider(client: HttpClient) -> None:
    limits = ProviderLimits(default=1)
    wire = OPENAI_COMPLETIONS
    with scripted_server([Reply(hang_before_headers=True), wire.stream_reply(["second"])]) as server:
        req = request(wire, server.url)
        limiter = limits.limiter(req.target.limit_key)
        results: list[str] = []
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                first = anyio.CancelScope()

                async def hanging() -> None:
                    with first:
                        await complete(req, budget=Budget.after(60), client=client, limits=limits)

                async def second() -> None:
                    results.append(
                        (await complete(req, budget=Budget.after(60), client=client, limits=limits)).text
                    )

                tg.start_soon(hanging)
                assert await anyio.to_thread.run_sync(server.holding.wait, 5)
                tg.start_soon(second)
                while limiter.statistics().tasks_waiting < 1:  # noqa: ASYNC110 - a limiter has no event to wait on
                    await anyio.sleep(0.01)
                assert len(server.requests) == 1
                first.cancel()
        assert results == ["second"]
        assert len(server.requests) == 2
        assert limiter.borrowed_tokens == 0


def test_limits_reject_nonpositive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ProviderLimits(default=0)


@pytest.mark.anyio
async def test_a_bad_url_is_fatal_not_retried(client: HttpClient) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with anyio.fail_after(5), pytest.raises(FatalError) as caught:
        await complete(
            request(OPENAI_COMPLETIONS, "http://bad host:x"),
            budget=Budget.after(5),
            client=client,
            sleep=sleep,
        )
    assert caught.value.attempts == 1 and waits == []


@pytest.mark.anyio
@pytest.mark.parametrize("text", ["plain \u2028 é ✓", "a lone \ud83d surrogate"])
async def test_the_body_goes_out_as_json_the_server_reads_back(client: HttpClient, text: str) -> None:
    """orjson writes the body; what it cannot write (a lone surrogate) goes out with ASCII escapes."""
    wire = OPENAI_COMPLETIONS
    with scripted_server([wire.stream_reply(["ok"])]) as server:
        req = request(wire, server.url)
        req = ModelRequest(target=req.target, system=text, messages=req.messages, max_output_tokens=16)
        with anyio.fail_after(10):
            result = await complete(req, budget=Budget.after(10), client=client)
    assert result.text == "ok"
    sent = server.requests[0]
    assert sent.headers["content-type"] == "application/json"
    assert [m["content"] for m in sent.body["messages"] if m["role"] in ("system", "developer")] == [text]
