"""The route table against pi-ai's own model list and docs/models.md: only proven routes go direct.

pi-ai 0.73.1's providers and models come from node (``models.generated.js`` through ``getModels``), so a
provider pi adds is noticed here rather than taken for one of the user's own and called directly. The docs'
table is parsed and must say, row by row, what the code decides.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
from pydantic import SecretStr

from longhaul_daemon.models.call_route import route_for
from longhaul_daemon.models.providers import PROVIDERS
from longhaul_daemon.models.request import ModelTarget
from longhaul_daemon.models.route_table import (
    DIRECT_ROUTES,
    PI_BUILTIN_PROVIDERS,
    DirectRefusals,
    RouteChoice,
    choose_route,
    credential_kind,
    is_auth_refusal_text,
)
from longhaul_daemon.models.via_pi import NoteSink

from .pi_probe import pi_models

DOCS = Path(__file__).resolve().parents[2] / "docs" / "models.md"
PROVEN = {
    ("anthropic", "anthropic-messages"),
    ("openai", "openai-responses"),
    ("google", "google-generative-ai"),
}
OAUTH_TOKEN = "sk-ant-oat01-abcdefghijklmnop"


def decide(model: dict[str, Any], key: str = "sk-plain-key-1", *, oauth_login: bool = False) -> RouteChoice:
    return choose_route(
        provider=model["provider"],
        api=model["api"],
        base_url=model["baseUrl"],
        api_key=key,
        oauth_login=oauth_login,
        compat=model.get("compat") or {},
        spoken=model["api"] in PROVIDERS,
    )


def test_the_daemon_knows_every_provider_pi_ai_ships() -> None:
    providers, models = pi_models()
    assert set(providers) == PI_BUILTIN_PROVIDERS
    assert {m["provider"] for m in models} <= PI_BUILTIN_PROVIDERS


def test_only_the_proven_routes_of_pi_ai_s_models_go_direct_and_never_with_oauth() -> None:
    _, models = pi_models()
    direct = {(m["provider"], m["api"]) for m in models if decide(m).via == "daemon"}
    assert direct == PROVEN
    assert all(decide(m, OAUTH_TOKEN).via == "pi" for m in models)
    assert all(decide(m, oauth_login=True).via == "pi" for m in models)
    assert all(decide(m, "").via == "pi" for m in models)
    anthropic = next(m for m in models if m["provider"] == "anthropic")
    assert decide(anthropic, OAUTH_TOKEN) == RouteChoice("pi", "oauth")
    for provider in ("github-copilot", "cloudflare-ai-gateway"):
        assert {decide(m).why for m in models if m["provider"] == provider} == {
            "copilot" if provider == "github-copilot" else "cloudflare"
        }


def _doc_rows() -> dict[tuple[str, str, str], tuple[str, str]]:
    """The route table in docs/models.md: (provider, api, credential) → (route, viaWhy), built-ins only."""
    text = DOCS.read_text()
    table = text[text.index("### The route table") :]
    table = table[: table.index("\n\n", table.index("| provider |"))]
    rows: dict[tuple[str, str, str], tuple[str, str]] = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        match = re.fullmatch(r"`([a-z0-9-]+)`", cells[0])
        if match is None or len(cells) < 5:
            continue
        api = cells[1].strip("`")
        credential = "oauth" if cells[2].startswith("OAuth") else "api-key"
        route = "daemon" if cells[3] == "direct" else "pi"
        rows[(match.group(1), api, credential)] = (route, cells[4].strip("`"))
    return rows


def test_the_table_in_the_docs_says_what_the_code_decides_for_every_pi_ai_provider() -> None:
    _, models = pi_models()
    expected: dict[tuple[str, str, str], tuple[str, str]] = {}
    for m in models:
        choice = decide(m)
        expected[(m["provider"], m["api"], "api-key")] = (choice.via, choice.why)
    anthropic = next(m for m in models if m["provider"] == "anthropic")
    oauth = decide(anthropic, OAUTH_TOKEN)
    expected[("anthropic", "anthropic-messages", "oauth")] = (oauth.via, oauth.why)
    assert _doc_rows() == expected
    text = DOCS.read_text()
    for why in {*DIRECT_ROUTES.values(), "pi-detects-url", "compat", "no-key", "oauth", "forced", "no-shim"}:
        assert f"`{why}`" in text, why


def local(**changes: Any) -> dict[str, Any]:
    return {
        "provider": "my-llama",
        "api": "openai-completions",
        "baseUrl": "http://127.0.0.1:8080/v1",
        **changes,
    }


def test_a_models_json_openai_compatible_server_goes_direct_unless_pi_would_change_its_request() -> None:
    assert decide(local()) == RouteChoice("daemon", "custom-openai-compatible")
    assert (
        decide(local(compat={"supportsDeveloperRole": False, "maxTokensField": "max_tokens"})).via == "daemon"
    )
    for url in ("https://openrouter.ai/api/v1", "https://api.x.ai/v1", "https://gw/{ACCOUNT}/v1"):
        assert decide(local(baseUrl=url)) == RouteChoice("pi", "pi-detects-url"), url
    for compat in ({"thinkingFormat": "qwen"}, {"cacheControlFormat": "anthropic"}, {"newFlag": True}):
        assert decide(local(compat=compat)) == RouteChoice("pi", "compat"), compat
    assert decide(local(compat={"requiresToolResultName": True})).why == "compat"
    assert decide(local(compat={"maxTokensField": 7})).why == "compat"
    assert decide(local(api="anthropic-messages")) == RouteChoice("pi", "not-proven")
    assert decide(local(api="bedrock-converse-stream")) == RouteChoice("pi", "pi-only-api")
    assert decide(local(), "") == RouteChoice("pi", "no-key")


def test_credential_kinds_follow_pi_s_own_tests() -> None:
    assert credential_kind(OAUTH_TOKEN, oauth_login=False) == "oauth"
    assert credential_kind("sk-ant-api03-x", oauth_login=False) == "api-key"
    assert credential_kind("ghu_token", oauth_login=True) == "oauth"
    assert credential_kind("", oauth_login=False) == "none"


def test_a_refusal_is_read_from_the_error_message_only_for_its_words() -> None:
    assert is_auth_refusal_text("This credential is only authorized for use with Claude Code.")
    assert is_auth_refusal_text("API key not valid. Please pass a valid API key.")
    assert is_auth_refusal_text("invalid x-api-key")
    assert not is_auth_refusal_text("max_tokens: must be less than 8192")
    assert not is_auth_refusal_text("")


class SilentShim:
    """A peer that is never asked: only its presence counts here."""

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        raise AssertionError("no call is made")


def test_route_for_adds_what_the_daemon_learned_and_was_told() -> None:
    target = ModelTarget(
        api="anthropic-messages",
        provider="anthropic",
        model_id="claude-x",
        base_url="https://api.anthropic.com",
        api_key=SecretStr("sk-ant-api03-key"),
    )
    shim = SilentShim()  # route_for only asks whether there is a peer
    assert route_for(target, peer=shim) == RouteChoice("daemon", "anthropic-key")
    assert route_for(target, peer=shim, via_pi_apis={"anthropic-messages"}).why == "forced"
    refusals = DirectRefusals()
    refusals.remember("anthropic", "anthropic-messages", "https://api.anthropic.com", 401)
    assert route_for(target, peer=shim, refusals=refusals) == RouteChoice("pi", "refused-401")
    elsewhere = replace(target, base_url="https://proxy.example")
    assert route_for(elsewhere, peer=shim, refusals=refusals).via == "daemon"
    oauth = replace(target, api_key=SecretStr(OAUTH_TOKEN))
    assert route_for(oauth, peer=None) == RouteChoice("pi", "oauth")  # never sent by the daemon, shim or not
    custom = replace(target, provider="mine", api="anthropic-messages")
    assert route_for(custom, peer=None) == RouteChoice("daemon", "no-shim")
    assert route_for(custom, peer=shim) == RouteChoice("pi", "not-proven")


def test_refusals_are_bounded_and_kept_per_route() -> None:
    refusals = DirectRefusals(size=2)
    for n in range(3):
        refusals.remember(f"p{n}", "openai-completions", "http://h", 403)
    assert len(refusals) == 2
    assert refusals.status("p0", "openai-completions", "http://h") is None
    assert refusals.status("p2", "openai-completions", "http://h") == 403
