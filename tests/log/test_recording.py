"""The methods write the right records, with codes and counts only (LOG-5, LOG-16..LOG-24, FAIL-13)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from rpc_replies import decoded

from longhaul_daemon.offload import Offload
from longhaul_daemon.passes.progress import PassProgress
from longhaul_daemon.protocol import CompactParams, CompactResult
from longhaul_daemon.rpc.methods import Services, build_methods
from longhaul_daemon.rpc.recording import cap_fit
from longhaul_daemon.rpc.registry import RpcFailure, RpcSuccess

MARKER = "ZQXMARKER"


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    (tmp_path / "agent").mkdir()
    return tmp_path / "agent"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / f"proj-{MARKER}"
    root.mkdir()
    for args in (
        ["init", "-q", "-b", f"br-{MARKER}"],
        ["commit", "-q", "--allow-empty", "-m", f"subj {MARKER}"],
    ):
        subprocess.run(
            ["git", "-c", "user.name=T", "-c", "user.email=t@e.invalid", *args], cwd=root, check=True
        )
    (root / f"dirty-{MARKER}.txt").write_text("x")
    return root


def session(agent: Path, project: Path, **env: str) -> dict[str, Any]:
    return {
        "cwd": str(project),
        "sessionId": "s-1",
        "agentDir": str(agent),
        "piVersion": "0.73.1",
        "model": {"provider": "fake", "id": "fake-model"},
        "thinkingLevel": "off",
        "env": env,
    }


def _entry(n: int, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": f"e{n:07d}",
        "parentId": f"e{n - 1:07d}" if n else None,
        "timestamp": "2026-12-02T14:00:00.000Z",
        "message": message,
    }


def marked_params(agent: Path, project: Path, **env: str) -> dict[str, Any]:
    """A span whose every text field holds MARKER: user text, assistant text, command, output, file names."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"please {MARKER} now"}], "timestamp": 1},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"sure {MARKER}"},
                {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": f"ls {MARKER}"}},
            ],
            "stopReason": "toolUse",
            "timestamp": 2,
        },
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "content": [
                {"type": "text", "text": f"ls: {MARKER}: No such file\n\nCommand exited with code 2"}
            ],
            "isError": True,
            "timestamp": 3,
        },
        {"role": "user", "content": f"kept {MARKER}", "timestamp": 4},
    ]
    branch = [_entry(i, m) for i, m in enumerate(messages)]
    return {
        "session": session(agent, project, **env),
        "customInstructions": f"focus {MARKER}",
        "preparation": {
            "firstKeptEntryId": branch[-1]["id"],
            "messagesToSummarize": messages[:-1],
            "tokensBefore": 4321,
            "previousSummary": f"old {MARKER}",
            "fileOps": {"read": [f"{MARKER}.md"], "written": [f"w-{MARKER}.py"], "edited": []},
        },
        "branchEntries": branch,
    }


async def call(services: Services, method: str, params: dict[str, Any]) -> Any:
    with anyio.fail_after(30):
        outcome = decoded(await build_methods(services)[method].call(None, **params))
    assert isinstance(outcome, RpcSuccess | RpcFailure)
    return outcome


def records(agent: Path) -> list[dict[str, Any]]:
    path = agent / "logs" / "compaction-state.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.anyio
async def test_log5_log17_compaction_record_fields_and_no_text(agent: Path, project: Path) -> None:
    services = Services(socket_path="/s")
    await call(services, "hello", {"session": session(agent, project), "reason": "startup"})
    outcome = await call(services, "compact", marked_params(agent, project))
    assert isinstance(outcome, RpcSuccess)
    result = CompactResult.model_validate(outcome.result)
    assert result.compaction is not None and MARKER in result.compaction.summary  # the summary does hold it
    raw = (agent / "logs" / "compaction-state.jsonl").read_text()
    assert MARKER not in raw.replace(str(project), "<cwd>")  # LOG-5 (the cwd itself is LOG-6's to name)
    loaded, compaction = records(agent)
    assert loaded["event"] == "extension-loaded"
    assert (loaded["piVersion"], loaded["piVersionVerified"], loaded["reason"]) == ("0.73.1", True, "startup")
    assert compaction["event"] == "compaction"
    assert compaction["span"] == result.span == 1
    assert compaction["tokensBefore"] == 4321
    assert compaction["summaryChars"] == len(result.compaction.summary)
    assert set(compaction["narrative"]) >= {
        "kind",
        "calls",
        "accepted",
        "dropped",
        "usage",
        "timings",
        "reasoning",
    }
    assert compaction["narrative"]["kind"] == "narrative-less"
    assert compaction["route"] == {"configured": None, "used": "fake/fake-model", "why": None}
    assert compaction["capFit"] == {"fit": True, "cut": 0}
    world = compaction["world"]
    assert world["status"] == "repository" and world["repository"] is True  # WORLD-9: status and counts
    assert world["dirtyCount"] == 1 and isinstance(world["commandsRun"], int)
    assert set(world) == {
        "status",
        "repository",
        "commandsRun",
        "commandsFailed",
        "dirtyCount",
        "durationMs",
        "missing",
    }
    assert isinstance(compaction["carried"], int) and isinstance(compaction["durationMs"], int)
    assert compaction["branch"] == {"source": "inline", "refused": None}  # the entries came with the request


@pytest.mark.anyio
async def test_log24_stand_down_writes_loaded_compacted_failed_and_never_compaction(
    agent: Path, project: Path
) -> None:
    services = Services(socket_path="/s")
    facts = session(agent, project, PI_COMPACTOR="pi")
    await call(services, "hello", {"session": facts, "reason": "startup"})
    outcome = await call(services, "compact", marked_params(agent, project, PI_COMPACTOR="pi"))
    assert isinstance(outcome, RpcSuccess) and outcome.result["fallback"] == "stand-down"
    common = {"session": facts, "compactionEntryId": "c9", "summaryChars": 50, "tokensBefore": 900}
    await call(services, "compacted", {**common, "fromExtension": False, "reason": None})
    await call(services, "compact_failed", {"session": facts, "reason": "aborted", "span": None})
    events = [r["event"] for r in records(agent)]
    assert events == ["extension-loaded", "compacted", "compact-failed"]
    loaded, compacted, failed = records(agent)
    assert loaded["compactor"] == "pi" and "compactorValueChars" not in loaded  # a named choice, CONFIG-2
    assert {k: compacted[k] for k in ("fromExtension", "reason", "span", "summaryChars", "tokensBefore")} == {
        "fromExtension": False,
        "reason": None,
        "span": None,
        "summaryChars": 50,
        "tokensBefore": 900,
    }
    assert (failed["reason"], failed["span"]) == ("aborted", None)


@pytest.mark.anyio
async def test_config3_another_compactor_stands_down_and_only_the_value_length_is_logged(
    agent: Path, project: Path
) -> None:
    """CONFIG-3, LOG-5: a value naming another compactor is the user's text; the record keeps its length."""
    value = "my-own-compactor\u202e"
    services = Services(socket_path="/s")
    facts = session(agent, project, PI_COMPACTOR=value)
    await call(services, "hello", {"session": facts, "reason": "startup"})
    outcome = await call(services, "compact", marked_params(agent, project, PI_COMPACTOR=value))
    assert isinstance(outcome, RpcSuccess) and outcome.result["fallback"] == "stand-down"
    (loaded,) = records(agent)
    assert (loaded["event"], loaded["compactor"], loaded["compactorValueChars"]) == (
        "extension-loaded",
        "pi",
        17,
    )
    raw = (agent / "logs" / "compaction-state.jsonl").read_text()
    assert "my-own-compactor" not in raw
    for named in ("", " State ", "PI"):
        other = Services(socket_path="/s")
        await call(
            other, "hello", {"session": session(agent, project, PI_COMPACTOR=named), "reason": "reload"}
        )
        assert "compactorValueChars" not in records(agent)[-1]


@pytest.mark.anyio
async def test_log22_log23_incidents_map_to_records(agent: Path, project: Path) -> None:
    services = Services(socket_path="/s")
    facts = session(agent, project)
    home_error = f"EACCES {Path.home()}/x " + "y" * 300
    for kind in ("span-record-failed", "compaction-line-failed", "aborted", "fallback"):
        await call(
            services,
            "incident",
            {
                "session": facts,
                "kind": kind,
                "reason": "r",
                "span": 3,
                "errorClass": "Error",
                "error": home_error,
            },
        )
    recs = records(agent)
    assert [r["event"] for r in recs] == [
        "span-record-failed",
        "compaction-line-failed",
        "aborted",
        "fallback",
    ]
    for record in recs:
        assert record["errorClass"] == "Error"
        assert record["error"].startswith("EACCES ~/x ") and len(record["error"]) == 200  # LOG-7
    assert recs[0]["span"] == 3 and "span" not in recs[1]


@pytest.mark.anyio
async def test_fail13_pass_error_is_one_fallback_record_with_its_class(agent: Path, project: Path) -> None:
    async def crash(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        raise KeyError(f"{Path.home()}/boom")

    services = Services(socket_path="/s", run_pass=crash)
    params = marked_params(agent, project)
    outcome = await call(services, "compact", params)
    assert isinstance(outcome, RpcSuccess) and outcome.result["fallback"] == "pass-error"
    pass_id = outcome.result["passId"]
    # The shim reports the same fallback as an incident; it is not written twice.
    incident = {"session": params["session"], "kind": "fallback", "reason": "pass-error", "passId": pass_id}
    await call(services, "incident", incident)
    (record,) = records(agent)
    assert (record["event"], record["reason"], record["passId"]) == ("fallback", "pass-error", pass_id)
    assert record["errorClass"] == "KeyError" and "~/boom" in record["error"]
    assert "stack" not in record  # LOG-15: stacks only when asked for


@pytest.mark.anyio
async def test_fail14_timeout_is_a_fallback_record(agent: Path, project: Path) -> None:
    async def slow(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        await anyio.sleep_forever()
        raise AssertionError

    services = Services(socket_path="/s", run_pass=slow, pass_budget_s=0.01)
    outcome = await call(services, "compact", marked_params(agent, project))
    assert isinstance(outcome, RpcSuccess) and outcome.result["fallback"] == "timeout"
    (record,) = records(agent)
    assert (record["event"], record["reason"], record["errorClass"]) == ("fallback", "timeout", None)
    assert record["span"] is None and outcome.result["span"] == 0  # PASS-16: cut off before its Fold


@pytest.mark.anyio
async def test_a_step_in_a_thread_past_the_budget_does_not_hold_the_answer(
    agent: Path, project: Path
) -> None:
    """The budget ends the pass whatever step runs: a pure step in a worker thread that outlives it is left
    to finish for nobody, and the pass answers ``timeout`` (with its record) while the step still runs."""
    finished = threading.Event()

    def stuck_step() -> None:
        finished.wait(30)

    async def stuck(_params: CompactParams, *, progress: PassProgress | None, **_: object) -> CompactResult:
        assert progress is not None
        progress.span = 2
        await Offload().run(stuck_step)
        raise AssertionError("the step ended first")

    services = Services(socket_path="/s", run_pass=stuck, pass_budget_s=0.2)
    try:
        outcome = await call(services, "compact", marked_params(agent, project))
        assert not finished.is_set()  # answered while the step was still running
    finally:
        finished.set()
    assert isinstance(outcome, RpcSuccess) and outcome.result["fallback"] == "timeout"
    (record,) = records(agent)
    assert (record["event"], record["reason"], record["span"]) == ("fallback", "timeout", 2)


@pytest.mark.anyio
async def test_a_cancelled_pass_and_one_cut_off_by_the_methods_net_each_leave_a_record(
    agent: Path, project: Path
) -> None:
    """A pass whose client went away is recorded ``aborted`` (the shim's own incident for it is not written
    again); one cut off by the method's deadline net, past its budget, is a ``timeout`` fallback."""

    async def slow(_params: CompactParams, *, progress: PassProgress | None, **_: object) -> CompactResult:
        assert progress is not None
        progress.span = 3
        await anyio.sleep_forever()
        raise AssertionError

    services = Services(socket_path="/s", run_pass=slow)
    method = build_methods(services)["compact"]
    started = anyio.Event()

    async def hung_up() -> None:
        started.set()
        await method.call(None, **marked_params(agent, project))

    async with anyio.create_task_group() as group:
        group.start_soon(hung_up)
        await started.wait()
        await anyio.wait_all_tasks_blocked()  # the pass is running: its run_pass sleeps
        group.cancel_scope.cancel()  # the client hung up
    (aborted,) = records(agent)
    assert (aborted["event"], aborted["reason"], aborted["span"]) == ("aborted", "cancelled", 3)
    incident = {"session": marked_params(agent, project)["session"], "kind": "aborted", "reason": "signal"}
    await call(services, "incident", {**incident, "passId": aborted["passId"]})
    assert len(records(agent)) == 1 and services.pass_counts.aborted == 1

    async def deaf(_params: CompactParams, *, progress: PassProgress | None, **_: object) -> CompactResult:
        assert progress is not None
        progress.span = 3
        with anyio.CancelScope(shield=True):  # a step the pass's own budget cannot reach
            await anyio.sleep(0.3)
        await anyio.sleep_forever()
        raise AssertionError

    services = Services(socket_path="/s", run_pass=deaf, pass_budget_s=0.05)
    with anyio.move_on_after(0.1):  # as the registry's net does, past the budget
        await build_methods(services)["compact"].call(None, **marked_params(agent, project))
    record = records(agent)[-1]
    assert (record["event"], record["reason"], record["span"]) == ("fallback", "timeout", 3)


@pytest.mark.anyio
async def test_pass16_a_pass_cut_off_after_its_fold_falls_back_under_its_span_number(
    agent: Path, project: Path
) -> None:
    """PASS-16: the Fold numbered the span 4; the timeout's record and reply carry 4, and so does the
    pass-error's."""

    async def folded_then_slow(
        _params: CompactParams, *, progress: PassProgress | None, **_: object
    ) -> CompactResult:
        assert progress is not None
        progress.span = 4
        await anyio.sleep_forever()
        raise AssertionError

    async def folded_then_crash(
        _params: CompactParams, *, progress: PassProgress | None, **_: object
    ) -> CompactResult:
        assert progress is not None
        progress.span = 4
        raise KeyError("boom")

    for run_pass, reason in ((folded_then_slow, "timeout"), (folded_then_crash, "pass-error")):
        services = Services(socket_path="/s", run_pass=run_pass, pass_budget_s=0.01)
        outcome = await call(services, "compact", marked_params(agent, project))
        assert isinstance(outcome, RpcSuccess)
        assert (outcome.result["fallback"], outcome.result["span"]) == (reason, 4)
        record = records(agent)[-1]
        assert (record["event"], record["reason"], record["span"]) == ("fallback", reason, 4)


@pytest.mark.anyio
async def test_report_method_returns_the_digest(agent: Path, project: Path) -> None:
    services = Services(socket_path="/s")
    await call(services, "hello", {"session": session(agent, project)})
    outcome = await call(services, "report", {"session": session(agent, project)})
    assert isinstance(outcome, RpcSuccess)
    assert outcome.result["records"] == 1
    assert "extension-loaded" in outcome.result["digest"] and str(project) not in outcome.result["digest"]


def test_log18_cap_fit_counts_what_the_summary_caps_left_out() -> None:
    assert cap_fit({}) == {"fit": True, "cut": 0}
    assert cap_fit(None) == {"fit": True, "cut": 0}
    state = {
        "commands": [{}] * 25,  # newest 20 shown
        "decisions": [{}] * 31,  # newest 30 shown
        "errors": [{"open": True}] * 32 + [{"open": False}] * 5,  # 30 open errors shown
        "readFiles": [f"f{i}" for i in range(101)] + ["f0"],  # 100 distinct files shown
        "world": {"dirtyCount": 25, "dirty": [{}] * 25},  # 20 dirty paths listed
    }
    assert cap_fit(state) == {"fit": False, "cut": 5 + 1 + 2 + 1 + 5}
