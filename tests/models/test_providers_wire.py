"""Every provider against a scripted server in its real wire format: results, retries, budget, cancel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import pytest

from longhaul_daemon.models import (
    Budget,
    BudgetExceeded,
    CallTrace,
    ModelCallError,
    QuotaExceeded,
    StreamError,
    complete,
    make_client,
)
from longhaul_daemon.models.http import HttpClient

from .scripted_http import Reply, json_reply, scripted_server
from .wires import WIRES, Wire, request

pytestmark = pytest.mark.anyio

WIRE_IDS = [w.api for w in WIRES]


class Sleeps:
    """Records retry waits instead of sleeping them: outcomes are asserted, never durations."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await anyio.lowlevel.checkpoint()


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_happy_path(wire: Wire, stream: bool, client: HttpClient) -> None:
    reply = (
        wire.stream_reply(["Hel", "lo\u2028 wor", "ld"]) if stream else wire.json_reply("Hello\u2028 world")
    )
    traces: list[CallTrace] = []
    with scripted_server([reply]) as server, anyio.fail_after(10):
        result = await complete(
            request(wire, server.url, stream=stream),
            budget=Budget.after(10),
            client=client,
            on_trace=traces.append,
        )
    assert result.text == "Hello\u2028 world"
    assert result.stop_reason == "stop"
    assert result.raw_stop == wire.stop_raw
    assert result.usage == wire.usage
    assert result.request_id == "req_ok"
    assert len(server.requests) == 1
    wire.check(server.requests[0], stream)
    [trace] = traces
    assert trace.as_dict()["usage"] == wire.usage.as_dict()
    assert (trace.attempts, trace.kind, trace.output_budget, trace.request_id) == (1, "first", 256, "req_ok")
    assert trace.error is None


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_cut_at_output_limit_is_length(wire: Wire, stream: bool, client: HttpClient) -> None:
    reply = (
        wire.stream_reply(["par", "tial"], cut_off=True)
        if stream
        else wire.json_reply("partial", cut_off=True)
    )
    with scripted_server([reply]) as server, anyio.fail_after(10):
        result = await complete(
            request(wire, server.url, stream=stream), budget=Budget.after(10), client=client
        )
    assert (result.text, result.stop_reason, result.raw_stop) == ("partial", "length", wire.length_raw)
    assert result.cut_off


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_429_then_529_then_success(wire: Wire, client: HttpClient) -> None:
    script = [
        json_reply(
            {"error": {"type": "rate_limit_error", "message": "slow down"}},
            status=429,
            headers={"retry-after-ms": "5", "retry-after": "7"},
        ),
        json_reply(
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529
        ),
        wire.stream_reply(["ok"]),
    ]
    sleeps = Sleeps()
    traces: list[CallTrace] = []
    with scripted_server(script) as server, anyio.fail_after(10):
        result = await complete(
            request(wire, server.url),
            budget=Budget.after(30),
            client=client,
            sleep=sleeps,
            rand=lambda: 0.0,
            on_trace=traces.append,
        )
    assert result.text == "ok"
    assert sleeps.waits == [0.005, 1.0]  # retry-after-ms wins over retry-after; then backoff 0.5·2^1
    assert len(server.requests) == 3
    assert traces[0].attempts == 3


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_quota_429_is_not_retried(wire: Wire, client: HttpClient) -> None:
    sleeps = Sleeps()
    with (
        scripted_server([json_reply(wire.quota_body, status=429), wire.stream_reply(["never"])]) as server,
        anyio.fail_after(10),
        pytest.raises(QuotaExceeded) as caught,
    ):
        await complete(request(wire, server.url), budget=Budget.after(30), client=client, sleep=sleeps)
    assert len(server.requests) == 1
    assert sleeps.waits == []
    assert caught.value.attempts == 1
    assert caught.value.status == 429


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_500_with_should_retry_false_is_not_retried(wire: Wire, client: HttpClient) -> None:
    script = [
        json_reply(
            {"error": {"type": "api_error", "message": "boom"}},
            status=500,
            headers={"x-should-retry": "false"},
        ),
        wire.stream_reply(["never"]),
    ]
    with scripted_server(script) as server, anyio.fail_after(10), pytest.raises(ModelCallError) as caught:
        await complete(request(wire, server.url), budget=Budget.after(30), client=client, sleep=Sleeps())
    assert len(server.requests) == 1
    assert caught.value.status == 500
    assert not caught.value.retryable


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_should_retry_true_overrides_a_400(wire: Wire, client: HttpClient) -> None:
    script = [
        json_reply(
            {"error": {"type": "invalid_request_error"}}, status=400, headers={"x-should-retry": "true"}
        ),
        wire.stream_reply(["ok"]),
    ]
    with scripted_server(script) as server, anyio.fail_after(10):
        result = await complete(
            request(wire, server.url), budget=Budget.after(30), client=client, sleep=Sleeps()
        )
    assert result.text == "ok"
    assert len(server.requests) == 2


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_mid_stream_error_before_text_is_retried(wire: Wire, client: HttpClient) -> None:
    traces: list[CallTrace] = []
    with (
        scripted_server([wire.error_stream_reply(), wire.stream_reply(["ok"])]) as server,
        anyio.fail_after(10),
    ):
        result = await complete(
            request(wire, server.url),
            budget=Budget.after(30),
            client=client,
            sleep=Sleeps(),
            on_trace=traces.append,
        )
    assert result.text == "ok"
    assert len(server.requests) == 2
    assert traces[0].attempts == 2


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_mid_stream_error_after_text_is_not_retried(wire: Wire, client: HttpClient) -> None:
    broken = Reply(
        headers={"content-type": "text/event-stream"},
        chunks=[*wire.stream(["some text"], False)[:-1], wire.overloaded_event],
    )
    with (
        scripted_server([broken, wire.stream_reply(["never"])]) as server,
        anyio.fail_after(10),
        pytest.raises(StreamError) as caught,
    ):
        await complete(request(wire, server.url), budget=Budget.after(30), client=client, sleep=Sleeps())
    assert caught.value.got_text
    assert len(server.requests) == 1


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_slow_server_past_budget_is_cancelled(wire: Wire, client: HttpClient) -> None:
    with (
        scripted_server([Reply(hang_before_headers=True)]) as server,
        anyio.fail_after(10),
        pytest.raises(BudgetExceeded) as caught,
    ):
        await complete(request(wire, server.url), budget=Budget.after(0.3), client=client, sleep=Sleeps())
        assert caught.value.attempts == 1
        with anyio.fail_after(5):
            assert await anyio.to_thread.run_sync(server.disconnected.wait, 5)


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_cancelling_the_caller_closes_the_connection(wire: Wire, client: HttpClient) -> None:
    traces: list[CallTrace] = []
    with scripted_server([wire.first_event_then_hang()]) as server:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    await complete(
                        request(wire, server.url),
                        budget=Budget.after(60),
                        client=client,
                        on_trace=traces.append,
                    )

                tg.start_soon(call)
                assert await anyio.to_thread.run_sync(server.holding.wait, 5)
                tg.cancel_scope.cancel()
            assert await anyio.to_thread.run_sync(server.disconnected.wait, 5)
    assert [t.error for t in traces] == ["Cancelled"]


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_retry_wait_past_the_deadline_is_not_started(wire: Wire, client: HttpClient) -> None:
    script = [json_reply({"error": {"type": "rate_limit_error"}}, status=429, headers={"retry-after": "60"})]
    sleeps = Sleeps()
    with scripted_server(script) as server, anyio.fail_after(10), pytest.raises(BudgetExceeded) as caught:
        await complete(request(wire, server.url), budget=Budget.after(5), client=client, sleep=sleeps)
    assert sleeps.waits == []
    assert caught.value.status == 429
    assert len(server.requests) == 1
