"""The method table: compactor choice, hello, compact outcomes and counters, busy sessions, status."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog
from rpc_replies import decoded

from longhaul_daemon import __version__
from longhaul_daemon.protocol import PROTOCOL_VERSION, CompactParams, CompactResult
from longhaul_daemon.rpc import methods
from longhaul_daemon.rpc.methods import Services, build_methods
from longhaul_daemon.rpc.registry import METHOD_DEADLINE_S, RpcFailure, RpcSuccess
from longhaul_daemon.rpc.tool_methods import STRIP_DEADLINE_S
from longhaul_daemon.user_settings import Settings, choose_compactor, load_settings

SESSION = {"cwd": "/w", "sessionId": "s1", "agentDir": "/a", "piVersion": "0.1"}


def compact_params(session_id: str = "s1", compactor: str | None = None) -> dict[str, Any]:
    session: dict[str, Any] = {**SESSION, "sessionId": session_id}
    if compactor is not None:
        session["env"] = {"PI_COMPACTOR": compactor}
    return {
        "session": session,
        "preparation": {"firstKeptEntryId": "e1", "tokensBefore": 10},
        "branchEntries": [],
    }


def result_for(
    pass_id: str, *, closed_as: str | None = "whole", fallback: str | None = None, reason: str | None = None
) -> CompactResult:
    if fallback is not None:
        return CompactResult(passId=pass_id, span=1, fallback=fallback)
    return CompactResult.model_validate(
        {
            "passId": pass_id,
            "span": 1,
            "compaction": {"summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 10, "details": {}},
            "after": {"spanRecord": {"closedAs": closed_as, "reason": reason}, "line": {}},
        }
    )


async def call(services: Services, method: str, params: dict[str, Any]) -> RpcSuccess | RpcFailure:
    with anyio.fail_after(10):
        return decoded(await build_methods(services)[method].call(None, **params))


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "longhaul"),
        ("", "longhaul"),
        ("state", "longhaul"),
        ("  State \n", "longhaul"),
        ("pi", "pi"),
        (" PI ", "pi"),
        ("something-else", "pi"),
    ],
)
def test_choose_compactor(value: str | None, expected: str) -> None:
    assert choose_compactor(value) == expected


@pytest.mark.anyio
async def test_hello_reports_versions_budget_and_compactor() -> None:
    services = Services(socket_path="/s", pass_budget_s=12.5)
    outcome = await call(services, "hello", {"session": {**SESSION, "env": {"PI_COMPACTOR": " Pi"}}})
    assert outcome == RpcSuccess(
        {
            "daemonVersion": __version__,
            "protocolVersion": PROTOCOL_VERSION,
            "compactor": "pi",
            "deadlineMs": 12500,
            "summarizer": None,
        }
    )
    assert len(services.sessions_seen) == 1 and "s1" in services.sessions_seen


@pytest.mark.anyio
async def test_config5_config8_hello_names_the_summarizer_from_the_sessions_longhaul_json(
    tmp_path: Path,
) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    (agent / "longhaul.json").write_text(json.dumps({"summarizer": "fake/agent-model"}))
    session = {**SESSION, "agentDir": str(agent), "cwd": str(project)}
    outcome = await call(Services(socket_path="/s"), "hello", {"session": session})
    assert isinstance(outcome, RpcSuccess) and outcome.result["summarizer"] == "fake/agent-model"
    (project / ".pi" / "longhaul.json").write_text(json.dumps({"summarizer": "fake/project-model"}))
    outcome = await call(Services(socket_path="/s"), "hello", {"session": session})
    assert isinstance(outcome, RpcSuccess) and outcome.result["summarizer"] == "fake/project-model"


@pytest.mark.anyio
async def test_compact_stands_down_when_the_session_chose_pi() -> None:
    async def never(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        raise AssertionError("the pass must not run")

    outcome = await call(
        Services(socket_path="/s", run_pass=never), "compact", compact_params(compactor="pi")
    )
    assert isinstance(outcome, RpcSuccess)
    assert outcome.result["fallback"] == "stand-down"
    assert outcome.result["span"] == 0
    assert len(outcome.result["passId"]) == 12


@pytest.mark.anyio
async def test_compact_counts_each_close_kind_as_itself_and_fallbacks() -> None:
    closes = [
        ("whole", None),
        ("narrative-less", "rate-limited"),
        ("chunk-missing", "labels-tool-loop"),
        ("empty", None),
        ("chunk-missing", "labels-tool-loop"),
        ("partial", "unlabeled-messages"),
    ]
    kinds: Iterator[dict[str, str | None]] = iter(
        [*({"closed_as": c, "reason": r} for c, r in closes), {"fallback": "no-model"}]
    )

    async def fake(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        return result_for(pass_id, **next(kinds))

    services = Services(socket_path="/s", run_pass=fake)
    replies = [await call(services, "compact", compact_params()) for _ in range(7)]
    assert all(isinstance(reply, RpcSuccess) for reply in replies)
    assert services.pass_counts.model_dump() == {
        "whole": 1,
        "partial": 1,  # FAIL-4, ours
        "narrativeLess": 1,
        "chunkMissing": 2,
        "empty": 1,
        "fallback": 1,
        "aborted": 0,
        # what status says about the passes that did less than close whole
        "reasons": {"rate-limited": 1, "labels-tool-loop": 2, "unlabeled-messages": 1, "no-model": 1},
    }
    assert services.passes_in_flight == 0
    assert services.busy_sessions == set()


@pytest.mark.anyio
async def test_compact_past_its_budget_falls_back_with_timeout() -> None:
    async def slow(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    services = Services(socket_path="/s", run_pass=slow, pass_budget_s=0.05)
    outcome = await call(services, "compact", compact_params())
    assert isinstance(outcome, RpcSuccess)
    assert outcome.result["fallback"] == "timeout"
    assert services.pass_counts.fallback == 1


@pytest.mark.anyio
async def test_a_crashing_pass_falls_back_with_pass_error() -> None:
    async def crash(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        raise ValueError("MARKER-secret")

    services = Services(socket_path="/s", run_pass=crash)
    outcome = await call(services, "compact", compact_params())
    assert isinstance(outcome, RpcSuccess)
    assert outcome.result["fallback"] == "pass-error"
    assert "MARKER" not in str(outcome.result)
    assert services.pass_counts.fallback == 1
    assert services.busy_sessions == set()


@pytest.mark.anyio
async def test_a_second_compact_for_a_busy_session_is_refused_and_others_run() -> None:
    release = anyio.Event()
    started = anyio.Event()

    async def held(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        started.set()
        await release.wait()
        return result_for(pass_id)

    services = Services(socket_path="/s", run_pass=held)
    methods = build_methods(services)
    first: list[Any] = []

    async def first_pass() -> None:
        first.append(decoded(await methods["compact"].call(None, **compact_params("s1"))))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first_pass)
            await started.wait()
            assert services.passes_in_flight == 1
            busy = decoded(await methods["compact"].call(None, **compact_params("s1")))
            assert busy == RpcFailure(-32002, "A pass for this session is already running", None)
            status = await methods["status"].call(None)
            assert isinstance(status, RpcSuccess)
            assert status.result["inFlight"] == 1
            release.set()
            other = decoded(await methods["compact"].call(None, **compact_params("s2")))
            assert isinstance(other, RpcSuccess)
    assert isinstance(first[0], RpcSuccess)
    assert services.pass_counts.whole == 2


@pytest.mark.anyio
async def test_a_cancelled_pass_counts_as_aborted_and_frees_the_session() -> None:
    started = anyio.Event()

    async def hang(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    services = Services(socket_path="/s", run_pass=hang)
    methods = build_methods(services)

    async def compact() -> None:
        await methods["compact"].call(None, **compact_params())

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(compact)
            await started.wait()
            tg.cancel_scope.cancel()
    assert services.pass_counts.aborted == 1
    assert services.busy_sessions == set()
    assert services.passes_in_flight == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("method", "extra"),
    [
        (
            "compacted",
            {"compactionEntryId": "c1", "fromExtension": True, "summaryChars": 5, "tokensBefore": 9},
        ),
        ("compact_failed", {"reason": "MARKER text of an error message", "span": 2}),
        ("incident", {"kind": "aborted", "error": "MARKER text", "errorClass": "AbortError"}),
    ],
)
async def test_record_methods_answer_ok(method: str, extra: dict[str, Any]) -> None:
    services = Services(socket_path="/s")
    with structlog.testing.capture_logs() as logs:
        outcome = await call(services, method, {"session": SESSION, **extra})
    assert outcome == RpcSuccess({"ok": True})
    assert len(services.sessions_seen) == 1 and "s1" in services.sessions_seen
    assert [entry["event"] for entry in logs] == [method]
    assert "MARKER" not in json.dumps(logs)  # codes, ids and counts only


@pytest.mark.anyio
async def test_status_reports_identity_and_counts() -> None:
    services = Services(socket_path="/run/x.sock", socket_activated=True)
    outcome = await call(services, "status", {})
    assert isinstance(outcome, RpcSuccess)
    result = outcome.result
    assert result["version"] == __version__
    assert result["pid"] == os.getpid()
    assert result["socket"] == "/run/x.sock"
    assert result["socketActivated"] is True
    assert result["passes"] == {
        "whole": 0,
        "partial": 0,
        "narrativeLess": 0,
        "chunkMissing": 0,
        "empty": 0,
        "fallback": 0,
        "aborted": 0,
        "reasons": {},
    }
    assert result["uptimeS"] >= 0


def test_every_method_has_a_deadline_and_the_tools_answer_within_what_the_shim_waits() -> None:
    """Issue 16 item 7: no method may hold a connection slot without end; strip answers within the 2 s the
    shim waits (lib/strip.ts), the others within METHOD_DEADLINE_S unless they name their own (compact)."""
    methods = build_methods(Services(socket_path="/s"))
    assert all(method.deadline_s is not None for method in methods.values())
    assert methods["strip"].deadline_s == STRIP_DEADLINE_S == 2.0
    assert methods["recall"].deadline_s == methods["report"].deadline_s == METHOD_DEADLINE_S
    assert methods["compact"].deadline_s > METHOD_DEADLINE_S


@pytest.mark.anyio
async def test_compact_reads_longhaul_json_once_and_hands_it_to_the_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "cwd"
    (cwd / ".pi").mkdir(parents=True)
    agent.mkdir()
    (agent / "longhaul.json").write_text(json.dumps({"concurrency": {"default": 3}, "retryNoteChars": 900}))
    (cwd / ".pi" / "longhaul.json").write_text(json.dumps({"narrativeMode": "turns"}))
    reads: list[tuple[str, str]] = []

    def counted(agent_dir: str, at: str) -> Settings:
        reads.append((agent_dir, at))
        return load_settings(agent_dir, at)

    monkeypatch.setattr(methods, "load_settings", counted)
    handed: list[object] = []

    async def fake(_params: CompactParams, *, pass_id: str, **context: object) -> CompactResult:
        handed.append(context.get("settings"))
        return result_for(pass_id)

    services = Services(socket_path="/s", run_pass=fake)
    params = compact_params()
    params["session"] = {**params["session"], "agentDir": str(agent), "cwd": str(cwd)}
    assert isinstance(await call(services, "compact", params), RpcSuccess)
    assert reads == [(str(agent), str(cwd))]
    assert handed == [load_settings(str(agent), str(cwd))]  # what a cold read gives
    # a session's file never sets the daemon-wide provider limits (serve --concurrency does)
    assert services.provider_limits.limit_for("any-provider") == 4
