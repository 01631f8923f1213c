"""``make try``: Longhaul offline with the real small model, run in a terminal as a user runs it.

``realmodel/offline_trial.py`` (what ``make try`` runs) starts the real model server (SmolLM2-135M,
``make realmodel``), a private daemon and interactive pi with the shim, all in a scratch directory. Here it
runs in tmux with ``--work`` so its sessions can be read afterwards: one real turn, ``/compact`` typed, and
the compaction in the trial's session must be Longhaul's. Quitting pi must end the trial: its closing line
counts the compactions, and no process of it is left running.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .e2e_sandbox import REPO_ROOT
from .real_model import RealModelError, installed
from .scenario import expect_longhaul
from .session_log import read_entries
from .tui import COMPACTED, PiScreen, tmux_missing

pytestmark = [pytest.mark.e2e, pytest.mark.tui]

START_TIMEOUT_S = 180.0  # the model server, the daemon and pi, on a loaded machine
TURN_TIMEOUT_S = 300.0  # one real turn (up to 512 tokens) on two shared cores
QUIT_TIMEOUT_S = 60.0  # the daemon and the model server stop within their grace


def trial_session(work: Path) -> Path | None:
    sessions = sorted((work / "agent" / "sessions").rglob("*.jsonl"))
    return sessions[0] if sessions else None


def answered(work: Path) -> bool:
    """Whether pi recorded the model's answer in the trial's session."""
    session = trial_session(work)
    if session is None:
        return False
    return any(
        e.get("type") == "message" and (e.get("message") or {}).get("role") == "assistant"
        for e in read_entries(session)
    )


def trial_processes(work: Path) -> list[str]:
    """Command lines of running processes that name the trial's directory (the daemon, the model server),
    but the test's own tmux, which keeps the command it was started with."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(work) in cmdline and not cmdline.startswith("tmux "):
            found.append(cmdline)
    return found


def test_make_try_runs_pi_with_longhaul_on_the_real_model_and_cleans_up(sandbox: Sandbox) -> None:
    missing = tmux_missing()
    if missing:
        pytest.fail(missing, pytrace=False)
    try:
        model = installed()
    except RealModelError as exc:
        pytest.fail(str(exc), pytrace=False)
    work = sandbox.root / "trial"
    env = sandbox.base_env() | {"LONGHAUL_REALMODEL_DIR": str(model.dir)}
    argv = [sys.executable, "-m", "realmodel.offline_trial", "--work", str(work)]
    with PiScreen(sandbox, argv=argv, env=env, cwd=REPO_ROOT) as screen:
        screen.wait_for_text("smollm2", timeout=START_TIMEOUT_S)  # pi's footer names the local model
        assert "longhaul try: the model answers at http://127.0.0.1:" in screen.screen()

        screen.type("What is a CSV file? Answer in one sentence.")
        screen.wait_until(lambda _: answered(work), "the model's answer", timeout=TURN_TIMEOUT_S)
        screen.type("/compact")
        screen.wait_for_text(COMPACTED, timeout=TURN_TIMEOUT_S)
        session = trial_session(work)
        assert session is not None
        expect_longhaul(session, 1, span=1)

        screen.press("C-d")
        screen.wait_until(lambda _: screen.pane_dead(), "pi and the trial ending", timeout=QUIT_TIMEOUT_S)
        screen.wait_for_text("1 compaction(s), 1 by Longhaul")
    assert trial_processes(work) == []
    assert not (work / "run" / "daemon.sock").exists(), "the daemon removed its socket as it stopped"


def test_the_trial_removes_its_scratch_directory_when_pi_exits(sandbox: Sandbox) -> None:
    """Without ``--work``/``--keep`` nothing of the trial stays: here pi only prints its version and exits."""
    model = installed()
    env = sandbox.base_env() | {"LONGHAUL_REALMODEL_DIR": str(model.dir)}
    done = subprocess.run(
        [sys.executable, "-m", "realmodel.offline_trial", "--", "--version"],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    found = re.search(r"longhaul try: scratch directory (\S+) \(removed on exit\)", done.stderr)
    assert found, done.stderr
    work = Path(found.group(1))
    assert "0.73.1" in done.stderr + done.stdout, "pi ran"
    assert "0 compaction(s), 0 by Longhaul" in done.stderr
    assert not work.exists()
    assert trial_processes(work) == []
