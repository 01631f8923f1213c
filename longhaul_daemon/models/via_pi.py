"""``model.complete``: one model call run by the shim with pi's own provider code, for APIs the daemon lacks.

The daemon keeps the policy (retries, budget, concurrency limit, trace, PASS-22); the shim only makes the one
call. No credential travels: the shim looks the model up in pi's registry by ``{provider, id}`` and resolves
its auth itself. The shim's failures come back as a JSON-RPC error whose ``data.kind`` (``retryable``,
``quota``, ``fatal``) picks the :mod:`longhaul_daemon.models.errors` class, so the retry loop decides exactly
as it does for the daemon's own HTTP calls. Nothing here keeps the shim's error *message*.

Tools travel too: the offered tools' specs, each assistant turn's calls and each user turn's results, in pi's
own message shapes, and the reply's calls come back as ``toolCalls``. A shim that carried the tools says so
(``toolsCarried``); one that does not (it predates tool support) would drop them silently, so a reply to a
call that offered tools without that word is refused as :data:`TOOLS_NOT_CARRIED`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from longhaul_daemon.errors import LonghaulError
from longhaul_daemon.models.errors import FatalError, ModelCallError, QuotaExceeded, RetryableError
from longhaul_daemon.models.request import Message, ModelRequest
from longhaul_daemon.models.result import CompletionResult, StopReason, Usage, int_field
from longhaul_daemon.models.tool_calls import ToolCall, decode_arguments, synthetic_id

__all__ = [
    "MODEL_COMPLETE",
    "TOOLS_NOT_CARRIED",
    "PiPeer",
    "ShimConnectionLost",
    "ShimErrorReply",
    "bind_peer",
    "complete_params",
    "current_peer",
    "error_from_reply",
    "exchange_via_pi",
    "recorded_reasoning",
    "result_from_reply",
]

MODEL_COMPLETE = "model.complete"
TOOLS_NOT_CARRIED = "shim-without-tools"  # the FatalError code of a reply whose shim dropped the tools

# pi-ai's AssistantMessage.stopReason → ours. "error"/"aborted" never arrive as a result: the shim sends those
# as JSON-RPC errors. "toolUse" is a finished reply that made calls.
_PI_STOP: dict[str, StopReason] = {"stop": "stop", "length": "length", "toolUse": "stop"}
_MAX_STATUS = 599
_METHOD_NOT_FOUND = -32601


class PiPeer(Protocol):
    """What :func:`exchange_via_pi` needs from the shim's connection: send a request, await its result.

    ``request`` returns the reply's ``result``, raises :class:`ShimErrorReply` for an error reply and
    :class:`ShimConnectionLost` when the connection closes first.
    """

    async def request(self, method: str, params: dict[str, Any]) -> Any: ...


_current: contextvars.ContextVar[PiPeer | None] = contextvars.ContextVar("longhaul_shim_peer", default=None)


def bind_peer(peer: PiPeer) -> contextvars.Token[PiPeer | None]:
    """Make ``peer`` the current one for this task and the tasks it starts (the connection's handlers)."""
    return _current.set(peer)


def current_peer() -> PiPeer | None:
    """The shim of the connection whose request is being handled, or None outside a connection."""
    return _current.get()


class ShimErrorReply(LonghaulError):
    """The shim answered a daemon request with a JSON-RPC error; only the code and ``data`` are kept."""

    def __init__(self, code: int, data: Any = None) -> None:
        self.code = code
        self.data = data
        super().__init__(f"shim answered error {code}")

    def __repr__(self) -> str:
        return f"ShimErrorReply(code={self.code!r})"


class ShimConnectionLost(RetryableError):
    """The connection to the shim closed while a request on it waited for its reply."""

    label: ClassVar[str] = "shim connection closed"


def _message_params(message: Message) -> dict[str, Any]:
    params: dict[str, Any] = {"role": message.role, "text": message.text}
    if message.tool_calls:
        params["toolCalls"] = [
            {"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in message.tool_calls
        ]
    if message.tool_results:
        params["toolResults"] = [
            {"id": r.call_id, "name": r.name, "text": r.text, "isError": r.is_error}
            for r in message.tool_results
        ]
    return params


def complete_params(request: ModelRequest) -> dict[str, Any]:
    """The ``model.complete`` params: which model (no key), prompt, output budget, reasoning, streaming,
    and the offered tools when there are any (pi takes no tool choice: a ``none`` turn still offers them)."""
    target = request.target
    params: dict[str, Any] = {
        "model": {"provider": target.provider, "id": target.model_id},
        "system": request.system,
        "messages": [_message_params(message) for message in request.messages],
        "maxTokens": request.max_output_tokens,
        "reasoning": request.reasoning,
        "stream": request.stream,
    }
    if request.tools:
        params["tools"] = [
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in request.tools
        ]
    return params


def recorded_reasoning(request: ModelRequest) -> str | None:
    """The level the trace records: pi clamps levels per model itself, so we record only what was asked."""
    return None if request.reasoning in ("off", "none") else request.reasoning


def _tool_calls(raw: object) -> tuple[ToolCall, ...]:
    calls: list[ToolCall] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            call_id = synthetic_id(item.get("id"), calls)
            calls.append(ToolCall(call_id, item["name"], decode_arguments(item.get("arguments"))))
    return tuple(calls)


def result_from_reply(reply: Any, *, tools_offered: bool = False) -> CompletionResult:
    """Map the shim's ``{text, stopReason, usage, responseId?, toolCalls?}`` to our result; malformed → fatal.

    With ``tools_offered``, a reply without ``toolsCarried: true`` came from a shim that dropped the tools.
    """
    if not isinstance(reply, Mapping) or not isinstance(reply.get("text"), str):
        raise FatalError(code="malformed-shim-reply")
    if tools_offered and reply.get("toolsCarried") is not True:
        raise FatalError(code=TOOLS_NOT_CARRIED)
    raw_stop = reply.get("stopReason")
    raw = raw_stop if isinstance(raw_stop, str) else None
    usage = reply.get("usage")
    return CompletionResult(
        text=reply["text"],
        stop_reason=_PI_STOP.get(raw or "", "other"),
        raw_stop=_identifier(raw),
        usage=Usage(
            input=int_field(usage, "input"),
            output=int_field(usage, "output"),
            cache_read=int_field(usage, "cacheRead"),
            cache_write=int_field(usage, "cacheWrite"),
            reasoning=int_field(usage, "reasoning"),
        ),
        request_id=_identifier(reply.get("responseId")),
        tool_calls=_tool_calls(reply.get("toolCalls")),
    )


def error_from_reply(reply: ShimErrorReply) -> ModelCallError:
    """The error class the retry loop needs, from ``data.kind``; an old shim's -32601 is fatal."""
    data = reply.data if isinstance(reply.data, Mapping) else {}
    raw_status = data.get("status")
    status = raw_status if type(raw_status) is int and 100 <= raw_status <= _MAX_STATUS else None
    code = data.get("code")
    code = code if isinstance(code, str) else None
    if reply.code == _METHOD_NOT_FOUND:
        return FatalError(code="shim-without-model-complete")
    kind = data.get("kind")
    if kind == "retryable":
        return RetryableError(status=status, code=code)
    if kind == "quota":
        return QuotaExceeded(status=status, code=code)
    return FatalError(status=status, code=code or ("shim-error" if kind == "fatal" else "unclassified"))


async def exchange_via_pi(peer: PiPeer, request: ModelRequest) -> CompletionResult:
    """One attempt through the shim; every failure leaves as a ``ModelCallError``."""
    try:
        reply = await peer.request(MODEL_COMPLETE, complete_params(request))
    except ShimErrorReply as error:
        raise error_from_reply(error) from None
    return result_from_reply(reply, tools_offered=bool(request.tools))


def _identifier(value: Any) -> str | None:
    """A provider id or stop value only if it looks like an identifier; anything else could be quoted text."""
    if not isinstance(value, str) or not value or len(value) > 120:
        return None
    return value if all(ch.isalnum() or ch in "-_.:" for ch in value) else None
