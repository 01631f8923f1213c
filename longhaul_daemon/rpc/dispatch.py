"""One NDJSON frame in, one reply line out: the parse, the batch cap, the library call, the encoding.

Frames are parsed once, here, with orjson (faster than the stdlib, and replies encode several times faster),
falling back to the stdlib for the JSON orjson refuses but the stdlib reads (a lone surrogate escape, which
pi's ``JSON.stringify`` writes for a string cut inside an emoji). NaN and Infinity are not JSON: both parsers
refuse them, so such a frame is a -32700 parse error instead of a reply that cannot be encoded. A frame over
:data:`THREAD_DECODE_BYTES` is parsed in a worker thread. The parsed request goes to jsonrpcserver through
:mod:`.jsonrpcserver_adapter`, which holds everything the library needs; params are checked by
:mod:`.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup

from longhaul_daemon import jsoncodec
from longhaul_daemon.defaults import MAX_BATCH
from longhaul_daemon.errors import INVALID_REQUEST, PARSE_ERROR
from longhaul_daemon.models.via_pi import PiPeer
from longhaul_daemon.rpc.jsonrpcserver_adapter import library_dispatch, library_methods
from longhaul_daemon.rpc.registry import RpcMethod, internal_error

__all__ = [
    "NOT_DECODED",
    "THREAD_DECODE_BYTES",
    "Caller",
    "Dispatcher",
    "decode_frame",
    "encode_message",
    "error_response",
]

THREAD_DECODE_BYTES: Final = 1024 * 1024  # larger frames are parsed in a worker thread
NOT_DECODED: Final[Any] = object()  # ``dispatch(decoded=…)``: the caller has not parsed the frame


@dataclass(frozen=True)
class Caller:
    """The connection a frame came on: the task group its method calls run in (the client leaving cancels
    them at once) and the shim's side of it, which a method may send requests to (``model.complete``)."""

    requests: TaskGroup
    peer: PiPeer


def decode_frame(frame: bytes | bytearray) -> Any:
    """One frame as Python values; ``ValueError`` (or ``RecursionError``) when it is not JSON."""
    return jsoncodec.loads(frame)


def encode_message(message: object) -> bytes:
    """Compact JSON, UTF-8: newlines inside strings are escaped, so the result is one NDJSON line."""
    return jsoncodec.dumps(message)


def error_response(code: int, message: str, *, data: Any = None, request_id: Any = None) -> dict[str, Any]:
    """A JSON-RPC 2.0 error response object."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "error": error, "id": request_id}


class Dispatcher:
    """Dispatches one NDJSON frame to the method table; returns the reply text, or ``None`` for no reply."""

    def __init__(
        self,
        methods: Mapping[str, RpcMethod],
        *,
        max_batch: int = MAX_BATCH,
        loads: Callable[[bytes | bytearray], Any] = decode_frame,
        thread_decode_bytes: int = THREAD_DECODE_BYTES,
    ) -> None:
        self._library_methods = library_methods(methods)
        self._max_batch = max_batch
        self._loads = loads
        self._thread_decode_bytes = thread_decode_bytes

    async def decode(self, frame: bytes | bytearray) -> Any:
        """Parse a frame, one over the threshold in a worker thread; raises ``ValueError``/``RecursionError``.

        The loop goes on while the thread waits for the GIL or runs Python code. orjson (and the stdlib's
        C scanner) hold the GIL for the whole parse, though, so a huge frame still stalls the loop for the
        parse itself, thread or not.
        """
        if len(frame) > self._thread_decode_bytes:
            return await anyio.to_thread.run_sync(self._loads, frame)
        return self._loads(frame)

    async def dispatch(
        self,
        frame: bytes | bytearray,
        *,
        decoded: Any = NOT_DECODED,
        caller: Caller | None = None,
    ) -> bytes | None:
        """Reply to one frame: a JSON text without the trailing newline, or ``None`` (notifications only).

        ``decoded`` is the frame already parsed by the caller, so it is not parsed twice; ``caller`` is the
        connection it came on (none for a frame handled on its own: its calls then run in a task group of
        their own, with no peer).
        """
        request = decoded
        if request is NOT_DECODED:
            try:
                request = await self.decode(frame)
            except (ValueError, RecursionError):
                return encode_message(error_response(PARSE_ERROR, "Parse error"))
        if isinstance(request, list) and len(request) > self._max_batch:
            return encode_message(
                error_response(INVALID_REQUEST, "Batch too large", data={"maxBatch": self._max_batch})
            )
        try:
            response = await library_dispatch(
                request,
                self._library_methods,
                group=caller.requests if caller is not None else None,
                peer=caller.peer if caller is not None else None,
            )
        except Exception as exc:
            failure = internal_error(exc, where="dispatch")
            return encode_message(error_response(failure.code, failure.message, data=failure.data))
        if response is None or response == []:
            return None
        try:
            return encode_message(response)
        except (TypeError, ValueError) as exc:
            failure = internal_error(exc, where="encode")
            return encode_message(
                error_response(
                    failure.code, failure.message, data=failure.data, request_id=_single_id(request)
                )
            )


def _single_id(request: object) -> Any:
    if isinstance(request, dict):
        request_id = request.get("id")
        if request_id is None or isinstance(request_id, str | int):
            return request_id
    return None
