"""``facts`` on sessions a real pi wrote, one compacted by pi itself and one by Longhaul, with known counts.

Each session runs the same work: the agent's commands print 5173 and 102345, numbers that stand nowhere
before the tool output (the commands compute them), a long wrap-up turn is kept and everything before it is
compacted, then the user asks for port 5173 again. So each compaction has two values first seen in its
span's tool output and one used again. The scripted Diff names the port as a value, so Longhaul's summary
keeps it; pi's canned summary keeps nothing. ``facts`` with no argument reads both from the agent dir.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from e2e.diff_script import DiffScript, Val, answer
from e2e.scenario import agent_bash, expect_longhaul, wrap_up

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .cli_run import private_env, run_cli

pytestmark = pytest.mark.e2e

COMMANDS = ("echo port $((5000+173))", "echo build $((100000+2345))")


def _session(pi: PiRpc, server: ModelServer) -> Path:
    agent_bash(pi, server, *COMMANDS)
    wrap_up(pi, "stretch")
    assert pi.compact().get("success")
    pi.prompt("Use port 5173 again.")
    path = pi.session_file()
    pi.close()
    return path


def test_facts_counts_what_each_compactor_kept(
    sandbox: Sandbox,
    model_server: ModelServer,
    daemon: Daemon,
    start_pi: Callable[[], PiRpc],
    tmp_path: Path,
) -> None:
    sandbox.extra_pi_env["PI_COMPACTOR"] = "pi"
    pi_session = _session(start_pi(), model_server)
    del sandbox.extra_pi_env["PI_COMPACTOR"]
    DiffScript(then=answer(values=[Val("dev port", "5173", "Please run")])).install(model_server)
    longhaul_session = _session(start_pi(), model_server)
    assert "dev port: 5173" in expect_longhaul(longhaul_session, 1, span=1).summary

    env = private_env(tmp_path, PI_CODING_AGENT_DIR=str(sandbox.agent_dir))
    done = run_cli("facts", "--json", env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    totals = json.loads(done.stdout)["totals"]
    assert totals["longhaul"] == {"compactions": 1, "first_seen": 2, "used_again": 1, "kept": 1}
    assert totals["pi"] == {"compactions": 1, "first_seen": 2, "used_again": 1, "kept": 0}

    done = run_cli("facts", str(pi_session), str(longhaul_session), env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for secret in (str(sandbox.root), pi_session.name, longhaul_session.name, "Please run"):
        assert secret not in done.stdout + done.stderr
    # the value as a token: a compaction's random hex id ("f5173af8f629") may hold its digits
    assert not re.search(r"(?<!\w)5173(?!\w)", done.stdout + done.stderr), done.stdout
    assert "longhaul   1            1           1     100%" in done.stdout
    assert "pi         1            1           0     0%" in done.stdout
