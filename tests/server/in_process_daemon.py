"""Test harness: an in-process daemon on a real socket, an NDJSON client, and subprocess helpers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteStream

from longhaul_daemon.protocol import CompactParams, CompactResult
from longhaul_daemon.server.lifecycle import DaemonHandle, ServeOptions, run_daemon

WAIT_S = 10.0  # the bound on every wait in these tests; never an assertion about speed


class RpcConnection:
    """One NDJSON connection to the daemon, for tests."""

    def __init__(self, stream: SocketStream) -> None:
        self.raw = stream
        self.stream = BufferedByteStream(stream)
        self._next_id = 0

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send(data)

    async def send(self, message: object) -> None:
        await self.send_raw(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: object = None, *, request_id: int | None = None) -> int:
        """Send a request (not waiting for the reply); returns its id."""
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": request_id}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return request_id

    async def receive(self) -> Any:
        with anyio.fail_after(WAIT_S):
            return json.loads(await self.stream.receive_until(b"\n", 64 * 1024 * 1024))

    async def call(self, method: str, params: object = None) -> Any:
        """Send a request and return the whole reply object (result or error).

        A request the daemon sends meanwhile (``model.complete``) is answered "method not found", as a shim
        that cannot make model calls answers it.
        """
        request_id = await self.request(method, params)
        while True:
            reply = await self.receive()
            if "method" not in reply or "id" not in reply:
                break
            error = {"code": -32601, "message": "method not found"}
            await self.send({"jsonrpc": "2.0", "id": reply["id"], "error": error})
        assert reply["id"] == request_id
        return reply

    async def at_eof(self) -> bool:
        """Whether the daemon closed the connection (reads until EOF; any data first means no)."""
        with anyio.fail_after(WAIT_S):
            try:
                await self.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return True
        return False

    async def aclose(self) -> None:
        await self.stream.aclose()


@asynccontextmanager
async def connect(socket_path: Path) -> AsyncIterator[RpcConnection]:
    with anyio.fail_after(WAIT_S):
        stream = await anyio.connect_unix(socket_path)
    connection = RpcConnection(stream)
    try:
        yield connection
    finally:
        await connection.aclose()


@asynccontextmanager
async def running_daemon(socket_path: Path, **options: Any) -> AsyncIterator[DaemonHandle]:
    """A daemon in this process (no signal handlers) built from ``options`` (``run_pass=``: the pass it runs),
    drained when the block ends or its handle's ``stop()`` is called."""
    serve_options = ServeOptions(socket_path=socket_path, handle_signals=False, **options)
    async with anyio.create_task_group() as tg:
        with anyio.fail_after(WAIT_S):
            handle: DaemonHandle = await tg.start(run_daemon, serve_options)
        try:
            yield handle
        finally:
            handle.stop()


def session(session_id: str = "s1", compactor: str | None = None) -> dict[str, Any]:
    """SessionFacts as the shim sends them."""
    facts: dict[str, Any] = {
        "cwd": "/work",
        "sessionId": session_id,
        "agentDir": "/agent",
        "piVersion": "0.1",
    }
    if compactor is not None:
        facts["env"] = {"PI_COMPACTOR": compactor}
    return facts


def compact_params(
    session_id: str = "s1", *, instructions: str | None = None, **extra: Any
) -> dict[str, Any]:
    """CompactParams as the shim sends them; ``instructions`` is a handy channel to steer fake passes."""
    params: dict[str, Any] = {
        "session": session(session_id, extra.pop("compactor", None)),
        "preparation": {"firstKeptEntryId": "e9", "tokensBefore": 1000},
        "branchEntries": [],
        **extra,
    }
    if instructions is not None:
        params["customInstructions"] = instructions
    return params


def whole_result(pass_id: str, *, closed_as: str = "whole") -> CompactResult:
    """A minimal successful pass result."""
    return CompactResult.model_validate(
        {
            "passId": pass_id,
            "span": 1,
            "compaction": {"summary": "s", "firstKeptEntryId": "e9", "tokensBefore": 1000, "details": {}},
            "after": {"spanRecord": {"v": 1, "span": 1, "closedAs": closed_as}, "line": {"v": 1, "span": 1}},
        }
    )


async def sleeping_pass(params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
    """A fake pass that sleeps for ``customInstructions`` seconds, then succeeds."""
    await anyio.sleep(float(params.customInstructions or "0"))
    return whole_result(pass_id)


def daemon_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "longhaul_daemon", *args]


def spawn_daemon(
    socket_path: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``python -m longhaul_daemon serve --socket PATH …`` with stdout/stderr captured."""
    return subprocess.Popen(
        daemon_command("serve", "--socket", str(socket_path), *args),
        env=dict(os.environ if env is None else env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


async def eventually(predicate: Callable[[], bool]) -> None:
    """Wait (bounded by WAIT_S) until ``predicate()`` holds; for state with no event to wait on."""
    with anyio.fail_after(WAIT_S):
        while True:
            if predicate():
                return
            await anyio.sleep(0.01)


def call_sync(socket_path: Path, method: str, params: object = None, *, timeout_s: float = WAIT_S) -> Any:
    """A blocking one-shot JSON-RPC call; returns the reply object."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(os.fspath(socket_path))
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {} if params is None else params}
        sock.sendall(json.dumps(request).encode() + b"\n")
        buffer = b""
        while b"\n" not in buffer:
            chunk = sock.recv(65536)
            assert chunk, "daemon closed the connection without answering"
            buffer += chunk
    return json.loads(buffer.split(b"\n", 1)[0])


def wait_until_serving(socket_path: Path, process: subprocess.Popen[bytes] | None = None) -> dict[str, Any]:
    """Poll ``status`` until the daemon answers (bounded by WAIT_S); returns the status result."""
    deadline = time.monotonic() + WAIT_S
    while True:
        if process is not None and process.poll() is not None:
            _, stderr = process.communicate()
            raise AssertionError(
                f"daemon exited with {process.returncode}: {stderr.decode(errors='replace')}"
            )
        try:
            result: dict[str, Any] = call_sync(socket_path, "status", timeout_s=1.0)["result"]
            return result
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def stop_process(process: subprocess.Popen[bytes], *, sig: int | None = 15) -> tuple[int, str]:
    """Send ``sig`` (SIGTERM by default; ``None`` only waits), wait (bounded), return exit code and stderr."""
    if sig is not None and process.poll() is None:
        process.send_signal(sig)
    try:
        _, stderr = process.communicate(timeout=WAIT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        raise AssertionError("daemon did not exit in time") from None
    return process.returncode, stderr.decode(errors="replace")
