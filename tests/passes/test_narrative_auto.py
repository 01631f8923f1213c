"""``"narrativeMode": "auto"``: the Diff first; turns mode for a route once the Diff's answers failed it.

The book's rules on their own, then real passes against a scripted model in the real Chat Completions
format: two passes whose Diff answers hold no JSON move the route to turns mode, and the third pass runs turns
mode's conversation; a provider error never counts. ``status`` shows each route's stage.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from models.scripted_http import Reply, ScriptedServer, scripted_server
from models.wires import OPENAI_COMPLETIONS

from longhaul_daemon.ops.status_view import format_status
from longhaul_daemon.passes.narrative_choice import (
    DIFF_FAILURES_BEFORE_TURNS,
    NarrativeChoices,
    is_answer_failure,
    stage_of_pass,
)
from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.protocol import CompactParams, CompactResult, FileOps, PassCounts, StatusResult

from .model_steps import with_settings
from .pi_branch import Session
from .turns_steps import good_script, on_wire, rule_then_failing_test, section_reply

WIRE = OPENAI_COMPLETIONS
ROUTE = "test/test-model"
PROSE = "I am sorry, I can only describe the session in plain words: you worked on an export."


# ---- the book ----------------------------------------------------------------------------------------------


def test_auto_starts_every_route_on_the_diff() -> None:
    choices = NarrativeChoices()
    assert choices.stage_for(ROUTE) == "diff"
    assert stage_of_pass("auto", ROUTE, choices) == "diff"
    assert stage_of_pass("auto", ROUTE, None) == "diff"
    assert stage_of_pass("turns", ROUTE, choices) == "turns"
    assert stage_of_pass("diff", ROUTE, choices) == "diff"


def test_two_answer_failures_in_a_row_move_the_route_to_turns_mode_for_good() -> None:
    choices = NarrativeChoices()
    moment = datetime(2026, 12, 6, 3, 0, tzinfo=UTC)
    choices.record(ROUTE, stage="diff", closed_as="narrative-less", reason="unparsable-answer", now=moment)
    assert choices.stage_for(ROUTE) == "diff"
    choices.record(
        ROUTE, stage="diff", closed_as="chunk-missing", reason="chunk-unlabeled-messages", now=moment
    )
    assert DIFF_FAILURES_BEFORE_TURNS == 2
    assert choices.stage_for(ROUTE) == "turns"
    assert choices.stage_for("other/model") == "diff"  # per route
    choices.record(ROUTE, stage="turns", closed_as="narrative-less", reason="turn-timeout")
    assert choices.stage_for(ROUTE) == "turns"  # turns mode's own closes never move it back
    [shown] = choices.snapshot()
    assert (shown.route, shown.stage, shown.diffFailuresInRow) == (ROUTE, "turns", 2)
    assert (shown.lastDiffFailure, shown.turnsSince) == (
        "chunk-unlabeled-messages",
        "2026-12-06T03:00:00+00:00",
    )


@pytest.mark.parametrize(("closed_as", "reason"), [("whole", None), ("partial", "unlabeled-messages")])
def test_a_whole_or_partial_diff_close_starts_the_count_again(closed_as: str, reason: str | None) -> None:
    """A partial close's answer verified (FAIL-4, ours): it is no answer failure."""
    choices = NarrativeChoices()
    choices.record(ROUTE, stage="diff", closed_as="narrative-less", reason="unparsable-answer")
    choices.record(ROUTE, stage="diff", closed_as=closed_as, reason=reason)
    choices.record(ROUTE, stage="diff", closed_as="narrative-less", reason="unparsable-answer")
    assert choices.stage_for(ROUTE) == "diff"
    assert choices.snapshot()[0].diffFailuresInRow == 1


@pytest.mark.parametrize(
    ("closed_as", "reason"),
    [
        ("narrative-less", "model-error"),
        ("narrative-less", "rate-limited"),
        ("narrative-less", "budget-exhausted"),
        ("narrative-less", "no-model"),
        ("chunk-missing", "chunk-model-error"),
        ("empty", None),
    ],
)
def test_failures_that_say_nothing_of_the_models_writing_never_count(
    closed_as: str, reason: str | None
) -> None:
    choices = NarrativeChoices()
    for _ in range(DIFF_FAILURES_BEFORE_TURNS + 1):
        choices.record(ROUTE, stage="diff", closed_as=closed_as, reason=reason)
    assert not is_answer_failure(closed_as, reason)
    assert choices.stage_for(ROUTE) == "diff"


def test_the_book_is_bounded_and_names_a_hostile_route_safely() -> None:
    choices = NarrativeChoices(max_routes=3)
    for n in range(10):
        choices.record(f"p/m{n}", stage="diff", closed_as="narrative-less", reason="unparsable-answer")
    assert [c.route for c in choices.snapshot()] == ["p/m7", "p/m8", "p/m9"]
    hostile = "evil/\x1b[2Jmodel\nroutes  forged"
    choices.record(hostile, stage="diff", closed_as="narrative-less", reason="unparsable-answer")
    assert all("\x1b" not in c.route and "\n" not in c.route for c in choices.snapshot())


def test_status_shows_each_routes_stage_and_why() -> None:
    choices = NarrativeChoices()
    moment = datetime(2026, 12, 6, 3, 0, tzinfo=UTC)
    for _ in range(2):
        choices.record(
            ROUTE, stage="diff", closed_as="narrative-less", reason="unparsable-answer", now=moment
        )
    choices.record("other/big", stage="diff", closed_as="narrative-less", reason="unlabeled-messages")
    status = StatusResult(
        version="1",
        protocolVersion=1,
        pid=1,
        uptimeS=1.0,
        socket="/s",
        socketActivated=False,
        passes=PassCounts(),
        inFlight=0,
        sessionsSeen=0,
        narrative=choices.snapshot(),
    )
    text = format_status(status)
    assert (
        "  narrative  auto: test/test-model on turns mode since 2026-12-06T03:00:00+00:00: the Diff's answers"
        " failed 2 passes in a row, last unparsable-answer" in text
    )
    assert "auto: other/big on the Diff (1 answer failure in a row, last unlabeled-messages)" in text


# ---- real passes -------------------------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def _auto(session: Session, server: ScriptedServer) -> CompactParams:
    base = session.params(len(session.entries) - 1, ops=FileOps(edited=["export.py"]))
    return with_settings(on_wire(base, server, WIRE), {"narrativeMode": "auto"})


def _offers_tools(server: ScriptedServer, since: int) -> bool:
    return any(isinstance(r.body, dict) and r.body.get("tools") for r in server.requests[since:])


def _stage(result: CompactResult) -> object:
    assert result.diagnostics is not None
    return result.diagnostics.narrative.get("auto")


@pytest.mark.anyio
async def test_auto_runs_turns_mode_after_two_diff_answers_without_json(
    tmp_path: Path, server: ScriptedServer
) -> None:
    session = rule_then_failing_test(tmp_path)
    choices = NarrativeChoices()
    for n in (1, 2):
        server.script.append(section_reply(WIRE, "diff", PROSE))
        seen = len(server.requests)
        result = await run_pass(_auto(session, server), pass_id=f"p{n}", narrative_choices=choices)
        assert _stage(result) == "diff" and not _offers_tools(server, seen)
        assert result.after is not None and result.after.spanRecord["reason"] == "unparsable-answer"
        session.store(result, len(session.entries) - 1)
        session.user(f"Next step {n}: the report page.")
        session.user("Carry on.")
    assert choices.stage_for(ROUTE) == "turns"
    labels: dict[str, str | tuple[str, str]] = {f"u{n}": "not a rule" for n in range(2, 7)}
    labels["u1"] = "rule"
    server.script += good_script(WIRE, labels)
    seen = len(server.requests)
    third = await run_pass(_auto(session, server), pass_id="p3", narrative_choices=choices)
    assert _stage(third) == "turns"
    assert _offers_tools(server, seen)  # turns mode's conversation, with its show tool
    assert len(server.requests) - seen >= 5


@pytest.mark.anyio
async def test_auto_keeps_the_diff_when_the_provider_fails_not_the_answer(
    tmp_path: Path, server: ScriptedServer
) -> None:
    session = rule_then_failing_test(tmp_path)
    choices = NarrativeChoices()
    for n in (1, 2, 3):
        server.script += [Reply(status=400, body=b'{"error": {"message": "bad request"}}')]
        result = await run_pass(_auto(session, server), pass_id=f"p{n}", narrative_choices=choices)
        assert _stage(result) == "diff"
        assert result.after is not None and result.after.spanRecord["reason"] == "model-error"
    assert choices.stage_for(ROUTE) == "diff"
