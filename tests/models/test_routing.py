"""Routes: the configured summarizer when usable, else the session model and why (CONFIG-8, FAIL-9)."""

from __future__ import annotations

from typing import Any

import pytest

from longhaul_daemon.models.request import default_compat
from longhaul_daemon.models.routing import RoutePlan, compat_from_pi, plan_routes
from longhaul_daemon.protocol import CompactParams
from longhaul_daemon.user_settings import Settings

SESSION_KEY = "sk-session-7f3a9c1e"
SUMMARIZER_KEY = "sk-summarizer-2b8d4e6f"
SESSION_MODEL = {
    "provider": "fake",
    "id": "session-model",
    "api": "openai-completions",
    "baseUrl": "http://127.0.0.1:9/v1",
    "maxTokens": 4096,
}
SUMMARIZER_MODEL = {
    "provider": "cheap",
    "id": "org/small-model",  # model ids may hold slashes; the spec splits at the first one
    "api": "anthropic-messages",
    "baseUrl": "http://127.0.0.1:10",
    "compat": {"supportsEagerToolInputStreaming": False},
}
SPEC = "cheap/org/small-model"


def params(
    *, session_model: dict[str, Any] | None = SESSION_MODEL, summarizer: dict[str, Any] | None = None
) -> CompactParams:
    session: dict[str, Any] = {"cwd": "/w", "sessionId": "s1", "agentDir": "/a", "piVersion": "0.73.1"}
    if session_model is not None:
        session["model"] = session_model
    return CompactParams.model_validate(
        {
            "session": session,
            "preparation": {"firstKeptEntryId": "e1", "tokensBefore": 10},
            "branchEntries": [],
            "credentials": {"apiKey": SESSION_KEY, "headers": {"x-org": "org-secret-header"}},
            "summarizer": summarizer,
        }
    )


def resolved(spec: str = SPEC, **changes: Any) -> dict[str, Any]:
    route: dict[str, Any] = {
        "spec": spec,
        "model": SUMMARIZER_MODEL,
        "credentials": {"apiKey": SUMMARIZER_KEY},
    }
    route.update(changes)
    return route


def names(plan: RoutePlan) -> list[tuple[str, str]]:
    return [(c.name, c.spec) for c in plan.candidates]


def test_configured_route_is_tried_first_with_its_own_key() -> None:
    """DIFF-20, CONFIG-8: a resolved summarizer comes first, the session model after it."""
    plan = plan_routes(params(summarizer=resolved()), Settings(summarizer=SPEC))
    assert plan.configured == SPEC and plan.why is None
    assert names(plan) == [("summarizer", SPEC), ("session", "fake/session-model")]
    summarizer, session = plan.candidates
    assert summarizer.target.api == "anthropic-messages"
    assert summarizer.target.base_url == "http://127.0.0.1:10"
    assert summarizer.target.secret() == SUMMARIZER_KEY
    assert session.target.secret() == SESSION_KEY
    assert dict(session.target.headers) == {"x-org": "org-secret-header"}


def test_no_route_configured_uses_the_session_model() -> None:
    plan = plan_routes(params(summarizer=resolved()), Settings())
    assert plan == RoutePlan(configured=None, candidates=plan.candidates, why=None)
    assert names(plan) == [("session", "fake/session-model")]


@pytest.mark.parametrize(
    ("route", "why"),
    [
        ({"spec": SPEC, "problem": "unknown-model"}, "unknown-model"),
        ({"spec": SPEC, "problem": "no-credentials"}, "no-credentials"),
        ({"spec": SPEC, "problem": "resolve-error"}, "resolve-error"),
        ({"spec": SPEC}, "unknown-model"),
        (resolved(credentials=None), "no-credentials"),
        (None, "not-resolved"),
        (resolved(spec="cheap/older-model"), "not-resolved"),
        (resolved(model={**SUMMARIZER_MODEL, "id": "other"}), "not-resolved"),
        (resolved(model={**SUMMARIZER_MODEL, "baseUrl": None}), "no-model"),
        (resolved(model={**SUMMARIZER_MODEL, "api": None}), "no-model"),
    ],
)
def test_unusable_route_falls_back_to_the_session_model_with_a_reason(
    route: dict[str, Any] | None, why: str
) -> None:
    """FAIL-9: unknown, no credentials, registry error, not resolved → the session model, and the reason."""
    plan = plan_routes(params(summarizer=route), Settings(summarizer=SPEC))
    assert plan.configured == SPEC
    assert plan.why == why
    assert names(plan) == [("session", "fake/session-model")]
    assert plan.candidates[0].target.secret() == SESSION_KEY


def test_a_model_the_daemon_reaches_through_pi_needs_no_base_url() -> None:
    """A non-native api (sent through pi's own complete()) is usable without a base URL."""
    bedrock = {"provider": "amazon-bedrock", "id": "claude", "api": "bedrock-converse-stream"}
    plan = plan_routes(
        params(summarizer=resolved("amazon-bedrock/claude", model=bedrock)),
        Settings(summarizer="amazon-bedrock/claude"),
    )
    assert plan.why is None
    assert names(plan)[0] == ("summarizer", "amazon-bedrock/claude")


def test_summarizer_equal_to_the_session_model_is_one_candidate() -> None:
    plan = plan_routes(params(summarizer=None), Settings(summarizer="fake/session-model"))
    assert plan.why is None
    assert names(plan) == [("summarizer", "fake/session-model")]
    assert plan.candidates[0].target.secret() == SESSION_KEY


def test_without_a_session_model_only_the_summarizer_remains() -> None:
    plan = plan_routes(params(session_model=None, summarizer=resolved()), Settings(summarizer=SPEC))
    assert names(plan) == [("summarizer", SPEC)]
    empty = plan_routes(params(session_model=None, summarizer=None), Settings(summarizer=SPEC))
    assert empty.candidates == () and empty.why == "not-resolved"
    assert plan_routes(params(session_model=None), Settings()).candidates == ()


def test_keys_never_show_in_a_plan_repr() -> None:
    """PASS-22: the plan is logged and compared in tests; its repr must not carry a key."""
    plan = plan_routes(params(summarizer=resolved()), Settings(summarizer=SPEC))
    text = repr(plan) + str(plan)
    assert SESSION_KEY not in text and SUMMARIZER_KEY not in text and "org-secret-header" not in text


def test_compat_flags_from_pi_override_the_api_defaults() -> None:
    compat = compat_from_pi(
        "openai-completions",
        {
            "maxTokensField": "max_tokens",
            "supportsReasoningEffort": False,
            "supportsUsageInStreaming": False,
            "supportsDeveloperRole": True,
        },
    )
    assert compat.max_tokens_field == "max_tokens"
    assert not compat.supports_reasoning_effort
    assert not compat.supports_usage_in_streaming
    assert compat.supports_developer_role


def test_compat_ignores_values_of_the_wrong_type() -> None:
    junk = {"maxTokensField": "tokens", "supportsReasoningEffort": "no", "supportsDeveloperRole": 1}
    assert compat_from_pi("openai-completions", junk) == default_compat("openai-completions")
    assert compat_from_pi("anthropic-messages", None) == default_compat("anthropic-messages")


def test_thinking_formats_with_their_own_switch_get_no_reasoning_effort() -> None:
    assert not compat_from_pi("openai-completions", {"thinkingFormat": "qwen"}).supports_reasoning_effort
    assert compat_from_pi("openai-completions", {"thinkingFormat": "openai"}).supports_reasoning_effort


def test_thinking_level_map_limits_the_reasoning_levels() -> None:
    """DIFF-18: a model whose reasoning cannot be turned off (``off: null``) loses ``none``."""
    gpt5 = compat_from_pi("openai-responses", None, {"off": None})
    assert gpt5.reasoning_levels == ("minimal", "low", "medium", "high")
    mapped = compat_from_pi("openai-completions", None, {"minimal": "low", "xhigh": "xhigh"})
    assert mapped.reasoning_levels == ("low", "medium", "high", "xhigh")
    gemini3 = compat_from_pi(
        "google-generative-ai",
        None,
        {"off": None, "minimal": None, "low": "LOW", "medium": None, "high": "HIGH"},
    )
    assert gemini3.reasoning_levels == ("low", "high")
