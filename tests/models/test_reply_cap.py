"""Issue 12 (bounded memory): a reply past ``MAX_REPLY_BYTES`` is refused, not read to its end.

A looping model (or a hostile endpoint) that never stops streaming, or a JSON body larger than any answer,
ends the call with ``ReplyTooLarge``: the connection is closed, the server sees the client go, the call is
not retried, and the trace names the error. The cap is lowered for the test so the loop stays short.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.to_thread
import pytest

from longhaul_daemon.models import Budget, CallTrace, complete, make_client
from longhaul_daemon.models import http as model_http
from longhaul_daemon.models.call_errors import FatalError, ReplyTooLarge
from longhaul_daemon.models.http import HttpClient, SseParser

from .scripted_http import json_reply, scripted_server
from .wires import WIRES, Wire, answer_stream, request

pytestmark = pytest.mark.anyio

WIRE_IDS = [w.api for w in WIRES]
WAIT_S = 30.0  # bounds a wait so a regression fails instead of hanging; never an assertion about speed
CAP = 256 * 1024


@pytest.fixture
async def client() -> AsyncIterator[HttpClient]:
    async with make_client() as http:
        yield http


@pytest.fixture(autouse=True)
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_http, "MAX_REPLY_BYTES", CAP)


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_a_stream_that_never_ends_is_cut_at_the_cap(wire: Wire, client: HttpClient) -> None:
    looping = answer_stream(wire, ["Thinking"], repeat="and thinking more, " * 400)
    traces: list[CallTrace] = []
    with scripted_server([looping, looping]) as server, anyio.fail_after(WAIT_S):
        with pytest.raises(ReplyTooLarge) as caught:
            await complete(
                request(wire, server.url), budget=Budget.after(WAIT_S), client=client, on_trace=traces.append
            )
        seen = await anyio.to_thread.run_sync(lambda: server.disconnected.wait(WAIT_S))
    assert seen, "the server never saw the client go"
    assert isinstance(caught.value, FatalError) and not caught.value.retryable
    assert caught.value.code == "reply_too_large" and caught.value.request_id == "req_ok"
    assert len(server.requests) == 1, "a reply too large is not asked again"
    [trace] = traces
    assert trace.error == "ReplyTooLarge" and trace.error_code == "reply_too_large"
    # it stopped near the cap, not after reading far past it
    assert server.repeats * len("and thinking more, " * 400) < 4 * CAP


async def test_a_json_body_past_the_cap_is_refused(client: HttpClient) -> None:
    wire = WIRES[0]
    huge = json_reply({"choices": [{"message": {"content": "x" * (2 * CAP)}}]})
    with scripted_server([huge]) as server, anyio.fail_after(WAIT_S):
        call = request(wire, server.url, stream=False)
        with pytest.raises(ReplyTooLarge):
            await complete(call, budget=Budget.after(WAIT_S), client=client)
    assert len(server.requests) == 1


async def test_a_reply_under_the_cap_is_read_whole(client: HttpClient) -> None:
    wire = WIRES[0]
    text = "y" * (CAP // 2)
    with scripted_server([wire.stream_reply([text[: CAP // 4], text[CAP // 4 :]])]) as server:
        with anyio.fail_after(WAIT_S):
            result = await complete(request(wire, server.url), budget=Budget.after(WAIT_S), client=client)
    assert result.text == text


def test_sse_parser_reads_a_multi_megabyte_line_fed_in_network_sized_pieces() -> None:
    """The parser appends such pieces without rescanning the line; the event comes out whole, once."""
    payload = "z" * (4 * 1024 * 1024)
    line = f"data: {payload}\n\n"
    parser = SseParser()
    events = []
    for at in range(0, len(line), 1500):
        events += parser.feed(line[at : at + 1500])
    events += parser.finish()
    assert [(e.event, len(e.data)) for e in events] == [(None, len(payload))]
