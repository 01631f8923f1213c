"""``longhaul-daemon state`` on session files a real pi wrote: what a user sees (INSPECT-1..INSPECT-12)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from longhaul_daemon.evaluation.harness.answers import FIXED_NARRATIVE
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .e2e_sandbox import REPO_ROOT
from .scenario import agent_bash, expect_longhaul, wrap_up
from .session_log import LINE_TYPE, compactions, customs, read_entries, wait_for_entries

pytestmark = pytest.mark.e2e

# A failing command whose output holds CSI colour codes and a BEL: the error text keeps that output line.
ANSI_OUTPUT = r"printf '\033[31mRED\033[0m\a\n'; exit 3"
# Raw escapes in the command text itself (the model's tool-call arguments): an OSC title set, a BEL, a C1 CSI
# and a bidi override.
RAW_COMMAND = "echo \x1b]0;pwned\x07 title \x9b31m c1 \u202eexe.txt"
HOSTILE_FILE = "notes-\x1b[2J\u202e.txt"
RAW_CHARS = ("\x1b", "\x07", "\x9b", "\u202e")


def _state(sandbox: Sandbox, *args: str, agent_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = sandbox.base_env()
    if agent_dir is not None:
        env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    env["PATH"] = "/nonexistent-bin"  # INSPECT-7: the inspector runs no git (nor anything else)
    return subprocess.run(
        [sys.executable, "-m", "longhaul_daemon", "state", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="surrogateescape",
        timeout=60,
        check=False,
    )


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _assert_clean(run: subprocess.CompletedProcess[str]) -> None:
    for ch in RAW_CHARS:
        assert ch not in run.stdout, f"INSPECT-8: {ch!r} reached stdout raw:\n{run.stdout!r}"
        assert ch not in run.stderr, f"INSPECT-8: {ch!r} reached stderr raw:\n{run.stderr!r}"


def test_inspector_on_a_longhaul_session(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    pi = start_pi()
    agent_bash(pi, model_server, "echo alpha", "ls /nonexistent-dir-alpha")
    wrap_up(pi, "round 1")
    assert pi.compact().get("success") is True, pi.diagnostics()
    session_file = pi.session_file()
    first = expect_longhaul(session_file, 1, span=1)

    model_server.enqueue(
        tool_call("bash", command=ANSI_OUTPUT),
        tool_call("bash", command=RAW_COMMAND),
        tool_call("write", path=HOSTILE_FILE, content="hostile name\n"),
        text("Ran the colour test and wrote the notes."),
    )
    pi.prompt("Please run the colour test and write the notes file.")
    wrap_up(pi, "round 2")
    assert pi.compact().get("success") is True, pi.diagnostics()
    second = expect_longhaul(session_file, 2, span=2)
    pi.close()
    stored = "".join(_strings(second.state))
    assert "\x1b" not in stored and "\u202e" not in stored  # issue 12: the state is stored clean
    before = session_file.read_bytes()
    assert b"\\u001b" in before and "\u202e".encode() in before  # the transcript itself still holds them

    shown = _state(sandbox, str(session_file))
    assert shown.returncode == 0, shown.stderr
    _assert_clean(shown)
    assert f"Transcript {session_file}" in shown.stdout
    assert "2 Longhaul spans, 0 foreign compactions, 0 anomalies" in shown.stdout  # INSPECT-2
    assert "# Longhaul state after span 2 (pass " in shown.stdout
    assert "echo alpha" in shown.stdout and "RED" in shown.stdout and "notes-" in shown.stdout

    newest = _state(sandbox)  # INSPECT-1: no FILE, the newest transcript under $PI_CODING_AGENT_DIR
    assert newest.returncode == 0, newest.stderr
    assert newest.stdout == shown.stdout

    spans = _state(sandbox, str(session_file), "--spans")  # INSPECT-3
    assert spans.returncode == 0, spans.stderr
    _assert_clean(spans)
    for comp, n in ((first, 1), (second, 2)):
        head = f"Span {n}: compaction {comp.entry['id']}, pass {comp.details['passId']}"
        assert f"{head}, closed whole" in spans.stdout
    assert "exit 2: ls /nonexistent-dir-alpha" in spans.stdout
    assert "exit 3: printf" in spans.stdout and f"work log: {FIXED_NARRATIVE}" in spans.stdout
    assert "line: 1 model calls, " in spans.stdout  # the Diff's one call, counted in the Compaction line

    anomalies = _state(sandbox, str(session_file), "--anomalies")  # INSPECT-4
    assert anomalies.returncode == 0 and "No anomalies" in anomalies.stdout, anomalies.stdout

    at_one = _state(sandbox, str(session_file), "--span", "1")  # INSPECT-5
    assert at_one.returncode == 0, at_one.stderr
    assert "# Longhaul state after span 1 (pass " in at_one.stdout and "printf" not in at_one.stdout
    beyond = _state(sandbox, str(session_file), "--span", "3")
    assert beyond.returncode == 2 and beyond.stdout == ""
    assert "span 3 is not on this branch; its Longhaul spans are 1..2" in beyond.stderr

    as_json = _state(sandbox, str(session_file), "--json")  # INSPECT-6, INSPECT-8
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stdout.isascii(), "INSPECT-8: JSON output escapes every non-ASCII character"
    assert json.loads(as_json.stdout) == second.state
    at_one_json = _state(sandbox, str(session_file), "--json", "--span", "1")
    assert json.loads(at_one_json.stdout) == first.state

    assert session_file.read_bytes() == before, "INSPECT-12: the inspector wrote to the transcript"


def test_inspector_on_a_foreign_only_session(
    sandbox: Sandbox, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["LONGHAUL_SOCKET"] = str(sandbox.root / "nowhere" / "d.sock")  # no daemon runs
    pi = start_pi()
    agent_bash(pi, model_server, "echo no-daemon")
    wrap_up(pi, "no daemon")
    assert pi.compact().get("success") is True, pi.diagnostics()
    session_file = pi.session_file()
    comps = compactions(read_entries(session_file))
    assert len(comps) == 1 and comps[0].get("fromHook") is False, f"not pi's own compaction: {comps}"
    wait_for_entries(session_file, lambda es: bool(customs(es, LINE_TYPE)), what="the fallback line")
    pi.close()

    shown = _state(sandbox, str(session_file))  # INSPECT-9
    assert shown.returncode == 0, shown.stderr
    assert "0 Longhaul spans, 1 foreign compaction" in shown.stdout
    assert f"Foreign compaction {comps[0]['id']}: pi's own compaction, not read as state" in shown.stdout
    assert "No Longhaul compaction on this branch: the state is empty." in shown.stdout
    assert "# Longhaul state after span 0 (pass none)" in shown.stdout
    assert "echo no-daemon" not in shown.stdout

    spans = _state(sandbox, str(session_file), "--spans")
    assert f"Foreign compaction {comps[0]['id']}" in spans.stdout and "fell back to pi (" in spans.stdout
    as_json = json.loads(_state(sandbox, str(session_file), "--json").stdout)
    assert as_json["span"] == 0 and as_json["rules"] == [] and as_json["commands"] == []
    doc = json.loads(_state(sandbox, str(session_file), "--json", "--spans").stdout)
    assert [s["kind"] for s in doc["spans"]] == ["foreign"] and doc["spans"][0]["fromHook"] is False
    at_one = _state(sandbox, str(session_file), "--span", "1")
    assert at_one.returncode == 2 and "it has no Longhaul span" in at_one.stderr


def test_inspector_without_a_transcript(sandbox: Sandbox) -> None:
    """INSPECT-1, INSPECT-10: an agent dir with no session and a missing file are errors, not tracebacks."""
    empty = sandbox.root / "empty-agent"
    empty.mkdir()
    run = _state(sandbox, agent_dir=empty)
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("longhaul-daemon state: no pi transcript found"), run.stderr
    missing = _state(sandbox, str(sandbox.root / "missing.jsonl"))
    assert missing.returncode == 1 and "no such file" in missing.stderr and "Traceback" not in missing.stderr
