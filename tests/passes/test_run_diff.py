"""Whole passes with the Diff talking to a scripted OpenAI-compatible server on loopback (DIFF-20, FAIL-9).

The server speaks the real streaming wire format; nothing inside the daemon is faked. Each test runs the
real pass and reads what pi would store: the summary, the state in ``details``, the span record and line,
and the diagnostics the record log gets. One holds chunk planning of a large span until ``status`` has been
answered (PASS-21): it asserts the order of events, never a duration.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from models.scripted_http import Reply, ScriptedServer, json_reply, scripted_server
from models.wires import KEY
from pydantic import SecretStr
from server.in_process_daemon import WAIT_S, connect, running_daemon

from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.passes import beside_world
from longhaul_daemon.passes import run as run_module
from longhaul_daemon.passes.diff import diff_outcome
from longhaul_daemon.passes.diff import diff_stage as stage
from longhaul_daemon.passes.progress import PassProgress
from longhaul_daemon.passes.prompting.chunks import ChunkPlan
from longhaul_daemon.passes.prompting.planning import DiffInputs, plan_diff
from longhaul_daemon.passes.run import diff_budget_s, run_pass
from longhaul_daemon.protocol import (
    ModelCredentials,
    ModelFacts,
    SummarizerRoute,
)
from longhaul_daemon.rpc.methods import Services
from longhaul_daemon.rpc.recording import compaction_fields

from .model_steps import SPEC, answer_reply, state_of, with_model, with_settings
from .pi_branch import Session

pytestmark = pytest.mark.anyio


def failing(status: int = 500) -> Reply:
    return json_reply({"error": {"message": "boom", "type": "server_error"}}, status=status)


@pytest.fixture
def session(tmp_path: Path) -> Session:
    s = Session(tmp_path)
    s.user("Never add new dependencies without asking me first.")
    s.bash("pytest -q", "1 failed", code=1)
    s.user("Build the CSV export.")
    s.bash("python -m export", "wrote out.csv")
    s.user("Keep going.")
    return s


@pytest.fixture
def server_script() -> list[Reply]:
    return []


@pytest.fixture
def server(server_script: list[Reply]) -> Iterator[ScriptedServer]:
    with scripted_server(server_script) as running:
        yield running


async def test_diff_pass7_a_good_answer_closes_whole_and_the_rule_is_rendered_verbatim(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(
        answer_reply({"u1": ("rule", "never add dependencies"), "u2": "not a rule"}, values=[])
    )
    params = with_model(session.params(len(session.entries) - 1), server)
    result = await run_pass(params, pass_id="p1")
    state = state_of(result)
    assert [(r.id, r.words, r.message) for r in state.rules] == [
        (
            "R1",
            "Never add new dependencies without asking me first.",
            "u1",
        )  # EX-1: whole message, not the words
    ]
    assert result.compaction is not None
    assert 'R1 "Never add new dependencies without asking me first."' in result.compaction.summary
    assert "never add dependencies" not in json.dumps(result.compaction.details)
    assert state.now == "Write the header row next." and state.workLog[-1].text == "Set up the export."
    assert result.after is not None and result.after.spanRecord["closedAs"] == "whole"
    assert result.after.line["calls"] == 1 and result.after.line["tokens"] > 0
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    fields = compaction_fields(params, result, 5)
    assert fields["route"] == {"configured": None, "used": SPEC, "why": None}
    narrative = fields["narrative"]
    assert isinstance(narrative, dict) and narrative["calls"] == 1 and narrative["kind"] == "whole"
    assert KEY not in json.dumps(fields) and KEY not in repr(params)


async def test_fail10_fail11_a_failing_model_closes_narrative_less_then_the_next_pass_labels_the_carried(
    session: Session, server: ScriptedServer
) -> None:
    server.script.extend([failing()] * 4)  # every attempt of the first call fails (the retry policy gives up)
    keep = len(session.entries) - 1
    first = await run_pass(with_model(session.params(keep), server), pass_id="p1")
    state = state_of(first)
    assert state.rules == [] and state.workLog[-1].closedAs == "narrative-less"
    assert state.carried == ["u1", "u2"]
    assert first.notice is not None and "model-error" in first.notice
    session.store(first, keep)
    session.user("Now add the header row.")
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule", "u3": "not a rule"}))
    params = with_model(session.params(len(session.entries) - 1), server)
    progress = PassProgress()
    second = await run_pass(params, pass_id="p2", progress=progress)
    prompt = server.requests[-1].body["messages"][-1]["content"]
    assert "Never add new dependencies without asking me first." in prompt
    state = state_of(second)
    assert [(r.id, r.message, r.span) for r in state.rules] == [("R1", "u1", 2)]  # recorded one pass later
    assert state.carried == []
    assert progress.span == second.span == 2  # PASS-16: known from the Fold on
    assert compaction_fields(params, second, 5)["carried"] == 2  # LOG-18: u1 and u2 were offered again
    assert compaction_fields(with_model(session.params(keep), server), first, 5)["carried"] == 0


async def test_fail4_ours_an_unlabeled_message_is_carried_visibly_and_the_rest_of_the_answer_counts(
    session: Session, server: ScriptedServer
) -> None:
    """The model labels u2 but never u1, not in its answer and not in the label call: the pass still keeps
    the narrative and Now, closes partial, shows u1's words verbatim and tells the user; the next pass
    offers u1 again, and once it is labeled nothing stays carried."""
    server.script.extend([answer_reply({"u2": "not a rule"}), answer_reply({})])
    keep = len(session.entries) - 1
    first = await run_pass(with_model(session.params(keep), server), pass_id="p1")
    assert [r.body.get("response_format", {}).get("json_schema", {}).get("name") for r in server.requests][
        1
    ] == "diff_label_reply"
    state = state_of(first)
    assert (state.workLog[-1].closedAs, state.workLog[-1].reason) == ("partial", "unlabeled-messages")
    assert state.now == "Write the header row next." and state.carried == ["u1"]
    assert first.compaction is not None
    summary = first.compaction.summary
    assert "Never add new dependencies without asking me first." in summary
    assert "Set up the export." in summary
    assert first.notice is not None and "gave no usable label to 1 user message" in first.notice
    assert first.after is not None and first.after.spanRecord["held"] == ["u1"]
    session.store(first, keep)
    session.user("Now add the header row.")
    server.script.append(answer_reply({"u1": "rule", "u3": "not a rule"}))
    second = await run_pass(with_model(session.params(len(session.entries) - 1), server), pass_id="p2")
    state = state_of(second)
    assert [(r.id, r.message, r.span) for r in state.rules] == [("R1", "u1", 2)]
    assert state.carried == [] and state.workLog[-1].closedAs == "whole"


async def test_values_ours_a_value_the_user_looked_up_is_kept_though_the_model_names_none(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """The user ran a short `!grep` to see a setting; the model's answer names no value. Code keeps the
    line the command printed, named by the command and credited to its turn; a failed command gives none."""
    s = Session(tmp_path)
    s.user("Which port does the service listen on?")
    s.user_bash("grep -n port settings.ini", output="3:port = 8431\n")
    s.user_bash("pytest -q", code=1, output="1 failed\n")
    s.user("Keep going.")
    server.script.append(answer_reply({"u1": "not a rule"}, values=[]))
    result = await run_pass(with_model(s.params(len(s.entries) - 1), server), pass_id="p1")
    state = state_of(result)
    assert state.workLog[-1].closedAs == "whole"
    assert [(v.what, v.value, v.turn) for v in state.values] == [
        ("grep -n port settings.ini", "3:port = 8431", "u1")
    ]
    assert result.compaction is not None
    assert "- grep -n port settings.ini: 3:port = 8431 (turn u1)" in result.compaction.summary


async def test_values_ours_a_lookup_is_kept_when_every_model_call_fails(
    tmp_path: Path, server: ScriptedServer
) -> None:
    """FAIL-10 keeps the ledger in a narrative-less close because code found it, not the model; the values
    the user's own short commands printed are code's too, so a span whose every call failed still keeps
    them, checked against their output, while rules and decisions stay as they were."""
    s = Session(tmp_path)
    s.user("Which replica does the export read from?")
    s.user_bash("grep replica settings.ini", output="replica = db-replica-07\n")
    s.user("Keep going.")
    server.script.extend([failing()] * 4)
    result = await run_pass(with_model(s.params(len(s.entries) - 1), server), pass_id="p1")
    state = state_of(result)
    assert state.workLog[-1].closedAs == "narrative-less" and state.rules == []
    assert [(v.what, v.value, v.turn) for v in state.values] == [
        ("grep replica settings.ini", "replica = db-replica-07", "u1")
    ]
    assert result.compaction is not None
    assert "- grep replica settings.ini: replica = db-replica-07 (turn u1)" in result.compaction.summary


async def test_fail10_a_model_slower_than_the_budget_is_cancelled_and_the_span_closes_narrative_less(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(Reply(hang_before_headers=True))
    params = with_model(session.params(len(session.entries) - 1), server)
    result = await run_pass(params, pass_id="p1", pass_budget_s=1.0)
    assert diff_budget_s(1.0) < 1.0
    assert state_of(result).workLog[-1].reason == "budget-exhausted"
    # the daemon dropped the in-flight request: the server saw the connection close
    assert await anyio.to_thread.run_sync(server.disconnected.wait, 5.0)


async def test_fail9_an_unknown_summarizer_route_falls_back_to_the_session_model(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))
    route = SummarizerRoute(spec="other/cheap", problem="unknown-model")
    params = with_model(session.params(len(session.entries) - 1), server, summarizer=route)
    params = with_settings(params, {"summarizer": "other/cheap"})
    result = await run_pass(params, pass_id="p1")
    assert result.diagnostics is not None
    assert result.diagnostics.route.model_dump() == {
        "configured": "other/cheap",
        "used": SPEC,
        "why": "unknown-model",
    }
    assert state_of(result).workLog[-1].closedAs == "whole"


async def test_fail9_a_summarizer_that_fails_fatally_hands_the_pass_to_the_session_model(
    session: Session, server: ScriptedServer
) -> None:
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))
    with scripted_server([failing(401)]) as routed:
        facts = ModelFacts(provider="other", id="cheap", api="openai-completions", baseUrl=routed.url + "/v1")
        route = SummarizerRoute(
            spec="other/cheap", model=facts, credentials=ModelCredentials(apiKey=SecretStr("k2"))
        )
        params = with_model(session.params(len(session.entries) - 1), server, summarizer=route)
        params = with_settings(params, {"summarizer": "other/cheap"})
        access = ModelAccess()
        result = await run_pass(params, pass_id="p1", access=access)
        assert len(routed.requests) == 1  # a 401 is not retried
    assert result.diagnostics is not None
    assert result.diagnostics.route.used == SPEC
    assert result.diagnostics.route.why == "failed:FatalError"
    health = {h.route: h for h in access.health.snapshot()}
    assert health["other/cheap"].lastErrorClass == "FatalError" and health[SPEC].calls == 1


async def test_diff13_fail13_a_verifier_that_raises_leaves_no_state_and_the_pass_falls_back(
    session: Session, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("verifier bug")

    monkeypatch.setattr("longhaul_daemon.passes.diff.diff_stage.evaluate", broken)
    services = Services(socket_path="/unused")
    params = with_model(session.params(len(session.entries) - 1), server)
    from longhaul_daemon.rpc.methods import _run_compact

    result = await _run_compact(services, params, None)
    assert result.fallback == "pass-error" and result.compaction is None and result.after is None


async def test_pass18_client_disconnect_mid_call_cancels_the_http_request(
    session: Session, server: ScriptedServer, short_tmp: Path
) -> None:
    """Issue 3: the shim closing its connection cancels the pass and the in-flight model request with it."""
    server.script.append(Reply(hang_before_headers=True))
    params = with_model(session.params(len(session.entries) - 1), server)
    wire = params.model_dump(mode="json")
    wire["credentials"] = {"apiKey": KEY}
    async with running_daemon(short_tmp / "d.sock") as _, connect(short_tmp / "d.sock") as client:
        await client.request("compact", wire)
        assert await anyio.to_thread.run_sync(server.holding.wait, 10.0)  # the daemon's request is in flight
        await client.aclose()
        assert await anyio.to_thread.run_sync(server.disconnected.wait, 10.0)


def large_session(cwd: Path) -> Session:
    """300 turns, each a bash call with 5 kB of output: a span of several chunks."""
    session = Session(cwd)
    for n in range(300):
        session.user(f"Step {n}: run the checks and fix what fails.")
        session.bash(f"make check-{n}", "".join(f"check {n}.{i}: ok\n" for i in range(400)))
    session.user("Keep going.")
    return session


async def test_pass21_status_is_answered_while_a_large_pass_plans_its_chunks(
    short_tmp: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PASS-21: ``status`` gets its answer while the pass is inside chunk planning, and the pass then closes
    whole: planning runs in a worker thread and the daemon's loop keeps serving."""
    loop_thread = threading.get_ident()
    planning, answered = threading.Event(), threading.Event()
    order: list[str] = []

    def held_plan(inputs: DiffInputs, input_chars: int) -> ChunkPlan:
        if threading.get_ident() == loop_thread:
            order.append("planned on the loop")  # waiting here would keep status from ever being answered
        else:
            planning.set()
            assert answered.wait(WAIT_S), "status was never answered"
        plan = plan_diff(inputs, input_chars)
        for chunk in plan.chunks:  # one answer per chunk, labeling the messages that chunk offers
            server.script.append(answer_reply({m.user_id: "not a rule" for m in chunk if m.user_id}))
        order.append("planned")
        return plan

    monkeypatch.setattr(stage, "plan_diff", held_plan)
    session = large_session(short_tmp)
    wire = with_model(session.params(len(session.entries) - 1), server).model_dump(mode="json")
    wire["credentials"] = {"apiKey": KEY}
    socket_path = short_tmp / "d.sock"
    async with (
        running_daemon(socket_path),
        connect(socket_path) as pass_client,
        connect(socket_path) as status_client,
    ):
        await pass_client.request("compact", wire)
        assert await anyio.to_thread.run_sync(planning.wait, WAIT_S), order
        status = await status_client.call("status")
        order.append("status answered")
        answered.set()
        reply = await pass_client.receive()
    assert order == ["status answered", "planned"]
    assert status["result"]["inFlight"] == 1  # the pass was still running when status answered
    record = reply["result"]["after"]["spanRecord"]
    assert record["closedAs"] == "whole", json.dumps(record)[:500]
    assert len(server.requests) > 1  # several chunks, one call each


async def test_an_error_of_the_diff_beside_the_world_leaves_the_pass_as_it_is(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise LookupError("a bug in the Diff")

    monkeypatch.setattr(run_module, "_model_stage", broken)
    with pytest.raises(LookupError):  # not an ExceptionGroup: the RPC layer logs the bug's own class
        await run_pass(session.params(len(session.entries) - 1), pass_id="p1")


async def test_pass2_the_diff_follows_fold_and_ledger_runs_beside_the_world_and_close_follows_all(
    session: Session, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PASS-2: the steps are watched as they start and end; the Diff starts only after Fold and Ledger have
    ended, and Close only after the Diff and the World. The World waits for the Diff to start: the Diff never
    reads it, so its model call goes out while git runs."""
    events: list[str] = []
    diff_started = anyio.Event()

    def watched(name: str, real: Any) -> Any:
        def step(*args: Any, **kwargs: Any) -> Any:
            events.append(f"{name} start")
            try:
                return real(*args, **kwargs)
            finally:
                events.append(f"{name} end")

        return step

    def watched_async(name: str, real: Any) -> Any:
        async def step(*args: Any, **kwargs: Any) -> Any:
            events.append(f"{name} start")
            if name == "run_diff":
                diff_started.set()
            else:
                with anyio.fail_after(WAIT_S):  # a pass that waited for the World before the Diff never ends
                    await diff_started.wait()
            try:
                return await real(*args, **kwargs)
            finally:
                events.append(f"{name} end")

        return step

    for name in ("fold", "apply_ledger", "close_span"):
        monkeypatch.setattr(run_module, name, watched(name, getattr(run_module, name)))
    for module, name in ((diff_outcome, "run_diff"), (beside_world, "take_world")):
        monkeypatch.setattr(module, name, watched_async(name, getattr(module, name)))
    server.script.append(answer_reply({"u1": "rule", "u2": "not a rule"}))
    result = await run_pass(with_model(session.params(len(session.entries) - 1), server), pass_id="p1")
    assert result.compaction is not None
    started = {e.split()[0]: i for i, e in enumerate(events) if e.endswith("start")}
    ended = {e.split()[0]: i for i, e in enumerate(events) if e.endswith("end")}
    assert set(started) == {"fold", "apply_ledger", "take_world", "run_diff", "close_span"}
    assert all(ended[step] < started["run_diff"] for step in ("fold", "apply_ledger"))
    assert started["run_diff"] < ended["take_world"]
    assert max(ended["run_diff"], ended["take_world"]) < started["close_span"]


async def test_a_429_asking_for_an_hour_closes_the_span_rate_limited_at_once(
    session: Session, server: ScriptedServer
) -> None:
    """The provider refuses and asks for a wait the budget cannot give: the call gives up at once and the
    span says so (``rate-limited``), rather than ``budget-exhausted`` after waiting out the clock."""
    limited = json_reply({"error": {"type": "rate_limit_error"}}, status=429, headers={"retry-after": "3600"})
    server.script.append(limited)
    params = with_model(session.params(len(session.entries) - 1), server)
    result = await run_pass(params, pass_id="p1")
    assert len(server.requests) == 1
    assert state_of(result).workLog[-1].reason == "rate-limited"
    assert result.diagnostics is not None and result.diagnostics.narrative["errors"] == ["RateLimited"]
