"""The daemon's one httpx module: client factory, JSON and SSE exchanges, and transport-error mapping.

Keeping httpx here means a move to httpx2 is one import line for the daemon (the ``score`` command's recording
proxy, :mod:`longhaul_daemon.evaluation.proxy`, has a synchronous client of its own). Providers hand over a
``PreparedCall`` and get back JSON or a stream of ``SseEvent``; every transport failure leaves this module as
a ``ModelCallError``.
"""

from __future__ import annotations

import codecs
import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from longhaul_daemon.models.call_errors import FatalError, ModelCallError, ReplyTooLarge, RetryableError
from longhaul_daemon.models.retry import error_for_status

__all__ = [
    "MAX_REPLY_BYTES",
    "REQUEST_ID_HEADERS",
    "SHARED_KEEPALIVE",
    "HttpClient",
    "PreparedCall",
    "SseEvent",
    "SseParser",
    "make_client",
    "make_shared_client",
    "post_json",
    "request_id_of",
    "stream_sse",
]

HttpClient = httpx.AsyncClient

# Header names providers use for the id their support desk asks for, in order of preference.
REQUEST_ID_HEADERS = ("request-id", "x-request-id", "x-goog-request-id", "cf-ray")
_MAX_ERROR_BODY = 64 * 1024
MAX_REPLY_BYTES = 32 * 1024 * 1024
"""Bytes one reply may carry, JSON or SSE, before the connection is closed and ``ReplyTooLarge`` raised.

A 32k-token answer streamed as deltas is a few MiB of SSE; past this a model is looping or the endpoint is
hostile, and reading on would only grow the daemon's memory."""
_CHATTY_LOGGERS = ("httpx", "httpcore")
SHARED_KEEPALIVE = 64  # idle connections the shared client keeps; a burst of passes reuses them


def make_client(
    *,
    connect: float = 5.0,
    read: float = 120.0,
    write: float = 30.0,
    pool: float = 5.0,
    max_connections: int | None = 8,
    max_keepalive: int | None = None,
) -> httpx.AsyncClient:
    """A client with per-operation timeouts and no transport retries (the retry loop decides).

    Also quiets httpx and httpcore below WARNING: their DEBUG lines print response headers verbatim, and
    their INFO lines name every request; neither belongs in our log.
    """
    for name in _CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    if max_keepalive is None:
        max_keepalive = max(1, max_connections // 2) if max_connections is not None else None
    return httpx.AsyncClient(
        timeout=httpx.Timeout(connect=connect, read=read, write=write, pool=pool),
        limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_keepalive),
        transport=httpx.AsyncHTTPTransport(retries=0),
        follow_redirects=False,
        trust_env=False,
    )


def make_shared_client() -> httpx.AsyncClient:
    """The daemon's one client, shared by every pass.

    Its pool has no size cap of its own: the per-provider limiters already bound how many calls run, and a
    second, smaller cap here would turn a wider ``concurrency`` setting into pool timeouts. Up to
    :data:`SHARED_KEEPALIVE` idle connections are kept for the next burst.
    """
    return make_client(max_connections=None, max_keepalive=SHARED_KEEPALIVE)


@dataclass(frozen=True)
class PreparedCall:
    """A provider request ready for the wire; headers and body are hidden from repr (keys, transcript).

    ``structured`` names the structured-output form the body carries (``json_schema``, ``tool``,
    ``response_schema``), None when it carries none; ``structured_skip`` why a schema asked for was left
    out. The call's trace records both. ``answer_tool``: the tool whose input is the answer (a schema sent as
    a tool beside offered tools), so the reply's reader tells the answer from the calls it must run.
    """

    url: str
    headers: Mapping[str, str] = field(repr=False)
    body: Mapping[str, Any] = field(repr=False)
    stream: bool
    structured: str | None = None
    structured_skip: str | None = None
    answer_tool: str | None = None


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: ``event`` is None when the server sent no ``event:`` field."""

    event: str | None
    data: str


class SseParser:
    """Incremental SSE parser: feed text in any chunking, get whole events. Splits on ``\\n`` only.

    ``str.splitlines`` (and so httpx's ``aiter_lines``) also breaks on U+2028, U+0085 and friends, which JSON
    strings may carry raw, so it would cut a ``data:`` line in two.
    """

    def __init__(self) -> None:
        self._pending: list[str] = []  # the pieces of a line begun and not yet ended, joined once it ends
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, text: str) -> list[SseEvent]:
        """Take the next decoded chunk of the stream; return the events it completed, in order."""
        if "\n" not in text:  # most chunks of a long line: kept as they are, scanned once, copied once
            if text:
                self._pending.append(text)
            return []
        self._pending.append(text)
        lines = "".join(self._pending).split("\n")
        rest = lines.pop()
        self._pending = [rest] if rest else []
        events: list[SseEvent] = []
        for line in lines:
            event = self._line(line[:-1] if line.endswith("\r") else line)
            if event is not None:
                events.append(event)
        return events

    def finish(self) -> list[SseEvent]:
        """At end of stream: an unterminated last line still counts, and a pending event is dispatched."""
        events = self.feed("\n") if self._pending else []
        pending = self._line("")
        return [*events, pending] if pending is not None else events

    def _line(self, line: str) -> SseEvent | None:
        if line == "":
            if not self._data and self._event is None:
                return None
            event = SseEvent(self._event, "\n".join(self._data))
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


def request_id_of(headers: Mapping[str, str]) -> str | None:
    """The provider's request id: the first of :data:`REQUEST_ID_HEADERS` the reply sets, or None."""
    lowered = {k.lower(): v for k, v in headers.items()}
    for name in REQUEST_ID_HEADERS:
        if lowered.get(name):
            return lowered[name]
    return None


def _transport_error(exc: httpx.HTTPError | httpx.InvalidURL) -> ModelCallError:
    """Timeouts and broken connections are transient; a URL or request we built wrong is not."""
    if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol | httpx.LocalProtocolError):
        return FatalError(code=type(exc).__name__)
    if isinstance(exc, httpx.TimeoutException):
        return RetryableError(code="timeout")
    if isinstance(exc, httpx.TransportError):  # connect, read, write, RemoteProtocolError, proxy
        return RetryableError(code=type(exc).__name__)
    return FatalError(code=type(exc).__name__)


def _json_body(body: Mapping[str, Any]) -> bytes:
    """The request body as compact UTF-8 JSON (every provider sets its content-type).

    orjson, because httpx's own ``json=`` spent more on a prompt than the rest of the call did; the stdlib,
    with ASCII escapes, for what orjson cannot write (a lone surrogate, an integer past 64 bits).
    """
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode()


def _parse_json(raw: bytes, request_id: str | None) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise FatalError(code="malformed_json", request_id=request_id) from None


async def _raise_for_status(response: httpx.Response) -> None:
    if response.status_code < 300:
        return
    raw = b""
    async for chunk in response.aiter_bytes():
        raw += chunk
        if len(raw) > _MAX_ERROR_BODY:
            break
    try:
        body = json.loads(raw) if raw else None
    except ValueError:
        body = None
    raise error_for_status(response.status_code, response.headers, body, request_id_of(response.headers))


async def post_json(client: httpx.AsyncClient, call: PreparedCall) -> tuple[Any, str | None]:
    """POST and return the decoded JSON body and the request id; non-2xx raises a classified error.

    A body past :data:`MAX_REPLY_BYTES` raises ``ReplyTooLarge`` without reading the rest.
    """
    try:
        async with client.stream(
            "POST", call.url, headers=dict(call.headers), content=_json_body(call.body)
        ) as response:
            await _raise_for_status(response)
            request_id = request_id_of(response.headers)
            parts: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise ReplyTooLarge(request_id=request_id)
                parts.append(chunk)
            raw = b"".join(parts)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise _transport_error(exc) from None
    return _parse_json(raw, request_id), request_id


@asynccontextmanager
async def stream_sse(
    client: httpx.AsyncClient, call: PreparedCall
) -> AsyncIterator[tuple[str | None, AsyncIterator[SseEvent]]]:
    """POST and yield the request id and events; leaving the block (or cancelling) closes the connection.

    Leaving before the stream ended (the caller has what it wanted) closes the connection rather than
    reading the rest, so the server sees the client go and can stop generating. A stream past
    :data:`MAX_REPLY_BYTES` raises ``ReplyTooLarge`` from the events and is closed the same way.
    """
    try:
        async with client.stream(
            "POST", call.url, headers=dict(call.headers), content=_json_body(call.body)
        ) as response:
            await _raise_for_status(response)
            request_id = request_id_of(response.headers)
            events = _events(response, request_id)
            try:
                yield request_id, events
            finally:
                await events.aclose()
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise _transport_error(exc) from None


async def _events(response: httpx.Response, request_id: str | None) -> AsyncGenerator[SseEvent, None]:
    parser = SseParser()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
        if size > MAX_REPLY_BYTES:
            raise ReplyTooLarge(request_id=request_id)
        for event in parser.feed(decoder.decode(chunk)):
            yield event
    for event in parser.feed(decoder.decode(b"", final=True)) + parser.finish():
        yield event
