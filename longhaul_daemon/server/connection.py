"""One client connection: peer check, NDJSON frames in, concurrent dispatch, one reply line per request out.

Requests pipelined on one connection run concurrently, at most ``max_in_flight`` at a time; the slot is
taken *before* reading the next frame, so a client that floods us fills the kernel buffer instead of our
memory. Replies go out under a write lock so lines never interleave. When the client goes away (EOF or reset)
its in-flight requests are cancelled: that is how the shim cancels a pass. No handler failure ends the
connection or the daemon.

Once the daemon has sent the shim a request of its own (``model.complete``, :mod:`.peer`), inbound responses
go to the connection's :class:`~longhaul_daemon.server.peer.ShimPeer`, not the dispatcher. While such a call
waits, the loop reads even with every slot taken: the reply it waits for must never queue behind the slot its
own handler holds.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.lowlevel
import structlog
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteStream

from longhaul_daemon.config import DEFAULT_MAX_FRAME, MAX_IN_FLIGHT_PER_CONNECTION
from longhaul_daemon.errors import INVALID_REQUEST
from longhaul_daemon.models.via_pi import bind_peer
from longhaul_daemon.rpc import Dispatcher, encode_message, error_response
from longhaul_daemon.rpc.dispatch import NOT_DECODED, MethodCall
from longhaul_daemon.rpc.registry import RpcOutcome, internal_error
from longhaul_daemon.server.framing import FrameReader, FrameTooLarge, line
from longhaul_daemon.server.peer import ShimPeer, response_in
from longhaul_daemon.server.peercred import peer_allowed, peer_credentials

__all__ = ["ConnectionLimits", "RequestTracker", "serve_connection"]

_log = structlog.get_logger("longhaul.server")
_connection_ids = itertools.count(1)


@dataclass(frozen=True)
class ConnectionLimits:
    """Per-connection limits: frame size, requests in flight, and how long one reply may take to write."""

    max_frame: int = DEFAULT_MAX_FRAME
    max_in_flight: int = MAX_IN_FLIGHT_PER_CONNECTION
    write_timeout_s: float = 30.0


class RequestTracker:
    """Counts requests being handled across all connections, so shutdown can wait for them to finish."""

    def __init__(self) -> None:
        self.in_flight = 0
        self._idle = anyio.Event()

    def begin(self) -> None:
        self.in_flight += 1

    def end(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()
            self._idle = anyio.Event()

    async def wait_idle(self) -> None:
        """Return once no request is in flight."""
        while self.in_flight:
            await self._idle.wait()


class _Connection:
    def __init__(
        self,
        stream: BufferedByteStream,
        dispatcher: Dispatcher,
        tracker: RequestTracker,
        limits: ConnectionLimits,
        requests: TaskGroup,
    ) -> None:
        self._stream = stream
        self._dispatcher = dispatcher
        self._tracker = tracker
        self._limits = limits
        self._requests = requests
        self._write_lock = anyio.Lock()
        self._slots = anyio.Semaphore(limits.max_in_flight)
        self.peer = ShimPeer(self.write)

    async def read_loop(self) -> None:
        reader = FrameReader(self._stream, self._limits.max_frame)
        while True:
            holds_slot = await self._slot_or_awaited_reply()
            try:
                frame = await reader.next_frame()
            except FrameTooLarge as exc:
                if holds_slot:
                    self._slots.release()
                _log.warning("frame_too_large", max_frame=exc.max_frame)
                reply = error_response(INVALID_REQUEST, "Frame too large", data={"maxFrame": exc.max_frame})
                await self.write(encode_message(reply))
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await self._stream.send_eof()
                return  # requests already running still get their replies
            if frame is None:
                if holds_slot:
                    self._slots.release()
                if self._has_requests_running():
                    _log.info("client_gone_cancelling")
                # Cancel first: a pass waiting on the shim is then aborted, not woken by the closed peer.
                self._requests.cancel_scope.cancel()
                self.peer.close()
                return
            decoded: Any = NOT_DECODED
            if self.peer.has_sent:  # the frame may answer our model.complete; parsed once, here
                with contextlib.suppress(ValueError, RecursionError):  # not JSON: dispatch says -32700
                    decoded = await self._dispatcher.decode(frame)
                response = response_in(decoded)
                if response is not None:
                    if holds_slot:
                        self._slots.release()
                    self.peer.deliver(response)
                    continue
            if not holds_slot:
                await self._slots.acquire()
            self._requests.start_soon(self._handle, frame, decoded)

    async def _slot_or_awaited_reply(self) -> bool:
        """Take a request slot (True), or return False when none is free and a shim call awaits a reply."""
        if self._slots.value > 0:
            self._slots.acquire_nowait()
            return True
        if self.peer.awaiting_reply:
            return False
        took_slot = False
        async with anyio.create_task_group() as race:

            async def take_slot() -> None:
                nonlocal took_slot
                await self._slots.acquire()
                took_slot = True
                race.cancel_scope.cancel()

            async def await_reply() -> None:
                await self.peer.wait_call_started()
                race.cancel_scope.cancel()

            race.start_soon(take_slot)
            race.start_soon(await_reply)
        return took_slot

    def _has_requests_running(self) -> bool:
        return self._slots.value < self._limits.max_in_flight

    async def _run_method(self, call: MethodCall) -> RpcOutcome:
        """Run one method call as a task of this connection's request group (see ``run_in_own_group``): the
        client leaving cancels it at once, once, by scope, so its shielded cleanups run to the end."""
        outcomes: list[RpcOutcome] = []
        finished = anyio.Event()

        async def run() -> None:
            try:
                outcomes.append(await call())
            finally:
                finished.set()

        self._requests.start_soon(run)
        await finished.wait()
        if not outcomes:  # cancelled with the connection, and so is this wait: the checkpoint raises
            await anyio.lowlevel.checkpoint()
            return internal_error(RuntimeError("method ended without an outcome"), where="connection")
        return outcomes[0]

    async def _handle(self, frame: bytes, decoded: Any) -> None:
        self._tracker.begin()
        try:
            try:
                reply = await self._dispatcher.dispatch(frame, decoded=decoded, runner=self._run_method)
            except Exception as exc:
                failure = internal_error(exc, where="connection")
                reply = encode_message(error_response(failure.code, failure.message, data=failure.data))
            if reply is not None:
                await self.write(reply)
        finally:
            self._tracker.end()
            self._slots.release()

    async def write(self, payload: bytes) -> None:
        """Write one reply line; a client that stopped reading or went away ends the connection."""
        try:
            async with self._write_lock:
                with anyio.fail_after(self._limits.write_timeout_s):
                    await self._stream.send(line(payload))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, TimeoutError, OSError) as exc:
            _log.info("reply_write_failed", error_class=type(exc).__name__)
            self._requests.cancel_scope.cancel()


async def serve_connection(
    stream: SocketStream,
    dispatcher: Dispatcher,
    tracker: RequestTracker,
    limits: ConnectionLimits,
    *,
    own_uid: int | None = None,
) -> None:
    """Serve one accepted connection until the client leaves, then close it."""
    uid = os.getuid() if own_uid is None else own_uid
    connection_id = next(_connection_ids)
    async with stream:
        try:
            peer = peer_credentials(stream.extra(SocketAttribute.raw_socket))
        except OSError as exc:
            _log.warning("peer_unknown", conn=connection_id, error_class=type(exc).__name__)
            return
        if not peer_allowed(peer.uid, uid):
            _log.warning("peer_refused", conn=connection_id, peer_uid=peer.uid, peer_pid=peer.pid)
            return
        structlog.contextvars.bind_contextvars(conn=connection_id, peer_pid=peer.pid)
        async with anyio.create_task_group() as requests:
            connection = _Connection(BufferedByteStream(stream), dispatcher, tracker, limits, requests)
            bind_peer(connection.peer)  # handlers start in this context, so current_peer() finds it
            try:
                await connection.read_loop()
            finally:
                connection.peer.close()
