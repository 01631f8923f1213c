"""Client-sent values cut down to their real shapes before they are logged, recorded or counted.

A client chooses the pass id it reports back, the reason codes, the model ids and api names it sends; a fuzzer
filled the operational log with 256-character pass ids full of bidi and control characters, and the ``status``
routes table with one row per invented model id. So every such value is checked against the shape the real
one has: a pass id is 12 lowercase hex digits (:func:`~longhaul_daemon.rpc.methods.new_pass_id`), a reason
code is ASCII ``[a-z0-9-]``, an error class an ASCII identifier, an api a short ASCII token (pi's names are
``anthropic-messages`` and the like), a session id a short ASCII token (pi's are UUIDs), a model spec bounded
printable ASCII. A value of the right shape passes unchanged; any other is replaced by text of our own making
that says only how long it was (``invalid (300 chars)``), or, for model specs and session ids, which must stay
distinct, by a short hash of it. Non-string values (the lengths the RPC layer already substitutes, ``None``)
pass through. :func:`shape_log_fields` applies the same table to every operational log line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, MutableMapping
from typing import Any, Final

__all__ = [
    "FIELD_SHAPES",
    "error_class_field",
    "invalid",
    "model_spec_field",
    "pass_id_field",
    "reason_field",
    "session_id_field",
    "shape_log_fields",
    "token_field",
]

_PASS_ID: Final = re.compile(r"[0-9a-f]{12}")
_REASON: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_ERROR_CLASS: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.]{0,127}")
_TOKEN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_SPEC: Final = re.compile(r"[\x21-\x7e]{1,200}")  # printable ASCII, no space: provider/model ids are tokens
_SESSION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


def invalid(value: str) -> str:
    """What a value of the wrong shape is logged as: its length, nothing of its text."""
    return f"invalid ({len(value)} chars)"


def _hashed(value: str) -> str:
    """A stable short name for a value that must stay distinct from others but not appear as sent."""
    return f"#{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:12]} ({len(value)} chars)"


def pass_id_field(value: str | None) -> str | None:
    """A pass id as the daemon made it (12 hex digits), else :func:`invalid`."""
    if value is None or _PASS_ID.fullmatch(value):
        return value
    return invalid(value)


def reason_field(value: str | None) -> str | None:
    """A reason code (``timeout``, ``daemon-down``, pi's ``startup``): ASCII ``[a-z0-9-]``, at most 64."""
    if value is None or _REASON.fullmatch(value):
        return value
    return invalid(value)


def error_class_field(value: str | None) -> str | None:
    """An error class name (``TypeError``, ``errors.ShimError``), ASCII, at most 128 characters."""
    if value is None or _ERROR_CLASS.fullmatch(value):
        return value
    return invalid(value)


def token_field(value: str | None) -> str | None:
    """A pi api name, pi's version, a provider code or request id: an ASCII token of at most 128 chars."""
    if value is None or _TOKEN.fullmatch(value):
        return value
    return invalid(value)


def model_spec_field(value: str | None) -> str | None:
    """A ``provider/modelId`` (or either part): printable ASCII up to 200, else a short hash of it."""
    if value is None or _SPEC.fullmatch(value):
        return value
    return _hashed(value)


def session_id_field(value: str | None) -> str | None:
    """A pi session id (a UUID): an ASCII token up to 128, else a short hash of it."""
    if value is None or _SESSION_ID.fullmatch(value):
        return value
    return _hashed(value)


FIELD_SHAPES: Final[dict[str, Callable[[str | None], str | None]]] = {
    "pass_id": pass_id_field,
    "session_id": session_id_field,
    "reason": reason_field,
    "fallback": reason_field,
    "error_class": error_class_field,
    "error": error_class_field,  # model_call's and model_call_attempt_failed's error is a class name
    "api": token_field,
    "model": model_spec_field,
    "route": model_spec_field,
    "code": token_field,  # provider error codes are identifier-like tokens
    "request_id": token_field,
    "requestId": token_field,
    "errorCode": token_field,
}
"""Operational log keys whose string values a client or a provider chose, and the shape each must have."""


def shape_log_fields(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """structlog processor: each key of :data:`FIELD_SHAPES` holding a string is reduced to its shape."""
    for key, shape in FIELD_SHAPES.items():
        value = event_dict.get(key)
        if isinstance(value, str):
            event_dict[key] = shape(value)
    return event_dict
