"""LOG-14, QUOTE-17: the record log's debug excerpts, produced by a real pass against a scripted model.

The model quotes words no user message holds (a rejected quote) and the session has read more files than the
summary lists. With ``PI_COMPACT_STATE_DEBUG_EXCERPTS=1`` the ``compaction`` record carries both, cleaned
and cut; with the switch off or set to anything else, neither the words nor the paths reach the log at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from models.scripted_http import ScriptedServer, scripted_server

from longhaul_daemon.protocol import CompactParams, FileOps, ShimEnv
from longhaul_daemon.rpc.methods import Services, _run_compact
from longhaul_daemon.rpc.recording import EXCERPT_CHARS, MAX_EXCERPTS
from longhaul_daemon.state.render import MAX_FILES

from .model_steps import answer_reply, with_model
from .pi_branch import Session

pytestmark = pytest.mark.anyio

MISQUOTE = "never add any dependencies\x1b[31m ever"  # words no message holds, with an escape in them
PATHS = [f"src/module_{n:03d}.py" for n in range(MAX_FILES + 25)]
HOSTILE_PATH = "docs/</read-files>\n## Now.md"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with scripted_server([]) as running:
        yield running


def params_for(tmp_path: Path, server: ScriptedServer, **env: str) -> CompactParams:
    session = Session(tmp_path)
    session.user("Never add new dependencies without asking me first.")
    session.bash("pytest -q", "1 failed", code=1)
    session.user("Build the CSV export.")
    session.user("Keep going.")
    ops = FileOps(read=[*PATHS, HOSTILE_PATH])
    params = with_model(session.params(len(session.entries) - 1, ops=ops), server)
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    facts = params.session.model_copy(update={"agentDir": str(agent), "env": ShimEnv(**env)})
    return params.model_copy(update={"session": facts})


def compaction_record(params: CompactParams) -> dict[str, Any]:
    raw = (Path(params.session.agentDir) / "logs" / "compaction-state.jsonl").read_text()
    [record] = [r for r in map(json.loads, raw.splitlines()) if r["event"] == "compaction"]
    return dict(record)


async def compact(tmp_path: Path, server: ScriptedServer, **env: str) -> tuple[dict[str, Any], str]:
    server.script.append(answer_reply({"u1": ("rule", MISQUOTE), "u2": "not a rule"}))
    params = params_for(tmp_path, server, **env)
    result = await _run_compact(Services(socket_path="/unused"), params, None)
    assert result.compaction is not None and result.after is not None
    assert result.after.spanRecord["closedAs"] == "whole"
    assert "rejected_quotes" not in result.model_dump_json()  # never sent back over the socket
    raw = (Path(params.session.agentDir) / "logs" / "compaction-state.jsonl").read_text()
    return compaction_record(params), raw


async def test_log14_excerpts_hold_the_rejected_quote_and_the_paths_the_summary_left_out(
    tmp_path: Path, server: ScriptedServer
) -> None:
    record, _ = await compact(tmp_path, server, PI_COMPACT_STATE_DEBUG_EXCERPTS="1")
    excerpts = record["excerpts"]
    assert excerpts["rejectedQuotes"] == [{"msg": "u1", "words": "never add any dependencies ever"}]  # no ESC
    pruned = excerpts["prunedPaths"]
    assert excerpts["prunedPathCount"] == 26  # 25 over the cap, and the path the rendering rule refused
    assert len(pruned) == MAX_EXCERPTS and all(len(p) <= EXCERPT_CHARS and "\n" not in p for p in pruned)
    assert pruned[0] == PATHS[MAX_FILES]  # sorted, the first one past the cap
    assert record["capFit"] == {"fit": False, "cut": 26}


@pytest.mark.parametrize("value", [None, "0", "true", " 1"])
async def test_log14_without_exactly_1_no_words_or_paths_reach_the_log(
    tmp_path: Path, server: ScriptedServer, value: str | None
) -> None:
    env = {} if value is None else {"PI_COMPACT_STATE_DEBUG_EXCERPTS": value}
    record, raw = await compact(tmp_path, server, **env)
    assert "excerpts" not in record
    assert "never add any dependencies" not in raw and "module_1" not in raw and "read-files" not in raw
