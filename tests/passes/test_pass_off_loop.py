"""PASS-21: a real daemon answers ``status`` while a pass over a large span is planning its chunks.

The daemon runs in this process on a real socket with the real pass and a scripted model server. Chunk
planning is held, in whatever thread the Diff runs it, until ``status`` has been answered on another
connection; planning held on the event loop could never let that happen, so it records the fact instead of
waiting. The test asserts the order of events, never a duration.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.to_thread
import pytest
from models.scripted import ScriptedServer, scripted_server
from models.wires import KEY
from server.harness import WAIT_S, connect, running_daemon

from longhaul_daemon.diff import stage
from longhaul_daemon.diff.chunks import ChunkPlan
from longhaul_daemon.diff.planning import DiffInputs, plan_diff

from .model_steps import answer_reply, with_model
from .pi_branch import Session

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


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
