"""Turns mode through a real pi, the shim and a real daemon, with the scripted model (TURNS-1..17, issue 14).

``longhaul.json`` sets ``"narrativeMode": "turns"``; the daemon's conversation goes to the e2e model server,
which answers each turn by the section it asks for (``turns_script.py``), and first reads a message with
``show`` through the real Chat Completions tool-call format. The checks are what a user sees: the session
file pi wrote (compaction, span record, summary) and the record log, plus the requests the model saw.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.callers import content_text
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import standing_rules, write_longhaul_settings
from .diff_steps import close_span, wait_log_record
from .scenario import agent_bash, expect_longhaul, wrap_up
from .session_log import compactions, read_entries
from .turns_script import TurnsScript

pytestmark = pytest.mark.e2e

RULE = "Never add new dependencies without asking me first."


def write_file(pi: PiRpc, server: ModelServer, path: str) -> None:
    """A turn in which the agent writes ``path`` with pi's own ``write`` tool (pi's fileOps then name it)."""
    server.enqueue(tool_call("write", path=path, content="print('export')\n"), text(f"Wrote {path}."))
    pi.prompt(f"Please create {path}.")


def tool_messages(script: TurnsScript) -> list[str]:
    return [
        content_text(m.get("content"))
        for call in script.calls
        for m in call.body.get("messages", [])
        if m.get("role") == "tool"
    ]


def test_turns_mode_through_real_pi_five_sections_show_and_the_rule_verbatim(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    write_longhaul_settings(sandbox, narrativeMode="turns")
    script = TurnsScript(rules=("Never add new dependencies",), shows=("u1",)).install(model_server)
    pi = start_pi()
    pi.prompt(RULE)
    write_file(pi, model_server, "export.py")
    agent_bash(pi, model_server, "python export.py")
    found = close_span(pi, 1)

    assert found.span_record["data"]["closedAs"] == "whole", found.span_record["data"]
    rules = standing_rules(found.state)
    assert [(r["message"], r["words"]) for r in rules.values()] == [("u1", RULE)]
    assert f'"{RULE}" (u1)' in found.summary
    assert found.state["workLog"][-1]["text"] == "E2E turns narrative. Touched export.py."
    assert found.state["now"] == "E2E turns now: carry on with the exporter."
    assert script.sections() == ["narrative", "objective", "labels", "decisions", "now"]  # TURNS-2
    shown = tool_messages(script)
    assert shown and shown[0].startswith("u1, a user message") and RULE in shown[0]  # TURNS-7, on the wire
    first = script.calls[0].body
    assert [t["function"]["name"] for t in first["tools"]] == ["show"]
    assert first["response_format"]["json_schema"]["name"] == "narrative_section"  # structured per turn
    record = wait_log_record(sandbox, "compaction")
    narrative = record["narrative"]
    assert (narrative["kind"], narrative["closedAs"]) == ("turns", "whole")  # TURNS-3
    assert narrative["calls"] >= 5 and narrative["shows"] == 1
    assert found.line["data"]["calls"] == narrative["calls"]
    assert pi.extension_errors() == [], pi.diagnostics()


def test_turns_mode_through_pis_model_complete_carries_the_show_tool(
    sandbox: Sandbox, daemon_process: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """PASS-22 and TURNS-7 together: every turn, the show call and its result go through pi-ai."""
    daemon_process.start(sandbox.daemon_env(), extra_args=("--via-pi", "openai-completions"))
    write_longhaul_settings(sandbox, narrativeMode="turns")
    script = TurnsScript(rules=("Never add new dependencies",), shows=("u1",)).install(model_server)
    pi = start_pi()
    pi.prompt(RULE)
    found = close_span(pi, 1)
    assert found.span_record["data"]["closedAs"] == "whole", found.span_record["data"]
    assert [r["message"] for r in standing_rules(found.state).values()] == ["u1"]
    agents = {r.user_agent for r in model_server.requests("other")}
    assert agents and all(str(agent).startswith("OpenAI/JS") for agent in agents), agents  # pi made them
    assert any(RULE in shown for shown in tool_messages(script))  # the result went back through pi-ai
    # each turn's section schema rides in the call's payload, merged into pi-ai's request (onPayload)
    assert all(call.body["response_format"]["type"] == "json_schema" for call in script.calls)
    assert wait_log_record(sandbox, "compaction")["narrative"]["kind"] == "turns"


def test_turns15_a_slow_turn_is_abandoned_and_the_span_is_carried_by_the_rules(
    sandbox: Sandbox, daemon_process: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """A pass budget of 10 s gives each turn 4 s; the labels turn takes 30 s, so it is abandoned."""
    daemon_process.start(sandbox.daemon_env(), extra_args=("--pass-budget", "10"))
    write_longhaul_settings(sandbox, narrativeMode="turns")
    script = TurnsScript(rules=("Never add new dependencies",), hold={"labels": 30.0}).install(model_server)
    pi = start_pi()
    pi.prompt(RULE)
    found = close_span(pi, 1)
    data = found.span_record["data"]
    assert (data["closedAs"], data["reason"]) == ("chunk-missing", "labels-turn-timeout"), data
    assert found.state["carried"] == ["u1"] and standing_rules(found.state) == {}
    assert "User messages not yet labeled" in found.summary and RULE in found.summary  # carried words shown
    assert found.state["now"] == "E2E turns now: carry on with the exporter."  # later sections went on
    assert "labels" in script.sections() and script.sections()[-1] == "now"


def test_turns17_taking_over_from_pis_compaction_in_turns_mode(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """TAKEOVER-27: picked earlier messages take no label; code records each, the older one stays too."""
    sandbox.extra_pi_env["PI_COMPACTOR"] = "pi"
    first = start_pi()
    first.prompt("From now on indent with tabs.")
    first.prompt("From now on indent with two spaces instead of tabs.")
    wrap_up(first, "pi compacts")
    assert first.compact().get("success") is True, first.diagnostics()
    session_file = first.session_file()
    first.close()
    del sandbox.extra_pi_env["PI_COMPACTOR"]
    write_longhaul_settings(sandbox, narrativeMode="turns")
    script = TurnsScript().install(model_server)
    second = PiRpc(sandbox, extra_args=("-c",))
    try:
        second.prompt("Now add the header row.")
        wrap_up(second, "longhaul takes over")
        assert second.compact().get("success") is True, second.diagnostics()
        found = expect_longhaul(session_file, 2, span=1)
    finally:
        second.close()
    assert len(compactions(read_entries(session_file))) == 2
    rules = standing_rules(found.state)
    assert sorted(r["message"] for r in rules.values()) == ["u1", "u2"]  # both in force after the takeover
    labels_ask = next(c for c in script.calls if c.section == "labels" and c.kind == "ask")
    asked = content_text(labels_ask.body["messages"][-1].get("content"))
    assert "take no label: code records them as rules" in asked and "PI-OWN-SUMMARY" in content_text(
        script.calls[0].body["messages"][1].get("content")
    )
