"""The summarizer route with a real pi: longhaul.json names a model, pi resolves it, the Diff calls it.

A second model server stands for a cheaper summarizer model with its own API key in pi's models.json. With
``summarizer`` set to it, the daemon's Diff call must go there with that key and never to the session model;
with an unknown spec, it must go to the session model, and the ``compaction`` record says why (CONFIG-8,
DIFF-20, FAIL-9, LOG-17, PASS-22). ``status`` then shows the route that was called.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import SCRIPTED_KEY, Sandbox

from .scenario import expect_longhaul, wrap_up

pytestmark = pytest.mark.e2e

SUMMARIZER_PROVIDER = "cheap"
SUMMARIZER_ID = "small-model"
SUMMARIZER_SPEC = f"{SUMMARIZER_PROVIDER}/{SUMMARIZER_ID}"
SUMMARIZER_KEY = "e2e-cheap-key-3b9f"
SESSION_KEY = SCRIPTED_KEY  # what the sandbox gives the session provider
WAIT_S = 20.0


@pytest.fixture
def summarizer_server() -> Iterator[ModelServer]:
    with ModelServer(model_id=SUMMARIZER_ID) as server:
        yield server


def add_summarizer_model(sandbox: Sandbox, base_url: str) -> None:
    """A second provider in pi's models.json, with its own base URL and key (read by pi at start)."""
    path = sandbox.agent_dir / "models.json"
    models = json.loads(path.read_text())
    models["providers"][SUMMARIZER_PROVIDER] = {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": SUMMARIZER_KEY,
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [
            {
                "id": SUMMARIZER_ID,
                "name": "E2E Summarizer Model",
                "reasoning": False,
                "input": ["text"],
                "contextWindow": 32000,
                "maxTokens": 2048,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            }
        ],
    }
    path.write_text(json.dumps(models, indent=2))


def configure_summarizer(sandbox: Sandbox, spec: str) -> None:
    (sandbox.agent_dir / "longhaul.json").write_text(json.dumps({"summarizer": spec}))


def compaction_record(sandbox: Sandbox) -> dict[str, Any]:
    """The record log's ``compaction`` record for this pass (written when the pass finishes)."""
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    deadline = time.monotonic() + WAIT_S
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        found: list[dict[str, Any]] = [r for r in map(json.loads, lines) if r.get("event") == "compaction"]
        if found:
            return found[-1]
        assert time.monotonic() < deadline, f"no compaction record; log: {lines}"
        time.sleep(0.1)


def compact_one_span(pi: PiRpc) -> None:
    pi.prompt("Please look at the export module; it writes one row per line.")
    pi.prompt("Keep the CSV header exactly as it is, please.")
    wrap_up(pi, "routing")
    response = pi.compact()
    assert response.get("success") is True, f"RPC compact failed: {response}\n{pi.diagnostics()}"
    expect_longhaul(pi.session_file(), 1, span=1)


def test_config8_the_diff_calls_the_configured_summarizer_with_its_own_key(
    sandbox: Sandbox,
    daemon: Daemon,
    model_server: ModelServer,
    summarizer_server: ModelServer,
    start_pi: Callable[[], PiRpc],
) -> None:
    add_summarizer_model(sandbox, summarizer_server.base_url)
    configure_summarizer(sandbox, SUMMARIZER_SPEC)
    pi = start_pi()
    compact_one_span(pi)

    routed = summarizer_server.requests("other")
    assert routed, f"the Diff never called the summarizer model\n{daemon.log_tail()}"
    assert {r.authorization for r in routed} == {f"Bearer {SUMMARIZER_KEY}"}
    assert {r.body.get("model") for r in routed} == {SUMMARIZER_ID}
    assert model_server.requests("other") == [], "a Diff call went to the session model"
    assert summarizer_server.requests("agent") == [], "pi's own turns must stay on the session model"

    record = compaction_record(sandbox)
    assert record["route"] == {"configured": SUMMARIZER_SPEC, "used": SUMMARIZER_SPEC, "why": None}
    assert SUMMARIZER_KEY not in json.dumps(record) and SESSION_KEY not in json.dumps(record)

    routes = {r["route"]: r for r in daemon.status()["routes"]}
    assert routes[SUMMARIZER_SPEC]["calls"] >= len(routed)
    assert routes[SUMMARIZER_SPEC]["lastSuccess"] is not None
    assert "fake/fake-model" not in routes
    assert SUMMARIZER_KEY not in daemon.log_tail(1_000_000)


def test_fail9_an_unknown_summarizer_falls_back_to_the_session_model_and_says_why(
    sandbox: Sandbox,
    daemon: Daemon,
    model_server: ModelServer,
    summarizer_server: ModelServer,
    start_pi: Callable[[], PiRpc],
) -> None:
    add_summarizer_model(sandbox, summarizer_server.base_url)
    configure_summarizer(sandbox, "nowhere/missing-model")
    pi = start_pi()
    compact_one_span(pi)

    fallback = model_server.requests("other")
    assert fallback, f"the Diff never called the session model\n{daemon.log_tail()}"
    assert {r.authorization for r in fallback} == {f"Bearer {SESSION_KEY}"}
    assert summarizer_server.requests() == []

    record = compaction_record(sandbox)
    assert record["route"] == {
        "configured": "nowhere/missing-model",
        "used": "fake/fake-model",
        "why": "unknown-model",
    }
    routes = {r["route"] for r in daemon.status()["routes"]}
    assert routes == {"fake/fake-model"}
