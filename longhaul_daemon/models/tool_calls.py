"""Tool calls in one neutral form: the tools offered, the calls a reply makes, the results sent back.

Turns mode gives the model one read-only tool (``show``); the four wire formats carry tools, calls and
results each in their own shape, and the provider modules translate from and to the form here. A call's
arguments are model output, so they are decoded leniently (:func:`decode_arguments`): anything that is not a
JSON object (or one larger than any offered tool takes) becomes an empty object, and the tool answers with
an error result rather than the daemon raising. ``signature`` keeps the opaque token Gemini attaches to a
call (``thoughtSignature``), which must be sent back with that call in the next request; no other provider
has one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "ToolCall",
    "ToolChoice",
    "ToolResult",
    "ToolSpec",
    "decode_arguments",
    "encode_arguments",
    "synthetic_id",
]

ToolChoice = Literal["auto", "none"]  # "none": the tools stay declared, but the model must answer now

_MAX_ID = 200  # a call id is echoed back to the provider; a longer one is replaced, never trusted
MAX_ARGUMENT_CHARS = 64 * 1024  # a call's arguments as JSON text; the show tool's are a few dozen


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: its name, one line on what it does, and its parameters' JSON Schema."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(repr=False)


@dataclass(frozen=True)
class ToolCall:
    """One call a reply made: the provider's call id, the tool's name and its decoded arguments."""

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), repr=False)
    signature: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ToolResult:
    """What a tool answered to the call ``call_id``; ``is_error`` marks a refused or failed call."""

    call_id: str
    name: str
    text: str = field(repr=False)
    is_error: bool = False


def decode_arguments(raw: object) -> dict[str, Any]:
    """A call's arguments as an object: a JSON object as text or already decoded; anything else ``{}``, and
    so is a text over :data:`MAX_ARGUMENT_CHARS` (no tool offered takes more; decoding megabytes of it would
    only hold the daemon up)."""
    if isinstance(raw, dict):
        return dict(raw)
    if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_ARGUMENT_CHARS:
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def encode_arguments(arguments: Mapping[str, Any]) -> str:
    """Arguments as the JSON text OpenAI's formats carry them."""
    return json.dumps(dict(arguments), ensure_ascii=False, separators=(",", ":"))


def synthetic_id(given: object, calls_so_far: Sequence[ToolCall]) -> str:
    """The provider's id when it gave a usable one, else one made up from the call's position in the reply."""
    if isinstance(given, str) and given and len(given) <= _MAX_ID:
        return given
    return f"call_{len(calls_so_far) + 1}"
