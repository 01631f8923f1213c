"""Whole turns-mode passes against a scripted model server in each of the four wire formats (TURNS-1..8).

The server speaks each provider's real streaming format, tool calls included; nothing inside the daemon is
faked. Each test runs the real pass and reads what pi would store (the state, the span record) and what the
record log gets, plus every request the daemon sent: the Digest in the first, the ``show`` results in the
next, the sections in order, each turn's structured-output form.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from models.scripted_http import ScriptedServer, scripted_server
from models.tool_wires import Call, tool_reply
from models.wires import OPENAI_COMPLETIONS, WIRES, Wire

from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.protocol import CompactParams, FileOps

from .model_steps import answer_reply, state_of, with_model, with_settings
from .pi_branch import Session
from .turns_steps import (
    GOOD,
    asked_text,
    good_script,
    on_wire,
    rule_then_failing_test,
    section_reply,
    show_reply,
    turns_mode,
)

pytestmark = pytest.mark.anyio
WIRE_IDS = [w.api for w in WIRES]
LABELS: dict[str, str | tuple[str, str]] = {"u1": "rule", "u2": "not a rule"}


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return rule_then_failing_test(tmp_path)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def params_for(session: Session, server: ScriptedServer, wire: Wire = OPENAI_COMPLETIONS) -> CompactParams:
    base = session.params(len(session.entries) - 1, ops=FileOps(edited=["export.py"]))
    return turns_mode(on_wire(base, server, wire))


def structured_form(wire: Wire, body: dict[str, Any], section: str) -> None:
    """Issue 14 point 6: the turn's schema goes in the wire's structured-output form, beside ``show``."""
    name = f"{section}_section"
    if wire.api == "openai-completions":
        assert body["response_format"]["json_schema"]["name"] == name
        assert [t["function"]["name"] for t in body["tools"]] == ["show"]
    elif wire.api == "openai-responses":
        assert body["text"]["format"]["name"] == name and [t["name"] for t in body["tools"]] == ["show"]
    elif wire.api == "anthropic-messages":
        assert [t["name"] for t in body["tools"]] == [name, "show"]
        assert body["tool_choice"] == {"type": "any"}
    else:
        [tools] = body["tools"]
        assert [d["name"] for d in tools["functionDeclarations"]] == [name, "show"]
        assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


@pytest.mark.parametrize("wire", WIRES, ids=WIRE_IDS)
async def test_turns2_turns3_turns5_turns7_one_conversation_five_sections_over_each_wire(
    session: Session, server: ScriptedServer, wire: Wire
) -> None:
    server.script += [show_reply(wire, "u1", "C2"), *good_script(wire, LABELS)]
    result = await run_pass(params_for(session, server, wire), pass_id="p1")

    state = state_of(result)
    assert [(r.id, r.words, r.message) for r in state.rules] == [
        ("R1", "Never add new dependencies without asking me first.", "u1")
    ]
    assert state.workLog[-1].closedAs == "whole" and state.workLog[-1].text == GOOD["narrative"]["narrative"]
    assert state.objective == "Ship the CSV export." and state.now == GOOD["now"]["now"]
    assert [d.text for d in state.decisions] == ["Write rows with the csv module."]
    assert result.diagnostics is not None
    narrative = result.diagnostics.narrative
    assert (narrative["kind"], narrative["closedAs"]) == ("turns", "whole")  # TURNS-3
    assert narrative["calls"] == 6 >= 5 and narrative["shows"] == 2
    assert narrative["callKinds"] == {
        "narrative": 1,
        "narrative-after-show": 1,
        "objective": 1,
        "labels": 1,
        "decisions": 1,
        "now": 1,
    }
    assert result.after is not None and result.after.line["calls"] == 6

    first, after_show, *rest = server.requests
    digest = asked_text(first)  # TURNS-5: the first turn carries the Digest
    for shown in (
        "The Digest of the span",
        "Never add new dependencies without asking me first.",
        "Fix the failing test.",
        "- C2 exit 1: pytest -q",
        "Modified in this span: export.py",
        "The workspace (World)",
        '[C2 E1 call_2] bash(command="pytest -q") -> error: 1 failed',
    ):
        assert shown in digest, shown
    results = asked_text(after_show)  # TURNS-7: the show results came back on the wire
    assert "u1, a user message (51 characters):" in results and "C2, a command (exit 1" in results
    for number, (request, section) in enumerate(
        zip([first, *rest], ("narrative", "objective", "labels", "decisions", "now"), strict=True), start=1
    ):
        assert f"Turn {number} of 5, {section}:" in asked_text(request)  # TURNS-2: in this order
        structured_form(wire, request.body, section)
    assert "Wrote the CSV export in export.py" in json.dumps(rest[-1].body)  # one continuing conversation


async def test_turns1_without_the_setting_the_single_call_diff_runs(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))
    base = with_model(session.params(len(session.entries) - 1), server)
    result = await run_pass(with_settings(base, {"narrativeMode": "diff"}), pass_id="p1")
    assert len(server.requests) == 1 and "tools" not in server.requests[0].body
    assert result.diagnostics is not None and result.diagnostics.narrative["kind"] == "whole"
    assert state_of(result).rules[0].message == "u1"


async def test_value7_ours_turns_mode_keeps_a_value_the_user_looked_up_beside_the_learned_ones(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """Turns mode names no values; a short `!command` the user ran to look something up still gives one."""
    s = Session(tmp_path)
    s.user("Never add new dependencies without asking me first.")
    s.user_bash("grep -n timeout_ms settings.ini", output="7:timeout_ms = 2750\n")
    s.user("Fix the failing test.")
    s.bash("pytest -q", "1 failed", code=1)
    s.user("Keep going.")
    server.script += good_script(OPENAI_COMPLETIONS, LABELS)
    result = await run_pass(params_for(s, server), pass_id="p1")
    state = state_of(result)
    assert state.workLog[-1].closedAs == "whole"
    assert [(v.what, v.value, v.turn) for v in state.values] == [
        ("grep -n timeout_ms settings.ini", "7:timeout_ms = 2750", "u1")
    ]


async def test_turns8_a_fifth_show_in_one_turn_is_an_error_result_and_the_model_is_asked_to_answer(
    session: Session, server: ScriptedServer
) -> None:
    wire = OPENAI_COMPLETIONS
    calls = [Call(f"call_s{n}", "show", {"ref": ref}) for n, ref in enumerate(["u1", "u2", "C1", "E1", "u1"])]
    server.script += [tool_reply(wire, calls), *good_script(wire, LABELS)]
    result = await run_pass(params_for(session, server), pass_id="p1")
    assert state_of(result).workLog[-1].closedAs == "whole"
    second = server.requests[1]
    tool_results = [m for m in second.body["messages"] if m["role"] == "tool"]
    assert len(tool_results) == 5 and "limited to 4 calls a turn" in tool_results[-1]["content"]
    assert all("limited" not in m["content"] for m in tool_results[:4])
    assert second.body["tool_choice"] == "none"  # the cap is used up: the tool stays declared, answer now
    assert "tool_choice" not in server.requests[2].body  # the next turn has its own four calls
    assert result.diagnostics is not None and result.diagnostics.narrative["shows"] == 5


async def test_turns7_an_unknown_ref_is_an_error_result_and_the_turn_goes_on(
    session: Session, server: ScriptedServer
) -> None:
    wire = OPENAI_COMPLETIONS
    server.script += [show_reply(wire, "u99"), *good_script(wire, LABELS)]
    result = await run_pass(params_for(session, server), pass_id="p1")
    [unknown] = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "unknown ref 'u99'" in unknown["content"]
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["sections"]["narrative"] == "accepted"


async def test_turns9_a_reply_in_prose_gets_a_repair_turn_listing_the_problem(
    session: Session, server: ScriptedServer
) -> None:
    wire = OPENAI_COMPLETIONS
    server.script += [section_reply(wire, "narrative", "The span went well."), *good_script(wire, LABELS)]
    result = await run_pass(params_for(session, server), pass_id="p1")
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["callKinds"]["narrative-repair"] == 1
    assert result.diagnostics.narrative["sections"]["narrative"] == "repaired"
    repair = asked_text(server.requests[1])
    assert "Your narrative answer fails these checks" in repair and "holds no JSON object" in repair
