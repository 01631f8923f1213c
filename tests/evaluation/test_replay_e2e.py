"""``replay`` runs a session real pi recorded through real pi again, with Longhaul, and counts it (REPLAY-*).

The recording has failing and passing tool calls, a file read, a user ``!command`` and two Longhaul
compactions. Its replay must reproduce the compaction count with no handler error, and the replayed session
must hold the same messages (tool results and the command's output come from the recording, nothing runs).
The exits REPLAY-8 asks for are checked too: 1 when pi cannot be found, 3 when an extension handler raised.
Output names transcripts by hash only, and a pipe gets no progress bar.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from e2e.scenario import agent_bash, expect_longhaul, wrap_up

from longhaul_daemon.evaluation.common import path_hash
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call
from longhaul_daemon.evaluation.harness.sandbox import Sandbox
from longhaul_daemon.evaluation.replay_command import run_replay

from .cli_run import private_env, run_cli

pytestmark = pytest.mark.e2e

_BROKEN_SHIM = """\
export default function (pi: any) {
  pi.on("session_before_compact", async () => {
    throw new Error("shim under test raised");
  });
}
"""


@pytest.fixture
def recording(
    sandbox: Sandbox, model_server: ModelServer, daemon: Daemon, start_pi: Callable[[], PiRpc], tmp_path: Path
) -> Path:
    """A session pi recorded with Longhaul: two compactions, copied to a name that must never be printed."""
    pi = start_pi()
    agent_bash(pi, model_server, "echo build $((40000+1))", "ls /nonexistent-dir-for-replay")
    pi.bash("echo user-ran; exit 2")
    wrap_up(pi, "one")
    assert pi.compact().get("success")
    model_server.enqueue(tool_call("read", path="notes.txt"), text("Read the notes."))
    pi.prompt("Read notes.txt, please.")
    wrap_up(pi, "two")
    assert pi.compact().get("success")
    pi.prompt("Carry on with build 40001.")
    session = pi.session_file()
    expect_longhaul(session, 2, span=2)
    pi.close()
    copy = tmp_path / "acme-confidential-session.jsonl"
    shutil.copyfile(session, copy)
    return copy


def _messages(path: Path) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    for line in path.read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "compaction":
            found.append(("compaction",))
        if entry.get("type") != "message":
            continue
        m = entry["message"]
        if m["role"] == "bashExecution":
            found.append((m["role"], m["command"], m["output"], m["exitCode"]))
        elif m["role"] == "toolResult":
            found.append((m["role"], m["toolName"], json.dumps(m["content"]), m["isError"]))
        elif m["role"] == "assistant":
            calls = [(b["name"], json.dumps(b["arguments"])) for b in m["content"] if b["type"] == "toolCall"]
            texts = [b["text"] for b in m["content"] if b["type"] == "text"]
            found.append((m["role"], tuple(calls), tuple(texts)))
        else:
            found.append((m["role"], json.dumps(m["content"])))
    return found


def _no_secret(done: Any, recording: Path) -> None:
    for secret in (str(recording.parent), recording.name, "acme", "nonexistent-dir", "Read notes"):
        assert secret not in done.stdout + done.stderr


def test_a_recorded_session_replays_with_its_compactions_and_no_handler_error(
    recording: Path, tmp_path: Path
) -> None:
    kept = tmp_path / "kept"
    env = private_env(tmp_path)
    done = run_cli("replay", str(recording), "--json", "--keep", str(kept), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""  # not a terminal: no progress bar
    _no_secret(done, recording)
    [outcome] = json.loads(done.stdout)["transcripts"]
    assert outcome["name"] == path_hash(recording)
    assert (outcome["recordedCompactions"], outcome["compactions"], outcome["longhaul"]) == (2, 2, 2)
    assert (outcome["handlerErrors"], outcome["fallbacks"], outcome["failedCompactions"]) == (0, 0, 0)
    assert (outcome["divergences"], outcome["skipped"], outcome["problem"]) == (0, 0, None)
    [replayed] = kept.glob("*.jsonl")
    assert _messages(replayed) == _messages(recording)
    assert not Path("/nonexistent-dir-for-replay").exists()

    done = run_cli("replay", str(recording), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    _no_secret(done, recording)
    assert "total: 2 compactions of 2 recorded, 2 by Longhaul, 0 fallbacks, 0 handler errors" in done.stdout


def test_replay_without_pi_exits_1_and_says_so(recording: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no-pi-here" / "pi"
    done = run_cli("replay", str(recording), "--pi", str(missing), env=private_env(tmp_path), cwd=tmp_path)
    assert done.returncode == 1
    assert "pi was not found" in done.stderr and done.stdout == ""
    assert str(missing) not in done.stderr


def test_a_handler_error_makes_replay_exit_3(recording: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken-shim.ts"
    broken.write_text(_BROKEN_SHIM)
    env = private_env(tmp_path)
    done = run_cli("replay", str(recording), "--json", "--shim", str(broken), env=env, cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    _no_secret(done, recording)
    assert "shim under test raised" not in done.stdout
    [outcome] = json.loads(done.stdout)["transcripts"]
    assert outcome["handlerErrors"] == 2  # one per compaction; pi's own summary ran each time
    assert (outcome["compactions"], outcome["longhaul"], outcome["fallbacks"]) == (2, 0, 2)


def test_replay_with_pis_own_compaction_counts_no_fallback(recording: Path, tmp_path: Path) -> None:
    env = private_env(tmp_path)
    done = run_cli("replay", str(recording), "--json", "--compactor", "pi", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    [outcome] = json.loads(done.stdout)["transcripts"]
    assert (outcome["compactor"], outcome["compactions"], outcome["longhaul"], outcome["fallbacks"]) == (
        "pi",
        2,
        0,
        0,
    )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_replay_draws_a_progress_bar_with_hashed_names(recording: Path, tmp_path: Path) -> None:
    args = argparse.Namespace(
        files=[str(recording)],
        pi=None,
        shim=None,
        compactor="longhaul",
        step_timeout=120.0,
        keep_recent_tokens=None,
        keep=None,
        json=False,
    )
    out, err = io.StringIO(), _Terminal()
    assert run_replay(args, out=out, err=err) == 0
    bar = err.getvalue()
    assert "replay [" in bar and "0/1" in bar and "1/1" in bar and "step " in bar
    assert path_hash(recording) in bar
    assert str(recording.parent) not in bar and recording.name not in bar
    assert bar.endswith("\r")  # the bar leaves a clean line for what follows
