"""The shareable digest: newest eight records, nothing identifying in clear (REPORT-1..REPORT-5)."""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.cli import main
from longhaul_daemon.log.records import RecordLog
from longhaul_daemon.log.report import build_report, digest, read_newest, run_report, short_hash
from longhaul_daemon.protocol import SessionFacts

SECRET_CWD = "/home/alice/secret-project"


def record(n: int, event: str = "compacted", **fields: Any) -> dict[str, Any]:
    return {
        "v": 1,
        "ts": f"2026-12-02T10:00:{n:02d}.000Z",
        "event": event,
        "session": {
            "cwd": SECRET_CWD,
            "sessionId": "019a-abcd",
            "model": "fake/fake-model",
            "thinkingLevel": "high",
        },
        "n": n,
        **fields,
    }


def write_log(path: Path, records: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def test_report2_newest_eight_oldest_first_and_backup_fills_up(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "compaction-state.jsonl"
    write_log(log.with_name(log.name + ".1"), [record(i) for i in range(10)])
    write_log(log, [record(i) for i in range(10, 13)])
    assert [r["n"] for r in read_newest(log)] == [5, 6, 7, 8, 9, 10, 11, 12]
    write_log(log, [record(i) for i in range(20, 40)])
    assert [r["n"] for r in read_newest(log)] == list(range(32, 40))


def test_report2_says_so_when_empty_or_off(tmp_path: Path) -> None:
    empty = build_report(str(tmp_path), str(tmp_path), None)
    assert empty.records == 0 and "no records" in empty.digest
    off = build_report(str(tmp_path), str(tmp_path), "off")
    assert off.records == 0 and "logging is off" in off.digest


def test_report3_no_paths_ids_excerpts_or_stacks_in_clear() -> None:
    records = [
        record(1, "extension-loaded", piVersion="0.73.1", piVersionVerified=True),
        record(
            2,
            "fallback",
            reason="daemon-unavailable",
            errorClass="DaemonUnavailableError",
            error="connect ENOENT /run/user/0/longhaul/daemon.sock and ~/x/y.txt",
            excerpts=["quoted user words"],
            stack="Traceback (most recent call last): /home/alice/x.py",
        ),
        record(3, "compaction", narrative={"kind": "whole", "calls": 2}, world={"status": "repository"}),
        record(4, "compacted", note="free text that is not a code"),
    ]
    text = digest(records)
    for secret in (
        SECRET_CWD,
        "019a-abcd",
        "/run/user",
        "~/x",
        "quoted user words",
        "Traceback",
        "free text",
    ):
        assert secret not in text
    assert short_hash(SECRET_CWD) in text and short_hash("019a-abcd") in text
    assert short_hash("/run/user/0/longhaul/daemon.sock") in text
    for kept in (
        "extension-loaded",
        "piVersion=0.73.1",
        "piVersionVerified=true",
        "session.model=fake/fake-model",
        "session.thinkingLevel=high",
        "reason=daemon-unavailable",
        "errorClass=DaemonUnavailableError",
        "narrative.kind=whole",
        "narrative.calls=2",
        "world.status=repository",
        "note=<28 chars>",
    ):
        assert kept in text, kept
    assert short_hash(SECRET_CWD) == short_hash(SECRET_CWD) and len(short_hash(SECRET_CWD)) == 9


def test_report5_everything_printed_passes_the_sanitizer() -> None:
    text = digest([record(1, "compacted", errorClass="E", error="bad \x1b[31mred\x1b[0m \u202e bell\x07")])
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert all(line.isprintable() for line in text.splitlines())


def test_report1_cli_and_daemon_function_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    facts = SessionFacts(cwd=str(tmp_path), sessionId="s", agentDir=str(agent), piVersion="0.73.1")
    log = RecordLog()
    for n in range(3):
        log.write(facts, "compacted", {"span": n})
    out = io.StringIO()
    monkeypatch.delenv("PI_COMPACT_STATE_DEBUG", raising=False)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["report", "--agent-dir", str(agent)]) == 0
    expected = build_report(facts.agentDir, facts.cwd, None)
    assert out.getvalue() == expected.digest + "\n"
    assert expected.records == 3 and str(tmp_path) not in out.getvalue()


def test_report1_cli_default_agent_dir_from_env_without_a_daemon(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write_log(agent / "logs" / "compaction-state.jsonl", [record(1)])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "LONGHAUL_"))}
    env["PI_CODING_AGENT_DIR"] = str(agent)
    done = subprocess.run(
        [sys.executable, "-m", "longhaul_daemon", "report"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "1. 2026-12-02T10:00:01.000Z compacted" in done.stdout
    assert SECRET_CWD not in done.stdout


@pytest.mark.parametrize("named_by", ["--agent-dir", "$PI_CODING_AGENT_DIR", "the default"])
def test_a_missing_agent_dir_is_an_error_not_an_empty_log(tmp_path: Path, named_by: str) -> None:
    missing = tmp_path / "nonexistent"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "LONGHAUL_"))}
    args = ["report"]
    if named_by == "--agent-dir":
        args += ["--agent-dir", str(missing)]
    elif named_by == "$PI_CODING_AGENT_DIR":
        env["PI_CODING_AGENT_DIR"] = str(missing)
    else:
        env["HOME"] = str(tmp_path)  # a HOME where pi never ran: no .pi/agent
        missing = tmp_path / ".pi" / "agent"
    done = subprocess.run(
        [sys.executable, "-m", "longhaul_daemon", *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert done.stdout == ""
    assert f"pi's agent directory {missing} ({named_by}) does not exist" in done.stderr
    assert "no records yet" not in done.stderr


def test_an_agent_dir_without_a_log_yet_is_not_an_error(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(agent_dir=str(tmp_path))
    assert run_report(args, out=out, err=err, env={}, cwd=str(tmp_path)) == 0
    assert out.getvalue() == "Longhaul report: the log (compaction-state.jsonl) holds no records yet.\n"
    assert err.getvalue() == ""


def test_report_never_reads_through_a_symlink_or_a_fifo(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    target = tmp_path / "target.jsonl"
    write_log(target, [record(1)])
    (logs / "compaction-state.jsonl").symlink_to(target)
    assert read_newest(logs / "compaction-state.jsonl") == []
    (logs / "compaction-state.jsonl").unlink()
    os.mkfifo(logs / "compaction-state.jsonl")
    assert read_newest(logs / "compaction-state.jsonl") == []
