"""The gate through whole turns-mode passes: repair turns, drops, questions, excuses, unmet checks.

TURNS-9..TURNS-14 and FAIL-10 against a scripted server in the real streaming Chat Completions format: each
test scripts the model's flawed answers in order and reads the repair notes the daemon sent, what the state
kept and dropped, and what the span record says about excused and unmet checks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from models.scripted_http import ScriptedServer, json_reply, scripted_server
from models.wires import OPENAI_COMPLETIONS

from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.passes.turns.closing import NO_NARRATIVE
from longhaul_daemon.protocol import CompactParams, FileOps

from .model_steps import state_of
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


@pytest.fixture
def session(tmp_path: Path) -> Session:
    return rule_then_failing_test(tmp_path)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def params_for(session: Session, server: ScriptedServer) -> CompactParams:
    base = session.params(len(session.entries) - 1, ops=FileOps(edited=["export.py"]))
    return turns_mode(on_wire(base, server, WIRE))


def kinds(result: object) -> dict[str, int]:
    diagnostics = getattr(result, "diagnostics", None)
    assert diagnostics is not None
    return dict(diagnostics.narrative["callKinds"])


async def test_turns10_an_item_still_failing_after_two_repair_turns_is_dropped_and_the_rest_accepted(
    session: Session, server: ScriptedServer
) -> None:
    too_long = [{"narrative": f"export.py {n} " + "x" * 250, "excuses": []} for n in range(3)]
    server.script += [section_reply(WIRE, "narrative", answer) for answer in too_long]
    server.script += good_script(WIRE, {"u1": "rule", "u2": "not a rule"})[1:]
    result = await run_pass(params_for(session, server), pass_id="p1")
    assert kinds(result)["narrative"] == 1 and kinds(result)["narrative-repair"] == 2  # two repair turns
    notes = [asked_text(r) for r in server.requests[1:3]]
    assert all("the narrative has 262 characters; at most 240" in note for note in notes)
    state = state_of(result)
    assert state.workLog[-1].closedAs == "whole" and state.workLog[-1].text == NO_NARRATIVE  # dropped
    assert state.rules[0].message == "u1" and state.now == GOOD["now"]["now"]  # the rest is accepted
    assert result.diagnostics is not None
    # every field the section gave was wrong: it says so, rather than "accepted" with nothing in it
    assert result.diagnostics.narrative["sections"]["narrative"] == "unfinished:nothing-kept"


async def test_turns10_turns16_a_message_still_unlabeled_after_the_repairs_carries_the_span_whole(
    session: Session, server: ScriptedServer
) -> None:
    partial = [labels_answer({"u1": label}) for label in ("rule", "Rule", "rule ")]  # one label, 3 spellings
    script = good_script(WIRE, {"u1": "rule"})
    server.script += [*script[:2], *(section_reply(WIRE, "labels", answer) for answer in partial)]
    server.script += script[3:]
    result = await run_pass(params_for(session, server), pass_id="p1")
    assert kinds(result)["labels-repair"] == 2
    assert "u2 has no label; every offered message needs one" in asked_text(server.requests[3])
    state = state_of(result)
    assert (state.workLog[-1].closedAs, state.workLog[-1].reason) == (
        "chunk-missing",
        "labels-unlabeled-messages",
    )
    assert state.carried == ["u1", "u2"]  # FAIL-12: the whole span is offered again
    assert [r.message for r in state.rules] == ["u1"]  # the label that verified stands (TURNS-10)
    assert state.now == GOOD["now"]["now"] and result.notice is not None and "chunk missing" in result.notice


async def test_turns11_a_replaced_lift_first_raised_on_the_last_repair_turn_gets_one_more_turn(
    tmp_path: Path, server: ScriptedServer
) -> None:
    s = Session(tmp_path)
    s.user("Indent with tabs.")
    s.user("Use two spaces instead of tabs from now on.")
    s.user("The two spaces rule no longer applies either.")
    s.user("Keep going.")
    missing_u3 = labels_answer({"u1": "rule", "u2": "rule and lifts u1"})
    missing_again = labels_answer({"u2": "rule and lifts u1", "u1": "rule"})  # the same labels, reordered
    lifting_u1 = labels_answer({"u1": "rule", "u2": "rule and lifts u1", "u3": "lifts u1"})
    question_reply = labels_answer({"u3": "lifts u2"})
    script = good_script(WIRE, {})
    server.script += [
        *script[:2],
        section_reply(WIRE, "labels", missing_u3),
        section_reply(WIRE, "labels", missing_again),
        section_reply(WIRE, "labels", lifting_u1),  # the last repair: u1 was already replaced by u2
        section_reply(WIRE, "labels", question_reply),
        *script[3:],
    ]
    params = turns_mode(on_wire(s.params(len(s.entries) - 1), server, WIRE))
    result = await run_pass(params, pass_id="p1")
    assert kinds(result)["labels-repair"] == 2 and kinds(result)["labels-question"] == 1
    asked = asked_text(server.requests[5])
    assert "u3 is labeled `lifts u1`, but u1 was already replaced by the rule u2" in asked
    assert server.requests[5].body["response_format"]["json_schema"]["schema"]["properties"]["labels"][
        "items"
    ]["properties"]["msg"]["enum"] == ["u3"]  # the question turn asks about u3 alone
    rules = {r.message: r for r in state_of(result).rules}
    assert rules["u1"].lifted and rules["u1"].liftedBy == "u2"
    assert rules["u2"].lifted and rules["u2"].liftedBy == "u3"  # the lift the question saved


async def test_turns12_turns13_turns14_excused_checks_are_kept_and_unmet_ones_recorded(
    session: Session, server: ScriptedServer
) -> None:
    reason = "The edit to export.py was undone before the span ended."
    excused = {
        "narrative": "Chased a failing test.",
        "excuses": [{"check": "modified-files-named", "reason": reason}],
    }
    unplaced: list[dict[str, Any]] = [
        {"decisions": [{"text": f"Tried idea {n}.", "why": None, "evidence": []}], "openErrors": []}
        for n in range(3)
    ]
    two_sentences = [
        {"now": "", "excuses": [{"check": "now-set", "reason": f"Done {n}. Nothing left."}]} for n in range(3)
    ]
    server.script += [
        section_reply(WIRE, "narrative", {"narrative": "Chased a failing test.", "excuses": []}),
        section_reply(WIRE, "narrative", excused),  # TURNS-13: excused after one repair
        *good_script(WIRE, {"u1": "rule", "u2": "not a rule"})[1:3],
        *(section_reply(WIRE, "decisions", answer) for answer in unplaced),  # TURNS-14: not met, not excused
        *(section_reply(WIRE, "now", answer) for answer in two_sentences),
    ]
    result = await run_pass(params_for(session, server), pass_id="p1")
    assert "export.py" in asked_text(server.requests[1]) and "modified" in asked_text(server.requests[1])
    assert "E1" in asked_text(server.requests[5])  # the decisions repair names the unplaced error
    assert server.script == [] and kinds(result)["decisions-repair"] == kinds(result)["now-repair"] == 2
    assert "the excuse for now-set was refused: the reason must be a single sentence" in asked_text(
        server.requests[-1]
    )
    assert result.after is not None
    record = result.after.spanRecord
    assert record["excused"] == [{"check": "modified-files-named", "reason": reason}]
    assert record["unmet"] == ["errors-placed", "now-set"]
    state = state_of(result)
    assert state.workLog[-1].closedAs == "whole" and state.workLog[-1].text == "Chased a failing test."
    assert state.now is None  # Now was never set: it carries from the previous state (none)
    assert result.diagnostics is not None
    narrative = result.diagnostics.narrative
    assert narrative["excused"] == ["modified-files-named"] and narrative["unmet"] == [
        "errors-placed",
        "now-set",
    ]


async def test_fail10_when_every_turn_fails_the_span_closes_narrative_less(
    session: Session, server: ScriptedServer
) -> None:
    refused = json_reply({"error": {"message": "bad key", "type": "invalid_api_key"}}, status=401)
    server.script += [refused] * 5
    result = await run_pass(params_for(session, server), pass_id="p1")
    state = state_of(result)
    assert (state.workLog[-1].closedAs, state.workLog[-1].reason) == ("narrative-less", "model-error")
    assert state.carried == ["u1", "u2"] and state.rules == [] and len(server.requests) == 5
    assert result.diagnostics is not None and result.diagnostics.narrative["kind"] == "turns"


async def test_a_repair_turn_that_brings_back_the_same_answer_ends_the_repairs(
    session: Session, server: ScriptedServer
) -> None:
    """Our decision: a model that repeats its flawed answer is not asked a second time."""
    echo = {"objective": "Answer each turn with the one JSON object it asks for and nothing else."}
    script = good_script(WIRE, {"u1": "rule", "u2": "not a rule"})
    server.script += [
        script[0],
        section_reply(WIRE, "objective", echo),
        section_reply(WIRE, "objective", echo),
    ]
    server.script += script[2:]
    result = await run_pass(params_for(session, server), pass_id="p1")
    assert kinds(result)["objective-repair"] == 1
    assert "the objective repeats the instructions" in asked_text(server.requests[2])
    state = state_of(result)
    assert state.objective is None and state.workLog[-1].closedAs == "whole"  # the echo was dropped
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["sections"]["objective"] == "unfinished:nothing-kept"
