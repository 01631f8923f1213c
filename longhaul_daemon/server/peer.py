"""Requests from the daemon *to* the shim, over the connection that carries the shim's own request.

PASS-22's ``model.complete`` runs inside a ``compact`` handler and must reach the very shim that asked: that
shim's pi holds the model registry and credentials. So each connection has one :class:`ShimPeer`; the read
loop hands it every inbound *response* (a frame with ``result`` or ``error`` and no ``method``), and a handler
finds it through :func:`longhaul_daemon.models.via_pi.current_peer`. Our ids are strings ``d<n>``, so they
can never be mistaken for the shim's own numeric ids. When the connection closes, every waiting call fails
with a retryable :class:`~longhaul_daemon.models.via_pi.ShimConnectionLost`; a cancelled call just stops
waiting (a reply arriving later is dropped).
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import structlog

from longhaul_daemon.models.via_pi import ShimConnectionLost, ShimErrorReply
from longhaul_daemon.rpc import encode_message

__all__ = ["ShimPeer", "response_in"]

_log = structlog.get_logger("longhaul.server")
_MALFORMED_REPLY = -32600


class _Waiting:
    """One call awaiting its reply: set exactly once, by the reply or by the connection closing."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.result: Any = None
        self.error: Exception | None = None


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

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send one request to the shim and return its ``result``.

        Raises ``ShimErrorReply`` for an error reply and ``ShimConnectionLost`` when the connection closes
        before the reply (or already has). Cancelling the caller stops the wait; nothing more is sent.
        """
        if self._closed:
            raise ShimConnectionLost()
        call_id = f"d{next(self._ids)}"
        waiting = _Waiting()
        self._waiting[call_id] = waiting
        self._call_started.set()
        self._call_started = anyio.Event()
        try:
            self.has_sent = True
            message = {"jsonrpc": "2.0", "id": call_id, "method": method, "params": params}
            await self._send_line(encode_message(message))
            await waiting.done.wait()
        finally:
            self._waiting.pop(call_id, None)
        if waiting.error is not None:
            raise waiting.error
        return waiting.result

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


def response_in(message: object) -> dict[str, Any] | None:
    """The parsed frame if it is a JSON-RPC *response* (``result`` or ``error``, no ``method``), else None."""
    if not isinstance(message, dict) or "method" in message:
        return None
    if "result" not in message and "error" not in message:
        return None
    return message
