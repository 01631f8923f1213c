"""``model.complete`` with a real pi: the daemon sends its Diff call through pi's own provider code (PASS-22).

The daemon runs with ``--via-pi openai-completions``: although it speaks that api itself, it must ask the
shim, over the connection carrying ``compact``, to make each model call with pi-ai's ``complete()``. The
scripted model server tells the two HTTP clients apart: pi's calls come from the OpenAI JS SDK, the daemon's
from httpx. The session's key stays in pi: pi resolves it from its own models.json.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import SCRIPTED_KEY, Sandbox

from .scenario import expect_longhaul, wrap_up

pytestmark = pytest.mark.e2e

SESSION_KEY = SCRIPTED_KEY  # what the sandbox gives the session provider
WAIT_S = 20.0


def compaction_record(sandbox: Sandbox) -> dict[str, Any]:
    """The record log's last ``compaction`` record (written when the pass finishes)."""
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    deadline = time.monotonic() + WAIT_S
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        found = [r for r in map(json.loads, lines) if r.get("event") == "compaction"]
        if found:
            record: dict[str, Any] = found[-1]
            return record
        assert time.monotonic() < deadline, f"no compaction record; log: {lines}"
        time.sleep(0.1)


def test_pass22_the_diff_call_goes_through_pi_when_the_daemon_is_told_to(
    sandbox: Sandbox, daemon_process: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    daemon_process.start(sandbox.daemon_env(), extra_args=("--via-pi", "openai-completions"))
    pi = start_pi()
    pi.prompt("Please look at the export module; it writes one row per line.")
    pi.prompt("Keep the CSV header exactly as it is, please.")
    wrap_up(pi, "via-pi")
    response = pi.compact()
    assert response.get("success") is True, f"RPC compact failed: {response}\n{pi.diagnostics()}"
    found = expect_longhaul(pi.session_file(), 1, span=1)
    assert found.span_record["data"]["closedAs"] == "whole", found.span_record["data"]
    assert pi.extension_errors() == [], pi.diagnostics()

    diff_calls = model_server.requests("other")
    assert diff_calls, f"the Diff never reached the model server\n{daemon_process.log_tail()}"
    agents = {r.user_agent for r in diff_calls}
    assert all(agent and agent.startswith("OpenAI/JS") for agent in agents), f"not all through pi: {agents}"
    assert not any("python-httpx" in str(r.user_agent) for r in model_server.requests()), "the daemon called"
    assert {r.authorization for r in diff_calls} == {f"Bearer {SESSION_KEY}"}  # resolved by pi itself
    assert all(r.body.get("stream") is True for r in diff_calls)  # pi always streams

    record = compaction_record(sandbox)
    assert record["route"]["used"] == "fake/fake-model", record["route"]
    log = daemon_process.log_tail(1_000_000)
    events = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    traces = [e for e in events if e.get("event") == "model_call"]
    assert len(traces) == len(diff_calls), log[-3000:]
    assert {(t["via"], t["api"], t["error"]) for t in traces} == {("pi", "openai-completions", None)}
    assert SESSION_KEY not in log and SESSION_KEY not in json.dumps(record)
