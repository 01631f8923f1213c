"""FAIL-11: past 30 carried user messages the oldest are left out, and the `compaction` record counts them.

The branch: a pass that closed whole (a scripted model labels its messages), then two narrative-less spans
(no model) whose user messages add up to more than 30. Carrying goes back no further than the whole pass, so
the last span carries the newest 30 and its record logs how many others it dropped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from models.scripted_http import scripted_server
from passes.model_steps import answer_reply, state_of, with_model
from passes.pi_branch import Session
from rpc_replies import decoded

from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.protocol import CompactParams, CompactResult
from longhaul_daemon.rpc.methods import Services, build_methods
from longhaul_daemon.rpc.registry import RpcSuccess

pytestmark = pytest.mark.anyio

WHOLE_SPAN = 3  # u1..u3, closed whole: never carried
FIRST_NARRATIVE_LESS = 12  # u4..u15
SECOND_NARRATIVE_LESS = 23  # u16..u38: with the 12 before, 35 qualify
CARRIED_LIMIT = 30  # FAIL-11's number, written out so that a changed constant fails here


def _span(s: Session, first: int, count: int) -> int:
    """``count`` user messages u<first>..; then one more, kept by pi's cut. Returns the cut's index."""
    for n in range(first, first + count):
        s.user(f"message {n}: carry on with step {n}")
    keep = len(s.entries)
    s.user(f"kept after u{first + count - 1}")
    return keep


async def _compact_over_rpc(services: Services, params: CompactParams, agent: Path) -> CompactResult:
    """The pass as the shim asks for it, so the daemon writes its record log in ``agent``."""
    document: dict[str, Any] = params.model_dump(mode="json", exclude_none=True)
    document["session"]["agentDir"] = str(agent)
    with anyio.fail_after(30):
        outcome = decoded(await build_methods(services)["compact"].call(None, **document))
    assert isinstance(outcome, RpcSuccess)
    return CompactResult.model_validate(outcome.result)


def _compaction_records(agent: Path) -> list[dict[str, Any]]:
    lines = (agent / "logs" / "compaction-state.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == "compaction"]


async def test_fail11_the_newest_30_are_carried_back_to_the_last_whole_pass_and_the_rest_logged(
    tmp_path: Path,
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    s = Session(tmp_path)
    keep = _span(s, 1, WHOLE_SPAN)
    with scripted_server([]) as server:
        server.script.append(answer_reply({f"u{n}": "not a rule" for n in range(1, WHOLE_SPAN + 1)}))
        whole = await run_pass(with_model(s.params(keep), server), pass_id="p1")
    assert state_of(whole).workLog[-1].closedAs == "whole" and state_of(whole).carried == []
    s.store(whole, keep)

    # The kept message after each cut is the next span's first, so each span holds one more than its count.
    services = Services(socket_path="/s")
    start = WHOLE_SPAN + 1
    keep = _span(s, start + 1, FIRST_NARRATIVE_LESS - 1)
    first = await _compact_over_rpc(services, s.params(keep), agent)
    s.store(first, keep)
    assert state_of(first).carried == [f"u{n}" for n in range(start, start + FIRST_NARRATIVE_LESS)]

    start += FIRST_NARRATIVE_LESS
    keep = _span(s, start + 1, SECOND_NARRATIVE_LESS - 1)
    second = await _compact_over_rpc(services, s.params(keep), agent)
    last = start + SECOND_NARRATIVE_LESS - 1  # u38
    left_out = FIRST_NARRATIVE_LESS + SECOND_NARRATIVE_LESS - CARRIED_LIMIT
    assert left_out == 5
    state = state_of(second)
    assert state.workLog[-1].closedAs == "narrative-less"
    assert state.carried == [f"u{n}" for n in range(last - CARRIED_LIMIT + 1, last + 1)]  # u9..u38
    assert second.notice is not None and f"{CARRIED_LIMIT} user messages carried" in second.notice

    records = _compaction_records(agent)
    assert [(r["span"], r["narrative"]["kind"]) for r in records] == [
        (2, "narrative-less"),
        (3, "narrative-less"),
    ]
    assert [r["narrative"]["carriedLeftOut"] for r in records] == [0, left_out]
