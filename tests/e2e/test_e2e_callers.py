"""The harness's one rule for who sent a model request, checked against what real pi and a real daemon send.

Each request is also told apart by evidence the rule does not read: the daemon's own calls come from its
httpx client, or (made by pi for it) ask for structured output, which pi's agent and summarizer never do;
pi's summarizer sends its ``<conversation>`` prompt with no tools; the rest is pi's agent loop. The rule
must agree on every request, including turns mode's calls, which offer the ``show`` tool, and an agent with
a system prompt of its own and none of pi's built-in tools (a rule reading tools or the wording of pi's own
system prompt misreads both).
Nothing is scripted for the daemon: the harness's default answers close both modes' spans whole.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer, RecordedRequest
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import write_longhaul_settings
from .diff_steps import close_span
from .scenario import agent_bash, wrap_up

pytestmark = pytest.mark.e2e

OWN_PROMPT = "You are a terse release helper for this repository."


def _tools(request: RecordedRequest) -> list[str]:
    return [str((t.get("function") or {}).get("name")) for t in request.body.get("tools") or []]


def _who(request: RecordedRequest) -> str:
    """Who sent it, by evidence the rule does not read."""
    if str(request.user_agent).startswith("python-httpx") or "response_format" in request.body:
        return "other"
    users = request.texts("user")
    if not _tools(request) and users and users[0].startswith("<conversation>\n"):
        return "pi-summary"
    return "agent"


def _check(server: ModelServer) -> list[RecordedRequest]:
    requests = server.requests()
    assert [r.kind for r in requests] == [_who(r) for r in requests], [
        (r.kind, _who(r), _tools(r), r.user_agent) for r in requests
    ]
    return requests


@pytest.mark.parametrize("via", ["direct", "through pi"])
def test_turns_mode_calls_are_the_daemons_and_an_agent_of_its_own_is_pis(
    via: str, sandbox: Sandbox, daemon_process: Daemon, model_server: ModelServer
) -> None:
    extra = ("--via-pi", "openai-completions") if via == "through pi" else ()
    daemon_process.start(sandbox.daemon_env(), extra_args=extra)
    write_longhaul_settings(sandbox, narrativeMode="turns")
    with PiRpc(sandbox, extra_args=("--system-prompt", OWN_PROMPT, "--no-tools")) as pi:
        model_server.enqueue(text("Noted."))
        pi.prompt("Never tag a release on a Friday.")
        found = close_span(pi, 1)
        assert found.span_record["data"]["closedAs"] == "whole", found.span_record["data"]
        assert pi.extension_errors() == [], pi.diagnostics()
    requests = _check(model_server)
    agents = [r for r in requests if r.kind == "agent"]
    assert agents and all(OWN_PROMPT in r.texts("system")[0] for r in agents)
    assert all("bash" not in _tools(r) and "read" not in _tools(r) for r in agents)
    assert agents[0].reply.content == "Noted."  # the queued reply went to pi's agent, not to a turn
    turns = [r for r in requests if r.kind == "other"]
    assert len(turns) >= 5 and all(_tools(r) == ["show"] for r in turns)


def test_pis_summarizer_and_pis_agent_with_its_tools(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["PI_COMPACTOR"] = "pi"
    pi = start_pi()
    agent_bash(pi, model_server, "echo alpha")
    wrap_up(pi, "round 1")
    assert pi.compact().get("success") is True, pi.diagnostics()
    requests = _check(model_server)
    assert {r.kind for r in requests} == {"agent", "pi-summary"}
    assert all({"bash", "read"} <= set(_tools(r)) for r in requests if r.kind == "agent")
