"""Turns mode at its limits: budgets (TURNS-15, TURNS-16), taking over (TURNS-17), routes that cannot run it.

Against a scripted server in the real Chat Completions format, or, for a model only pi can call, a scripted
shim answering ``model.complete`` (the edge, as in tests/models/test_via_pi.py). A turn that hangs is a
server holding its reply until the daemon leaves; the tests assert what the pass did, never how long it took.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from models.scripted_http import Reply, ScriptedServer, json_reply, scripted_server
from models.wires import OPENAI_COMPLETIONS

from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.models.via_pi import NoteSink
from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.passes.turns.closing import NO_NARRATIVE
from longhaul_daemon.protocol import CompactParams, CompactResult, FileOps, ModelFacts

from .model_steps import answer_reply, state_of
from .pi_branch import Session
from .turns_steps import (
    GOOD,
    asked_text,
    good_script,
    labels_answer,
    on_wire,
    rule_then_failing_test,
    section_reply,
    turns_mode,
)

pytestmark = pytest.mark.anyio
WIRE = OPENAI_COMPLETIONS
HANG = Reply(hang_before_headers=True)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return rule_then_failing_test(tmp_path)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def params_for(session: Session, server: ScriptedServer, **facts: Any) -> CompactParams:
    base = session.params(len(session.entries) - 1, ops=FileOps(edited=["export.py"]))
    return turns_mode(on_wire(base, server, WIRE, **facts))


async def test_turns15_when_the_pass_budget_runs_out_mid_conversation_unreached_sections_carry_over(
    session: Session, server: ScriptedServer
) -> None:
    server.script += good_script(WIRE, {"u1": "rule", "u2": "not a rule"})
    first = await run_pass(params_for(session, server), pass_id="p1")
    session.store(first, len(session.entries) - 1)
    session.user("Now the report page.")
    session.user("Carry on.")
    new_objective = {"objective": "Ship the export and the report page."}
    server.script += [
        section_reply(WIRE, "narrative", GOOD["narrative"]),
        section_reply(WIRE, "objective", new_objective),
    ]
    server.script.append(HANG)  # the labels turn never answers; the pass budget ends during it
    with anyio.fail_after(30):
        second = await run_pass(params_for(session, server), pass_id="p2", pass_budget_s=4, turn_budget_s=100)
    state = state_of(second)
    assert (state.workLog[-1].closedAs, state.workLog[-1].reason) == (
        "chunk-missing",
        "labels-budget-exhausted",
    )
    assert state.objective == new_objective["objective"]  # reached: updated
    assert state.now == GOOD["now"]["now"]  # not reached: carried from the previous state
    assert [r.message for r in state.rules] == ["u1"] and state.carried == ["u3", "u4"]  # FAIL-12, TURNS-16
    assert second.diagnostics is not None
    assert second.diagnostics.narrative["sections"] == {
        "narrative": "accepted",
        "objective": "accepted",
        "labels": "unfinished:budget-exhausted",
        "decisions": "unreached:budget-exhausted",
        "now": "unreached:budget-exhausted",
    }


async def test_turns15_a_turn_over_its_budget_is_abandoned_and_the_conversation_goes_on(
    session: Session, server: ScriptedServer
) -> None:
    server.script += [HANG, *good_script(WIRE, {"u1": "rule", "u2": "not a rule"})[1:]]
    with anyio.fail_after(30):
        result = await run_pass(params_for(session, server), pass_id="p1", turn_budget_s=1)
    assert server.disconnected.is_set()  # the daemon left the hanging call
    state = state_of(result)
    assert state.workLog[-1].closedAs == "whole" and state.workLog[-1].text == NO_NARRATIVE
    assert state.rules[0].message == "u1" and state.now == GOOD["now"]["now"]
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["sections"]["narrative"] == "unfinished:turn-timeout"
    # the next turn's ask joined the unanswered first turn, so the conversation stays well formed
    assert "Turn 2 of 5, objective" in asked_text(server.requests[1]) and "The Digest" in asked_text(
        server.requests[1]
    )


async def test_turns17_takeover27_takeover28_taking_over_in_turns_mode_with_its_two_gaps(
    tmp_path: Path, server: ScriptedServer
) -> None:
    s = Session(tmp_path)
    s.user("From now on indent with tabs.")
    s.user("From now on indent with two spaces instead of tabs.")
    s.user("tests go under tests/")
    kept = len(s.entries)
    s.user("Keep going with the export.")
    s.foreign_compaction(kept, "## Goal\nShip it.\n## Notes\nThe dev server listens on port 5173.")
    s.user("Now write the docs.")
    script = good_script(WIRE, {})
    server.script += [
        *script[:2],
        section_reply(WIRE, "labels", labels_answer({"u4": "not a rule"})),  # u3 left out: a repair turn
        section_reply(WIRE, "labels", labels_answer({"u3": "rule", "u4": "not a rule"})),
        *script[3:],
    ]
    result = await run_pass(turns_mode(on_wire(s.params(len(s.entries) - 1), server, WIRE)), pass_id="p1")
    digest = asked_text(server.requests[0])
    assert "The dev server listens on port 5173." in digest and "picked: code records it as a rule" in digest
    labels_turn = asked_text(server.requests[2])
    assert "one label for each of these messages: u3, u4." in labels_turn  # picked ones take no label
    assert "u3 has no label" in asked_text(server.requests[3])  # TAKEOVER-18: it cost a repair turn
    state = state_of(result)
    assert [(r.message, r.lifted) for r in state.rules] == [("u1", False), ("u2", False), ("u3", False)]
    assert state.values == [] and "5173" not in json.dumps(state.model_dump())  # TAKEOVER-28
    assert (
        result.diagnostics is not None and "labels-question" not in result.diagnostics.narrative["callKinds"]
    )


async def test_point7_a_route_that_refuses_tool_calls_gets_the_diff_with_a_notice_and_is_remembered(
    session: Session, server: ScriptedServer
) -> None:
    refusal = json_reply(
        {"error": {"message": "tools are not supported", "type": "invalid_request_error"}}, status=400
    )
    diff = answer_reply({"u1": "rule", "u2": "not a rule"})
    server.script += [refusal, refusal, section_reply(WIRE, "narrative", GOOD["narrative"]), diff]
    access = ModelAccess()
    first = await run_pass(params_for(session, server), pass_id="p1", access=access)
    bodies = [r.body for r in server.requests]
    assert ["tools" in b for b in bodies] == [True, True, False, False]  # the third asks without the tool
    assert bodies[-1]["response_format"]["json_schema"]["name"] == "diff_answer"  # then the Diff ran
    assert state_of(first).workLog[-1].closedAs == "whole" and state_of(first).rules[0].message == "u1"
    assert first.notice is not None and "turns mode could not run for span 1" in first.notice
    assert "refuses tool calls" in first.notice
    assert first.diagnostics is not None
    narrative = first.diagnostics.narrative
    assert (narrative["narrativeMode"], narrative["turnsUnavailable"]) == (
        "turns-unavailable",
        "tools-refused",
    )

    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))
    again = await run_pass(params_for(session, server), pass_id="p2", access=access)
    assert (
        len(server.requests) == 5 and "tools" not in server.requests[-1].body
    )  # known: straight to the Diff
    assert again.notice is not None and "refuses tool calls" in again.notice


async def test_point7_a_span_whose_digest_cannot_fit_the_window_gets_the_diff_with_a_notice(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))
    result = await run_pass(params_for(session, server, contextWindow=2500, maxTokens=512), pass_id="p1")
    assert all("tools" not in r.body for r in server.requests)
    assert result.notice is not None and "does not fit the model's context window" in result.notice
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["turnsUnavailable"] == "digest-too-large"


class Shim:
    """``model.complete`` through a scripted shim: answers each section by the turn it is asked for."""

    def __init__(self, *, carries_tools: bool) -> None:
        self.carries_tools = carries_tools
        self.params: list[dict[str, Any]] = []

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        on_note: NoteSink | None = None,
        stop: anyio.Event | None = None,
    ) -> Any:
        self.params.append(params)
        last = params["messages"][-1]
        asked = last["text"]
        reply: dict[str, Any] = {"text": "", "stopReason": "stop", "usage": {"input": 10, "output": 5}}
        if params.get("tools") and self.carries_tools:
            reply["toolsCarried"] = True
        if "Turn 1 of 5" in asked and not last.get("toolResults") and self.carries_tools:
            reply["toolCalls"] = [{"id": "call_p1", "name": "show", "arguments": {"ref": "u2"}}]
            return reply
        for name, answer in {**GOOD, "labels": labels_answer({"u1": "rule", "u2": "not a rule"})}.items():
            if f", {name}:" in asked or (name == "narrative" and last.get("toolResults")):
                reply["text"] = json.dumps(answer)
                return reply
        labels = [{"msg": "u1", "label": "rule"}, {"msg": "u2", "label": "not a rule"}]
        reply["text"] = json.dumps({"labels": labels, "narrative": "Diff via pi.", "now": "Go on."})
        return reply


def via_pi(params: CompactParams) -> CompactParams:
    model = ModelFacts(provider="aws", id="claude-x", api="bedrock-converse-stream", maxTokens=4096)
    return params.model_copy(update={"session": params.session.model_copy(update={"model": model})})


async def run_with_peer(params: CompactParams, shim: Shim) -> CompactResult:
    return await run_pass(params, pass_id="p1", peer=shim)  # as a connection hands the pass its own shim


async def test_turns7_through_pi_model_complete_the_tool_and_its_results_travel(session: Session) -> None:
    shim = Shim(carries_tools=True)
    base = session.params(len(session.entries) - 1, ops=FileOps(edited=["export.py"]))
    result = await run_with_peer(via_pi(turns_mode(base)), shim)
    state = state_of(result)
    assert state.workLog[-1].closedAs == "whole" and state.rules[0].message == "u1"
    assert [t["name"] for t in shim.params[0]["tools"]] == ["show"]
    results = shim.params[1]["messages"][-1]["toolResults"]
    calls = shim.params[1]["messages"][-2]["toolCalls"]
    assert calls[0]["id"] == "show_1" and results[0]["id"] == "show_1"  # the daemon's id, not the model's
    assert results[0]["text"].startswith("u2, a user message")
    assert result.diagnostics is not None and result.diagnostics.narrative["kind"] == "turns"


async def test_point7_a_shim_that_cannot_carry_tools_gets_the_diff_with_a_notice(session: Session) -> None:
    shim = Shim(carries_tools=False)
    base = session.params(len(session.entries) - 1, ops=FileOps(edited=["export.py"]))
    result = await run_with_peer(via_pi(turns_mode(base)), shim)
    assert "tools" in shim.params[0] and "tools" not in shim.params[-1]
    assert result.notice is not None and "cannot pass tool calls through pi" in result.notice
    assert state_of(result).workLog[-1].text == "Diff via pi."
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["turnsUnavailable"] == "tools-not-carried"
