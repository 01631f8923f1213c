"""Frame dispatch without sockets: every JSON-RPC error kind, batches, notifications, leak scrubbing."""

from __future__ import annotations

import json
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel, ConfigDict

from longhaul_daemon.rpc.dispatch import Dispatcher
from longhaul_daemon.rpc.registry import RpcMethod, RpcOutcome, rpc

MARKER = "MARKER-b41c-do-not-leak"


class PingParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    value: int = 0


class PingResult(BaseModel):
    value: int


def make_dispatcher(calls: list[int] | None = None) -> Dispatcher:
    seen = calls if calls is not None else []

    @rpc("ping", PingParams)
    async def ping(params: PingParams) -> PingResult:
        seen.append(params.value)
        return PingResult(value=params.value)

    async def raw_crash(*_args: Any, **_kwargs: Any) -> RpcOutcome:
        raise RuntimeError(MARKER)  # bypasses our wrapper: jsonrpcserver itself would put this text in data

    return Dispatcher({"ping": ping, "crash": RpcMethod("crash", raw_crash)}, max_batch=4)


async def dispatch(frame: bytes | str, dispatcher: Dispatcher | None = None) -> Any:
    data = frame.encode() if isinstance(frame, str) else frame
    with anyio.fail_after(10):
        reply = await (dispatcher or make_dispatcher()).dispatch(data)
    return None if reply is None else json.loads(reply)


def request(method: str, params: object = None, request_id: object = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": request_id}
    if params is not None:
        message["params"] = params
    return message


@pytest.mark.anyio
async def test_success() -> None:
    reply = await dispatch(json.dumps(request("ping", {"value": 3}, 7)))
    assert reply == {"jsonrpc": "2.0", "result": {"value": 3}, "id": 7}


@pytest.mark.anyio
@pytest.mark.parametrize("frame", ["{", "nul", b"\xff\xfe{}", "[" * 100_000])
async def test_unparseable_frames_get_parse_error(frame: str | bytes) -> None:
    reply = await dispatch(frame)
    assert reply["error"]["code"] == -32700
    assert reply["id"] is None


@pytest.mark.anyio
@pytest.mark.parametrize(
    "message",
    [5, "ping", None, {"jsonrpc": "1.0", "method": "ping", "id": 1}, {"method": "ping", "id": 1}, {"id": 1}],
)
async def test_invalid_envelopes_get_invalid_request(message: object) -> None:
    reply = await dispatch(json.dumps(message))
    assert reply["error"]["code"] == -32600


@pytest.mark.anyio
async def test_unknown_method() -> None:
    reply = await dispatch(json.dumps(request("nope")))
    assert reply["error"]["code"] == -32601
    assert reply["id"] == 1


@pytest.mark.anyio
async def test_positional_params_are_invalid_params() -> None:
    reply = await dispatch(json.dumps(request("ping", [1])))
    assert reply["error"]["code"] == -32602


@pytest.mark.anyio
async def test_notifications_run_but_get_no_reply() -> None:
    calls: list[int] = []
    dispatcher = make_dispatcher(calls)
    notification = {"jsonrpc": "2.0", "method": "ping", "params": {"value": 5}}
    assert await dispatch(json.dumps(notification), dispatcher) is None
    assert await dispatch(json.dumps([notification, notification]), dispatcher) is None
    assert calls == [5, 5, 5]


@pytest.mark.anyio
async def test_batches_answer_each_request_in_order_and_skip_notifications() -> None:
    batch = [
        request("ping", {"value": 1}, 1),
        {"jsonrpc": "2.0", "method": "ping", "params": {"value": 2}},
        request("nope", None, 3),
    ]
    reply = await dispatch(json.dumps(batch))
    assert [member["id"] for member in reply] == [1, 3]
    assert reply[0]["result"] == {"value": 1}
    assert reply[1]["error"]["code"] == -32601


@pytest.mark.anyio
async def test_empty_batch_is_invalid_request() -> None:
    reply = await dispatch("[]")
    assert reply["error"]["code"] == -32600


@pytest.mark.anyio
async def test_batches_over_the_cap_are_refused_without_running() -> None:
    calls: list[int] = []
    reply = await dispatch(
        json.dumps([request("ping", {"value": i}, i) for i in range(5)]), make_dispatcher(calls)
    )
    assert reply["error"] == {"code": -32600, "message": "Batch too large", "data": {"maxBatch": 4}}
    assert calls == []


@pytest.mark.anyio
async def test_library_made_internal_errors_are_scrubbed_of_exception_text() -> None:
    reply = await dispatch(json.dumps(request("crash", {})))
    assert reply["error"]["code"] == -32603
    assert set(reply["error"]["data"]) == {"errorId"}
    assert MARKER not in json.dumps(reply)


@pytest.mark.anyio
async def test_a_cancelled_dispatch_lets_the_methods_shielded_cleanup_finish() -> None:
    """jsonrpcserver's gather would cancel the method again and again, through its shield."""
    started = anyio.Event()
    steps: list[int] = []

    async def slow(*_args: Any, **_kwargs: Any) -> RpcOutcome:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                for step in range(5):  # each checkpoint is a chance for a stray cancel to land
                    await anyio.lowlevel.checkpoint()
                    steps.append(step)
        raise AssertionError("unreachable")

    dispatcher = Dispatcher({"slow": RpcMethod("slow", slow)})
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(dispatcher.dispatch, json.dumps(request("slow", {})).encode())
            await started.wait()
            group.cancel_scope.cancel()
    assert steps == [0, 1, 2, 3, 4]


@pytest.mark.anyio
async def test_method_not_found_never_echoes_the_method_name() -> None:
    """Issue 12 item 6: the library put the client's method name (5,000 characters of it) in ``data``."""
    name = MARKER + "x" * 5000
    single = await dispatch(json.dumps(request(name)))
    batch = await dispatch(json.dumps([request(name, request_id=1), request("ping", request_id=2)]))
    assert single == {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": 1}
    assert batch[0]["error"] == {"code": -32601, "message": "Method not found"}
    assert MARKER not in json.dumps([single, batch])


@pytest.mark.anyio
async def test_an_unknown_key_is_named_as_a_star_in_the_field_path() -> None:
    reply = await dispatch(json.dumps(request("ping", {"value": 1, MARKER: 2})))
    assert reply["error"]["code"] == -32602
    assert [e["loc"] for e in reply["error"]["data"]] == [["*"]]
    assert MARKER not in json.dumps(reply)
