"""One client connection: peer check, NDJSON frames in, concurrent dispatch, one reply line per request out.

Requests pipelined on one connection run concurrently, at most ``max_in_flight`` at a time; the slot is
taken *before* reading the next frame, so a client that floods us fills the kernel buffer instead of our
memory. Replies go out under a write lock so lines never interleave. When the client goes away (EOF or reset)
its in-flight requests are cancelled: that is how the shim cancels a pass. No handler failure ends the
connection or the daemon.

Once the daemon has sent the shim a request of its own (``model.complete``, :mod:`.peer`), inbound responses
and ``model.delta`` notes go to the connection's :class:`~.peer.ShimPeer`, and while such a call waits the
loop reads even with every slot taken, since the reply must never queue behind the slot its handler holds.
The bounds (connections, the shared :class:`~.framing.ByteBudget`, idle and stall timeouts) are in
docs/protocol.md and docs/reliability.md; a connection whose request runs is never closed for being quiet.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from anyio.abc import SocketAttribute, SocketStream, TaskGroup

from longhaul_daemon.defaults import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_BUFFERED_BYTES,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_FRAME,
    DEFAULT_STALL_TIMEOUT_S,
    MAX_IN_FLIGHT_PER_CONNECTION,
)
from longhaul_daemon.errors import INVALID_REQUEST, SERVER_BUSY
from longhaul_daemon.rpc import Dispatcher, encode_message, error_response
from longhaul_daemon.rpc.dispatch import NOT_DECODED, Caller
from longhaul_daemon.rpc.registry import internal_error
from longhaul_daemon.server.framing import (
    ByteBudget,
    ByteBudgetExceeded,
    Frame,
    FrameReader,
    FrameTooLarge,
    line,
)
from longhaul_daemon.server.peer import ShimPeer, note_in, response_in
from longhaul_daemon.server.peercred import peer_allowed, peer_credentials

__all__ = ["ConnectionLimits", "RequestTracker", "ServerLoad", "refuse_connection", "serve_connection"]

_log = structlog.get_logger("longhaul.server")
_connection_ids = itertools.count(1)
_SETTLE_S = 0.05
_REFUSE_WRITE_S = 1.0  # a refused client that does not read its one line is not waited for


@dataclass(frozen=True)
class ConnectionLimits:
    """Per-connection limits: frame size, requests in flight, how long one reply may take to write, and how
    long a connection may stay quiet (no request running, no frame) or stall in the middle of a frame."""

    max_frame: int = DEFAULT_MAX_FRAME
    max_in_flight: int = MAX_IN_FLIGHT_PER_CONNECTION
    write_timeout_s: float = 30.0
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    stall_timeout_s: float = DEFAULT_STALL_TIMEOUT_S


class ServerLoad:
    """What all connections share: how many are open (against ``max_connections``) and the byte budget."""

    def __init__(
        self,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_BYTES,
    ) -> None:
        self.max_connections = max_connections
        self.connections = 0
        self.peak_connections = 0
        self.refused = 0
        self.budget = ByteBudget(max_buffered_bytes)

    def admit(self) -> bool:
        """Count one more open connection; False (and counted as refused) when the cap is reached."""
        if self.connections >= self.max_connections:
            self.refused += 1
            return False
        self.connections += 1
        self.peak_connections = max(self.peak_connections, self.connections)
        return True

    def leave(self) -> None:
        """Count one open connection closed."""
        self.connections -= 1


class RequestTracker:
    """Counts requests being handled across all connections, so shutdown can wait for them to finish."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.handled = 0  # requests finished since the daemon started
        self._idle = anyio.Event()

    def begin(self) -> None:
        """Count one request started."""
        self.in_flight += 1

    def end(self) -> None:
        """Count one request finished, and wake :meth:`wait_idle` when it was the last."""
        self.in_flight -= 1
        self.handled += 1
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
        stream: SocketStream,
        dispatcher: Dispatcher,
        tracker: RequestTracker,
        limits: ConnectionLimits,
        requests: TaskGroup,
        budget: ByteBudget,
    ) -> None:
        self._stream = stream
        self._dispatcher = dispatcher
        self._tracker = tracker
        self._limits = limits
        self._requests = requests
        self._write_lock = anyio.Lock()
        self._slots = anyio.Semaphore(limits.max_in_flight)
        self.peer = ShimPeer(self.write)
        # its requests run in the connection's request group, and compact may ask the shim back
        self._caller = Caller(requests, self.peer)
        self.reader = FrameReader(stream, limits.max_frame, budget)
        self._running = 0  # requests of this connection being handled now
        self._quiet = anyio.Event()  # set whenever _running drops to 0
        self._activity_at = anyio.current_time()  # when a request last ended (or the connection opened)

    async def _refuse(self, reply: dict[str, Any]) -> None:
        """Answer one error with no id, stop reading, and close our side once running requests are done."""
        await self.write(encode_message(reply))
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self._stream.send_eof()

    async def read_loop(self) -> None:
        reader = self.reader
        while True:
            holds_slot = await self._slot_or_awaited_reply()
            try:
                frame = await reader.next_frame()
            except FrameTooLarge as exc:
                if holds_slot:
                    self._slots.release()
                _log.warning("frame_too_large", max_frame=exc.max_frame)
                reply = error_response(INVALID_REQUEST, "Frame too large", data={"maxFrame": exc.max_frame})
                await self._refuse(reply)
                return  # requests already running still get their replies
            except ByteBudgetExceeded:
                if holds_slot:
                    self._slots.release()
                _log.warning("buffer_budget_exceeded")
                busy = error_response(SERVER_BUSY, "Server busy", data={"limit": "buffered-bytes"})
                await self._refuse(busy)
                return
            if frame is None:
                if holds_slot:
                    self._slots.release()
                if self._has_requests_running():
                    _log.info("client_gone_cancelling")
                # Cancel first: a pass waiting on the shim is then aborted, not woken by the closed peer.
                self._requests.cancel_scope.cancel()
                self.peer.close()
                return
            handed_over = False
            try:
                handed_over = await self._take(frame, holds_slot)
            finally:  # cancelled on the way (the client left): the frame's bytes go back to the budget
                if not handed_over:
                    reader.release(frame)

    async def _take(self, frame: Frame, holds_slot: bool) -> bool:
        """Deliver a response to the waiting shim call, or start a request; True when a handler took the frame
        (and will give its bytes back), False when the frame is done with here."""
        decoded: Any = NOT_DECODED
        if self.peer.has_sent:  # the frame may answer our model.complete; parsed once, here
            with contextlib.suppress(ValueError, RecursionError):  # not JSON: dispatch says -32700
                decoded = await self._dispatcher.decode(frame)
            response = response_in(decoded)
            note = note_in(decoded) if response is None else None
            if response is not None or note is not None:
                if holds_slot:
                    self._slots.release()
                if response is not None:
                    self.peer.deliver(response)
                elif note is not None:
                    self.peer.notified(note)
                return False
        if not holds_slot:
            await self._slots.acquire()
        self._begin()
        self._requests.start_soon(self._handle, frame, decoded)
        return True

    def _begin(self) -> None:
        self._running += 1

    def _end(self) -> None:
        self._running -= 1
        self._activity_at = anyio.current_time()
        if self._running == 0:
            self._quiet.set()
            self._quiet = anyio.Event()

    async def watch_timeouts(self, reading: anyio.CancelScope) -> None:
        """Cancel ``reading`` when the connection has been quiet too long, or a begun frame stalls.

        Quiet means no request of this connection running and no frame begun: ``idle_timeout_s`` after the
        last request ended or the last bytes came, the connection is closed. A frame that has begun and gets
        no byte for ``stall_timeout_s`` while the reader waits on the socket is cut, requests running or not
        (a shim never stops in the middle of a frame). A running request is never cut for being quiet.
        """
        limits, reader = self._limits, self.reader
        while True:
            now = anyio.current_time()
            if reader.receiving and reader.partial:
                deadline, why = reader.progress_at + limits.stall_timeout_s, "stalled-frame"
            elif self._running:
                await self._quiet.wait()
                continue
            elif not reader.partial:
                deadline, why = max(self._activity_at, reader.progress_at) + limits.idle_timeout_s, "idle"
            else:  # a frame is out and the next read has not begun: a moment, not a state
                await anyio.sleep(_SETTLE_S)
                continue
            if now >= deadline:
                _log.info("connection_timed_out", why=why, running=self._running)
                reading.cancel()
                return
            # Woken early is harmless (the state is looked at again); never later than the shorter timeout.
            await anyio.sleep(min(deadline - now, limits.stall_timeout_s, limits.idle_timeout_s))

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

    async def _handle(self, frame: Frame, decoded: Any) -> None:
        self._tracker.begin()
        try:
            try:
                reply = await self._dispatcher.dispatch(frame, decoded=decoded, caller=self._caller)
            except Exception as exc:
                failure = internal_error(exc, where="connection")
                reply = encode_message(error_response(failure.code, failure.message, data=failure.data))
            finally:
                self.reader.release(frame)  # also when cancelled: the budget is the daemon's, not this call's
            del frame, decoded  # the frame's memory goes now, not when the reply has been written
            if reply is not None:
                await self.write(reply)
        finally:
            self._tracker.end()
            self._slots.release()
            self._end()

    async def write(self, payload: bytes) -> None:
        """Write one reply line; a client that stopped reading or went away ends the connection."""
        try:
            async with self._write_lock:
                with anyio.fail_after(self._limits.write_timeout_s):
                    await self._stream.send(line(payload))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, TimeoutError, OSError) as exc:
            _log.info("reply_write_failed", error_class=type(exc).__name__)
            self._requests.cancel_scope.cancel()


async def refuse_connection(stream: SocketStream, limit: str) -> None:
    """Tell a client the daemon is at a limit (-32005, no id) and close: it falls back instead of waiting."""
    reply = error_response(SERVER_BUSY, "Server busy", data={"limit": limit})
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, TimeoutError):
        with anyio.fail_after(_REFUSE_WRITE_S):
            await stream.send(line(encode_message(reply)))


async def serve_connection(
    stream: SocketStream,
    dispatcher: Dispatcher,
    tracker: RequestTracker,
    limits: ConnectionLimits,
    *,
    load: ServerLoad | None = None,
    own_uid: int | None = None,
) -> None:
    """Serve one accepted connection until the client leaves (or times out), then close it."""
    uid = os.getuid() if own_uid is None else own_uid
    load = load if load is not None else ServerLoad()
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
        if not load.admit():
            _log.warning("connection_refused", conn=connection_id, open=load.connections)
            await refuse_connection(stream, "connections")
            return
        try:
            await _serve_admitted(stream, dispatcher, tracker, limits, load.budget, connection_id, peer.pid)
        finally:
            load.leave()


async def _serve_admitted(
    stream: SocketStream,
    dispatcher: Dispatcher,
    tracker: RequestTracker,
    limits: ConnectionLimits,
    budget: ByteBudget,
    connection_id: int,
    peer_pid: int,
) -> None:
    structlog.contextvars.bind_contextvars(conn=connection_id, peer_pid=peer_pid)
    async with anyio.create_task_group() as requests:
        connection = _Connection(stream, dispatcher, tracker, limits, requests, budget)
        try:
            with anyio.CancelScope() as reading:
                async with anyio.create_task_group() as watch:
                    watch.start_soon(connection.watch_timeouts, reading)
                    await connection.read_loop()
                    watch.cancel_scope.cancel()
            if reading.cancelled_caught:  # timed out: what still runs belonged to a stalled client
                requests.cancel_scope.cancel()
        finally:
            connection.peer.close()
            connection.reader.close()
