"""What every provider module provides, and the few helpers they share, so ``client.py`` treats them alike.

A provider is three pure functions of data: ``prepare`` (request → wire call), ``parse`` (JSON body of that
call → result) and a ``StreamState`` made for that call that folds SSE events into the same result. None of
them does I/O. A stream state hands back each event's new answer text as it folds it, so the caller can end
the stream once the answer is whole (:meth:`StreamState.partial`). Tool calls the reply makes are collected
beside the text (:attr:`~longhaul_daemon.models.completion.CompletionResult.tool_calls`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from longhaul_daemon.models.call_errors import FatalError, RetryableError, StreamError
from longhaul_daemon.models.completion import CompletionResult, Usage, normalize_stop
from longhaul_daemon.models.http import PreparedCall, SseEvent
from longhaul_daemon.models.request import ModelRequest
from longhaul_daemon.models.tool_calls import ToolCall

__all__ = [
    "Provider",
    "StreamState",
    "completion",
    "early_result",
    "error_code_of",
    "join_url",
    "merge_headers",
    "parse_event_json",
    "require_dict",
    "stream_error",
]

# Error types a provider may send inside a 200 stream that mean "try again later".
_TRANSIENT_STREAM_CODES = frozenset(
    {
        "overloaded_error",
        "api_error",
        "rate_limit_error",
        "server_error",
        "rate_limit_exceeded",
        "internal_error",
        "INTERNAL",
        "UNAVAILABLE",
        "RESOURCE_EXHAUSTED",
        "DEADLINE_EXCEEDED",
        "timeout",
    }
)


class StreamState(Protocol):
    """Folds one stream's events into a result; ``feed`` raises ``StreamError`` on an error event.

    ``feed`` returns the answer text the event added ("" for none). ``partial`` is the result so far, for a
    stream the caller ends before the server finished it.
    """

    def feed(self, event: SseEvent) -> str:
        """Fold one event in; return the answer text it added ("" for none)."""

    def finish(self) -> CompletionResult:
        """The result of a stream that ended; ``StreamError`` when it ended before the reply did."""

    def partial(self) -> CompletionResult:
        """The result so far, for a stream the caller ends early."""


@dataclass(frozen=True)
class Provider:
    """One wire format: how to build the call and how to read its reply, streamed or not."""

    api: str
    prepare: Callable[[ModelRequest], tuple[PreparedCall, str | None]]
    parse: Callable[[Any, PreparedCall], CompletionResult]
    new_stream: Callable[[PreparedCall], StreamState]


def join_url(base_url: str, path: str) -> str:
    """``base_url`` joined with ``path``; a base URL that is not http(s) is a ``FatalError``."""
    if not base_url.startswith(("http://", "https://")):
        raise FatalError(code="invalid_base_url")
    return base_url.rstrip("/") + path


def merge_headers(own: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """Our headers, then the registry's extra headers (which may replace auth, e.g. OAuth bearer tokens)."""
    merged = {k: v for k, v in own.items() if v}
    lowered = {k.lower(): k for k in merged}
    for key, value in extra.items():
        existing = lowered.get(key.lower())
        if existing is not None:
            del merged[existing]
        merged[key] = value
    return merged


def require_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else ``FatalError`` (``malformed_reply``)."""
    if not isinstance(value, dict):
        raise FatalError(code="malformed_reply")
    return value


def parse_event_json(event: SseEvent) -> dict[str, Any]:
    """The event's data as a JSON object, else ``FatalError`` (``malformed_stream_event``)."""
    try:
        return require_dict(json.loads(event.data))
    except ValueError:
        raise FatalError(code="malformed_stream_event") from None


def error_code_of(body: Any) -> str | None:
    """The ``type``/``code``/``status`` of an in-stream error object, whichever the provider uses."""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        for key in ("type", "code", "status"):
            if isinstance(error.get(key), str):
                return str(error[key])
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        return str(body["code"])
    return None


def stream_error(code: str | None, *, got_text: bool) -> RetryableError | FatalError:
    """An error event in a 200 stream: transient codes before any text are retried, the rest are not."""
    if code in _TRANSIENT_STREAM_CODES or code is None:
        return StreamError(got_text=got_text, code=code or "stream_error")
    return FatalError(code=code)


def completion(
    api: str, text: str, raw_stop: str | None, usage: Usage, tool_calls: tuple[ToolCall, ...] = ()
) -> CompletionResult:
    """The one result shape every provider returns, with the stop reason normalized for ``api``."""
    return CompletionResult(
        text=text,
        stop_reason=normalize_stop(api, raw_stop),
        raw_stop=raw_stop,
        usage=usage,
        tool_calls=tool_calls,
    )


def early_result(text: str, usage: Usage) -> CompletionResult:
    """A stream ended by the caller at a complete answer: a finished reply, with the usage seen so far.

    Calls still streaming when the answer ended are left out: the answer is what was wanted."""
    return CompletionResult(text=text, stop_reason="stop", raw_stop=None, usage=usage, stopped_early=True)
