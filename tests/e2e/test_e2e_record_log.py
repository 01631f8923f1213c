"""The record log and /longhaul-report with a real pi: records, no transcript text, a shareable digest.

LOG-1, LOG-5, LOG-16, LOG-17, LOG-19, LOG-24, FAIL-15, REPORT-1, REPORT-3, REPORT-4.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .print_mode import run_print
from .scenario import agent_bash, expect_longhaul, wrap_up
from .session_log import compactions, read_entries

pytestmark = pytest.mark.e2e

# One marker per place transcript text can hide; none may reach the log (LOG-5).
MARKERS = {
    "user": "QZUSERMARK",
    "assistant": "QZASSISTMARK",
    "command": "QZCMDMARK",
    "output": "QZOUTMARK",
    "file": "QZFILEMARK",
    "instructions": "QZINSTRMARK",
}
REPORT_COMMAND = "/longhaul-report"
WAIT_S = 20.0


def log_file(sandbox: Sandbox) -> Path:
    return sandbox.agent_dir / "logs" / "compaction-state.jsonl"


def records(sandbox: Sandbox) -> list[dict[str, Any]]:
    path = log_file(sandbox)
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_records(sandbox: Sandbox, predicate: Callable[[list[dict[str, Any]]], bool], what: str) -> None:
    """Records arrive from fire-and-forget shim calls: poll the log (bounded; never a timing assertion)."""
    deadline = time.monotonic() + WAIT_S
    while not predicate(records(sandbox)):
        assert time.monotonic() < deadline, f"{what}: not in the log; events so far: {events(sandbox)}"
        time.sleep(0.1)


def events(sandbox: Sandbox) -> list[str]:
    return [str(r["event"]) for r in records(sandbox)]


def ask_report(pi: PiRpc) -> str:
    """Run /longhaul-report over RPC and return the notice it shows (REPORT-4: a UI notice, not a message)."""
    start = pi.mark()
    response = pi.request({"type": "prompt", "message": REPORT_COMMAND})
    assert response.get("success") is True, f"{REPORT_COMMAND} rejected: {response}\n{pi.diagnostics()}"
    # A notice held through a compaction shows after pi's redraw and may come first: wait for the report's.
    _, notice = pi.wait_event(
        lambda e: (
            e.get("type") == "extension_ui_request"
            and e.get("method") == "notify"
            and str(e.get("message", "")).startswith("Longhaul report")
        ),
        start=start,
        what=f"the {REPORT_COMMAND} notice",
    )
    return str(notice["message"])


def cli_report(sandbox: Sandbox) -> str:
    env = sandbox.base_env()
    done = subprocess.run(
        [sys.executable, "-m", "longhaul_daemon", "report", "--agent-dir", str(sandbox.agent_dir)],
        cwd=sandbox.project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_records_hold_no_transcript_text_and_the_report_is_shareable(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    pi = start_pi()
    model_server.enqueue(
        tool_call("write", path=f"{MARKERS['file']}.txt", content=f"body {MARKERS['output']}\n"),
        text(f"Wrote it. {MARKERS['assistant']}"),
    )
    pi.prompt(f"Please write a file for me {MARKERS['user']}")
    agent_bash(pi, model_server, f"echo {MARKERS['command']} {MARKERS['output']}")
    wrap_up(pi, "one")
    response = pi.compact(f"focus on {MARKERS['instructions']}")
    assert response.get("success") is True, f"compact failed: {response}\n{pi.diagnostics()}"
    first = expect_longhaul(pi.session_file(), 1, span=1)
    assert MARKERS["command"] in first.summary  # the markers are really in what the pass saw

    agent_bash(pi, model_server, f"echo second {MARKERS['command']}")
    wrap_up(pi, "two")
    assert pi.compact().get("success") is True
    expect_longhaul(pi.session_file(), 2, span=2)
    wait_records(
        sandbox, lambda rs: [r["event"] for r in rs].count("compacted") == 2, "two compacted records"
    )

    raw = log_file(sandbox).read_text()
    for where, marker in MARKERS.items():
        assert marker not in raw, f"LOG-5: the {where} marker {marker} is in the log"
    assert log_file(sandbox).stat().st_mode & 0o777 == 0o600
    assert log_file(sandbox).parent.stat().st_mode & 0o777 == 0o700

    recs = records(sandbox)
    loaded = [r for r in recs if r["event"] == "extension-loaded"]
    assert loaded and loaded[0]["piVersion"] == "0.73.1" and loaded[0]["piVersionVerified"] is True
    session_id = pi.get_state()["sessionId"]
    for record in recs:
        assert record["v"] == 1 and isinstance(record["ts"], str)
        assert record["session"]["sessionId"] == session_id  # LOG-6
        assert record["session"]["cwd"] == str(sandbox.project)
        assert record["session"]["model"] == "fake/fake-model"
    compaction = [r for r in recs if r["event"] == "compaction"]
    assert [r["span"] for r in compaction] == [1, 2]
    for key in (
        "tokensBefore",
        "summaryChars",
        "narrative",
        "route",
        "capFit",
        "world",
        "carried",
        "durationMs",
    ):
        assert key in compaction[0], key
    assert compaction[0]["summaryChars"] == len(first.summary)
    assert compaction[0]["world"]["status"] == "repository"
    compacted = [r for r in recs if r["event"] == "compacted"]
    assert [(r["fromExtension"], r["span"]) for r in compacted] == [(True, 1), (True, 2)]
    assert compacted[0]["summaryChars"] == len(first.summary) and compacted[0]["tokensBefore"] > 0

    notice = ask_report(pi)
    assert notice.startswith("Longhaul report: the newest ")
    assert "compaction" in notice and "piVersion=0.73.1" in notice
    for marker in MARKERS.values():
        assert marker not in notice
    for path in (str(sandbox.root), str(sandbox.project), str(sandbox.agent_dir), session_id):
        assert path not in notice, f"REPORT-3: {path} in the digest"
    assert not any(part.startswith(("/", "~")) for part in notice.split()), notice
    assert cli_report(sandbox) == notice + "\n"  # REPORT-1: the same digest from the command line
    assert model_server.requests("pi-summary") == []  # REPORT-5: no model call for the report either


def test_stand_down_session_writes_loaded_and_compacted_but_no_compaction(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["PI_COMPACTOR"] = "pi"
    pi = start_pi()
    agent_bash(pi, model_server, "echo stand-down")
    wrap_up(pi, "stand down")
    assert pi.compact().get("success") is True
    assert compactions(read_entries(pi.session_file()))[0].get("fromHook") is not True
    wait_records(sandbox, lambda rs: "compacted" in [r["event"] for r in rs], "a compacted record")
    recs = records(sandbox)
    assert [r["event"] for r in recs] == ["extension-loaded", "compacted"]
    assert recs[0]["compactor"] == "pi"
    assert recs[1]["fromExtension"] is False
    notice = ask_report(pi)  # REPORT-5: the report works in a stand-down session
    assert "compacted" in notice and "fromExtension=false" in notice


def test_fail15_no_daemon_the_shim_writes_the_fallback_record(
    sandbox: Sandbox, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["LONGHAUL_SOCKET"] = str(sandbox.root / "nowhere" / "d.sock")
    pi = start_pi()
    agent_bash(pi, model_server, "echo no daemon")
    wrap_up(pi, "no daemon")
    assert pi.compact().get("success") is True
    wait_records(sandbox, lambda rs: "fallback" in [r["event"] for r in rs], "the shim's fallback record")
    (record,) = records(sandbox)
    assert (record["event"], record["reason"], record["errorClass"]) == (
        "fallback",
        "daemon-unavailable",
        "DaemonUnavailableError",
    )
    assert record["session"]["sessionId"] == pi.get_state()["sessionId"]
    assert str(sandbox.home) not in record["error"]  # LOG-7: the home directory as ~
    assert log_file(sandbox).stat().st_mode & 0o777 == 0o600
    notice = ask_report(pi)
    assert notice.startswith("Longhaul report: the daemon did not answer")
    assert "fallback" in cli_report(sandbox)


def test_off_value_writes_nothing(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["PI_COMPACT_STATE_DEBUG"] = " Off "
    pi = start_pi()
    agent_bash(pi, model_server, "echo off")
    wrap_up(pi, "off")
    assert pi.compact().get("success") is True
    expect_longhaul(pi.session_file(), 1, span=1)
    assert ask_report(pi).startswith("Longhaul report: logging is off")
    assert not (sandbox.agent_dir / "logs").exists()  # LOG-3: no file and no directory
    assert not any(name.startswith(("Off", " Off")) for name in os.listdir(sandbox.project))


def test_log2_value_1_writes_a_file_named_1_in_the_project(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["PI_COMPACT_STATE_DEBUG"] = "1"
    pi = start_pi()
    agent_bash(pi, model_server, "echo one")
    wrap_up(pi, "one")
    assert pi.compact().get("success") is True
    expect_longhaul(pi.session_file(), 1, span=1)
    literal = sandbox.project / "1"
    deadline = time.monotonic() + WAIT_S
    while "compacted" not in literal.read_text() if literal.exists() else True:
        assert time.monotonic() < deadline, "no compacted record in the file named 1"
        time.sleep(0.1)
    assert literal.stat().st_mode & 0o777 == 0o600
    assert not (sandbox.agent_dir / "logs").exists()


def test_report4_print_mode_writes_only_the_digest_to_stdout(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer
) -> None:
    run = run_print(sandbox, REPORT_COMMAND)
    assert run.returncode == 0, f"pi -p exit {run.returncode}\nstderr:\n{run.stderr}"
    lines = run.stdout.splitlines()
    assert lines and lines[0].startswith("Longhaul report:"), run.stdout
    assert all(line.split(" ", 1)[0].rstrip(".").isdigit() for line in lines[1:]), run.stdout
    assert str(sandbox.root) not in run.stdout
    assert model_server.requests("agent") == []  # the command never reached the model
