"""Issue 11 through whole passes against a scripted model server: structured output, refusals, echoes, fixes.

The server speaks the real streaming Chat Completions format; nothing inside the daemon is faked. Each test
runs the real pass and reads what pi would store (the state in ``details``, the span record) and what the
record log gets (the narrative stats), plus every request the daemon sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from models.scripted_http import Reply, ScriptedServer, json_reply, scripted_server
from models.wires import OPENAI_COMPLETIONS, answer_stream

from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.passes.answers.call_schemas import answer_schema
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.fold import fold
from longhaul_daemon.passes.model_calls import UNUSABLE_KEY, unusable_routes
from longhaul_daemon.passes.run import run_pass

from .model_steps import SPEC, answer_reply, state_of, with_model
from .pi_branch import Session

pytestmark = pytest.mark.anyio

ECHO = 'Done: {"status":"ok","uptime_s":812}'


def refusal() -> Reply:
    body = {"error": {"message": "unsupported", "type": "invalid_request_error", "param": "response_format"}}
    return json_reply(body, status=400)


def cut(text: str) -> Reply:
    return OPENAI_COMPLETIONS.stream_reply([text], cut_off=True)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = Session(tmp_path)
    s.user("Never add new dependencies without asking me first.")
    s.bash("pytest tests/test_x.py -q", "1 failed", code=1)
    s.user("Fix the failing test.")
    s.bash("pytest -q", "12 passed")
    s.user("Keep going.")
    return s


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def keep(session: Session) -> int:
    return len(session.entries) - 1


async def test_the_diff_asks_for_the_answer_schema_as_structured_output(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))
    result = await run_pass(with_model(session.params(keep(session)), server), pass_id="p1")
    [sent] = server.requests
    offered = [
        OfferedMessage("u1", "Never add new dependencies without asking me first."),
        OfferedMessage("u2", "Fix the failing test."),
    ]
    # the span's two messages, one label each, keyed by id; evidence held to the two commands the prompt shows
    expected = answer_schema(offered, lifts={}, ledger_shown=["C1", "C2", "E1"])
    assert sent.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "diff_answer", "schema": dict(expected.schema), "strict": True},
    }
    schema = sent.body["response_format"]["json_schema"]["schema"]
    assert schema["required"][:3] == ["labels", "narrative", "now"] and "fixed" in schema["required"]
    assert schema["properties"]["labels"]["required"] == ["u1", "u2"]
    evidence = schema["properties"]["decisions"]["items"]["properties"]["evidence"]["items"]
    assert evidence == {"type": "string", "enum": ["C1", "C2", "E1"]}  # DIFF-14: ids the prompt shows
    assert result.diagnostics is not None
    narrative = result.diagnostics.narrative
    assert narrative["structured"] == {"json_schema": 1} and narrative["structuredSkipped"] == {}
    assert state_of(result).workLog[-1].closedAs == "whole"


async def test_a_refused_schema_is_dropped_for_that_call_and_the_next_pass_goes_without_it(
    session: Session, server: ScriptedServer
) -> None:
    server.script += [refusal(), answer_reply({"u1": "rule", "u2": "not a rule"})]
    access = ModelAccess()  # daemon-wide, as the serving daemon shares it between passes
    first = await run_pass(with_model(session.params(keep(session)), server), pass_id="p1", access=access)
    assert [("response_format" in r.body) for r in server.requests] == [True, False]
    assert state_of(first).workLog[-1].closedAs == "whole"
    assert first.diagnostics is not None
    assert first.diagnostics.narrative["structured"] == {"json_schema": 1, "none": 1}
    assert first.diagnostics.narrative["structuredSkipped"] == {"refused": 1}

    session.store(first, keep(session))
    session.user("Now the report page.")
    server.script.append(answer_reply({"u3": "not a rule"}))
    second = await run_pass(with_model(session.params(keep(session)), server), pass_id="p2", access=access)
    assert "response_format" not in server.requests[-1].body and len(server.requests) == 3
    assert state_of(second).workLog[-1].closedAs == "whole"


async def test_an_echoed_tool_result_closes_unparsable_answer_after_one_call(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(OPENAI_COMPLETIONS.stream_reply([ECHO]))
    result = await run_pass(with_model(session.params(keep(session)), server), pass_id="p1")
    assert len(server.requests) == 1, "no retry for a reply that holds no answer"
    state = state_of(result)
    assert (state.workLog[-1].closedAs, state.workLog[-1].reason) == ("narrative-less", "unparsable-answer")
    assert result.after is not None and result.after.spanRecord[UNUSABLE_KEY] == {SPEC: 1}


async def test_a_model_that_gave_no_answer_before_gets_one_retry_a_chunk_in_the_next_pass(
    session: Session, server: ScriptedServer
) -> None:
    """The memory is the span record in the transcript: pass 2 reads it and allows one retry, not two."""
    server.script.append(OPENAI_COMPLETIONS.stream_reply([ECHO]))
    first = await run_pass(with_model(session.params(keep(session)), server), pass_id="p1")
    session.store(first, keep(session))
    assert unusable_routes(fold(session.entries).spans) == {SPEC}
    session.user("Now the report page.")
    server.script += [cut('{"labels": [{"msg": "u1"'), cut('{"labels": ['), cut("never asked")]
    second = await run_pass(with_model(session.params(keep(session)), server), pass_id="p2")
    assert second.diagnostics is not None
    assert second.diagnostics.narrative["callKinds"] == {"first": 1, "raised-budget": 1}
    assert len(server.script) == 1, "the format retry a fresh model would get was not made"
    assert second.after is not None and second.after.spanRecord[UNUSABLE_KEY] == {SPEC: 2}


async def test_a_looping_stream_is_cut_at_the_answer_and_the_pass_closes_whole(
    session: Session, server: ScriptedServer
) -> None:
    answer = {
        "labels": [{"msg": "u1", "label": "rule"}, {"msg": "u2", "label": "not a rule"}],
        "narrative": "Fixed the test.",
        "now": "Carry on.",
    }
    text = json.dumps(answer)
    server.script.append(answer_stream(OPENAI_COMPLETIONS, [text[:30], text[30:]], repeat=" again"))
    result = await run_pass(with_model(session.params(keep(session)), server), pass_id="p1")
    assert server.disconnected.wait(30), "the daemon kept reading a model that never stopped"
    assert state_of(result).workLog[-1].text == "Fixed the test."
    assert result.diagnostics is not None and result.diagnostics.narrative["stoppedEarly"] == 1


@pytest.mark.parametrize(
    ("by", "closed"),
    [("C2", True), ("C1", False)],  # C2 `pytest -q` passed later; C1 is the failing run itself
    ids=["accepted", "refused"],
)
async def test_an_open_error_closed_by_a_later_successful_command_the_answer_names(
    session: Session, server: ScriptedServer, by: str, closed: bool
) -> None:
    fixed = [{"error": "E1", "by": by}]
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}, fixed=fixed))
    result = await run_pass(with_model(session.params(keep(session)), server), pass_id="p1")
    state = state_of(result)
    assert [(e.id, e.command, e.open) for e in state.errors] == [("E1", "C1", not closed)]
    assert [(c.id, c.text, c.exit) for c in state.commands][:2] == [
        ("C1", "pytest tests/test_x.py -q", 1),
        ("C2", "pytest -q", 0),
    ]
    assert result.compaction is not None
    open_errors = result.compaction.summary.split("## Open errors", 1)
    assert (len(open_errors) == 2 and "E1" in open_errors[1].split("##", 1)[0]) is not closed
    assert result.diagnostics is not None
    assert result.diagnostics.narrative["droppedBy"] == ({} if closed else {"fixed": 1})
