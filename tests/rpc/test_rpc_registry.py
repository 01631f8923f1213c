"""The typed method wrapper: by-name params, validation errors without echo, error mapping, deadlines."""

from __future__ import annotations

import inspect
import json
from typing import Any

import anyio
import pytest
import structlog
from pydantic import BaseModel, ConfigDict, Field, field_validator

from longhaul_daemon.errors import Busy, DomainError
from longhaul_daemon.rpc.registry import METHOD_DEADLINE_S, RpcFailure, RpcMethod, RpcSuccess, rpc

MARKER = "MARKER-7f3a-do-not-echo"


class EchoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(max_length=8)
    count: int = 1

    @field_validator("name")
    @classmethod
    def no_spaces(cls, value: str) -> str:
        if " " in value:
            raise ValueError(f"bad name {value!r}")  # a validator that quotes its input
        return value


class EchoResult(BaseModel):
    text: str
    extra: str | None = None


def make(handler_body: Any = None, *, deadline_s: float = METHOD_DEADLINE_S) -> RpcMethod:
    @rpc("echo", EchoParams, deadline_s=deadline_s)
    async def echo(params: EchoParams) -> EchoResult:
        if handler_body is not None:
            await handler_body(params)
        return EchoResult(text=params.name * params.count)

    return echo


async def run(method: RpcMethod, *args: Any, **kwargs: Any) -> RpcSuccess | RpcFailure:
    with anyio.fail_after(10):
        return await method.call(None, *args, **kwargs)


@pytest.mark.anyio
async def test_success_dumps_the_result_in_json_mode() -> None:
    outcome = await run(make(), name="ab", count=2)
    assert outcome == RpcSuccess({"text": "abab", "extra": None})


def test_wrapper_does_not_expose_the_handler_signature() -> None:
    """No functools.wraps: jsonrpcserver binds against the wrapper's own (peer, *args, **kwargs)."""
    method = make()
    assert not hasattr(method.call, "__wrapped__")
    assert str(inspect.signature(method.call)) == (
        "(peer: 'PiPeer | None', /, *args: 'Any', **kwargs: 'Any') -> 'RpcOutcome'"
    )


@pytest.mark.anyio
async def test_positional_params_are_refused() -> None:
    outcome = await run(make(), "ab")
    assert isinstance(outcome, RpcFailure)
    assert outcome.code == -32602
    assert outcome.data[0]["type"] == "params_not_object"


@pytest.mark.anyio
async def test_validation_errors_name_field_paths_and_never_echo_the_input() -> None:
    outcome = await run(make(), name=MARKER * 3, count="x", surplus=MARKER)
    assert isinstance(outcome, RpcFailure)
    assert (outcome.code, outcome.message) == (-32602, "Invalid params")
    locs = {tuple(error["loc"]) for error in outcome.data}
    assert locs == {("name",), ("count",), ("*",)}  # an unknown key is not echoed either
    assert all(set(error) == {"type", "loc", "msg"} for error in outcome.data)
    assert MARKER not in json.dumps(outcome.data)


@pytest.mark.anyio
async def test_a_validator_message_quoting_the_input_is_replaced() -> None:
    outcome = await run(make(), name="a b c")
    assert isinstance(outcome, RpcFailure)
    assert outcome.data[0]["msg"] == "Invalid value (value_error)"
    assert "a b c" not in json.dumps(outcome.data)


@pytest.mark.anyio
async def test_domain_errors_keep_their_code_message_and_data() -> None:
    async def busy(_params: EchoParams) -> None:
        raise Busy(data={"retry": False})

    outcome = await run(make(busy), name="ab")
    assert outcome == RpcFailure(-32002, "Busy", {"retry": False})


@pytest.mark.anyio
async def test_base_domain_error_is_a_server_error() -> None:
    async def fail(_params: EchoParams) -> None:
        raise DomainError()

    outcome = await run(make(fail), name="ab")
    assert outcome == RpcFailure(-32000, "Server error", None)


@pytest.mark.anyio
async def test_unexpected_exceptions_become_internal_error_with_an_id_and_no_text() -> None:
    async def crash(_params: EchoParams) -> None:
        raise RuntimeError(MARKER)

    with structlog.testing.capture_logs() as logs:
        outcome = await run(make(crash), name="ab")
    assert isinstance(outcome, RpcFailure)
    assert (outcome.code, outcome.message) == (-32603, "Internal error")
    assert set(outcome.data) == {"errorId"}
    assert MARKER not in json.dumps(outcome.data)
    logged = [entry for entry in logs if entry["event"] == "rpc_internal_error"]
    assert logged[0]["error_id"] == outcome.data["errorId"]
    assert logged[0]["error_class"] == "RuntimeError"
    assert MARKER not in json.dumps(logs, default=str)


@pytest.mark.anyio
async def test_a_handler_past_its_deadline_gets_deadline_exceeded() -> None:
    async def hang(_params: EchoParams) -> None:
        await anyio.sleep_forever()

    outcome = await run(make(hang, deadline_s=0.05), name="ab")
    assert outcome == RpcFailure(-32001, "Deadline exceeded", None)


@pytest.mark.anyio
async def test_a_timeout_raised_by_the_handler_itself_is_an_internal_error() -> None:
    async def own_timeout(_params: EchoParams) -> None:
        raise TimeoutError

    outcome = await run(make(own_timeout, deadline_s=10), name="ab")
    assert isinstance(outcome, RpcFailure)
    assert outcome.code == -32603
