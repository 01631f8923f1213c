"""PASS-20/PASS-22: the daemon's own requests to the shim, on the connection that carries ``compact``.

Every test drives a real daemon on a real socket; the test plays the shim and answers (or not) the request the
pass sends back through the peer the connection hands it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from longhaul_daemon.models.via_pi import PiPeer, ShimConnectionLost, ShimErrorReply
from longhaul_daemon.protocol import CompactParams, CompactResult
from longhaul_daemon.rpc import Dispatcher, Services, build_methods
from longhaul_daemon.server.peer import ShimPeer, response_in

from .in_process_daemon import compact_params, connect, eventually, running_daemon, whole_result

ASK = {"model": {"provider": "p", "id": "m"}, "messages": [{"role": "user", "text": "hi"}]}


def result_with(pass_id: str, summary: str) -> CompactResult:
    """A whole result whose summary carries what the pass learned from the shim."""
    result = whole_result(pass_id)
    assert result.compaction is not None
    return result.model_copy(update={"compaction": result.compaction.model_copy(update={"summary": summary})})


async def asking_pass(
    params: CompactParams, *, pass_id: str, peer: PiPeer | None, **_: object
) -> CompactResult:
    """A pass that asks the shim once and reports the answer (or the error code) in its summary."""
    assert peer is not None
    try:
        answer = await peer.request("model.complete", ASK)
    except ShimErrorReply as error:
        return result_with(pass_id, f"error {error.code} {json.dumps(error.data)}")
    return result_with(pass_id, f"answer {json.dumps(answer)}")


async def read_daemon_request(connection: Any) -> dict[str, Any]:
    frame: dict[str, Any] = await connection.receive()
    assert frame["method"] == "model.complete", frame
    assert isinstance(frame["id"], str) and frame["id"].startswith("d")
    assert frame["params"] == ASK
    return frame


@pytest.mark.anyio
@pytest.mark.parametrize("slots", [8, 1])
async def test_the_pass_gets_the_shims_answer_on_the_same_connection(short_tmp: Path, slots: int) -> None:
    """PASS-22; with one slot per connection the reply is still read while the pass holds that slot."""
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=asking_pass, max_in_flight_per_connection=slots) as h,
        connect(h.socket_path) as connection,
    ):
        compact_id = await connection.request("compact", compact_params())
        asked = await read_daemon_request(connection)
        await connection.send(
            {"jsonrpc": "2.0", "id": asked["id"], "result": {"text": "T", "stopReason": "stop"}}
        )
        reply = await connection.receive()
        assert reply["id"] == compact_id
        assert reply["result"]["compaction"]["summary"] == 'answer {"text": "T", "stopReason": "stop"}'


@pytest.mark.anyio
async def test_an_error_reply_reaches_the_pass_as_code_and_data_only(short_tmp: Path) -> None:
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=asking_pass) as handle,
        connect(handle.socket_path) as connection,
    ):
        await connection.request("compact", compact_params())
        asked = await read_daemon_request(connection)
        error = {"code": -32010, "message": "model call failed", "data": {"kind": "quota", "status": 429}}
        await connection.send({"jsonrpc": "2.0", "id": asked["id"], "error": error})
        reply = await connection.receive()
        assert reply["result"]["compaction"]["summary"] == 'error -32010 {"kind": "quota", "status": 429}'


@pytest.mark.anyio
async def test_closing_the_connection_ends_a_pass_that_waits_on_the_shim(short_tmp: Path) -> None:
    async with running_daemon(short_tmp / "d.sock", run_pass=asking_pass) as handle:
        async with connect(handle.socket_path) as connection:
            await connection.request("compact", compact_params())
            await read_daemon_request(connection)
        services = handle.services
        await eventually(lambda: services.pass_counts.aborted == 1 and services.passes_in_flight == 0)
        assert not services.busy_sessions


@pytest.mark.anyio
async def test_a_closed_peer_fails_the_waiting_call_and_refuses_new_ones_as_retryable() -> None:
    sent: list[bytes] = []

    async def send_line(payload: bytes) -> None:
        sent.append(payload)

    peer = ShimPeer(send_line)
    outcomes: list[ShimConnectionLost] = []

    async def ask() -> None:
        try:
            await peer.request("model.complete", ASK)
        except ShimConnectionLost as error:
            outcomes.append(error)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask)
        await peer.wait_call_started()
        assert peer.awaiting_reply
        peer.close()
    await ask()
    assert len(outcomes) == 2 and all(error.retryable for error in outcomes)
    assert len(sent) == 1 and json.loads(sent[0])["id"] == "d1"
    assert not peer.awaiting_reply


@pytest.mark.anyio
async def test_a_cancelled_call_stops_waiting_sends_nothing_more_and_drops_the_late_reply(
    short_tmp: Path,
) -> None:
    async def impatient_pass(
        params: CompactParams, *, pass_id: str, peer: PiPeer | None, **_: object
    ) -> CompactResult:
        assert peer is not None
        with anyio.move_on_after(0.2):
            await peer.request("model.complete", ASK)
            return result_with(pass_id, "answered")
        return result_with(pass_id, "gave up")

    async with (
        running_daemon(short_tmp / "d.sock", run_pass=impatient_pass) as handle,
        connect(handle.socket_path) as connection,
    ):
        compact_id = await connection.request("compact", compact_params())
        asked = await read_daemon_request(connection)
        reply = await connection.receive()  # the very next frame: the compact reply, no second request
        assert reply["id"] == compact_id
        assert reply["result"]["compaction"]["summary"] == "gave up"
        await connection.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"text": "late"}})
        status = await connection.call("status", {})
        assert "result" in status  # the late reply was dropped, not answered, and the connection still works


@pytest.mark.anyio
async def test_requests_pipelined_by_the_shim_still_run_while_it_is_being_asked(short_tmp: Path) -> None:
    """PASS-20: the connection keeps dispatching the shim's own requests while a daemon request waits."""
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=asking_pass) as handle,
        connect(handle.socket_path) as connection,
    ):
        compact_id = await connection.request("compact", compact_params())
        asked = await read_daemon_request(connection)
        status = await connection.call("status", {})
        assert "result" in status
        await connection.send({"jsonrpc": "2.0", "id": asked["id"], "result": "R"})
        reply = await connection.receive()
        assert reply["id"] == compact_id and reply["result"]["compaction"]["summary"] == 'answer "R"'


def test_only_responses_are_taken_for_the_peer() -> None:
    assert response_in({"jsonrpc": "2.0", "id": "d1", "result": None}) == {
        "jsonrpc": "2.0",
        "id": "d1",
        "result": None,
    }
    assert response_in({"jsonrpc": "2.0", "id": "d1", "error": {"code": 1}}) is not None
    assert response_in({"jsonrpc": "2.0", "id": 1, "method": "status", "result": 1}) is None
    assert response_in({"jsonrpc": "2.0", "id": 1}) is None
    assert response_in([]) is None
    assert response_in(object()) is None  # a frame that did not parse


@pytest.mark.anyio
async def test_garbage_after_a_shim_call_is_a_parse_error_and_the_call_still_gets_its_reply(
    short_tmp: Path,
) -> None:
    """Once the daemon has asked the shim, frames are parsed in the read loop; a bad one is still -32700."""
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=asking_pass) as handle,
        connect(handle.socket_path) as connection,
    ):
        compact_id = await connection.request("compact", compact_params())
        asked = await read_daemon_request(connection)
        await connection.send_raw(b"{not json\n")
        assert (await connection.receive())["error"]["code"] == -32700
        await connection.send({"jsonrpc": "2.0", "id": asked["id"], "result": "R"})
        reply = await connection.receive()
        assert reply["id"] == compact_id and reply["result"]["compaction"]["summary"] == 'answer "R"'


@pytest.mark.anyio
async def test_there_is_no_peer_outside_a_connection() -> None:
    peers: list[PiPeer | None] = []

    async def peer_watching_pass(
        params: CompactParams, *, pass_id: str, peer: PiPeer | None, **_: object
    ) -> CompactResult:
        peers.append(peer)
        return whole_result(pass_id)

    dispatcher = Dispatcher(build_methods(Services(socket_path="/s", run_pass=peer_watching_pass)))
    frame = {"jsonrpc": "2.0", "id": 1, "method": "compact", "params": compact_params()}
    with anyio.fail_after(10):
        reply = await dispatcher.dispatch(json.dumps(frame).encode())
    assert reply is not None and "result" in json.loads(reply)
    assert peers == [None]
