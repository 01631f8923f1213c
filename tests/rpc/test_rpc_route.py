"""``route``: the summarizer spec for the shim to resolve, read from longhaul.json per call (CONFIG-5, 8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from longhaul_daemon.rpc.methods import Services, build_methods
from longhaul_daemon.rpc.registry import RpcFailure, RpcSuccess

pytestmark = pytest.mark.anyio


def session_in(tmp_path: Path) -> tuple[dict[str, Any], Path, Path]:
    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    facts = {"cwd": str(project), "sessionId": "s1", "agentDir": str(agent), "piVersion": "0.73.1"}
    return facts, agent, project


async def route(session: dict[str, Any]) -> RpcSuccess | RpcFailure:
    with anyio.fail_after(10):
        return await build_methods(Services(socket_path="/s"))["route"].call(None, session=session)


async def test_config8_route_names_the_agent_summarizer_and_the_project_overrides_it(tmp_path: Path) -> None:
    session, agent, project = session_in(tmp_path)
    (agent / "longhaul.json").write_text(json.dumps({"summarizer": "cheap/small"}))
    outcome = await route(session)
    assert isinstance(outcome, RpcSuccess) and outcome.result == {"summarizer": "cheap/small"}
    (project / ".pi" / "longhaul.json").write_text(json.dumps({"summarizer": "local/org/tiny"}))
    outcome = await route(session)
    assert isinstance(outcome, RpcSuccess) and outcome.result == {"summarizer": "local/org/tiny"}


async def test_config5_route_is_read_again_at_every_call(tmp_path: Path) -> None:
    session, agent, _ = session_in(tmp_path)
    methods = build_methods(Services(socket_path="/s"))
    first = await methods["route"].call(None, session=session)
    assert isinstance(first, RpcSuccess) and first.result == {"summarizer": None}
    (agent / "longhaul.json").write_text(json.dumps({"summarizer": "cheap/small"}))
    second = await methods["route"].call(None, session=session)
    assert isinstance(second, RpcSuccess) and second.result == {"summarizer": "cheap/small"}


async def test_config9_a_bad_file_means_no_summarizer_not_an_error(tmp_path: Path) -> None:
    session, agent, project = session_in(tmp_path)
    (agent / "longhaul.json").write_text("{not json")
    (project / ".pi" / "longhaul.json").write_text(json.dumps({"summarizer": 42}))
    outcome = await route(session)
    assert isinstance(outcome, RpcSuccess) and outcome.result == {"summarizer": None}


async def test_route_without_session_facts_is_invalid_params() -> None:
    with anyio.fail_after(10):
        outcome = await build_methods(Services(socket_path="/s"))["route"].call(None)
    assert isinstance(outcome, RpcFailure) and outcome.code == -32602
