"""The daemon's bounds on a real socket: idle and stalled connections, the connection cap, the byte budget,
and read buffers that give their memory back (issue 12, item 6).

Every wait is bounded by ``WAIT_S``; no test asserts how long something took. Timeouts are set short (a
fraction of a second) so the daemon acts well inside those bounds.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteReceiveStream

from longhaul_daemon.collector import MAX_PAUSE_S, CollectorPause
from longhaul_daemon.rpc import Services
from longhaul_daemon.server.framing import KEEP_BUFFER_BYTES, ByteBudget, FrameReader

from .in_process_daemon import compact_params, connect, eventually, running_daemon, sleeping_pass

pytestmark = pytest.mark.anyio

SHORT = 0.3  # seconds: the idle and stall timeouts of these daemons


async def test_a_quiet_connection_is_closed_after_the_idle_timeout(short_tmp: Path) -> None:
    async with (
        running_daemon(short_tmp / "d.sock", idle_timeout_s=SHORT) as handle,
        connect(handle.socket_path) as quiet,
        connect(handle.socket_path) as used,
    ):
        reply = await used.call("status", {})  # a request answered: the idle clock starts again after it
        assert "result" in reply
        assert await quiet.at_eof()
        assert await used.at_eof()
        await eventually(lambda: handle.load.connections == 0)


async def test_a_connection_whose_pass_runs_is_never_closed_for_being_quiet(short_tmp: Path) -> None:
    """A compact that outlasts the idle timeout many times over still gets its reply on its connection."""
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=sleeping_pass, idle_timeout_s=0.1) as handle,
        connect(handle.socket_path) as conn,
    ):
        reply = await conn.call("compact", compact_params(instructions="1.5"))
        assert reply["result"]["compaction"] is not None
        assert await conn.at_eof()  # and once the pass is done, the idle timer runs again


async def test_a_client_that_leaves_mid_pass_gives_its_bytes_back(short_tmp: Path) -> None:
    async with running_daemon(short_tmp / "d.sock", run_pass=sleeping_pass) as handle:
        async with connect(handle.socket_path) as conn:
            await conn.request("compact", compact_params(instructions="30"))
            await eventually(lambda: handle.services.passes_in_flight == 1)
            assert handle.load.budget.used > 0  # the frame is held while its pass runs
        await eventually(lambda: handle.services.passes_in_flight == 0)
        await eventually(lambda: handle.load.budget.used == 0)


async def test_a_frame_that_stalls_is_cut(short_tmp: Path) -> None:
    async with (
        running_daemon(short_tmp / "d.sock", stall_timeout_s=SHORT, idle_timeout_s=60) as handle,
        connect(handle.socket_path) as conn,
    ):
        await conn.send_raw(b'{"jsonrpc": "2.0", "id": 1, "meth')
        assert await conn.at_eof()
        await eventually(lambda: handle.load.budget.used == 0)


async def test_a_frame_that_keeps_arriving_slowly_is_not_cut(short_tmp: Path) -> None:
    frame = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "status", "params": {}}).encode() + b"\n"
    async with (
        running_daemon(short_tmp / "d.sock", stall_timeout_s=2.0, idle_timeout_s=60) as handle,
        connect(handle.socket_path) as conn,
    ):
        for at in range(0, len(frame), 8):  # a byte run every 50 ms, each far inside the stall timeout
            await conn.send_raw(frame[at : at + 8])
            await anyio.sleep(0.05)
        reply = await conn.receive()
        assert reply["id"] == 7 and "result" in reply


async def test_past_the_connection_cap_a_client_is_told_busy_and_the_others_keep_working(
    short_tmp: Path,
) -> None:
    async with running_daemon(short_tmp / "d.sock", max_connections=2) as handle:
        async with connect(handle.socket_path) as first, connect(handle.socket_path) as second:
            await first.call("status", {})
            await second.call("status", {})
            async with connect(handle.socket_path) as third:
                refused = await third.receive()
                assert refused == {
                    "jsonrpc": "2.0",
                    "error": {"code": -32005, "message": "Server busy", "data": {"limit": "connections"}},
                    "id": None,
                }
                assert await third.at_eof()
            assert "result" in await first.call("status", {})
        await eventually(lambda: handle.load.connections == 0)
        async with connect(handle.socket_path) as later:
            assert "result" in await later.call("status", {})
        assert handle.load.refused == 1


async def test_bytes_past_the_daemon_wide_budget_are_refused_and_the_budget_comes_back(
    short_tmp: Path,
) -> None:
    budget = 1024 * 1024
    async with running_daemon(short_tmp / "d.sock", max_buffered_bytes=budget, idle_timeout_s=60) as handle:
        async with connect(handle.socket_path) as big, connect(handle.socket_path) as other:
            head = b'{"jsonrpc": "2.0", "id": 1, "method": "status", "params": {"pad": "'
            await big.send_raw(head + b"x" * (budget - 200_000))  # most of the budget, still one frame
            await eventually(lambda: handle.load.budget.used > budget // 2)
            await other.send_raw(b'{"pad": "' + b"y" * 400_000)
            refused = await other.receive()
            assert refused["error"] == {
                "code": -32005,
                "message": "Server busy",
                "data": {"limit": "buffered-bytes"},
            }
            assert await other.at_eof()
            await big.send_raw(b'"}}\n')  # the first frame completes: it fits, and is answered
            assert (await big.receive())["error"]["code"] == -32602
        await eventually(lambda: handle.load.budget.used == 0)


class Chunks(ByteReceiveStream):
    """A byte stream that yields the given chunks, then ends."""

    def __init__(self, *chunks: bytes) -> None:
        self.chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)

    async def aclose(self) -> None:
        self.chunks.clear()


async def test_a_read_buffer_does_not_keep_the_size_of_the_largest_frame() -> None:
    big = b"[" + b"1," * KEEP_BUFFER_BYTES + b"1]"
    budget = ByteBudget(10 * KEEP_BUFFER_BYTES)
    reader = FrameReader(Chunks(big[:1000], big[1000:] + b"\n{}\n{"), max_frame=len(big) + 10, budget=budget)
    frame = await reader.next_frame()
    assert frame is not None and len(frame) == len(big)
    assert reader.capacity() < KEEP_BUFFER_BYTES  # the huge frame's capacity is not kept
    reader.release(frame)
    assert await reader.next_frame() == b"{}"
    assert budget.used == 3  # "{}" until released, and "{" still in the buffer
    reader.close()
    assert budget.used == 2
    assert await reader.next_frame() is None


async def test_a_frame_that_is_the_whole_buffer_is_handed_over_without_a_copy() -> None:
    reader = FrameReader(Chunks(b'{"a":', b" 1}\n"), max_frame=100)
    frame = await reader.next_frame()
    assert frame == b'{"a": 1}' and isinstance(frame, bytearray)
    assert not reader.partial


@contextmanager
def _watch_collections(services: Services) -> Iterator[list[int]]:
    """The daemon's full collections, each as the number of passes in flight when it ran.

    The collector's own collections are off meanwhile, so every full collection seen is one somebody asked
    for: in this process, only the daemon does. What the daemon's collections froze is unfrozen after.
    """
    in_flight_at_collection: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and info["generation"] == 2:
            in_flight_at_collection.append(services.passes_in_flight)

    was_enabled = gc.isenabled()
    gc.disable()
    gc.callbacks.append(watch)
    try:
        yield in_flight_at_collection
    finally:
        gc.callbacks.remove(watch)
        if was_enabled:
            gc.enable()
        gc.unfreeze()


async def test_garbage_is_collected_between_passes_never_during_one(short_tmp: Path) -> None:
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=sleeping_pass, collect_every_s=0.05) as handle,
        connect(handle.socket_path) as conn,
    ):
        services = handle.services
        with _watch_collections(services) as in_flight_at_collection:
            await conn.call("status", {})
            await eventually(lambda: len(in_flight_at_collection) == 1)
            await conn.request("compact", compact_params(instructions="0.6"))
            await eventually(lambda: services.passes_in_flight == 1)
            for _ in range(5):
                await conn.call("status", {})  # requests keep coming while the pass runs
                await anyio.sleep(0.05)
            assert "result" in await conn.receive()
            await eventually(lambda: len(in_flight_at_collection) >= 2)
    assert set(in_flight_at_collection) == {0}


async def test_passes_without_a_gap_still_get_a_collection_once_the_pause_is_overdue(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10: the collector is off while passes run; a daemon that is never idle collects anyway once the
    pause has lasted MAX_PAUSE_S, and the next one is due MAX_PAUSE_S later."""
    now = [0.0]
    pause = CollectorPause(clock=lambda: now[0])
    pause.enabled = True
    monkeypatch.setattr("longhaul_daemon.server.lifecycle.PAUSE", pause)
    try:
        with pause.held():  # heavy work all along, as when passes follow each other without a gap
            async with (
                running_daemon(short_tmp / "d.sock", run_pass=sleeping_pass, collect_every_s=0.05) as handle,
                connect(handle.socket_path) as conn,
            ):
                services = handle.services
                with _watch_collections(services) as in_flight_at_collection:
                    await conn.request("compact", compact_params(instructions="1.0"))
                    await eventually(lambda: services.passes_in_flight == 1)
                    await anyio.sleep(0.2)
                    assert in_flight_at_collection == []  # paused, and not for long yet
                    now[0] = MAX_PAUSE_S + 1
                    await eventually(lambda: len(in_flight_at_collection) == 1)
                    assert in_flight_at_collection == [1]  # during the pass
                    assert pause.paused_for() == 0.0  # the next one is due MAX_PAUSE_S from now
                    assert "result" in await conn.receive()
    finally:
        gc.unfreeze()  # what the held pause froze in this process
