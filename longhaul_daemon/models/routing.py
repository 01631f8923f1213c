"""Which model a pass's Diff calls: the configured summarizer when usable, else the session's own model.

Pure: it reads what the shim resolved with pi's registry (``CompactParams.summarizer`` and
``CompactParams.credentials``) and the ``summarizer`` spec of ``longhaul.json`` as read for this pass, and
returns the candidates in the order the Diff should try them, with a short code for why the configured route
is not first (CONFIG-8, FAIL-9, DIFF-20, LOG-17 ``route``). Credentials move from the protocol's
``SecretStr`` into a :class:`ModelTarget` and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from longhaul_daemon.models.request import SUPPORTED_APIS, Compat, ModelTarget, default_compat
from longhaul_daemon.protocol import CompactParams, ModelCredentials, ModelFacts, SummarizerRoute
from longhaul_daemon.user_settings import Settings

__all__ = ["RouteCandidate", "RoutePlan", "compat_from_pi", "plan_routes", "target_for"]

# pi's thinking levels, lowest first; "off" is the wire value "none" unless the model maps it elsewhere.
_PI_LEVELS: Final = ("off", "minimal", "low", "medium", "high", "xhigh")
_MAX_TOKENS_FIELDS: Final = ("max_completion_tokens", "max_tokens")
# Thinking formats that switch reasoning with their own parameter; ``reasoning_effort`` may be rejected there.
_NO_EFFORT_FORMATS: Final = frozenset({"zai", "qwen", "qwen-chat-template"})


@dataclass(frozen=True)
class RouteCandidate:
    """One model the Diff may call, in plan order; ``spec`` is ``provider/modelId`` as the log shows it."""

    name: Literal["summarizer", "session"]
    spec: str
    target: ModelTarget


@dataclass(frozen=True)
class RoutePlan:
    """The configured spec, the candidates to try in order, and why the configured route is not first."""

    configured: str | None
    candidates: tuple[RouteCandidate, ...]
    why: str | None


def _flag(compat: Mapping[str, Any], key: str) -> bool | None:
    value = compat.get(key)
    return value if isinstance(value, bool) else None


def _reasoning_levels(
    api: str | None, levels: tuple[str, ...], level_map: Mapping[str, Any]
) -> tuple[str, ...]:
    """The wire levels the model accepts after pi's ``thinkingLevelMap``.

    A level mapped to ``null`` is one the model lacks (``"off": null`` = reasoning cannot be turned off); a
    level mapped to a string is sent as that string; an unmapped level keeps its default when the API has it.
    """
    chosen: list[str] = []
    for level in _PI_LEVELS:
        default = "none" if level == "off" else level
        if level in level_map:
            value = level_map[level]
            if not isinstance(value, str) or not value:
                continue
            wire = value.lower() if api == "google-generative-ai" else value
        elif default in levels:
            wire = default
        else:
            continue
        if wire not in chosen:
            chosen.append(wire)
    return tuple(chosen)


def compat_from_pi(
    api: str | None,
    compat: Mapping[str, Any] | None,
    thinking_level_map: Mapping[str, Any] | None = None,
) -> Compat:
    """pi's per-model ``compat`` flags (and ``thinkingLevelMap``) over the defaults of ``api``.

    Values of the wrong type are ignored rather than trusted: the shim sends whatever pi's models.json held.
    """
    result = default_compat(api)
    flags = compat or {}
    field = flags.get("maxTokensField")
    if field in _MAX_TOKENS_FIELDS:
        result = replace(result, max_tokens_field=field)
    effort = _flag(flags, "supportsReasoningEffort")
    thinking_format = flags.get("thinkingFormat")
    if isinstance(thinking_format, str) and thinking_format in _NO_EFFORT_FORMATS:  # a list is not hashable
        effort = False
    if effort is not None:
        result = replace(result, supports_reasoning_effort=effort)
    usage = _flag(flags, "supportsUsageInStreaming")
    if usage is not None:
        result = replace(result, supports_usage_in_streaming=usage)
    developer = _flag(flags, "supportsDeveloperRole")
    if developer is not None:
        result = replace(result, supports_developer_role=developer)
    store = _flag(flags, "supportsStore")
    if store is not None:
        result = replace(result, supports_store=store)
    if thinking_level_map:
        levels = _reasoning_levels(api, result.reasoning_levels, thinking_level_map)
        result = replace(result, reasoning_levels=levels)
    return result


def target_for(facts: ModelFacts, credentials: ModelCredentials | None) -> ModelTarget:
    """The call target for a model pi resolved, with the credentials pi's registry gave for it."""
    headers = {} if credentials is None else credentials.headers
    return ModelTarget.from_facts(
        facts,
        api_key=None if credentials is None else credentials.apiKey,
        headers={name: value.get_secret_value() for name, value in headers.items()},
        compat=compat_from_pi(facts.api, facts.compat, facts.thinkingLevelMap),
        oauth_login=credentials is not None and credentials.oauth,
    )


def _unusable(route: SummarizerRoute | None, configured: str) -> str | None:
    """Why the shim's answer for the configured spec cannot be used, or None when it can."""
    if route is None or route.spec != configured:
        return "not-resolved"  # the shim did not ask, or asked about an older spec
    if route.problem is not None:
        return route.problem
    if route.model is None:
        return "unknown-model"
    if route.model.spec != configured:
        return "not-resolved"
    if route.credentials is None:
        return "no-credentials"
    facts = route.model
    if not facts.api or (facts.api in SUPPORTED_APIS and not facts.baseUrl):
        return "no-model"  # nothing to call: no api, or a native api without its base URL
    return None


def plan_routes(params: CompactParams, settings: Settings) -> RoutePlan:
    """The models to try for this pass: the summarizer if configured and usable, then the session model."""
    configured = settings.summarizer
    session_facts = params.session.model
    session = (
        None
        if session_facts is None
        else RouteCandidate("session", session_facts.spec, target_for(session_facts, params.credentials))
    )
    fallback = () if session is None else (session,)
    if configured is None:
        return RoutePlan(configured=None, candidates=fallback, why=None)
    if session is not None and session.spec == configured:
        # The route names the session model: one candidate, the route honoured.
        return RoutePlan(configured, (replace(session, name="summarizer"),), why=None)
    route = params.summarizer
    why = _unusable(route, configured)
    if why is not None or route is None or route.model is None:
        return RoutePlan(configured, fallback, why=why or "not-resolved")
    summarizer = RouteCandidate("summarizer", configured, target_for(route.model, route.credentials))
    return RoutePlan(configured, (summarizer, *fallback), why=None)
