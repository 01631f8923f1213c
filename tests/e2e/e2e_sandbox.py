"""The e2e suite's world, on the shared harness's sandbox: the scripted model as pi's ``fake`` provider with
thresholds that make short sessions compact, and a one-commit git project to work in."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from longhaul_daemon.evaluation.harness.sandbox import Sandbox, Tools, make_sandbox, write_agent_config

__all__ = [
    "KEEP_ENV",
    "PI_BIN_RELATIVE",
    "REPO_ROOT",
    "SHIM_DIR",
    "build_sandbox",
    "missing_prerequisites",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIM_DIR = REPO_ROOT / "client_shim"
PI_BIN_RELATIVE = Path("client_shim/node_modules/.bin/pi")

CONTEXT_WINDOW = 32000
RESERVE_TOKENS = 4000  # threshold = 28000, so [[tokens=30000]] triggers auto-compaction
KEEP_RECENT_TOKENS = 40  # tiny, so short sessions still have something to summarise

KEEP_ENV = "LONGHAUL_E2E_KEEP"  # =1: keep every sandbox (session files, daemon logs) under /tmp/lh-e2e-*
FIXED_COMMIT_DATE = "2026-01-01T00:00:00+00:00"  # the initial commit's hash is the same in every sandbox


def missing_prerequisites() -> list[str]:
    """What the e2e suite needs and cannot find; CI installs all of it, so a gap is a failure, not a skip."""
    problems: list[str] = []
    pi_bin = REPO_ROOT / PI_BIN_RELATIVE
    if not pi_bin.exists():
        problems.append(
            f"pi is not installed at {pi_bin}: run `make test` (or `cd client_shim && npm ci`) to install "
            "the pinned @mariozechner/pi-coding-agent"
        )
    if not (SHIM_DIR / "index.ts").exists():
        problems.append(f"the pi extension {SHIM_DIR / 'index.ts'} does not exist")
    if shutil.which("node") is None:
        problems.append("node is not on PATH (pi needs node >= 20.6)")
    if shutil.which("git") is None:
        problems.append("git is not on PATH (the test project is a git repository)")
    return problems


def _git(project: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True, timeout=30)


def build_sandbox(model_base_url: str, root: Path | None = None) -> Sandbox:
    """A sandbox for one test (the caller owns ``cleanup()``), inheriting the test run's environment.

    ``root`` (made here; it must not exist) fixes the sandbox's paths, which the agent's system prompt shows:
    two runs at the same root give a deterministic model the same prompts. By default a fresh temp dir.
    """
    tools = Tools(pi=REPO_ROOT / PI_BIN_RELATIVE, shim=SHIM_DIR)
    keep = os.environ.get(KEEP_ENV) == "1"
    box = make_sandbox(tools, prefix="lh-e2e-", root=root, inherit=os.environ, keep=keep)
    model = {"id": "fake-model", "name": "E2E Fake Model", "contextWindow": CONTEXT_WINDOW, "maxTokens": 4096}
    compaction = {"enabled": True, "reserveTokens": RESERVE_TOKENS, "keepRecentTokens": KEEP_RECENT_TOKENS}
    write_agent_config(box, base_url=model_base_url, provider="fake", model=model, compaction=compaction)
    env = box.base_env() | {"GIT_AUTHOR_DATE": FIXED_COMMIT_DATE, "GIT_COMMITTER_DATE": FIXED_COMMIT_DATE}
    _git(box.project, env, "init", "-q", "-b", "main")
    _git(box.project, env, "config", "user.name", "Longhaul E2E")
    _git(box.project, env, "config", "user.email", "e2e@longhaul.invalid")
    _git(box.project, env, "config", "commit.gpgsign", "false")
    (box.project / "README.md").write_text("# e2e project\n")
    (box.project / "notes.txt").write_text("notes for the e2e model to read\n")
    _git(box.project, env, "add", "-A")
    _git(box.project, env, "commit", "-q", "-m", "initial commit")
    return box
