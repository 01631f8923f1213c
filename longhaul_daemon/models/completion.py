"""One result shape for every provider, so the pass never looks at a provider's own field names.

Stop reasons are normalised: ``"stop"`` (finished), ``"length"`` (cut off at the output limit, FAIL-7, or
ended by the daemon at a loop inside a string, ``looped``), ``"refusal"`` (the provider's safety stop),
``"other"``; the provider's own value stays in ``raw_stop``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from longhaul_daemon.models.tool_calls import ToolCall

__all__ = [
    "CallTrace",
    "CompletionResult",
    "StopReason",
    "Usage",
    "int_field",
    "normalize_stop",
]

StopReason = Literal["stop", "length", "refusal", "other"]

_STOP_MAP: dict[str, dict[str, StopReason]] = {
    "openai-completions": {
        "stop": "stop",
        "length": "length",
        "content_filter": "refusal",
        "tool_calls": "stop",
        "function_call": "stop",
    },
    "anthropic-messages": {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "tool_use": "stop",
        "pause_turn": "stop",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "refusal": "refusal",
    },
    "openai-responses": {
        "completed": "stop",
        "max_output_tokens": "length",
        "content_filter": "refusal",
    },
    "google-generative-ai": {
        "STOP": "stop",
        "MAX_TOKENS": "length",
        "SAFETY": "refusal",
        "RECITATION": "refusal",
        "BLOCKLIST": "refusal",
        "PROHIBITED_CONTENT": "refusal",
        "SPII": "refusal",
    },
}


def normalize_stop(api: str, raw: str | None) -> StopReason:
    """Map a provider's stop value to the shared set; unknown values are ``"other"``."""
    if raw is None:
        return "other"
    return _STOP_MAP.get(api, {}).get(raw, "other")


def int_field(source: Any, *path: str) -> int:
    """A non-negative int at ``path`` inside nested dicts, or 0: local servers often omit usage fields."""
    value = source
    for key in path:
        if not isinstance(value, dict):
            return 0
        value = value.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


@dataclass(frozen=True)
class Usage:
    """Token counts; ``input`` excludes cache reads and writes, ``output`` includes reasoning tokens."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    def as_dict(self) -> dict[str, int]:
        """The counts under pi's ``Usage`` names, for records and traces."""
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "reasoning": self.reasoning,
        }

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
            self.reasoning + other.reasoning,
        )


@dataclass(frozen=True)
class CompletionResult:
    """A finished call: the text (repr hides it), why it stopped, usage and the provider's request id.

    ``tool_calls``: the calls of offered tools the reply made, in reply order. An answer a provider sends as
    a tool's input (Anthropic's and Gemini's structured-output form) is ``text``, never a call.
    """

    text: str = field(repr=False)
    stop_reason: StopReason
    raw_stop: str | None
    usage: Usage
    request_id: str | None = None
    stopped_early: bool = False  # the stream was ended by the daemon: at its answer, or at a loop in it
    tool_calls: tuple[ToolCall, ...] = ()
    # the stream was ended at a loop inside one of the answer's strings (models/string_loops.py): the text
    # stops in that string, after the loop's first copy, and the reply counts as cut off
    looped: bool = False

    @property
    def cut_off(self) -> bool:
        """True when the reply stops short of its end: it hit the output limit (FAIL-7 decides whether to
        raise the budget) or was ended at a loop inside a string (``looped``: no raise buys anything)."""
        return self.stop_reason == "length" or self.looped


@dataclass
class CallTrace:
    """FAIL-17's trace of one logical call: counts and ids only, never prompt or reply text."""

    kind: str
    api: str
    model: str
    output_budget: int
    reasoning: str | None
    attempts: int = 0
    duration_ms: int = 0
    usage: Usage = field(default_factory=Usage)
    request_id: str | None = None
    stop_reason: StopReason | None = None
    error: str | None = None
    error_code: str | None = None
    via: Literal["daemon", "pi"] = "daemon"  # "pi": made by the shim with pi's own code (``model.complete``)
    via_why: str | None = None  # the route table's code for that choice (docs/models.md), or refused-<status>
    structured: str | None = None  # the structured-output form sent: json_schema, tool, response_schema
    structured_skip: str | None = None  # why a call with a schema sent none: via-pi, refused, thinking
    stopped_early: bool = False
    tool_calls: int = 0  # calls of offered tools the reply made (turns mode's ``show``)

    @property
    def looped(self) -> bool:
        """The stream was ended at a loop inside a string of the answer: of the replies the daemon ends
        early, only that one is cut off (a reply ended at its answer or at a repeated item is whole)."""
        return self.stopped_early and self.stop_reason == "length"

    def as_dict(self) -> dict[str, Any]:
        """The JSON form the ``compaction`` record's ``narrative`` fields are built from (LOG-17)."""
        return {
            "kind": self.kind,
            "api": self.api,
            "model": self.model,
            "outputBudget": self.output_budget,
            "reasoning": self.reasoning,
            "attempts": self.attempts,
            "durationMs": self.duration_ms,
            "usage": self.usage.as_dict(),
            "requestId": self.request_id,
            "stopReason": self.stop_reason,
            "error": self.error,
            "errorCode": self.error_code,
            "via": self.via,
            "viaWhy": self.via_why,
            "structured": self.structured,
            "structuredSkip": self.structured_skip,
            "stoppedEarly": self.stopped_early,
            "looped": self.looped,
            "toolCalls": self.tool_calls,
        }
