"""Connections on a real socket: error kinds leave the connection usable; framing, concurrency, cancel."""

from __future__ import annotations

import functools
import json
import os
import socket
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
import structlog

from longhaul_daemon.protocol import CompactParams, CompactResult
from longhaul_daemon.rpc.dispatch import Dispatcher, decode_frame
from longhaul_daemon.server.lifecycle import WORKER_THREADS
from longhaul_daemon.server.peercred import peer_allowed, peer_credentials

from .in_process_daemon import (
    WAIT_S,
    compact_params,
    connect,
    eventually,
    running_daemon,
    session,
    sleeping_pass,
    whole_result,
)

MARKER = "MARKER-91d2-not-for-the-wire"


async def assert_usable(connection: Any) -> None:
    reply = await connection.call("status", {})
    assert reply["result"]["pid"] == os.getpid()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b"{not json\n", -32700),
        (b"[1, 2]\n", -32600),
        (b"[]\n", -32600),
        (b'"a string"\n', -32600),
        (b'{"jsonrpc": "2.0", "method": "status", "id": 1, "extra": true}\n', -32600),
        (b'{"jsonrpc": "2.0", "method": "no_such_method", "id": 1}\n', -32601),
        (b'{"jsonrpc": "2.0", "method": "hello", "params": ["positional"], "id": 1}\n', -32602),
        (
            json.dumps([{"jsonrpc": "2.0", "method": "status", "id": i} for i in range(17)]).encode() + b"\n",
            -32600,
        ),
    ],
)
async def test_every_error_kind_is_answered_and_the_connection_stays_usable(
    short_tmp: Path, frame: bytes, code: int
) -> None:
    async with running_daemon(short_tmp / "d.sock") as handle, connect(handle.socket_path) as connection:
        await connection.send_raw(frame)
        reply = await connection.receive()
        assert reply["error"]["code"] == code
        await assert_usable(connection)


@pytest.mark.anyio
async def test_invalid_params_give_field_paths_and_never_echo_the_input(short_tmp: Path) -> None:
    params = compact_params()
    params["session"]["piVersion"] = MARKER * 100  # too long: max_length=256
    params["reason"] = MARKER
    params["preparation"]["tokensBefore"] = MARKER
    async with running_daemon(short_tmp / "d.sock") as handle, connect(handle.socket_path) as connection:
        reply = await connection.call("compact", params)
        assert reply["error"]["code"] == -32602
        locs = {tuple(error["loc"]) for error in reply["error"]["data"]}
        assert locs == {("session", "piVersion"), ("reason",), ("preparation", "tokensBefore")}
        assert MARKER not in json.dumps(reply)
        await assert_usable(connection)


@pytest.mark.anyio
async def test_an_internal_error_gets_an_error_id_and_no_message_text(short_tmp: Path) -> None:
    async def crash(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        raise RuntimeError(MARKER)

    def crash_status() -> Any:
        raise RuntimeError(MARKER)

    with structlog.testing.capture_logs() as logs:
        async with (
            running_daemon(short_tmp / "d.sock", run_pass=crash) as handle,
            connect(handle.socket_path) as connection,
        ):
            reply = await connection.call("compact", compact_params())
            # a crashing pass is a fallback for the shim, not an RPC error
            assert reply["result"]["fallback"] == "pass-error"
            handle.services.status = crash_status  # type: ignore[method-assign]
            reply = await connection.call("status", {})
            assert reply["error"]["code"] == -32603
            assert reply["error"]["message"] == "Internal error"
            assert set(reply["error"]["data"]) == {"errorId"}
            assert MARKER not in json.dumps(reply)
            await connection.call("hello", {"session": session()})  # still usable
    assert MARKER not in json.dumps(logs, default=str)
    assert any(entry.get("error_id") == reply["error"]["data"]["errorId"] for entry in logs)


@pytest.mark.anyio
async def test_an_oversize_frame_is_refused_and_the_daemon_keeps_serving(short_tmp: Path) -> None:
    async with running_daemon(short_tmp / "d.sock", max_frame=4096) as handle:
        async with connect(handle.socket_path) as connection:
            await connection.send_raw(b'{"jsonrpc":"2.0","method":"status","id":1,"pad":"' + b"x" * 10_000)
            reply = await connection.receive()
            assert reply["error"] == {
                "code": -32600,
                "message": "Frame too large",
                "data": {"maxFrame": 4096},
            }
            assert await connection.at_eof()
        async with connect(handle.socket_path) as connection:
            exactly = json.dumps(
                {"jsonrpc": "2.0", "method": "status", "id": 2, "pad": ""}, separators=(",", ":")
            ).encode()
            exactly = exactly.replace(b'"pad":""', b'"pad":"' + b"y" * (4096 - len(exactly)) + b'"')
            assert len(exactly) == 4096
            await connection.send_raw(exactly + b"\n")
            assert (await connection.receive())["error"]["code"] == -32600  # the unknown "pad" member
            await assert_usable(connection)


@pytest.mark.anyio
async def test_notifications_and_blank_lines_get_no_reply(short_tmp: Path) -> None:
    calls: list[str] = []
    ran = anyio.Event()

    async def counting(params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        calls.append(params.session.sessionId)
        ran.set()
        return whole_result(pass_id)

    async with (
        running_daemon(short_tmp / "d.sock", run_pass=counting) as handle,
        connect(handle.socket_path) as connection,
    ):
        notification = {"jsonrpc": "2.0", "method": "compact", "params": compact_params("n1")}
        await connection.send_raw(b"\n  \r\n" + json.dumps(notification).encode() + b"\n\n")
        reply = await connection.call("status", {})  # the very next line is the status reply
        assert reply["result"]["pid"] == os.getpid()
        with anyio.fail_after(10):
            await ran.wait()
    assert calls == ["n1"]


@pytest.mark.anyio
async def test_many_connections_with_pipelined_requests_run_concurrently(short_tmp: Path) -> None:
    """Every pass waits until all of them run at once, so this only finishes if they are concurrent."""
    connections_count, per_connection = 6, 4
    everyone = connections_count * per_connection
    running = 0
    all_running = anyio.Event()

    async def rendezvous(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        nonlocal running
        running += 1
        if running == everyone:
            all_running.set()
        await all_running.wait()
        return whole_result(pass_id)

    async def client(index: int, socket_path: Path) -> None:
        async with connect(socket_path) as connection:
            ids = [
                await connection.request("compact", compact_params(f"c{index}-r{n}"))
                for n in range(per_connection)
            ]
            replies = [await connection.receive() for _ in ids]
            assert sorted(reply["id"] for reply in replies) == sorted(ids)
            assert all("result" in reply for reply in replies)

    async with running_daemon(short_tmp / "d.sock", run_pass=rendezvous) as handle:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for index in range(connections_count):
                    tg.start_soon(client, index, handle.socket_path)
        assert handle.services.pass_counts.whole == everyone


@pytest.mark.anyio
async def test_closing_the_connection_cancels_its_in_flight_pass(short_tmp: Path) -> None:
    started = anyio.Event()
    cancelled = anyio.Event()

    async def hang(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async with running_daemon(short_tmp / "d.sock", run_pass=hang) as handle:
        connection_cm = connect(handle.socket_path)
        connection = await connection_cm.__aenter__()
        await connection.request("compact", compact_params())
        with anyio.fail_after(10):
            await started.wait()
        await connection_cm.__aexit__(None, None, None)
        with anyio.fail_after(10):
            await cancelled.wait()
        await eventually(lambda: handle.services.passes_in_flight == 0)
        assert handle.services.pass_counts.aborted == 1
        assert handle.services.busy_sessions == set()
        async with connect(handle.socket_path) as other:  # the session is free again
            reply = await other.call("compact", compact_params(compactor="pi"))
            assert reply["result"]["fallback"] == "stand-down"


@pytest.mark.anyio
async def test_a_cancelled_pass_runs_its_shielded_cleanup_to_the_end(short_tmp: Path) -> None:
    """A pass's shielded cleanup (httpcore closing the model's connection) is cancelled once, not again
    and again through the shield by jsonrpcserver's ``asyncio.gather`` as anyio re-delivers the cancel."""
    started = anyio.Event()
    cleanup_steps: list[int] = []

    async def hang(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                for step in range(5):  # each checkpoint is a chance for a stray cancel to land
                    await anyio.lowlevel.checkpoint()
                    cleanup_steps.append(step)
        raise AssertionError("unreachable")

    async with running_daemon(short_tmp / "d.sock", run_pass=hang) as handle:
        async with connect(handle.socket_path) as connection:
            await connection.request("compact", compact_params())
            with anyio.fail_after(10):
                await started.wait()
        await eventually(lambda: handle.services.passes_in_flight == 0)
    assert cleanup_steps == [0, 1, 2, 3, 4]


@pytest.mark.anyio
async def test_status_is_answered_while_a_large_frame_decodes(
    short_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A frame over the threshold is parsed in a worker thread: here the parse is held until ``status``, sent
    on another connection after the parse began, has its reply; on the loop it would block that reply."""
    threshold = 64 * 1024
    decoding, release = threading.Event(), threading.Event()
    parsed_on: list[int] = []

    def held_loads(frame: bytes | bytearray) -> Any:
        if len(frame) > threshold:
            parsed_on.append(threading.get_ident())
            decoding.set()
            release.wait(2 * WAIT_S)  # longer than the status call may wait: on the loop, the test fails
        return decode_frame(frame)

    dispatcher = functools.partial(Dispatcher, loads=held_loads, thread_decode_bytes=threshold)
    monkeypatch.setattr("longhaul_daemon.server.lifecycle.Dispatcher", dispatcher)
    big = compact_params(instructions="0", branchEntries=[{"type": "custom", "data": "x" * 1000}] * 200)
    order: list[str] = []
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=sleeping_pass) as handle,
        connect(handle.socket_path) as big_connection,
        connect(handle.socket_path) as small_connection,
    ):
        big_id = await big_connection.request("compact", big)
        assert await anyio.to_thread.run_sync(decoding.wait, WAIT_S)
        status = await small_connection.call("status", {})
        order.append("status")
        release.set()
        reply = await big_connection.receive()
        order.append("compact")
    assert order == ["status", "compact"]
    assert "result" in status and reply["id"] == big_id and reply["result"]["compaction"] is not None
    assert parsed_on and parsed_on[0] != threading.get_ident()  # not the event loop's thread


@pytest.mark.anyio
async def test_passes_share_a_few_worker_threads_so_the_loop_keeps_the_gil(short_tmp: Path) -> None:
    running, most = 0, 0
    lock, release = threading.Lock(), threading.Event()

    def pure_step() -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait(WAIT_S)
        with lock:
            running -= 1

    async def threaded_pass(params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        await anyio.to_thread.run_sync(pure_step)
        return whole_result(pass_id)

    passes = WORKER_THREADS * 2
    async with running_daemon(short_tmp / "d.sock", run_pass=threaded_pass) as handle:

        async def one(n: int) -> None:
            async with connect(handle.socket_path) as connection:
                assert "result" in await connection.call("compact", compact_params(f"s{n}"))

        async with anyio.create_task_group() as group:
            for n in range(passes):
                group.start_soon(one, n)
            await eventually(lambda: running == WORKER_THREADS)
            limiter = anyio.to_thread.current_default_thread_limiter()
            await eventually(lambda: limiter.statistics().tasks_waiting == passes - WORKER_THREADS)
            release.set()
    assert most == WORKER_THREADS


def test_peer_policy_admits_only_the_same_uid() -> None:
    assert peer_allowed(1000, 1000)
    assert not peer_allowed(65534, 1000)
    assert not peer_allowed(0, 1000)


def test_peer_credentials_of_a_socketpair_are_ours() -> None:
    left, right = socket.socketpair()
    with left, right:
        creds = peer_credentials(left)
    assert (creds.pid, creds.uid, creds.gid) == (os.getpid(), os.getuid(), os.getgid())


_FOREIGN_CLIENT = """
import os, socket, sys
os.setgid(65534)
os.setuid(65534)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
try:
    s.sendall(b'{"jsonrpc":"2.0","method":"status","id":1}\\n')
    print("answered" if s.recv(65536) else "closed")
except (BrokenPipeError, ConnectionResetError):
    print("closed")
"""


@pytest.mark.anyio
@pytest.mark.skipif(os.getuid() != 0, reason="needs root to connect as another uid (65534)")
async def test_a_peer_with_another_uid_is_refused(short_tmp: Path) -> None:
    socket_path = short_tmp / "run" / "d.sock"
    async with running_daemon(socket_path) as handle:
        # Open the door the 0700 dir and 0600 socket keep shut, so only SO_PEERCRED stands in the way.
        os.chmod(socket_path.parent, 0o711)
        os.chmod(short_tmp, 0o711)
        os.chmod(socket_path, 0o666)
        with anyio.fail_after(10):
            result = await anyio.run_process(
                [sys.executable, "-c", _FOREIGN_CLIENT, str(socket_path)], check=False
            )
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout.decode().strip() == "closed"  # connected, then closed without an answer
        async with connect(handle.socket_path) as connection:
            await assert_usable(connection)


@pytest.mark.anyio
async def test_pipelined_replies_can_overtake_slow_ones(short_tmp: Path) -> None:
    async with (
        running_daemon(short_tmp / "d.sock", run_pass=sleeping_pass) as handle,
        connect(handle.socket_path) as connection,
    ):
        slow = await connection.request("compact", compact_params("slow", instructions="600"))
        quick = await connection.request("status", {})
        assert (await connection.receive())["id"] == quick
        assert slow != quick


@pytest.mark.anyio
@pytest.mark.parametrize("turn_budget_s", [None, 7.5])
async def test_turns15_serve_turn_budget_reaches_every_pass(
    short_tmp: Path, turn_budget_s: float | None
) -> None:
    """``serve --turn-budget`` is the daemon's setting of one turns-mode turn's budget; without it the pass
    takes two fifths of what it has left (TURNS-15), so the pass gets None."""
    seen: list[object] = []
    ran = anyio.Event()

    async def watching(params: CompactParams, *, pass_id: str, **options: object) -> CompactResult:
        seen.append(options["turn_budget_s"])
        ran.set()
        return whole_result(pass_id)

    async with (
        running_daemon(short_tmp / "d.sock", run_pass=watching, turn_budget_s=turn_budget_s) as handle,
        connect(handle.socket_path) as connection,
    ):
        reply = await connection.call("compact", compact_params("t1"))
        assert "result" in reply
        with anyio.fail_after(10):
            await ran.wait()
    assert seen == [turn_budget_s]
