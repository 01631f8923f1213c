"""A recorded branch becomes the replay's steps; stand-ins answer with the recorded results (REPLAY-2, -3).

The script is checked on a hand-built branch; the stand-in shell is run the way pi runs it (``shell -c CMD``)
to show a user command gets its recorded output and exit code and that nothing is executed.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from longhaul_daemon.evaluation.script import build_script, estimate_tokens, keep_recent_tokens
from longhaul_daemon.evaluation.standins import install_standins

from .branches import BranchBuilder


def _recorded() -> BranchBuilder:
    b = BranchBuilder()
    b.assistant("greeting before any user message")  # cannot be replayed: nothing asks for it
    b.user("run the tests")
    b.tool("bash", {"command": "pytest -q"}, "1 failed\n\nCommand exited with code 1", error=True)
    b.assistant("One test fails.")
    b.user_bash("touch /tmp/should-not-exist-replay", "", 0)
    b.user_bash("git status", "secret", 0, excluded=True)  # a !! command: not replayed
    kept = b.user("wrap-up " + "x" * 400)
    b.assistant("ack")
    b.compaction(kept, "s1")
    b.compaction(kept, "s2")  # pi refuses a compaction right after a compaction
    b.user("next")
    b.assistant("done")
    return b


def test_steps_follow_the_recording() -> None:
    script = build_script(_recorded().entries)
    assert [s.kind for s in script.steps] == ["prompt", "bash", "prompt", "compact", "prompt"]
    first = script.steps[0]
    assert first.text == "run the tests"
    assert [r.stop for r in first.replies] == ["toolUse", "stop"]
    assert first.replies[0].calls[0].name == "bash" and first.replies[0].calls[0].id == "call_1"
    assert script.skipped == 3  # the opening assistant message, the !! command, the second compaction
    assert script.tool_results["call_1"]["isError"] is True
    assert script.compactions == 1 and script.prompts == 3 and script.tool_names == ["bash"]


def test_keep_recent_tokens_reproduces_the_recorded_cut() -> None:
    branch = _recorded().entries
    wrap_up = next(
        e for e in branch if e["type"] == "message" and "wrap-up" in str(e["message"].get("content"))
    )
    ack = branch[branch.index(wrap_up) + 1]
    tokens = keep_recent_tokens(branch)
    # pi walks back from the newest message: the ack alone stays under the budget, the wrap-up reaches it.
    assert (
        estimate_tokens(ack["message"])
        < tokens
        <= estimate_tokens(ack["message"]) + estimate_tokens(wrap_up["message"])
    )


def test_the_stand_in_shell_prints_the_recorded_output_and_runs_nothing(tmp_path: Path) -> None:
    script = build_script(_recorded().entries)
    tools = tmp_path / "tools"
    tools.mkdir()
    standins = install_standins(tools, script)
    env = {**os.environ, **standins.env}
    command = "touch /tmp/should-not-exist-replay"
    done = subprocess.run([str(standins.shell), "-c", command], env=env, capture_output=True, timeout=30)
    assert (done.returncode, done.stdout) == (0, b"")
    assert not Path("/tmp/should-not-exist-replay").exists()
    unknown = subprocess.run(
        [str(standins.shell), "-c", "rm -rf ~"], env=env, capture_output=True, timeout=30
    )
    assert unknown.returncode == 127 and b"no recorded output" in unknown.stdout
    names = json.loads(Path(standins.env["LONGHAUL_REPLAY_TOOLS"]).read_text())
    assert names == ["bash"]
    assert "registerTool" in standins.extension.read_text()
