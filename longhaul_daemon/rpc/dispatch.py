"""The only module importing jsonrpcserver: one parse per frame, a batch cap, replies that never leak text.

jsonrpcserver 5.0.9 has four sharp edges (see the stack notes): it is asyncio-only, its import warns on
3.11/3.12, it checks params only by signature, and it puts ``str(exc)`` into ``error.data``. Here the import
is wrapped in a warning filter, frames are parsed by us once and handed over with
``deserializer=lambda _s: obj``, params are checked by :mod:`longhaul_daemon.rpc.registry`, and any
library-made -32603/-32000 carrying text is replaced by an error id before it reaches the client. The
library's own stdlib logger (``logger.exception`` with the message) is silenced; our operational log records
the error id and class instead.

The library's request check is a draft-04 jsonschema run over the whole parsed frame, params included: on a
big ``compact`` frame it cost twice the parse. :func:`check_envelope` makes the same decision from the
envelope's four members alone, and the library still builds the -32600 reply, so the answer is unchanged.

Frames are parsed with orjson (faster than the stdlib: about 2x on a typical ``compact`` frame, and replies
encode several times faster), falling back to the stdlib for the JSON orjson refuses but the stdlib reads
(a lone surrogate escape, which pi's ``JSON.stringify`` writes for a string cut inside an emoji). NaN and
Infinity are not JSON: both parsers refuse them, so such a frame is a -32700 parse error instead of a reply
that cannot be encoded. A frame over :data:`THREAD_DECODE_BYTES` is parsed in a worker thread.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import anyio
import anyio.to_thread
import structlog

from longhaul_daemon import jsoncodec
from longhaul_daemon.config import MAX_BATCH
from longhaul_daemon.errors import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR
from longhaul_daemon.rpc.registry import RpcMethod, RpcOutcome, RpcSuccess, internal_error, new_error_id

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from jsonrpcserver import Error, Success
    from jsonrpcserver.async_main import dispatch_to_serializable

__all__ = [
    "NOT_DECODED",
    "THREAD_DECODE_BYTES",
    "Dispatcher",
    "InvalidEnvelope",
    "MethodCall",
    "MethodRunner",
    "check_envelope",
    "decode_frame",
    "encode_message",
    "error_response",
    "run_in_own_group",
]

_log = structlog.get_logger("longhaul.rpc")

_SERVER_ERROR = -32000  # jsonrpcserver's code when dispatch itself blows up; data is str(exc)
_TEXT_CARRYING_CODES = frozenset({INTERNAL_ERROR, _SERVER_ERROR})
THREAD_DECODE_BYTES: Final = 1024 * 1024  # larger frames are parsed in a worker thread
_MEMBERS: Final = frozenset({"jsonrpc", "method", "id", "params"})
NOT_DECODED: Final[Any] = object()  # ``dispatch(decoded=…)``: the caller has not parsed the frame


def _silence_library_logger() -> None:
    """jsonrpcserver logs ``logger.exception(exc)``, which would print the exception's message text."""
    library_logger = logging.getLogger("jsonrpcserver")
    library_logger.setLevel(logging.CRITICAL + 1)
    library_logger.propagate = False
    if not library_logger.handlers:
        library_logger.addHandler(logging.NullHandler())


_silence_library_logger()


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


class InvalidEnvelope(ValueError):
    """Not a JSON-RPC 2.0 request object (or a batch of them); jsonrpcserver answers -32600."""


def _check_request(request: object) -> None:
    if not isinstance(request, dict) or not request.keys() <= _MEMBERS:
        raise InvalidEnvelope()
    if request.get("jsonrpc") != "2.0" or not isinstance(request.get("method"), str):
        raise InvalidEnvelope()
    if "id" in request:
        request_id = request["id"]
        # draft-04's "number" excludes booleans, which Python counts as ints
        if isinstance(request_id, bool) or not isinstance(request_id, str | int | float | None):
            raise InvalidEnvelope()
    if "params" in request and not isinstance(request["params"], dict | list):
        raise InvalidEnvelope()


def check_envelope(request: Any) -> Any:
    """The decision of jsonrpcserver's request schema, made from the envelope alone: a request object, or a
    non-empty array of them; ``jsonrpc`` exactly ``"2.0"``; a string ``method``; an ``id`` that is a string,
    a number or null; ``params`` an array or an object; no other member. Raises :class:`InvalidEnvelope`."""
    if isinstance(request, list):
        if not request:
            raise InvalidEnvelope()
        for member in request:
            _check_request(member)
    else:
        _check_request(request)
    return request


MethodCall = Callable[[], Awaitable[RpcOutcome]]
MethodRunner = Callable[[MethodCall], Awaitable[RpcOutcome]]
"""Runs one method call as an anyio task and returns its outcome; see :func:`run_in_own_group`."""


async def run_in_own_group(call: MethodCall) -> RpcOutcome:
    """Run ``call`` as the child of a task group of its own: the runner for a dispatcher with no connection.

    jsonrpcserver awaits every method inside ``asyncio.gather``, and anyio cancels the request task waiting
    on the gather again at every loop turn until it ends; each time, gather cancels the method's task anew,
    straight through any anyio shield in it (httpcore's shielded close of a model connection was cut short
    that way, and the model kept streaming). A task group absorbs the repeats: its child is cancelled once,
    by scope, and its shielded cleanups run to the end. A connection passes a runner that starts the task in
    its own request group instead, so its cancel reaches the method at once.
    """
    outcomes: list[RpcOutcome] = []

    async def run() -> None:
        outcomes.append(await call())

    async with anyio.create_task_group() as group:
        group.start_soon(run)
    return outcomes[0]


def _adapt(method: RpcMethod) -> Callable[..., Awaitable[Any]]:
    """Our outcome → jsonrpcserver's Either. jsonrpcserver passes its ``context`` (our runner) first; taking
    ``*args, **kwargs`` after it keeps the library's signature bind happy."""

    async def library_method(runner: MethodRunner, *args: Any, **kwargs: Any) -> Any:
        outcome = await runner(lambda: method.call(*args, **kwargs))
        if isinstance(outcome, RpcSuccess):
            return Success(outcome.result)
        if outcome.data is None:
            return Error(outcome.code, outcome.message)
        return Error(outcome.code, outcome.message, outcome.data)

    return library_method


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
        self._library_methods = {name: _adapt(method) for name, method in methods.items()}
        self._max_batch = max_batch
        self._loads = loads
        self._thread_decode_bytes = thread_decode_bytes

    async def decode(self, frame: bytes | bytearray) -> Any:
        """Parse a frame, one over the threshold in a worker thread; raises ``ValueError``/``RecursionError``.

        The loop goes on while the thread waits for the GIL or runs Python code. orjson (and the stdlib's
        C scanner) hold the GIL for the whole parse, though, so a huge frame still stalls the loop for the
        parse itself: about 0.2 s for 30 MB, thread or not.
        """
        if len(frame) > self._thread_decode_bytes:
            return await anyio.to_thread.run_sync(self._loads, frame)
        return self._loads(frame)

    async def dispatch(
        self,
        frame: bytes | bytearray,
        *,
        decoded: Any = NOT_DECODED,
        runner: MethodRunner = run_in_own_group,
    ) -> bytes | None:
        """Reply to one frame: a JSON text without the trailing newline, or ``None`` (notifications only).

        ``decoded`` is the frame already parsed by the caller, so it is not parsed twice; ``runner`` starts
        each method call as an anyio task (:data:`MethodRunner`).
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
            response = await dispatch_to_serializable(
                "",
                methods=self._library_methods,
                context=runner,
                deserializer=lambda _s: request,
                validator=check_envelope,
            )
        except Exception as exc:
            failure = internal_error(exc, where="dispatch")
            return encode_message(error_response(failure.code, failure.message, data=failure.data))
        if response is None or response == []:
            return None
        response = _scrub(response)
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


def _scrub(response: Any) -> Any:
    """Replace library-made error data that carries an exception's text with an error id, and drop the
    method name a -32601 would echo."""
    if isinstance(response, list):
        return [_scrub_one(member) for member in response]
    return _scrub_one(response)


def _scrub_one(member: Any) -> Any:
    if not isinstance(member, dict):
        return member
    error = member.get("error")
    if isinstance(error, dict) and error.get("code") == METHOD_NOT_FOUND and "data" in error:
        # jsonrpcserver puts the method name the client sent in ``data`` (5,000 characters of it, in the
        # fuzz run): the client knows what it asked for, so the reply says nothing more.
        return {**member, "error": {"code": METHOD_NOT_FOUND, "message": "Method not found"}}
    if not isinstance(error, dict) or error.get("code") not in _TEXT_CARRYING_CODES:
        return member
    data = error.get("data")
    if isinstance(data, dict) and set(data) == {"errorId"}:
        return member
    error_id = new_error_id()
    _log.error("rpc_library_error", error_id=error_id, code=error.get("code"))
    return {
        **member,
        "error": {"code": INTERNAL_ERROR, "message": "Internal error", "data": {"errorId": error_id}},
    }
