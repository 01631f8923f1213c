"""PASS-22, FAIL-17, FAIL-19: ``model.complete`` through the shim, under the daemon's retries, budget, trace.

The peer is the edge here (the shim on the other end of the connection; the socket side is covered by
tests/server/test_peer.py and the e2e test with a real pi), so a scripted peer stands in for it.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import anyio
import pytest
from pydantic import SecretStr

from longhaul_daemon.models import (
    Budget,
    BudgetExceeded,
    CallTrace,
    FatalError,
    Message,
    ModelRequest,
    ModelTarget,
    ProviderLimits,
    QuotaExceeded,
    UnsupportedApi,
    complete,
    make_client,
)
from longhaul_daemon.models.call_route import goes_through_pi
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.via_pi import NoteSink, ShimConnectionLost, ShimErrorReply

KEY = "sk-via-pi-test-key-0123456789"
PROMPT = "PROMPT-TEXT-7f3a"
HANG = object()


class ScriptedShim:
    """Answers ``model.complete`` from a queue: a result dict, an exception to raise, or HANG."""

    def __init__(self, *outcomes: object) -> None:
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.running = 0
        self.most_running = 0

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        self.calls.append((method, params))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            outcome = self.outcomes.pop(0)
            if outcome is HANG:
                await anyio.sleep_forever()
            await anyio.sleep(0.01)  # a real call takes a moment; lets concurrency show
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        finally:
            self.running -= 1


def reply(text: str = "answer", stop: str = "stop", **usage: int) -> dict[str, Any]:
    return {"text": text, "stopReason": stop, "usage": usage, "responseId": "resp_1"}


def retryable(status: int | None = 503) -> ShimErrorReply:
    return ShimErrorReply(-32010, {"kind": "retryable", "status": status})


def pi_request(api: str = "bedrock-converse-stream", *, reasoning: str = "off") -> ModelRequest:
    target = ModelTarget(
        api=api,
        provider="amazon-bedrock",
        model_id="anthropic.claude-x",
        base_url="http://127.0.0.1:9",
        api_key=SecretStr(KEY),
    )
    return ModelRequest(
        target=target,
        system="SYSTEM",
        messages=(Message("user", PROMPT),),
        max_output_tokens=512,
        reasoning=reasoning,
        kind="first",
    )


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


async def no_wait(_seconds: float) -> None:
    return None


@pytest.mark.anyio
async def test_an_api_the_daemon_lacks_goes_through_the_shim_without_the_key(client: HttpClient) -> None:
    shim = ScriptedShim(reply("T", cacheRead=5, input=10, output=3, reasoning=2))
    traces: list[CallTrace] = []
    result = await complete(
        pi_request(reasoning="high"),
        budget=Budget.after(30),
        client=client,
        peer=shim,
        on_trace=traces.append,
    )
    assert (result.text, result.stop_reason, result.request_id) == ("T", "stop", "resp_1")
    assert result.usage.as_dict() == {
        "input": 10,
        "output": 3,
        "cacheRead": 5,
        "cacheWrite": 0,
        "reasoning": 2,
    }
    [(method, params)] = shim.calls
    assert method == "model.complete"
    assert params == {
        "model": {"provider": "amazon-bedrock", "id": "anthropic.claude-x"},
        "system": "SYSTEM",
        "messages": [{"role": "user", "text": PROMPT}],
        "maxTokens": 512,
        "reasoning": "high",
        "stream": True,
    }
    assert KEY not in json.dumps(params)
    [trace] = traces
    assert trace.as_dict()["via"] == "pi" and trace.api == "bedrock-converse-stream"
    assert (trace.reasoning, trace.attempts, trace.output_budget) == ("high", 1, 512)
    assert trace.usage.cache_read == 5


@pytest.mark.anyio
async def test_an_api_named_in_via_pi_goes_through_the_shim_not_http(client: HttpClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens: a direct HTTP call would fail to connect
    request = pi_request("openai-completions")
    request = ModelRequest(
        target=ModelTarget(
            api="openai-completions", provider="p", model_id="m", base_url=f"http://127.0.0.1:{port}"
        ),
        system=request.system,
        messages=request.messages,
        max_output_tokens=request.max_output_tokens,
    )
    shim = ScriptedShim(reply("cut", stop="length"))
    result = await complete(
        request, budget=Budget.after(30), client=client, peer=shim, via_pi_apis={"openai-completions"}
    )
    assert result.cut_off and result.text == "cut"
    assert len(shim.calls) == 1


def test_the_route_decision() -> None:
    shim = ScriptedShim()
    local = ModelTarget(
        api="openai-completions",
        provider="local",
        model_id="m",
        base_url="http://h/v1",
        api_key=SecretStr(KEY),
    )
    assert goes_through_pi(pi_request().target, peer=shim)
    assert goes_through_pi(replace(local, api=None), peer=shim)
    assert not goes_through_pi(local, peer=shim)
    assert goes_through_pi(local, peer=shim, via_pi_apis=frozenset({"openai-completions"}))
    assert not goes_through_pi(local, peer=None, via_pi_apis=frozenset({"openai-completions"}))
    assert not goes_through_pi(pi_request().target, peer=None)


@pytest.mark.anyio
async def test_without_a_peer_an_unspoken_api_fails_before_any_io(client: HttpClient) -> None:
    traces: list[CallTrace] = []
    with pytest.raises(UnsupportedApi):
        await complete(pi_request(), budget=Budget.after(30), client=client, on_trace=traces.append)
    assert traces == []


@pytest.mark.anyio
async def test_retryable_replies_are_retried_with_backoff(client: HttpClient) -> None:
    """FAIL-19: the daemon's retry policy applies to calls made by pi."""
    shim = ScriptedShim(retryable(529), ShimConnectionLost(), reply("third"))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    traces: list[CallTrace] = []
    result = await complete(
        pi_request(), budget=Budget.after(30), client=client, peer=shim, sleep=sleep, rand=lambda: 0.0,
        on_trace=traces.append,
    )  # fmt: skip
    assert result.text == "third"
    assert waits == [0.5, 1.0]
    assert len(shim.calls) == 3 and traces[0].attempts == 3 and traces[0].error is None


@pytest.mark.parametrize(
    ("error", "expected", "code"),
    [
        (ShimErrorReply(-32010, {"kind": "quota", "status": 429, "code": "insufficient_quota"}),
         QuotaExceeded, "insufficient_quota"),
        (ShimErrorReply(-32010, {"kind": "fatal", "status": 400}), FatalError, "shim-error"),
        (ShimErrorReply(-32601), FatalError, "shim-without-model-complete"),
        (ShimErrorReply(-32010, {"kind": "something-new"}), FatalError, "unclassified"),
    ],
)  # fmt: skip
@pytest.mark.anyio
async def test_quota_and_fatal_replies_are_not_retried(
    client: HttpClient, error: ShimErrorReply, expected: type[FatalError], code: str
) -> None:
    shim = ScriptedShim(error, reply())
    traces: list[CallTrace] = []
    with pytest.raises(expected) as caught:
        await complete(
            pi_request(),
            budget=Budget.after(30),
            client=client,
            peer=shim,
            sleep=no_wait,
            on_trace=traces.append,
        )
    assert type(caught.value) is expected
    assert caught.value.code == code and not caught.value.retryable
    assert len(shim.calls) == 1
    assert traces[0].error == expected.__name__ and traces[0].via == "pi"


@pytest.mark.anyio
async def test_a_malformed_reply_is_fatal(client: HttpClient) -> None:
    shim = ScriptedShim({"stopReason": "stop"})
    with pytest.raises(FatalError) as caught:
        await complete(pi_request(), budget=Budget.after(30), client=client, peer=shim)
    assert caught.value.code == "malformed-shim-reply"


@pytest.mark.anyio
async def test_a_shim_past_the_budget_is_cut_off_and_traced(client: HttpClient) -> None:
    shim = ScriptedShim(HANG)
    traces: list[CallTrace] = []
    with anyio.fail_after(10), pytest.raises(BudgetExceeded):
        await complete(
            pi_request(), budget=Budget.after(0.2), client=client, peer=shim, on_trace=traces.append
        )
    assert traces[0].error == "BudgetExceeded" and shim.running == 0


@pytest.mark.anyio
async def test_calls_through_the_shim_share_the_provider_limit(client: HttpClient) -> None:
    shim = ScriptedShim(reply("a"), reply("b"), reply("c"))
    limits = ProviderLimits(default=1)
    texts: list[str] = []

    async def one() -> None:
        result = await complete(
            pi_request(), budget=Budget.after(30), client=client, peer=shim, limits=limits
        )
        texts.append(result.text)

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(one)
    assert sorted(texts) == ["a", "b", "c"] and shim.most_running == 1


@pytest.mark.anyio
async def test_no_key_or_prompt_reaches_errors_or_traces(client: HttpClient) -> None:
    shim = ScriptedShim(ShimErrorReply(-32010, {"kind": "fatal", "code": KEY}))
    traces: list[CallTrace] = []
    with pytest.raises(FatalError) as caught:
        await complete(
            pi_request(), budget=Budget.after(30), client=client, peer=shim, on_trace=traces.append
        )
    everything = str(caught.value) + repr(caught.value) + json.dumps([t.as_dict() for t in traces])
    assert KEY not in everything and PROMPT not in everything
