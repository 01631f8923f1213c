"""Every login pi has: with each provider routed to a strict loopback stand-in, real pi with the shim and a
real daemon compact whole, and the stand-in saw no request pi would not have sent.

pi's built-in providers are pointed at loopback by the agent dir's ``models.json`` (a provider-level
``baseUrl`` override) and given credentials as a user would: environment variables, or an OAuth login in
``auth.json`` (a far-future ``expires``, so pi never refreshes it). The stand-ins (:mod:`.strict_checks`,
:mod:`.strict_server`) accept only requests shaped as pi-ai 0.73.1 builds them and answer in each API's real
SSE format. The route table decides which calls the daemon makes itself: those go to the same strict
stand-in, so a direct call that differs from pi's is refused just as the real API would refuse it, and the
test fails. One pi process per provider; GitHub Copilot's three APIs share one, switched with ``set_model``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from . import strict_checks as checks
from .scenario import expect_longhaul, wrap_up
from .strict_server import StandIn, StrictServer

pytestmark = pytest.mark.e2e

ANTHROPIC_KEY = "sk-ant-api03-standin-key-9f2c"
OAUTH_TOKEN = "sk-ant-oat01-standin-subscription-4e1b"
COPILOT_TOKEN = "ghu_standin_copilot_token_7d3a"
CLOUDFLARE_KEY = "cf-standin-key-2b8e"
OPENAI_KEY = "sk-proj-standin-key-5c1d"
GEMINI_KEY = "AIza-standin-key-8e4f"
OPENROUTER_KEY = "sk-or-v1-standin-key-3a9b"
LOCAL_KEY = "local-standin-key-6f0c"
SECRETS = (
    ANTHROPIC_KEY,
    OAUTH_TOKEN,
    COPILOT_TOKEN,
    CLOUDFLARE_KEY,
    OPENAI_KEY,
    GEMINI_KEY,
    OPENROUTER_KEY,
    LOCAL_KEY,
)
WAIT_S = 20.0
FAR_FUTURE_MS = 4_102_444_800_000  # 2100-01-01: pi never refreshes this login


@dataclass(frozen=True)
class Model:
    provider: str
    model_id: str
    stand_in: str
    via: str  # the viaWhy the daemon's calls must carry, as "<via>:<why>"


@dataclass(frozen=True)
class Setup:
    """One pi process: its stand-ins, models.json overrides, credentials, and the models it compacts with."""

    stand_ins: Callable[[], list[StandIn]]
    providers: Callable[[str], dict[str, Any]]
    models: tuple[Model, ...]
    env: dict[str, str] = field(default_factory=dict)
    auth: dict[str, Any] | None = None


def local_provider(origin: str) -> dict[str, Any]:
    model = {
        "id": "local-llm-7b",
        "name": "Local",
        "reasoning": False,
        "input": ["text"],
        "contextWindow": 32000,
    }
    model |= {"maxTokens": 4096, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
    return {
        "baseUrl": f"{origin}/local/v1",
        "api": "openai-completions",
        "apiKey": LOCAL_KEY,
        "models": [model],
    }


def copilot_stand_ins() -> list[StandIn]:
    """Copilot's three APIs share one base URL; each path belongs to one API."""
    return [
        StandIn(
            f"copilot-{name}", api, f"/copilot{mount}", checks.copilot("/copilot", COPILOT_TOKEN, model, api)
        )
        for name, api, model, mount in (
            ("anthropic", "anthropic-messages", "claude-haiku-4.5", "/v1"),
            ("completions", "openai-completions", "gpt-4o", "/chat"),
            ("responses", "openai-responses", "gpt-5-mini", "/responses"),
        )
    ]


SETUPS = {
    "anthropic-key": Setup(
        lambda: [
            StandIn(
                "anthropic",
                "anthropic-messages",
                "/anthropic",
                checks.anthropic_key("/anthropic", ANTHROPIC_KEY, "claude-haiku-4-5"),
            )
        ],
        lambda o: {"anthropic": {"baseUrl": f"{o}/anthropic"}},
        (Model("anthropic", "claude-haiku-4-5", "anthropic", "daemon:anthropic-key"),),
        env={"ANTHROPIC_API_KEY": ANTHROPIC_KEY},
    ),
    "anthropic-oauth": Setup(
        lambda: [
            StandIn(
                "anthropic",
                "anthropic-messages",
                "/anthropic",
                checks.anthropic_oauth("/anthropic", OAUTH_TOKEN, "claude-haiku-4-5"),
            )
        ],
        lambda o: {"anthropic": {"baseUrl": f"{o}/anthropic"}},
        (Model("anthropic", "claude-haiku-4-5", "anthropic", "pi:oauth"),),
        auth={
            "anthropic": {
                "type": "oauth",
                "access": OAUTH_TOKEN,
                "refresh": "standin-refresh",
                "expires": FAR_FUTURE_MS,
            }
        },
    ),
    "github-copilot": Setup(
        lambda: copilot_stand_ins(),
        lambda o: {"github-copilot": {"baseUrl": f"{o}/copilot"}},
        (
            Model("github-copilot", "claude-haiku-4.5", "copilot-anthropic", "pi:copilot"),
            Model("github-copilot", "gpt-4o", "copilot-completions", "pi:copilot"),
            Model("github-copilot", "gpt-5-mini", "copilot-responses", "pi:copilot"),
        ),
        env={"COPILOT_GITHUB_TOKEN": COPILOT_TOKEN},
    ),
    "cloudflare-ai-gateway": Setup(
        lambda: [
            StandIn(
                "cloudflare",
                "anthropic-messages",
                "/cf/v1/acct-7/gw-3/anthropic",
                checks.cloudflare_anthropic(
                    "/cf/v1/acct-7/gw-3/anthropic", CLOUDFLARE_KEY, "claude-3-5-haiku"
                ),
            ),
        ],
        lambda o: {
            "cloudflare-ai-gateway": {
                "baseUrl": o + "/cf/v1/{CLOUDFLARE_ACCOUNT_ID}/{CLOUDFLARE_GATEWAY_ID}/anthropic"
            }
        },
        (Model("cloudflare-ai-gateway", "claude-3-5-haiku", "cloudflare", "pi:cloudflare"),),
        env={
            "CLOUDFLARE_API_KEY": CLOUDFLARE_KEY,
            "CLOUDFLARE_ACCOUNT_ID": "acct-7",
            "CLOUDFLARE_GATEWAY_ID": "gw-3",
        },
    ),
    "openai": Setup(
        lambda: [
            StandIn(
                "openai",
                "openai-responses",
                "/openai/v1",
                checks.openai_key("/openai/v1", OPENAI_KEY, "gpt-5-mini"),
            )
        ],
        lambda o: {"openai": {"baseUrl": f"{o}/openai/v1"}},
        (Model("openai", "gpt-5-mini", "openai", "daemon:openai-key"),),
        env={"OPENAI_API_KEY": OPENAI_KEY},
    ),
    "google": Setup(
        lambda: [
            StandIn(
                "google",
                "google-generative-ai",
                "/google/v1beta",
                checks.google_key("/google/v1beta", GEMINI_KEY, "gemini-2.5-flash"),
            )
        ],
        lambda o: {"google": {"baseUrl": f"{o}/google/v1beta"}},
        (Model("google", "gemini-2.5-flash", "google", "daemon:google-key"),),
        env={"GEMINI_API_KEY": GEMINI_KEY},
    ),
    "openrouter": Setup(
        lambda: [
            StandIn(
                "openrouter",
                "openai-completions",
                "/openrouter/api/v1",
                checks.openrouter("/openrouter/api/v1", OPENROUTER_KEY, "openai/gpt-5-mini"),
                trailing=4000,  # through pi, the daemon still ends the stream at the answer
            )
        ],
        lambda o: {"openrouter": {"baseUrl": f"{o}/openrouter/api/v1"}},
        (Model("openrouter", "openai/gpt-5-mini", "openrouter", "pi:not-proven"),),
        env={"OPENROUTER_API_KEY": OPENROUTER_KEY},
    ),
    "local-openai-compatible": Setup(
        lambda: [
            StandIn(
                "local",
                "openai-completions",
                "/local/v1",
                checks.local_openai("/local/v1", LOCAL_KEY, "local-llm-7b"),
            )
        ],
        lambda o: {"local-llm": local_provider(o)},
        (Model("local-llm", "local-llm-7b", "local", "daemon:custom-openai-compatible"),),
    ),
}


@pytest.fixture
def strict() -> Iterator[StrictServer]:
    with StrictServer() as server:
        yield server


def configure(sandbox: Sandbox, setup: Setup, origin: str) -> None:
    path = sandbox.agent_dir / "models.json"
    models = json.loads(path.read_text())
    models["providers"].update(setup.providers(origin))
    path.write_text(json.dumps(models, indent=2))
    if setup.auth is not None:
        auth = sandbox.agent_dir / "auth.json"
        auth.write_text(json.dumps(setup.auth))
        os.chmod(auth, 0o600)
    settings_path = sandbox.agent_dir / "settings.json"
    settings = json.loads(settings_path.read_text())
    first = setup.models[0]
    settings.update(defaultProvider=first.provider, defaultModel=first.model_id)
    settings_path.write_text(json.dumps(settings, indent=2))
    sandbox.extra_pi_env.update(setup.env)


def compaction_records(sandbox: Sandbox, count: int) -> list[dict[str, Any]]:
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    deadline = time.monotonic() + WAIT_S
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        found = [r for r in map(json.loads, lines) if r.get("event") == "compaction"]
        if len(found) >= count:
            return found
        assert time.monotonic() < deadline, f"{len(found)} compaction records, want {count}: {lines[-3:]}"
        time.sleep(0.1)


@pytest.mark.parametrize("name", list(SETUPS))
def test_pass22_every_login_compacts_whole_and_the_provider_sees_only_what_pi_would_send(
    name: str, sandbox: Sandbox, daemon: Daemon, strict: StrictServer, start_pi: Callable[[], PiRpc]
) -> None:
    setup = SETUPS[name]
    for stand_in in setup.stand_ins():
        strict.add(stand_in)
    configure(sandbox, setup, strict.origin)
    pi = start_pi()
    for n, model in enumerate(setup.models, start=1):
        if n > 1:
            switched = pi.request(
                {"type": "set_model", "provider": model.provider, "modelId": model.model_id}
            )
            assert switched.get("success") is True, f"set_model failed: {switched}"
        pi.prompt(f"[{model.model_id}] Please look at the export module; it writes one row per line.")
        pi.prompt("Keep the CSV header exactly as it is, please.")
        wrap_up(pi, f"{name}-{n}")
        response = pi.compact()
        assert response.get("success") is True, f"{model}: RPC compact failed: {response}\n{pi.diagnostics()}"
        found = expect_longhaul(pi.session_file(), n, span=n)
        data = found.span_record["data"]
        assert data["closedAs"] == "whole", f"{model}: {data}\n{daemon.log_tail()}"
        assert data["narrative"], f"{model}: the span closed without a narrative"

        record = compaction_records(sandbox, n)[-1]
        assert record["route"]["used"] == f"{model.provider}/{model.model_id}", record["route"]
        assert set(record["narrative"]["viaWhy"]) == {model.via}, record["narrative"]
        asked = strict.requests(model.stand_in, "other")
        assert asked, f"{model}: the daemon's calls never reached the stand-in\n{daemon.log_tail()}"
        assert all(s.structured for s in asked), f"{model}: a call went without the answer schema"
        stand_in = next(s for s in strict.stand_ins if s.name == model.stand_in)
        if stand_in.trailing:
            assert record["narrative"]["stoppedEarly"] >= 1, record["narrative"]
        assert strict.requests(model.stand_in, "agent"), f"{model}: pi's own turns went elsewhere"

    refused = strict.refused()
    assert refused == [], "a stand-in refused: " + "; ".join(
        f"{s.stand_in} {s.kind}: {s.refusal.reason}" for s in refused if s.refusal
    )
    assert pi.extension_errors() == [], pi.diagnostics()
    log = daemon.log_tail(2_000_000)
    assert not any(secret in log for secret in SECRETS), "a credential reached the daemon's log"
    records = (sandbox.agent_dir / "logs" / "compaction-state.jsonl").read_text()
    assert not any(secret in records for secret in SECRETS), "a credential reached the record log"
    routes = {r["route"]: r for r in daemon.status()["routes"]}
    for model in setup.models:
        row = routes[f"{model.provider}/{model.model_id}"]
        assert f"{row['via']}:{row['viaWhy']}" == model.via, row


def admits_only_pi(headers: Any, body: Any) -> checks.Refusal | None:
    """A gateway in front of a local server that admits only pi's own client (its SDK's user agent)."""
    if str(headers.get("user-agent", "")).startswith("OpenAI/JS"):
        return None
    error = {"message": "Unauthorized client", "type": "invalid_request_error", "code": "unauthorized"}
    return checks.Refusal(401, {"error": error}, "not pi's client")


def test_pass22_a_direct_call_refused_with_401_finishes_through_pi_in_the_same_pass(
    sandbox: Sandbox, daemon: Daemon, strict: StrictServer, start_pi: Callable[[], PiRpc]
) -> None:
    check = checks.local_openai("/local/v1", LOCAL_KEY, "local-llm-7b")
    strict.add(StandIn("local", "openai-completions", "/local/v1", check, refuse=admits_only_pi))
    setup = SETUPS["local-openai-compatible"]
    configure(sandbox, setup, strict.origin)
    pi = start_pi()
    for n in (1, 2):
        pi.prompt(f"Round {n}: please look at the export module.")
        wrap_up(pi, f"refused-{n}")
        response = pi.compact()
        assert response.get("success") is True, f"RPC compact failed: {response}\n{pi.diagnostics()}"
        found = expect_longhaul(pi.session_file(), n, span=n)
        assert found.span_record["data"]["closedAs"] == "whole", found.span_record["data"]
    first, second = compaction_records(sandbox, 2)
    assert first["narrative"]["via"]["daemon"] == 1, first["narrative"]
    assert first["narrative"]["viaWhy"].keys() == {"daemon:custom-openai-compatible", "pi:refused-401"}
    assert second["narrative"]["viaWhy"].keys() == {"pi:refused-401"}  # the route stays through pi
    direct = [s for s in strict.requests("local", "other") if s.refusal is not None]
    assert len(direct) == 1 and direct[0].refusal is not None and direct[0].refusal.status == 401
    assert all(s.refusal is None for s in strict.requests("local", "agent"))
    row = {r["route"]: r for r in daemon.status()["routes"]}["local-llm/local-llm-7b"]
    assert (row["via"], row["viaWhy"]) == ("pi", "refused-401")
    assert LOCAL_KEY not in daemon.log_tail(2_000_000)
