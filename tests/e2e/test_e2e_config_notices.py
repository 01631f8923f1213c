"""Configuration problems reach the user through a real pi: noticed once per session, and in ``status``.

Issue #13: a summarizer pi has no credentials for used to route to the session model without a word, and a
broken ``longhaul.json`` left no trace, nor did a misspelt key. Here the agent's longhaul.json names a model
pi knows but has no key for and misspells ``narrativeMode``, and the project's longhaul.json is not JSON;
the compaction still goes through Longhaul on the session model, pi shows each problem once, and
``longhaul-daemon status`` lists them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import notices
from .scenario import expect_longhaul, wrap_up

pytestmark = pytest.mark.e2e

KEYLESS = "anthropic/claude-sonnet-4-5"  # a model pi ships; the sandbox has no Anthropic key


def test_a_keyless_summarizer_and_a_broken_file_are_shown_once_and_listed_by_status(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env.update(ANTHROPIC_API_KEY="", ANTHROPIC_OAUTH_TOKEN="")
    agent_file = sandbox.agent_dir / "longhaul.json"
    agent_file.write_text(json.dumps({"summarizer": KEYLESS, "narativeMode": "turns"}))  # and a typo
    project_file = sandbox.project / ".pi" / "longhaul.json"
    project_file.parent.mkdir()
    project_file.write_text("{not json")
    pi = start_pi()

    pi.prompt("Please look at the export module.")
    wrap_up(pi, "first")
    start = pi.mark()
    assert pi.compact().get("success") is True, pi.diagnostics()
    expect_longhaul(pi.session_file(), 1, span=1)
    shown = [line for notice in notices(pi, start) for line in notice.splitlines()]
    assert (
        f"Longhaul: {project_file} is not valid JSON; Longhaul's defaults apply until it is fixed." in shown
    )
    assert (
        f'Longhaul: "narativeMode" in {agent_file} is not a Longhaul setting '
        '(did you mean "narrativeMode"?); it is ignored.' in shown
    )
    keyless = [
        n for n in shown if n.startswith(f'Longhaul: the summarizer {KEYLESS} ("summarizer" in {agent_file})')
    ]
    assert keyless and "pi has no credentials for it" in keyless[0] and "fake/fake-model wrote" in keyless[0]
    assert model_server.requests("other"), "the Diff ran on the session model"

    pi.prompt("Now the import module, please.")
    wrap_up(pi, "second")
    again = pi.mark()
    assert pi.compact().get("success") is True, pi.diagnostics()
    expect_longhaul(pi.session_file(), 2, span=2)
    assert not [n for n in notices(pi, again) if "longhaul.json" in n], "a problem is shown once per session"

    config = daemon.status()["config"]
    assert (config["summarizer"], config["used"], config["why"]) == (
        KEYLESS,
        "fake/fake-model",
        "no-credentials",
    )
    assert len(config["problems"]) == 3
    table = subprocess.run(
        [sys.executable, "-m", "longhaul_daemon", "status", "--socket", str(sandbox.socket_path)],
        env=sandbox.daemon_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert table.returncode == 0, table.stderr
    assert f"  summarizer {KEYLESS} from {agent_file}" in table.stdout
    assert "used fake/fake-model, not the summarizer: no-credentials" in table.stdout
    assert f"{project_file} is not valid JSON" in table.stdout
