"""A provider-neutral model request, with the key kept out of every repr, str and log line.

The shim resolves credentials per pass (PASS-22); they live only in this object for the duration of the
call. ``Compat`` carries per-model capability flags instead of guesses (local OpenAI-compatible servers
reject parameters the real APIs accept).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from pydantic import SecretStr

from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.models.tool_calls import ToolCall, ToolChoice, ToolResult, ToolSpec
from longhaul_daemon.protocol import ModelFacts

__all__ = [
    "SUPPORTED_APIS",
    "Compat",
    "Message",
    "ModelRequest",
    "ModelTarget",
    "ReasoningPlan",
    "default_compat",
    "plan_reasoning",
]

SUPPORTED_APIS = frozenset(
    {"openai-completions", "anthropic-messages", "openai-responses", "google-generative-ai"}
)

_OPENAI_LEVELS = ("minimal", "low", "medium", "high")
_ANTHROPIC_LEVELS = ("none", "low", "medium", "high")
_GOOGLE_LEVELS = ("none", "low", "medium", "high")


@dataclass(frozen=True)
class Compat:
    """What a model accepts. ``reasoning_levels`` ascend; ``"none"`` among them means it can be turned off."""

    max_tokens_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"
    supports_reasoning_effort: bool = True
    supports_usage_in_streaming: bool = True
    supports_developer_role: bool = True  # as pi-ai: the system prompt of a reasoning model goes as developer
    supports_store: bool = True  # as pi-ai: Chat Completions calls say ``store: false``
    reasoning_levels: tuple[str, ...] = _OPENAI_LEVELS
    anthropic_version: str = "2023-06-01"


def default_compat(api: str | None) -> Compat:
    """The flags the real API of ``api`` accepts; local servers override them per model."""
    if api == "anthropic-messages":
        return Compat(reasoning_levels=_ANTHROPIC_LEVELS)
    if api == "google-generative-ai":
        return Compat(reasoning_levels=_GOOGLE_LEVELS)
    return Compat()


@dataclass(frozen=True)
class ModelTarget:
    """Which model, where, and how to authenticate; ``api_key`` and ``headers`` never appear in repr."""

    api: str | None
    provider: str
    model_id: str
    base_url: str
    api_key: SecretStr | None = field(default=None, repr=False)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    reasoning: bool = False
    max_tokens: int | None = None
    compat: Compat = field(default_factory=Compat)
    # pi's own ``compat`` flags as its registry holds them, and whether pi holds an OAuth login for the
    # provider: what the route table (:mod:`.route_table`) decides a direct call by.
    pi_compat: Mapping[str, Any] = field(default_factory=dict, repr=False)
    oauth_login: bool = False

    @classmethod
    def from_facts(
        cls,
        facts: ModelFacts,
        *,
        api_key: str | SecretStr | None,
        headers: Mapping[str, str] | None = None,
        compat: Compat | None = None,
        base_url: str | None = None,
        oauth_login: bool = False,
    ) -> ModelTarget:
        """Build from the shim's ``ModelFacts`` plus the credentials it resolved for this pass."""
        key = api_key if isinstance(api_key, SecretStr) or api_key is None else SecretStr(api_key)
        return cls(
            api=facts.api,
            provider=facts.provider,
            model_id=facts.id,
            base_url=(base_url or facts.baseUrl or "").rstrip("/"),
            api_key=key,
            headers=MappingProxyType(dict(headers or {})),
            reasoning=bool(facts.reasoning),
            max_tokens=facts.maxTokens,
            compat=compat if compat is not None else default_compat(facts.api),
            pi_compat=MappingProxyType(dict(facts.compat or {})),
            oauth_login=oauth_login,
        )

    @property
    def limit_key(self) -> str:
        """The concurrency-limit key: the provider, plus the host for providers that are just a base URL."""
        return f"{self.provider}@{self.base_url}"

    def secrets(self) -> tuple[str, ...]:
        """Every credential-like value this target carries (key and extra header values), for redaction."""
        values = [self.secret(), *self.headers.values()]
        return tuple(v for v in values if len(v) >= 8)

    def secret(self) -> str:
        """The API key for the auth header (empty when the provider needs none)."""
        return self.api_key.get_secret_value() if self.api_key is not None else ""


@dataclass(frozen=True)
class Message:
    """One turn of the conversation sent to the model; no images.

    ``tool_calls``: the calls an assistant turn made. ``tool_results``: what a user turn sends back for the
    calls of the assistant turn before it, ahead of its text (turns mode's ``show`` tool).
    """

    role: Literal["user", "assistant"]
    text: str = field(repr=False)
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class ModelRequest:
    """One call: target, prompt, output budget, reasoning asked, streaming, and the FAIL-17 call kind.

    ``output_schema``: the JSON Schema the reply must follow, sent in the provider's structured-output form
    unless ``structured_off`` says why not (``"refused"``: the route rejected it before). ``stop_at_object``:
    end a streamed reply at the first complete top-level JSON object this accepts (a model that
    keeps writing after its answer is not paid for); None reads the stream to its end. ``cut_at_repeat``:
    also end it when the still-open object repeats a list item word for word and the object cut after the
    first copy is one this accepts (a looping model). ``tools``: the tools
    the model may call, in the provider's tool-calling form; ``tool_choice`` ``"none"`` keeps them declared
    (the conversation holds calls to them) but asks for the answer now.
    """

    target: ModelTarget
    system: str = field(repr=False)
    messages: tuple[Message, ...] = field(repr=False)
    max_output_tokens: int
    reasoning: str = "off"
    stream: bool = True
    kind: str = "first"
    output_schema: OutputSchema | None = None
    structured_off: str | None = None
    stop_at_object: Callable[[dict[str, Any]], bool] | None = field(default=None, repr=False, compare=False)
    cut_at_repeat: Callable[[dict[str, Any]], bool] | None = field(default=None, repr=False, compare=False)
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice = "auto"

    @property
    def schema_to_send(self) -> OutputSchema | None:
        """The schema a provider should put on the wire: none once the route is known to refuse it."""
        return self.output_schema if self.structured_off is None else None

    def __post_init__(self) -> None:
        if self.max_output_tokens < 1:
            raise ValueError("max_output_tokens must be positive")
        if not self.messages:
            raise ValueError("a request needs at least one message")


@dataclass(frozen=True)
class ReasoningPlan:
    """What to send (``wire``: a level, ``"none"`` = off, None = send nothing) and what to record."""

    wire: str | None
    recorded: str | None


def plan_reasoning(target: ModelTarget, asked: str) -> ReasoningPlan:
    """DIFF-18: off where the model can turn reasoning off, else the lowest level it accepts, recorded."""
    if not target.reasoning:
        return ReasoningPlan(wire=None, recorded=None)
    levels = target.compat.reasoning_levels
    if asked in ("off", "none"):
        if "none" in levels:
            return ReasoningPlan(wire="none", recorded=None)
        lowest = levels[0] if levels else None
        return ReasoningPlan(wire=lowest, recorded=lowest or "unknown")
    if asked in levels:
        return ReasoningPlan(wire=asked, recorded=asked)
    usable = [level for level in levels if level != "none"]
    fallback = usable[0] if usable else None
    return ReasoningPlan(wire=fallback, recorded=fallback or "unknown")
