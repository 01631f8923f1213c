"""Structured output: the answer's JSON Schema in each provider's own form, and the routes known to refuse it.

A small model asked in words for "one JSON object" answers in prose or echoes the prompt; under a JSON Schema
constraint it answers with valid JSON. So every call that has a schema sends it wherever the route supports
one, in the form docs/models.md lists per API; the provider modules build it from the :class:`OutputSchema`
here, and a call through pi carries the same fields as a payload (:mod:`.via_pi`).

The schema stays inside the subset every one of those accepts (:func:`strict_schema`): objects closed with
every property required, optional ones nullable, no ``$ref`` and no string-length keywords (OpenAI's strict
mode rejects them; string bounds are enforced after the reply, DIFF-16). ``enum``, ``minItems`` and
``maxItems`` stay, since a bounded array stops a small model repeating items. :func:`gemini_schema` derives
Gemini's dialect. A route that answers a call carrying the schema with 400 or 422, and the same call without
it with neither, is remembered per model until the daemon restarts (:class:`StructuredMemory`); a 400 or 422
to both blames the request, and a 5xx is treated as an outage, so neither is remembered.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from longhaul_daemon.models.call_errors import ModelCallError

__all__ = [
    "REFUSAL_STATUSES",
    "OutputSchema",
    "StructuredMemory",
    "gemini_schema",
    "is_schema_refusal",
    "strict_schema",
]


REFUSAL_STATUSES = frozenset({400, 422})  # 422: servers built on FastAPI/pydantic (vLLM, TGI) reject so
_MEMORY_SIZE = 256  # models remembered; a daemon talks to a handful, this only bounds a pathological case
_DROPPED_KEYWORDS = frozenset({"title", "default", "description", "maxLength", "minLength", "examples"})


@dataclass(frozen=True)
class OutputSchema:
    """A JSON Schema the reply must follow, already in :func:`strict_schema`'s subset, with a wire name."""

    name: str  # a-z, A-Z, 0-9, _ and -, at most 64: OpenAI's rule for json_schema and tool names
    schema: Mapping[str, Any] = field(repr=False)
    description: str = ""


def _inline(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _inline(defs[ref.removeprefix("#/$defs/")], defs)
    return {k: _inline(v, defs) for k, v in node.items() if k != "$defs"}


def _closed(node: Any) -> Any:
    """Every object closed with every property required; a property that was optional becomes nullable."""
    if isinstance(node, list):
        return [_closed(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _closed(v) for k, v in node.items() if k not in _DROPPED_KEYWORDS}
    if out.get("type") == "object" and isinstance(out.get("properties"), dict):
        required = set(node.get("required") or ())
        properties: dict[str, Any] = {}
        for name, prop in out["properties"].items():
            properties[name] = prop if name in required or _nullable(prop) else {"anyOf": [prop, _NULL]}
        out["properties"] = properties
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


_NULL: Mapping[str, Any] = {"type": "null"}


def _nullable(prop: Any) -> bool:
    """Whether a property already accepts null, or is a list (a missing list reads as empty, DIFF-15)."""
    if not isinstance(prop, dict):
        return False
    options = prop.get("anyOf")
    if isinstance(options, list) and any(o == _NULL for o in options):
        return True
    return prop.get("type") == "array"


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` (as pydantic writes it) in the subset OpenAI (strict), Anthropic, Gemini, llama.cpp take."""
    defs = schema.get("$defs") or {}
    closed = _closed(_inline(dict(schema), defs))
    if not isinstance(closed, dict) or closed.get("type") != "object":
        raise ValueError("an output schema must describe an object")
    return closed


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Gemini's ``responseSchema`` dialect (OpenAPI 3.0): upper-case types, ``nullable`` instead of a null
    branch, no ``additionalProperties``, and ``propertyOrdering`` so fields come in the schema's order."""
    out: dict[str, Any] = {}
    options = schema.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != _NULL]
        if len(kept) == 1 and isinstance(kept[0], dict):
            return {**gemini_schema(kept[0]), "nullable": True}
        out["anyOf"] = [gemini_schema(o) for o in kept if isinstance(o, dict)]
    kind = schema.get("type")
    if isinstance(kind, str):
        out["type"] = kind.upper()
    for keyword in ("enum", "minItems", "maxItems"):
        if keyword in schema:
            out[keyword] = schema[keyword]
    items = schema.get("items")
    if isinstance(items, dict):
        out["items"] = gemini_schema(items)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {name: gemini_schema(prop) for name, prop in properties.items()}
        out["required"] = [name for name in schema.get("required") or () if name in properties]
        out["propertyOrdering"] = list(properties)
    return out


def is_schema_refusal(error: ModelCallError) -> bool:
    """A status that may mean the route rejects the schema parameter (confirmed by the call without it); a
    400 whose message refused the credential is not one."""
    return error.status in REFUSAL_STATUSES and not error.credential_refused


class StructuredMemory:
    """Daemon-wide: the models whose route refused a schema, by api, base URL and model id.

    Shared by every pass, so the lock keeps concurrent passes (worker threads never touch it, but the loop's
    tasks do) from seeing a half-updated map.
    """

    def __init__(self, size: int = _MEMORY_SIZE) -> None:
        self._refused: OrderedDict[tuple[str | None, str, str], None] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def refuses(self, api: str | None, base_url: str, model_id: str) -> bool:
        """True when this model's route is known to reject an output schema."""
        with self._lock:
            return (api, base_url, model_id) in self._refused

    def remember(self, api: str | None, base_url: str, model_id: str) -> None:
        """Note that this model's route rejects an output schema; the oldest past the cap is forgotten."""
        with self._lock:
            self._refused[(api, base_url, model_id)] = None
            self._refused.move_to_end((api, base_url, model_id))
            while len(self._refused) > self._size:
                self._refused.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._refused)
