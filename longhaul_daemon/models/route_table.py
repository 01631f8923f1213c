"""Which calls the daemon makes itself and which go through pi's own provider layer (``model.complete``).

pi-ai builds a request per provider and per credential, not per API: an Anthropic OAuth token goes as a
Bearer token with Claude Code's betas, user agent and identity block; GitHub Copilot and the Cloudflare AI
gateway authenticate their own way; ``compat`` flags and base-URL checks change fields for OpenRouter, xAI,
z.ai, DeepSeek and others. So the daemon calls a model directly only on the few routes where it builds the
very request pi-ai 0.73.1 builds (same URL, auth scheme, required headers and the fields that matter), proven
by ``tests/models/test_pi_request_parity.py``; every other route goes through pi. The table is written out in
docs/models.md and checked against pi-ai's own model list, so a provider pi adds is never called directly by
accident. A direct call the provider refuses for its credential sends the route through pi for the daemon's
life (:class:`DirectRefusals`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "DIRECT_ROUTES",
    "PI_BUILTIN_PROVIDERS",
    "PLAIN_COMPAT",
    "URL_MARKERS",
    "CredentialKind",
    "DirectRefusals",
    "RouteChoice",
    "choose_route",
    "credential_kind",
    "is_auth_refusal_text",
]

CredentialKind = Literal["api-key", "oauth", "none"]
Via = Literal["daemon", "pi"]

# pi-ai 0.73.1's built-in providers (``getProviders()``); any other name is one from the user's models.json.
PI_BUILTIN_PROVIDERS: Final = frozenset(
    {
        "amazon-bedrock",
        "anthropic",
        "azure-openai-responses",
        "cerebras",
        "cloudflare-ai-gateway",
        "cloudflare-workers-ai",
        "deepseek",
        "fireworks",
        "github-copilot",
        "google",
        "google-vertex",
        "groq",
        "huggingface",
        "kimi-coding",
        "minimax",
        "minimax-cn",
        "mistral",
        "moonshotai",
        "moonshotai-cn",
        "openai",
        "openai-codex",
        "opencode",
        "opencode-go",
        "openrouter",
        "vercel-ai-gateway",
        "xai",
        "xiaomi",
        "xiaomi-token-plan-ams",
        "xiaomi-token-plan-cn",
        "xiaomi-token-plan-sgp",
        "zai",
    }
)

# The proven routes: (provider, api) → the ``why`` a direct call records. ``None`` as provider: any provider
# of the user's own models.json (never a built-in name). Each holds only with an API key (not OAuth).
DIRECT_ROUTES: Final[Mapping[tuple[str | None, str], str]] = {
    ("anthropic", "anthropic-messages"): "anthropic-key",
    ("openai", "openai-responses"): "openai-key",
    ("google", "google-generative-ai"): "google-key",
    (None, "openai-completions"): "custom-openai-compatible",
}

# Base-URL pieces on which pi-ai's openai-completions code changes the request (detectCompat, buildParams),
# and the placeholder of a URL only pi can fill in from its environment.
URL_MARKERS: Final = (
    "cerebras.ai",
    "api.x.ai",
    "chutes.ai",
    "deepseek.com",
    "api.z.ai",
    "api.moonshot.",
    "opencode.ai",
    "api.cloudflare.com",
    "gateway.ai.cloudflare.com",
    "openrouter.ai",
    "ai-gateway.vercel.sh",
    "api.openai.com",
    "{",
)

# models.json ``compat`` flags the daemon applies the way pi-ai does, with the values it handles; any other
# flag, or another value, changes pi's request in a way the daemon does not copy.
PLAIN_COMPAT: Final[Mapping[str, tuple[Any, ...] | None]] = {
    "supportsStore": None,  # any bool: ``store: false`` when true, as pi sends it
    "supportsDeveloperRole": None,
    "supportsReasoningEffort": None,
    "supportsUsageInStreaming": None,
    "maxTokensField": ("max_completion_tokens", "max_tokens"),
    "thinkingFormat": ("openai",),
    "supportsStrictMode": None,  # only marks tool schemas ``strict: false``, the server's default
    "sendSessionAffinityHeaders": None,  # only with a session id, which a compaction call never has
    "supportsLongCacheRetention": None,
    "requiresToolResultName": (False,),
    "requiresAssistantAfterToolResult": (False,),
    "requiresThinkingAsText": (False,),
    "requiresReasoningContentOnAssistantMessages": (False,),
    "zaiToolStream": (False,),
    "openRouterRouting": None,  # used only on openrouter.ai URLs, which go through pi
    "vercelGatewayRouting": None,  # likewise ai-gateway.vercel.sh
}

_OAUTH_TOKEN_MARK = "sk-ant-oat"  # pi-ai's own test for an Anthropic subscription token (isOAuthToken)
_REFUSAL_WORDS: Final = (
    "only authorized for",
    "invalid x-api-key",
    "invalid api key",
    "invalid_api_key",
    "api key",
    "api_key",
    "authentication",
    "unauthorized",
    "not authorized",
    "oauth",
    "credential",
    "permission",
    "forbidden",
)


@dataclass(frozen=True)
class RouteChoice:
    """Where a call goes and why: a ``DIRECT_ROUTES`` code, or the reason it goes through pi."""

    via: Via
    why: str


def credential_kind(api_key: str, *, oauth_login: bool) -> CredentialKind:
    """What the credential is, by pi's rules: an OAuth login pi holds, a subscription token, or a key."""
    if oauth_login or _OAUTH_TOKEN_MARK in api_key:
        return "oauth"
    return "api-key" if api_key else "none"


def _compat_problem(compat: Mapping[str, Any]) -> str | None:
    for name, value in compat.items():
        if name not in PLAIN_COMPAT:
            return "compat"
        allowed = PLAIN_COMPAT[name]
        if allowed is None:
            continue
        if value is not None and not any(type(value) is type(a) and value == a for a in allowed):
            return "compat"
    return None


def choose_route(
    *,
    provider: str,
    api: str | None,
    base_url: str,
    api_key: str,
    oauth_login: bool,
    compat: Mapping[str, Any],
    spoken: bool,
) -> RouteChoice:
    """The table's answer for one model and credential; ``spoken``: the daemon has a client for ``api``."""
    if not spoken:
        return RouteChoice("pi", "pi-only-api")
    kind = credential_kind(api_key, oauth_login=oauth_login)
    if kind == "oauth":
        return RouteChoice("pi", "oauth")
    if provider == "github-copilot":
        return RouteChoice("pi", "copilot")
    if provider.startswith("cloudflare-"):
        return RouteChoice("pi", "cloudflare")
    builtin = provider in PI_BUILTIN_PROVIDERS
    why = DIRECT_ROUTES.get((provider if builtin else None, api or ""))
    if why is None:
        return RouteChoice("pi", "not-proven")
    if kind == "none":
        return RouteChoice("pi", "no-key")
    if not builtin:
        if any(marker in base_url for marker in URL_MARKERS):
            return RouteChoice("pi", "pi-detects-url")
        problem = _compat_problem(compat)
        if problem is not None:
            return RouteChoice("pi", problem)
    return RouteChoice("daemon", why)


def is_auth_refusal_text(text: str) -> bool:
    """Whether a 400's error message says the credential was refused (Anthropic: "only authorized for use
    with Claude Code"); the text is read here and never kept."""
    lowered = text[:4096].lower()
    return any(word in lowered for word in _REFUSAL_WORDS)


_REFUSALS_KEPT = 256  # routes remembered; a daemon talks to a handful, this only bounds a pathological case


class DirectRefusals:
    """Daemon-wide: the routes (provider, api, base URL) whose direct call the provider refused for its
    credential, with the HTTP status; they go through pi until the daemon restarts."""

    def __init__(self, size: int = _REFUSALS_KEPT) -> None:
        self._refused: OrderedDict[tuple[str, str | None, str], int] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def status(self, provider: str, api: str | None, base_url: str) -> int | None:
        """The status that refused this route, or None while it is still called directly."""
        with self._lock:
            return self._refused.get((provider, api, base_url))

    def remember(self, provider: str, api: str | None, base_url: str, status: int) -> None:
        """Send this route through pi from now on, noting the status that refused it."""
        key = (provider, api, base_url)
        with self._lock:
            self._refused[key] = status
            self._refused.move_to_end(key)
            while len(self._refused) > self._size:
                self._refused.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._refused)
