"""``model.complete``: one model call run by the shim with pi's own provider code (pi-ai's ``streamSimple``).

Every call the route table (:mod:`.route_table`) does not prove the daemon can make exactly as pi would goes
this way. The daemon keeps the policy (retries, budget, concurrency limit, trace, PASS-22); the shim only
makes the one call. No credential travels: the shim resolves the model ``{provider, id}`` and its auth in
pi's registry. A failure comes back as a JSON-RPC error whose ``data.kind`` (``retryable``, ``quota``,
``fatal``) picks the class of :mod:`.call_errors`, so the retry loop decides as for the daemon's own calls;
the shim's error *message* is never kept.

What makes small models work goes along: the output schema and tool choice as a ``payload`` the shim merges
into pi-ai's request (the fields the daemon's own client would send, from :mod:`.providers`); with ``watch``,
the answer streams back as ``model.delta`` notes, read by :class:`~.stream_watch.StreamWatch`, and the
daemon sends ``model.stop`` at the first whole answer or a looping repeat. Tools travel in pi's own message
shapes; a reply to a call that offered tools without ``toolsCarried`` (an older shim drops them silently) is
refused as :data:`TOOLS_NOT_CARRIED`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, ClassVar, Final, Protocol

import anyio

from longhaul_daemon.errors import LonghaulError
from longhaul_daemon.models.call_errors import FatalError, ModelCallError, QuotaExceeded, RetryableError
from longhaul_daemon.models.completion import CompletionResult, StopReason, Usage, int_field
from longhaul_daemon.models.providers import PROVIDERS
from longhaul_daemon.models.request import Message, ModelRequest
from longhaul_daemon.models.stream_watch import StreamWatch
from longhaul_daemon.models.tool_calls import ToolCall, decode_arguments, synthetic_id

__all__ = [
    "MODEL_COMPLETE",
    "MODEL_DELTA",
    "MODEL_STOP",
    "NOTIFICATIONS",
    "TOOLS_NOT_CARRIED",
    "NoteSink",
    "PiCall",
    "PiPeer",
    "ShimConnectionLost",
    "ShimErrorReply",
    "complete_params",
    "error_from_reply",
    "exchange_via_pi",
    "pi_call",
    "recorded_reasoning",
    "result_from_reply",
]

MODEL_COMPLETE = "model.complete"
MODEL_DELTA = "model.delta"  # shim → daemon: {id, text}, a piece of the answer as pi streams it
MODEL_STOP = "model.stop"  # daemon → shim: {id}, end that call now and reply with what came
NOTIFICATIONS: Final = frozenset({MODEL_DELTA})
NoteSink = Callable[[Mapping[str, Any]], None]
TOOLS_NOT_CARRIED = "shim-without-tools"  # the FatalError code of a reply whose shim dropped the tools

# pi-ai's AssistantMessage.stopReason → ours. "error"/"aborted" never arrive as a result: the shim sends those
# as JSON-RPC errors. "toolUse" is a finished reply that made calls.
_PI_STOP: dict[str, StopReason] = {"stop": "stop", "length": "length", "toolUse": "stop"}
_MAX_STATUS = 599
_METHOD_NOT_FOUND = -32601


class PiPeer(Protocol):
    """What :func:`exchange_via_pi` needs from the shim's connection: send a request, await its result.

    The connection a ``compact`` request came on hands its peer to the method, and the method to the pass,
    as an argument; a pass run without a connection (a test, a benchmark) has none.

    ``request`` returns the reply's ``result``, raises :class:`ShimErrorReply` for an error reply and
    :class:`ShimConnectionLost` when the connection closes first. ``on_note`` gets the params of each
    notification the shim sends about the call; setting ``stop`` tells the shim to end the call early.
    """

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        """Send ``method`` to the shim and return its result (see the class docstring)."""


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


# pi's APIs whose request takes the fields the daemon's own client writes, and the client that writes them;
# the top-level body fields the payload copies (Gemini's go under pi-ai's ``config``, see _google_payload).
_PAYLOAD_FORMS: Final = MappingProxyType(
    {
        "openai-completions": "openai-completions",
        "openai-responses": "openai-responses",
        "azure-openai-responses": "openai-responses",
        "anthropic-messages": "anthropic-messages",
        "google-generative-ai": "google-generative-ai",
        "google-vertex": "google-generative-ai",
    }
)
_PAYLOAD_FIELDS: Final = MappingProxyType(
    {
        "openai-completions": ("response_format", "tools", "tool_choice"),
        "openai-responses": ("text", "tools", "tool_choice"),
        "anthropic-messages": ("tools", "tool_choice"),
    }
)
_NOWHERE = "http://via-pi.invalid"  # the daemon's client builds the body only; pi picks the URL


@dataclass(frozen=True)
class PiCall:
    """A ``model.complete`` made ready: its params, and what its trace says about structured output."""

    params: Mapping[str, Any]
    structured: str | None
    structured_skip: str | None
    answer_tool: str | None
    watch: bool


def _google_payload(body: Mapping[str, Any]) -> dict[str, Any]:
    """pi-ai's Gemini request is ``{model, contents, config}``: generation settings, tools and the tool
    config all sit in ``config``."""
    generation = body.get("generationConfig") or {}
    config = {k: generation[k] for k in ("responseMimeType", "responseSchema") if k in generation}
    config.update({k: body[k] for k in ("tools", "toolConfig") if k in body})
    return {"config": config} if config else {}


def pi_call(request: ModelRequest) -> PiCall:
    """The params of one ``model.complete``, with the structured-output payload where pi's API takes one.

    The payload is what the daemon's own client would put in the body for that API, so the schema, the
    forced answer tool and the tool choice reach the model exactly as on a direct call; the shim merges it
    into pi-ai's request (``onPayload``). An API without such a form goes without the schema (``via-pi``).
    """
    target = request.target
    params = complete_params(request)
    watch = request.stop_at_object is not None
    if watch:
        params["watch"] = True
    form = _PAYLOAD_FORMS.get(target.api or "")
    if form is None:
        skip = "via-pi" if request.output_schema is not None else None
        return PiCall(params, None, skip, None, watch)
    shaped = replace(target, api=form, base_url=_NOWHERE, api_key=None, headers=MappingProxyType({}))
    prepared, _ = PROVIDERS[form].prepare(replace(request, target=shaped, stream=True))
    body = prepared.body
    if form == "google-generative-ai":
        payload = _google_payload(body)
    else:
        payload = {k: body[k] for k in _PAYLOAD_FIELDS[form] if k in body}
    if payload:
        params["payload"] = payload
    if prepared.answer_tool is not None:
        params["answerTool"] = prepared.answer_tool
    skip = prepared.structured_skip or request.structured_off
    return PiCall(params, prepared.structured, skip, prepared.answer_tool, watch)


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


def result_from_reply(
    reply: Any, *, tools_offered: bool = False, answer_tool: str | None = None
) -> CompletionResult:
    """Map the shim's ``{text, stopReason, usage, responseId?, toolCalls?}`` to our result; malformed → fatal.

    With ``tools_offered``, a reply without ``toolsCarried: true`` came from a shim that dropped the tools.
    A call of ``answer_tool`` (the schema sent as a forced tool) is the answer: its arguments become the
    reply's text, as the daemon's own client reads them.
    """
    if not isinstance(reply, Mapping) or not isinstance(reply.get("text"), str):
        raise FatalError(code="malformed-shim-reply")
    if tools_offered and reply.get("toolsCarried") is not True:
        raise FatalError(code=TOOLS_NOT_CARRIED)
    raw_stop = reply.get("stopReason")
    raw = raw_stop if isinstance(raw_stop, str) else None
    usage = reply.get("usage")
    calls = _tool_calls(reply.get("toolCalls"))
    answers = [json.dumps(dict(c.arguments), ensure_ascii=False) for c in calls if c.name == answer_tool]
    text = "\n".join(part for part in (reply["text"], *answers) if part)
    return CompletionResult(
        text=text,
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
        tool_calls=tuple(c for c in calls if c.name != answer_tool),
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


async def exchange_via_pi(
    peer: PiPeer, request: ModelRequest, call: PiCall | None = None
) -> CompletionResult:
    """One attempt through the shim; every failure leaves as a ``ModelCallError``.

    When the call is watched, the answer's pieces are read as they come and the shim is told to stop at
    the first whole answer or a looping repeat, exactly where a direct stream would have been ended; the
    reply is then the text read up to there (cut at the loop), with its usage estimated where pi had not
    counted it yet.
    """
    call = call if call is not None else pi_call(request)
    stop_at = request.stop_at_object if call.watch else None
    watch = StreamWatch(stop_at, request.cut_at_repeat) if stop_at is not None else None
    stop = anyio.Event()

    def on_note(note: Mapping[str, Any]) -> None:
        piece = note.get("text")
        if watch is not None and isinstance(piece, str) and watch.feed(piece):
            stop.set()

    try:
        reply = await peer.request(
            MODEL_COMPLETE,
            dict(call.params),
            on_note=on_note if watch is not None else None,
            stop=stop if watch is not None else None,
        )
    except ShimErrorReply as error:
        raise error_from_reply(error) from None
    result = result_from_reply(reply, tools_offered=bool(request.tools), answer_tool=call.answer_tool)
    if watch is not None and watch.ended:
        return watch.result(replace(result, text=watch.text, stopped_early=True, tool_calls=()))
    return result


def _identifier(value: Any) -> str | None:
    """A provider id or stop value only if it looks like an identifier; anything else could be quoted text."""
    if not isinstance(value, str) or not value or len(value) > 120:
        return None
    return value if all(ch.isalnum() or ch in "-_.:" for ch in value) else None
