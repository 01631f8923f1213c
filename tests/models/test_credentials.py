"""The API key never leaves the request object: not in any error's str/repr/traceback, trace, or log line."""

from __future__ import annotations

import logging
import socket
import traceback

import anyio
import anyio.lowlevel
import pytest
import structlog

from longhaul_daemon.models import (
    Budget,
    CallTrace,
    Message,
    ModelCallError,
    ModelRequest,
    ModelTarget,
    complete,
    make_client,
    provider_for,
)

from .scripted_http import Reply, json_reply, scripted_server
from .wires import KEY, WIRES, Wire, request

pytestmark = pytest.mark.anyio

_ECHO = {
    "error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error", "code": KEY}
}


def _scripts(wire: Wire) -> dict[str, list[Reply]]:
    broken = Reply(
        headers={"content-type": "text/event-stream"},
        chunks=[*wire.stream(["text"], False)[:-1], wire.overloaded_event],
    )
    return {
        "unauthorized": [json_reply(_ECHO, status=401, headers={"request-id": KEY, "x-request-id": KEY})],
        "quota": [json_reply(wire.quota_body, status=429)],
        "no-retry-500": [json_reply(_ECHO, status=500, headers={"x-should-retry": "false"})],
        "exhausted-503": [json_reply(_ECHO, status=503)] * 4,
        "after-text": [broken],
        "malformed": [Reply(headers={"content-type": "application/json"}, body=f"not json {KEY}".encode())],
        "hang": [Reply(hang_before_headers=True)],
    }


def _chain_text(error: BaseException) -> str:
    texts: list[str] = []
    seen: BaseException | None = error
    while seen is not None:
        texts += [str(seen), repr(seen)]
        seen = seen.__cause__ or seen.__context__
    texts += traceback.format_exception(error)
    return "\n".join(texts)


@pytest.mark.parametrize("wire", WIRES, ids=[w.api for w in WIRES])
async def test_key_appears_in_no_error_trace_or_log(wire: Wire, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    failures: list[str] = []
    traces: list[CallTrace] = []

    async def sleep(_seconds: float) -> None:
        await anyio.lowlevel.checkpoint()

    with structlog.testing.capture_logs() as logs:
        async with make_client() as client:
            for name, script in _scripts(wire).items():
                with scripted_server(script) as server:
                    base = request(wire, server.url, stream=name != "malformed")
                    budget = Budget.after(0.3 if name == "hang" else 30)
                    with anyio.fail_after(10), pytest.raises(ModelCallError) as caught:
                        await complete(
                            base, budget=budget, client=client, sleep=sleep, on_trace=traces.append
                        )
                    failures.append(f"{name}: {_chain_text(caught.value)}")
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]
            with anyio.fail_after(10), pytest.raises(ModelCallError) as refused:
                await complete(
                    request(wire, f"http://127.0.0.1:{port}"),
                    budget=Budget.after(30),
                    client=client,
                    sleep=sleep,
                    on_trace=traces.append,
                )
            failures.append(_chain_text(refused.value))
            keyed = request(wire, "")
            odd = ModelRequest(
                target=ModelTarget(
                    api="azure-openai-responses",
                    provider="x",
                    model_id="m",
                    base_url="",
                    api_key=keyed.target.api_key,
                    headers={"api-key": KEY},
                ),
                system="s",
                messages=(Message("user", "u"),),
                max_output_tokens=5,
            )
            for bad in (odd, keyed):  # unsupported api; missing base URL
                with anyio.fail_after(5), pytest.raises(ModelCallError) as caught:
                    await complete(bad, budget=Budget.after(5), client=client, on_trace=traces.append)
                failures.append(_chain_text(caught.value))
    assert len(failures) == 10
    everything = "\n".join(failures) + repr(logs) + caplog.text + repr([t.as_dict() for t in traces])
    shown = provider_for(wire.api).prepare(request(wire, "http://h"))
    everything += repr(keyed) + repr(keyed.target) + repr(shown)
    assert sum(entry["event"] == "model_call" for entry in logs) == 8, (
        "every call that reached the wire was logged"
    )
    assert KEY not in everything
    assert KEY[3:] not in everything
