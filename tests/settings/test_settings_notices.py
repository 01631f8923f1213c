"""longhaul.json and summarizer route problems: logged per pass, noticed once per session, shown by status.

Issue #13: a broken ``longhaul.json`` left no trace, and a summarizer without credentials quietly routed to
the session model. These tests go through the ``compact`` method with a stand-in pass (the real pass reads
the same files; its route decision arrives in the result's diagnostics, as here).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from rpc_replies import decoded

from longhaul_daemon.ops.status_view import format_status
from longhaul_daemon.protocol import CompactParams, CompactResult, RouteChoice, StatusResult
from longhaul_daemon.rpc.methods import Services, build_methods
from longhaul_daemon.rpc.registry import RpcSuccess
from longhaul_daemon.secrets.redaction import EMPTY
from longhaul_daemon.settings_notices import SettingsNotices, route_issue, settings_issues
from longhaul_daemon.user_settings import load_settings

pytestmark = pytest.mark.anyio


def _dirs(tmp_path: Path) -> tuple[Path, Path]:
    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    return agent, project


def _params(agent: Path, project: Path, session_id: str = "s1") -> dict[str, Any]:
    session = {"cwd": str(project), "sessionId": session_id, "agentDir": str(agent), "piVersion": "0.73.1"}
    return {
        "session": session,
        "preparation": {"firstKeptEntryId": "e1", "tokensBefore": 10},
        "branchEntries": [],
    }


def _pass(route: RouteChoice, notice: str | None = None) -> Any:
    async def run(_params: CompactParams, *, pass_id: str, **_: object) -> CompactResult:
        return CompactResult.model_validate(
            {
                "passId": pass_id,
                "span": 1,
                "compaction": {"summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 10, "details": {}},
                "after": {"spanRecord": {"closedAs": "whole"}, "line": {}},
                "notice": notice,
                "diagnostics": {"route": route.model_dump()},
            }
        )

    return run


async def _compact(services: Services, params: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(10):
        outcome = decoded(await build_methods(services)["compact"].call(None, **params))
    assert isinstance(outcome, RpcSuccess), outcome
    assert isinstance(outcome.result, dict)
    return outcome.result


NO_KEY = RouteChoice(configured="cheap/small", used="fake/fake-model", why="no-credentials")


async def test_each_problem_is_noticed_once_per_session_logged_every_pass_and_listed_by_status(
    tmp_path: Path, operational_log: io.StringIO
) -> None:
    agent, project = _dirs(tmp_path)
    (agent / "longhaul.json").write_text(json.dumps({"summarizer": "cheap/small", "retryNoteChars": -1}))
    (project / ".pi" / "longhaul.json").write_text("{not json")
    services = Services(socket_path="/s", run_pass=_pass(NO_KEY, notice="Longhaul closed span 1 without …"))

    first = await _compact(services, _params(agent, project))
    notice = first["notice"].splitlines()
    assert notice == [
        "Longhaul closed span 1 without …",  # the pass's own notice comes first
        f'Longhaul: "retryNoteChars" in {agent}/longhaul.json is not a positive whole number; '
        "2000 applies until it is fixed.",
        f"Longhaul: {project}/.pi/longhaul.json is not valid JSON; "
        "Longhaul's defaults apply until it is fixed.",
        f'Longhaul: the summarizer cheap/small ("summarizer" in {agent}/longhaul.json) was not used: '
        "pi has no credentials for it (log in, or set its API key); "
        "the session's model fake/fake-model wrote this summary.",
    ]
    second = await _compact(services, _params(agent, project))
    assert second["notice"] == "Longhaul closed span 1 without …"  # shown once per session
    other = await _compact(services, _params(agent, project, session_id="s2"))
    assert len(other["notice"].splitlines()) == 4  # another pi session is told too

    logged = [json.loads(line) for line in operational_log.getvalue().splitlines()]
    problems = [
        (r["requirement"], r["source"], r["problem"]) for r in logged if r["event"] == "config_problem"
    ]
    assert problems == 3 * [
        ("CONFIG-7", "agent", "bad-retryNoteChars"),
        ("CONFIG-9", "project", "not-json"),
        ("CONFIG-8", "route", "no-credentials"),
    ]
    assert str(tmp_path) not in operational_log.getvalue()  # codes, never paths, in the log

    status = services.status()
    assert status.config is not None
    assert (status.config.summarizer, status.config.used, status.config.why) == (
        NO_KEY.configured,
        NO_KEY.used,
        NO_KEY.why,
    )
    assert status.config.summarizerFile == f"{agent}/longhaul.json"
    assert len(status.config.problems) == 3
    table = format_status(StatusResult.model_validate(status.model_dump()))
    assert f"  summarizer cheap/small from {agent}/longhaul.json" in table
    assert "used fake/fake-model, not the summarizer: no-credentials" in table
    assert (
        f"  problems   {project}/.pi/longhaul.json is not valid JSON" not in table
    )  # first is retryNoteChars
    assert f"             {project}/.pi/longhaul.json is not valid JSON" in table


async def test_a_clean_configuration_adds_no_notice_and_status_says_what_ran(
    tmp_path: Path, operational_log: io.StringIO
) -> None:
    agent, project = _dirs(tmp_path)
    services = Services(socket_path="/s", run_pass=_pass(RouteChoice(used="fake/fake-model")))
    assert "summarizer no pass yet" in format_status(services.status())
    result = await _compact(services, _params(agent, project))
    assert result["notice"] is None
    assert "config_problem" not in operational_log.getvalue()
    table = format_status(services.status())
    assert "  summarizer none configured (the session's model)" in table
    assert "used fake/fake-model\n" in table and "problems" not in table


@pytest.mark.parametrize(
    ("content", "requirement", "words"),
    [
        (
            {"narrativeMode": "poetry"},
            "CONFIG-6",
            '"narrativeMode" in {path} is not "diff", "turns" or "auto"',
        ),
        ({"summarizer": 42}, "CONFIG-8", '"summarizer" in {path} is not "provider/modelId"'),
        ([1, 2], "CONFIG-9", "{path} does not hold a JSON object"),
        (
            {"sumarizer": "a/b"},
            "CONFIG-9",
            '"sumarizer" in {path} is not a Longhaul setting (did you mean "summarizer"?); it is ignored',
        ),
    ],
)
def test_every_settings_problem_names_its_file_and_key(
    tmp_path: Path, content: object, requirement: str, words: str
) -> None:
    agent, project = _dirs(tmp_path)
    path = agent / "longhaul.json"
    path.write_text(json.dumps(content))
    (issue,) = settings_issues(load_settings(str(agent), str(project)))
    assert issue.requirement == requirement and issue.source == "agent"
    assert issue.text.startswith(words.format(path=path))


def test_a_summarizer_that_was_used_is_no_problem(tmp_path: Path) -> None:
    agent, project = _dirs(tmp_path)
    settings = load_settings(str(agent), str(project))
    assert route_issue(settings, RouteChoice(configured="a/b", used="a/b")) is None
    assert route_issue(settings, None) is None
    gone = route_issue(settings, RouteChoice(configured="a/b", used=None, why="unknown-model"))
    assert gone is not None and gone.text.endswith(
        "pi has no such model; no model wrote this summary's narrative"
    )
    failed = route_issue(settings, RouteChoice(configured="a/b", used="s/m", why="failed:RateLimited"))
    assert failed is not None
    assert "was not used: calling it failed (RateLimited); the session's model s/m" in failed.text


def test_a_failing_report_never_spoils_the_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    agent, project = _dirs(tmp_path)
    watch = SettingsNotices()

    def broken(*_: object) -> object:
        raise OSError("disk on fire")

    monkeypatch.setattr("longhaul_daemon.settings_notices.settings_issues", broken)
    params = CompactParams.model_validate(_params(agent, project))
    result = CompactResult(passId="p", span=1)
    log = _Recorder()
    settings = load_settings(str(agent), str(project))
    assert watch.after_pass(params, result, log, settings, EMPTY) is result  # type: ignore[arg-type]
    assert log.events == [("config_report_failed", {"error_class": "OSError"})]


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, object]]] = []

    def error(self, event: str, **fields: object) -> None:
        self.events.append((event, fields))


async def test_an_unknown_key_is_noticed_with_its_guess_and_logged_as_a_code_only(
    tmp_path: Path, operational_log: io.StringIO
) -> None:
    agent, project = _dirs(tmp_path)
    (agent / "longhaul.json").write_text('{"sumarizer": "a/b", // a typo\n}', encoding="utf-8")
    services = Services(socket_path="/s", run_pass=_pass(RouteChoice(used="fake/fake-model")))
    result = await _compact(services, _params(agent, project))
    assert result["notice"] == (
        f'Longhaul: "sumarizer" in {agent}/longhaul.json is not a Longhaul setting '
        '(did you mean "summarizer"?); it is ignored.'
    )
    logged = [json.loads(line) for line in operational_log.getvalue().splitlines()]
    problems = [
        (r["requirement"], r["source"], r["problem"]) for r in logged if r["event"] == "config_problem"
    ]
    assert problems == [("CONFIG-9", "agent", "unknown-key")]
    assert "sumarizer" not in operational_log.getvalue()  # the user's key is never logged
    status = services.status()
    assert status.config is not None and status.config.problems == [result["notice"][len("Longhaul: ") : -1]]
