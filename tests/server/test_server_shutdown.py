"""Graceful shutdown: SIGTERM drains what fits in the grace period, cancels the rest, and cleans up."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from longhaul_daemon.protocol import CompactParams, CompactResult

from .in_process_daemon import (
    WAIT_S,
    call_sync,
    compact_params,
    connect,
    running_daemon,
    spawn_daemon,
    stop_process,
    wait_until_serving,
)

# A real daemon process whose pass sleeps for customInstructions seconds (the real pass is not ours to test).
_SLOW_PASS_DAEMON = """
import sys
from pathlib import Path

import anyio

from longhaul_daemon.protocol import CompactResult
from longhaul_daemon.server.lifecycle import ServeOptions, configure_operational_log, run_daemon


async def slow_pass(params, *, pass_id, **_):
    await anyio.sleep(float(params.customInstructions))
    return CompactResult(passId=pass_id, span=1, fallback="slept")


async def main():
    options = ServeOptions(socket_path=Path(sys.argv[1]), grace_s=float(sys.argv[2]), run_pass=slow_pass)
    await run_daemon(options)


configure_operational_log()
anyio.run(main, backend="asyncio")
"""


def send_compact(socket_path: Path, session_id: str, sleep_s: float) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(WAIT_S)
    sock.connect(os.fspath(socket_path))
    params = compact_params(session_id, instructions=str(sleep_s))
    request = {"jsonrpc": "2.0", "id": 1, "method": "compact", "params": params}
    sock.sendall(json.dumps(request).encode() + b"\n")
    return sock


def read_all(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_sigterm_drains_a_pass_within_grace_and_cancels_one_that_overruns(short_tmp: Path) -> None:
    socket_path = short_tmp / "d.sock"
    daemon = subprocess.Popen(
        [sys.executable, "-c", _SLOW_PASS_DAEMON, str(socket_path), "3"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    terminated = False
    try:
        wait_until_serving(socket_path, daemon)
        quick = send_compact(socket_path, "quick", 1.0)
        stuck = send_compact(socket_path, "stuck", 600)
        deadline = time.monotonic() + WAIT_S
        while wait_until_serving(socket_path)["inFlight"] < 2:
            assert time.monotonic() < deadline, "both passes never ran"
            time.sleep(0.02)
        daemon.send_signal(signal.SIGTERM)
        terminated = True
        with quick, stuck:
            quick_reply = json.loads(read_all(quick))
            assert quick_reply["result"]["fallback"] == "slept"  # finished inside the grace period
            with pytest.raises((ConnectionRefusedError, FileNotFoundError)):
                call_sync(socket_path, "status")  # no new connections while draining
            assert read_all(stuck) == b""  # cancelled at the end of the grace period: no reply
    finally:
        code, stderr = stop_process(daemon, sig=None if terminated else signal.SIGKILL)
    assert code == 0
    assert not socket_path.exists()
    events = [json.loads(line)["event"] for line in stderr.splitlines() if line.startswith("{")]
    assert "signal_received" in events
    assert "drain_grace_expired" in events
    assert "pass_aborted" in events
    assert events[-1] == "daemon_stopped"


@pytest.mark.anyio
async def test_stopping_waits_for_requests_not_for_idle_connections(short_tmp: Path) -> None:
    finish = anyio.Event()
    started = anyio.Event()

    async def held(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        started.set()
        await finish.wait()
        return CompactResult(passId=pass_id, span=1, fallback="held")

    async with (
        running_daemon(short_tmp / "d.sock", run_pass=held, grace_s=WAIT_S * 10) as handle,
        connect(handle.socket_path) as idle,
        connect(handle.socket_path) as busy,
    ):
        await busy.request("compact", compact_params())
        with anyio.fail_after(WAIT_S):
            await started.wait()
        handle.stop()  # the daemon now drains: the pass may finish, the idle connection is not waited for
        finish.set()
        reply = await busy.receive()
        assert reply["result"]["fallback"] == "held"
        assert await idle.at_eof()
        assert await busy.at_eof()
    assert not (short_tmp / "d.sock").exists()


def test_sigterm_cancels_a_real_pass_stuck_in_git_after_the_grace_period(short_tmp: Path) -> None:
    """``serve`` as shipped, the real pass, and a ``git`` on PATH that hangs the pass's World step."""
    bin_dir = short_tmp / "bin"
    bin_dir.mkdir()
    fake_git = bin_dir / "git"
    fake_git.write_text("#!/bin/sh\nexec sleep 60\n")
    fake_git.chmod(0o755)
    socket_path = short_tmp / "d.sock"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    daemon = spawn_daemon(socket_path, "--grace", "0.5", env=env)
    terminated = False
    try:
        wait_until_serving(socket_path, daemon)
        params = compact_params("real")
        params["session"]["cwd"] = str(short_tmp)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(WAIT_S)
            client.connect(os.fspath(socket_path))
            request = {"jsonrpc": "2.0", "id": 1, "method": "compact", "params": params}
            client.sendall(json.dumps(request).encode() + b"\n")
            deadline = time.monotonic() + WAIT_S
            while wait_until_serving(socket_path)["inFlight"] < 1:
                assert time.monotonic() < deadline, "the pass never started"
                time.sleep(0.02)
            daemon.send_signal(signal.SIGTERM)
            terminated = True
            assert read_all(client) == b""  # cancelled: the shim sees the connection close and falls back
    finally:
        code, stderr = stop_process(daemon, sig=None if terminated else signal.SIGKILL)
    assert code == 0, stderr
    assert not socket_path.exists()
    assert '"pass_aborted"' in stderr
