"""Turns typed handlers into JSON-RPC methods: pydantic params, a deadline, and errors that never leak text.

A handler is ``async def handler(params: SomeParams) -> SomeResult``. ``rpc(name, SomeParams)`` wraps it
into an :class:`RpcMethod` whose ``call(peer, *args, **kwargs)`` takes the shim's side of the connection the
request came on, then exactly what a JSON-RPC request carries, and always returns an :data:`RpcOutcome`,
never raises (cancellation aside). A handler that may send requests back to the shim (``compact``, for
``model.complete``) is wrapped with :func:`rpc_with_peer` and gets the peer as its second argument. This
module does not import jsonrpcserver: :mod:`.jsonrpcserver_adapter` adapts outcomes to the library's result
type, so the library can be swapped without touching handlers.

The wrapper deliberately does not use ``functools.wraps``: ``inspect.signature`` follows ``__wrapped__``, and
jsonrpcserver would then bind the request against the handler's ``(params)`` signature and reject every call.
"""

from __future__ import annotations

import functools
import traceback
import typing
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, TypeVar

import anyio
import anyio.to_thread
import structlog
from pydantic import BaseModel, ValidationError

from longhaul_daemon import jsoncodec
from longhaul_daemon.errors import INTERNAL_ERROR, INVALID_PARAMS, DeadlineExceeded, DomainError
from longhaul_daemon.models.via_pi import PiPeer

__all__ = [
    "METHOD_DEADLINE_S",
    "RpcCall",
    "RpcFailure",
    "RpcMethod",
    "RpcOutcome",
    "RpcSuccess",
    "describe_validation_error",
    "field_names",
    "internal_error",
    "new_error_id",
    "rpc",
    "rpc_with_peer",
]

METHOD_DEADLINE_S = 10.0  # what a method may take unless it names its own (the tools, reports, hello, status)

_log = structlog.get_logger("longhaul.rpc")

ParamsT = TypeVar("ParamsT", bound=BaseModel)

_MAX_LOC_PART = 200  # a client-chosen key is a field path, but not an unbounded one
_MIN_ECHO_LEN = 4  # shorter inputs appear in messages by chance ("a", "no"), not by echo


@dataclass(frozen=True)
class RpcSuccess:
    """A method's JSON-ready result."""

    result: Any


@dataclass(frozen=True)
class RpcFailure:
    """A JSON-RPC error object; ``data`` of ``None`` means the member is left out."""

    code: int
    message: str
    data: Any = None


RpcOutcome = RpcSuccess | RpcFailure


class RpcCall(Protocol):
    """How a method is called: the shim's side of the connection the request came on (None for a request
    handled without one), then the request's params as ``*args``/``**kwargs``."""

    def __call__(self, peer: PiPeer | None, /, *args: Any, **kwargs: Any) -> Awaitable[RpcOutcome]: ...


@dataclass(frozen=True)
class RpcMethod:
    """A named JSON-RPC method; see :class:`RpcCall` for ``call``."""

    name: str
    call: RpcCall
    deadline_s: float = METHOD_DEADLINE_S  # how long the handler may run (-32001 past it)


def new_error_id() -> str:
    """A short id that ties a client's -32603 reply to the operational log line with the details."""
    return uuid.uuid4().hex[:12]


def internal_error(exc: BaseException, *, where: str) -> RpcFailure:
    """Log an unexpected exception by class, error id and frames (no message text); build the -32603 reply."""
    error_id = new_error_id()
    frames = [
        f"{frame.filename}:{frame.lineno}:{frame.name}" for frame in traceback.extract_tb(exc.__traceback__)
    ]
    _log.error(
        "rpc_internal_error",
        where=where,
        error_id=error_id,
        error_class=type(exc).__name__,
        frames=frames[-8:],
    )
    return RpcFailure(INTERNAL_ERROR, "Internal error", {"errorId": error_id})


def describe_validation_error(
    exc: ValidationError, *, model: type[BaseModel] | None = None
) -> list[dict[str, Any]]:
    """Pydantic's errors as ``{type, loc, msg}``: every part JSON-able, the offending input never echoed.

    With ``model``, a ``loc`` part that is not one of its field names (an unknown key the client sent, a key
    of a free-form mapping) is written ``*``: field paths then hold only the protocol's own words and indexes.
    """
    known = field_names(model) if model is not None else None
    described: list[dict[str, Any]] = []
    for error in exc.errors(include_url=False, include_context=False):
        error_type = str(error.get("type", "value_error"))
        loc = [_loc_part(part, known) for part in error.get("loc", ())]
        msg = str(error.get("msg", ""))
        if _echoes_input(msg, error.get("input")):
            msg = f"Invalid value ({error_type})"
        described.append({"type": error_type, "loc": loc, "msg": msg})
    return described


@functools.cache
def field_names(model: type[BaseModel]) -> frozenset[str]:
    """Every field name of ``model`` and of the models its fields hold, however nested in lists or unions."""
    names: set[str] = set()
    pending: list[Any] = [model]
    seen: set[Any] = set()
    while pending:
        annotation = pending.pop()
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if annotation in seen:
                continue
            seen.add(annotation)
            names.update(annotation.model_fields)
            pending += [f.annotation for f in annotation.model_fields.values()]
        else:
            pending += list(typing.get_args(annotation))
    return frozenset(names)


def _loc_part(part: object, known: frozenset[str] | None) -> str | int:
    if isinstance(part, bool) or not isinstance(part, int | str):
        part = str(part)
    if isinstance(part, str) and known is not None and part not in known:
        return "*"
    if isinstance(part, str) and len(part) > _MAX_LOC_PART:
        return part[:_MAX_LOC_PART] + "…"
    return part


def _echoes_input(msg: str, value: object) -> bool:
    """Whether ``msg`` quotes the input (custom validators and a few pydantic errors do)."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value)
        return len(text) >= _MIN_ECHO_LEN and text in msg
    return False


Handler: TypeAlias = Callable[[ParamsT], Awaitable[BaseModel]]
PeerHandler: TypeAlias = Callable[[ParamsT, PiPeer | None], Awaitable[BaseModel]]


def rpc(
    name: str,
    params_model: type[ParamsT],
    *,
    deadline_s: float = METHOD_DEADLINE_S,
    encode_in_thread: bool = False,
) -> Callable[[Handler[ParamsT]], RpcMethod]:
    """Wrap ``handler(params) -> result`` as the JSON-RPC method ``name`` (see :func:`rpc_with_peer`)."""

    def register(handler: Handler[ParamsT]) -> RpcMethod:
        async def without_peer(params: ParamsT, _peer: PiPeer | None) -> BaseModel:
            return await handler(params)

        return _method(name, params_model, without_peer, deadline_s, encode_in_thread)

    return register


def rpc_with_peer(
    name: str,
    params_model: type[ParamsT],
    *,
    deadline_s: float = METHOD_DEADLINE_S,
    encode_in_thread: bool = False,
) -> Callable[[PeerHandler[ParamsT]], RpcMethod]:
    """Wrap ``handler(params, peer) -> result`` as the JSON-RPC method ``name``; ``peer`` is the shim's side
    of the connection the request came on, or None.

    By-name params only; they are validated by ``params_model``. Every method has a deadline, ``deadline_s``
    (-32001 when it runs over): no request holds a connection slot for ever. A :class:`DomainError` becomes
    its code and message; any other exception becomes -32603 with an error id. The result is dumped in JSON
    mode; with ``encode_in_thread`` (``compact``, whose result holds a whole state) it is dumped and encoded
    in a worker thread and joins the reply as encoded JSON, so the loop only writes it out.
    """

    def register(handler: PeerHandler[ParamsT]) -> RpcMethod:
        return _method(name, params_model, handler, deadline_s, encode_in_thread)

    return register


def _method(
    name: str,
    params_model: type[ParamsT],
    handler: PeerHandler[ParamsT],
    deadline_s: float,
    encode_in_thread: bool,
) -> RpcMethod:
    async def call(peer: PiPeer | None, /, *args: Any, **kwargs: Any) -> RpcOutcome:
        if args:
            return RpcFailure(
                INVALID_PARAMS,
                "Invalid params",
                [{"type": "params_not_object", "loc": [], "msg": "params must be an object"}],
            )
        try:
            params = params_model.model_validate(kwargs)
        except ValidationError as exc:
            described = describe_validation_error(exc, model=params_model)
            return RpcFailure(INVALID_PARAMS, "Invalid params", described)
        try:
            result = await _run_with_deadline(handler, params, peer, deadline_s)
            if encode_in_thread:
                encoded = await anyio.to_thread.run_sync(_encoded, result, abandon_on_cancel=True)
                return RpcSuccess(encoded)
            return RpcSuccess(result.model_dump(mode="json"))
        except DomainError as exc:
            _log.info("rpc_domain_error", method=name, code=exc.code)
            return RpcFailure(exc.code, exc.message, exc.data)
        except Exception as exc:
            return internal_error(exc, where=name)

    return RpcMethod(name=name, call=call, deadline_s=deadline_s)


def _encoded(result: BaseModel) -> jsoncodec.Encoded:
    """``result`` as JSON text that :func:`~longhaul_daemon.jsoncodec.dumps` embeds in the reply as it is."""
    return jsoncodec.Encoded(jsoncodec.dumps(result.model_dump(mode="json")))


async def _run_with_deadline(
    handler: PeerHandler[ParamsT], params: ParamsT, peer: PiPeer | None, deadline_s: float
) -> BaseModel:
    with anyio.move_on_after(deadline_s):
        return await handler(params, peer)
    raise DeadlineExceeded()  # reached only when the scope's deadline cancelled the handler
