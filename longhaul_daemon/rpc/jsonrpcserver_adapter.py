"""What jsonrpcserver costs, kept in one place: the only module that imports it, and each workaround it needs.

jsonrpcserver 5.0.9 routes a request to its method, binds the params and builds every reply and error
envelope, batches included. Five of its habits are handled here and nowhere else:

1. Its import warns on Python 3.11/3.12 and the tests run with warnings as errors: imported under a filter.
2. Its request check runs draft-04 jsonschema over the whole frame, params included (twice the parse on a big
   ``compact``): :func:`check_envelope` decides the same from the envelope alone; the library still answers.
3. It calls a method with its ``context`` and wants its own ``Success``/``Error``: :func:`_library_method`
   hands each call its connection's peer and turns our :data:`~.registry.RpcOutcome` into the library's.
4. It awaits methods in ``asyncio.gather``, which anyio's repeated cancellation turns into cancelling the
   method again and again, through any shield (a model connection's shielded close was cut short):
   :func:`run_as_task` runs each call in an anyio task group, cancelled once, so shielded cleanups finish.
5. It puts ``str(exc)`` in an error's ``data``, the client's method name in -32601, and logs the exception:
   :func:`_scrub` puts an error id in place of the text and drops the name, and its logger is silenced.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.lowlevel
import structlog
from anyio.abc import TaskGroup

from longhaul_daemon.errors import INTERNAL_ERROR, METHOD_NOT_FOUND
from longhaul_daemon.models.via_pi import PiPeer
from longhaul_daemon.rpc.registry import RpcMethod, RpcOutcome, RpcSuccess, internal_error, new_error_id

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from jsonrpcserver import Error, Success
    from jsonrpcserver.async_main import dispatch_to_serializable

__all__ = ["InvalidEnvelope", "MethodCall", "check_envelope", "library_dispatch", "run_as_task"]

_log = structlog.get_logger("longhaul.rpc")

_SERVER_ERROR = -32000  # jsonrpcserver's code when dispatch itself blows up; data is str(exc)
_TEXT_CARRYING_CODES = frozenset({INTERNAL_ERROR, _SERVER_ERROR})
_MEMBERS: Final = frozenset({"jsonrpc", "method", "id", "params"})

MethodCall = Callable[[], Awaitable[RpcOutcome]]


def _silence_library_logger() -> None:
    """jsonrpcserver logs ``logger.exception(exc)``, which would print the exception's message text."""
    library_logger = logging.getLogger("jsonrpcserver")
    library_logger.setLevel(logging.CRITICAL + 1)
    library_logger.propagate = False
    if not library_logger.handlers:
        library_logger.addHandler(logging.NullHandler())


_silence_library_logger()


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


async def run_as_task(call: MethodCall, group: TaskGroup | None) -> RpcOutcome:
    """Run ``call`` as a task of ``group`` (a connection's request group, so its client leaving cancels the
    call at once), or of a task group of its own when there is none; see workaround 4 above."""
    if group is not None:
        return await _run_in(call, group)
    async with anyio.create_task_group() as own:
        outcome = await _run_in(call, own)
    return outcome


async def _run_in(call: MethodCall, group: TaskGroup) -> RpcOutcome:
    outcomes: list[RpcOutcome] = []
    finished = anyio.Event()

    async def run() -> None:
        try:
            outcomes.append(await call())
        finally:
            finished.set()

    group.start_soon(run)
    await finished.wait()
    if not outcomes:  # cancelled with the group, and so is this wait: the checkpoint raises
        await anyio.lowlevel.checkpoint()
        return internal_error(RuntimeError("method ended without an outcome"), where="dispatch")
    return outcomes[0]


@dataclass(frozen=True)
class _Context:
    """What jsonrpcserver hands each method first: where to run it and the peer it may ask back."""

    group: TaskGroup | None
    peer: PiPeer | None


def _library_method(method: RpcMethod) -> Callable[..., Awaitable[Any]]:
    """``method`` as jsonrpcserver calls it: the context first, then ``*args, **kwargs`` (which keeps the
    library's signature bind happy); our outcome becomes the library's ``Success`` or ``Error``."""

    async def library_method(context: _Context, *args: Any, **kwargs: Any) -> Any:
        outcome = await run_as_task(lambda: method.call(context.peer, *args, **kwargs), context.group)
        if isinstance(outcome, RpcSuccess):
            return Success(outcome.result)
        if outcome.data is None:
            return Error(outcome.code, outcome.message)
        return Error(outcome.code, outcome.message, outcome.data)

    return library_method


LibraryMethods = Mapping[str, Callable[..., Awaitable[Any]]]


def library_methods(methods: Mapping[str, RpcMethod]) -> LibraryMethods:
    """The method table as jsonrpcserver takes it."""
    return {name: _library_method(method) for name, method in methods.items()}


async def library_dispatch(
    request: Any, methods: LibraryMethods, *, group: TaskGroup | None, peer: PiPeer | None
) -> Any:
    """The reply jsonrpcserver builds for ``request`` (already parsed), scrubbed: a JSON-ready object, a list
    for a batch, or ``None``/``[]`` when only notifications came. Raises what the library raises."""
    response = await dispatch_to_serializable(
        "",
        methods=methods,
        context=_Context(group, peer),
        deserializer=lambda _s: request,
        validator=check_envelope,
    )
    if response is None or response == []:
        return response
    return _scrub(response)


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
        # the method name the client sent (5,000 characters of it, in the fuzz run): the client knows
        # what it asked for, so the reply says nothing more
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
