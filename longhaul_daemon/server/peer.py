"""Requests from the daemon *to* the shim, over the connection that carries the shim's own request.

PASS-22's ``model.complete`` runs inside a ``compact`` handler and must reach the very shim that asked: that
shim's pi holds the model registry and credentials. So each connection has one :class:`ShimPeer`; the read
loop hands it every inbound *response* (a frame with ``result`` or ``error`` and no ``method``), and the
dispatcher hands it to the ``compact`` handler as an argument, which hands it to the pass (a
:class:`~longhaul_daemon.models.via_pi.PiPeer`). Our ids are strings ``d<n>``, so they
can never be mistaken for the shim's own numeric ids. When the connection closes, every waiting call fails
with a retryable :class:`~longhaul_daemon.models.via_pi.ShimConnectionLost`; a cancelled call just stops
waiting (a reply arriving later is dropped).

While a call waits, the shim may send notifications about it (``model.delta``: a piece of the reply as pi
streams it, naming the call by ``params.id``); they go to the call's ``on_note``. A caller that has seen
enough sets its ``stop`` event, and the shim is told once (``model.stop``) to end the call and reply with
what it has.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import structlog

from longhaul_daemon.models.via_pi import (
    MODEL_STOP,
    NOTIFICATIONS,
    NoteSink,
    ShimConnectionLost,
    ShimErrorReply,
)
from longhaul_daemon.rpc import encode_message

__all__ = ["ShimPeer", "note_in", "response_in"]

_log = structlog.get_logger("longhaul.server")
_MALFORMED_REPLY = -32600


class _Waiting:
    """One call awaiting its reply: set exactly once, by the reply or by the connection closing."""

    def __init__(self, on_note: NoteSink | None) -> None:
        self.done = anyio.Event()
        self.result: Any = None
        self.error: Exception | None = None
        self.on_note = on_note


class ShimPeer:
    """The shim at the other end of one connection, as something the daemon can send requests to."""

    def __init__(self, send_line: Callable[[bytes], Awaitable[None]]) -> None:
        self._send_line = send_line
        self._ids = itertools.count(1)
        self._waiting: dict[str, _Waiting] = {}
        self._closed = False
        self._call_started = anyio.Event()
        self.has_sent = False

    @property
    def awaiting_reply(self) -> bool:
        """Whether some call waits for a reply, so the read loop must keep reading even when it is full."""
        return bool(self._waiting)

    async def wait_call_started(self) -> None:
        """Return once a call is waiting for its reply (at once if one already is)."""
        while not self._waiting:
            await self._call_started.wait()

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        """Send one request to the shim and return its ``result``.

        ``on_note`` gets the params of each notification the shim sends about this call; once ``stop`` is
        set, the shim is told to end the call (it still replies). Raises ``ShimErrorReply`` for an error
        reply and ``ShimConnectionLost`` when the connection closes before the reply (or already has).
        Cancelling the caller stops the wait; nothing more is sent.
        """
        if self._closed:
            raise ShimConnectionLost()
        call_id = f"d{next(self._ids)}"
        waiting = _Waiting(on_note)
        self._waiting[call_id] = waiting
        self._call_started.set()
        self._call_started = anyio.Event()
        try:
            self.has_sent = True
            message = {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}
            await self._send_line(encode_message(message))
            if stop is None:
                await waiting.done.wait()
            else:
                await self._wait_or_stop(call_id, waiting, stop)
        finally:
            self._waiting.pop(call_id, None)
        if waiting.error is not None:
            raise waiting.error
        return waiting.result

    async def _wait_or_stop(self, call_id: str, waiting: _Waiting, stop: anyio.Event) -> None:
        """Wait for the reply; if ``stop`` is set first, tell the shim once to end the call, and wait on."""
        async with anyio.create_task_group() as group:

            async def tell_stop() -> None:
                await stop.wait()
                if not waiting.done.is_set() and not self._closed:
                    note = {"jsonrpc": "2.0", "method": MODEL_STOP, "params": {"id": call_id}}
                    await self._send_line(encode_message(note))

            group.start_soon(tell_stop)
            await waiting.done.wait()
            group.cancel_scope.cancel()

    def notified(self, note: Mapping[str, Any]) -> None:
        """Hand a notification about a waiting call to its ``on_note``; one naming no such call is dropped."""
        params = note.get("params")
        if not isinstance(params, Mapping):
            return
        call_id = params.get("id")
        waiting = self._waiting.get(call_id) if isinstance(call_id, str) else None
        if waiting is None or waiting.done.is_set() or waiting.on_note is None:
            return
        waiting.on_note(params)

    def deliver(self, reply: Mapping[str, Any]) -> None:
        """Hand a response to the call it answers; one for no waiting call (late, unknown) is dropped."""
        call_id = reply.get("id")
        waiting = self._waiting.get(call_id) if isinstance(call_id, str) else None
        if waiting is None or waiting.done.is_set():
            _log.info("shim_reply_unmatched", has_id=call_id is not None)
            return
        if "error" in reply:
            error = reply["error"]
            if isinstance(error, Mapping) and isinstance(error.get("code"), int):
                waiting.error = ShimErrorReply(int(error["code"]), error.get("data"))
            else:
                waiting.error = ShimErrorReply(_MALFORMED_REPLY)
        else:
            waiting.result = reply.get("result")
        waiting.done.set()

    def close(self) -> None:
        """The connection is gone: fail every waiting call, refuse new ones."""
        self._closed = True
        for waiting in self._waiting.values():
            if not waiting.done.is_set():
                waiting.error = ShimConnectionLost()
                waiting.done.set()


def note_in(message: object) -> dict[str, Any] | None:
    """The parsed frame if it is a notification the shim sends about a daemon call (no ``id``), else None."""
    if not isinstance(message, dict) or "id" in message or message.get("method") not in NOTIFICATIONS:
        return None
    return message


def response_in(message: object) -> dict[str, Any] | None:
    """The parsed frame if it is a JSON-RPC *response* (``result`` or ``error``, no ``method``), else None."""
    if not isinstance(message, dict) or "method" in message:
        return None
    if "result" not in message and "error" not in message:
        return None
    return message
