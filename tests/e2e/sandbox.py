"""Builds the throwaway world one e2e test runs in: agent dir, git project, HOME and a short socket path."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "KEEP_ENV",
    "PI_BIN_RELATIVE",
    "REPO_ROOT",
    "SHIM_DIR",
    "Sandbox",
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

# Variables from the outer environment that would change what pi, the shim or the daemon do.
_SCRUB_PREFIXES = ("PI_", "LONGHAUL_", "XDG_", "GIT_")


@dataclass
class Sandbox:
    """Paths and environments for one test. ``root`` is under /tmp and short (AF_UNIX paths max 107 bytes)."""

    root: Path
    home: Path
    agent_dir: Path
    project: Path
    socket_path: Path
    model_base_url: str
    pi_bin: Path
    shim_dir: Path
    extra_pi_env: dict[str, str] = field(default_factory=dict)

    def base_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB_PREFIXES)}
        env.update(
            HOME=str(self.home),
            PI_CODING_AGENT_DIR=str(self.agent_dir),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            LONGHAUL_SOCKET=str(self.socket_path),
        )
        return env

    def pi_env(self) -> dict[str, str]:
        """The environment pi (and so the shim) runs with."""
        env = self.base_env()
        env.update(PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0")
        env.update(self.extra_pi_env)
        return env

    def daemon_env(self, *, path_prefix: Path | None = None) -> dict[str, str]:
        """The environment the daemon runs with; ``path_prefix`` goes first on PATH (fake executables)."""
        env = self.base_env()
        if path_prefix is not None:
            env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
        return env

    def sessions_dir(self) -> Path:
        return self.agent_dir / "sessions"

    def session_files(self) -> list[Path]:
        return sorted(self.sessions_dir().rglob("*.jsonl"))

    def cleanup(self) -> None:
        """Remove the sandbox, unless LONGHAUL_E2E_KEEP=1 asks to keep it for a post-mortem."""
        if os.environ.get(KEEP_ENV) != "1":
            shutil.rmtree(self.root, ignore_errors=True)


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


def _write_agent_config(agent_dir: Path, base_url: str) -> None:
    models = {
        "providers": {
            "fake": {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "e2e-fake-key",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [
                    {
                        "id": "fake-model",
                        "name": "E2E Fake Model",
                        "reasoning": False,
                        "input": ["text"],
                        "contextWindow": CONTEXT_WINDOW,
                        "maxTokens": 4096,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                    }
                ],
            }
        }
    }
    settings = {
        "defaultProvider": "fake",
        "defaultModel": "fake-model",
        "quietStartup": True,
        "enableInstallTelemetry": False,
        "compaction": {
            "enabled": True,
            "reserveTokens": RESERVE_TOKENS,
            "keepRecentTokens": KEEP_RECENT_TOKENS,
        },
        "retry": {"enabled": False},
    }
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2))
    (agent_dir / "settings.json").write_text(json.dumps(settings, indent=2))


FIXED_COMMIT_DATE = "2026-01-01T00:00:00+00:00"  # the initial commit's hash is the same in every sandbox


def build_sandbox(model_base_url: str, root: Path | None = None) -> Sandbox:
    """Create the directories, agent config and a one-commit git project; the caller owns ``cleanup()``.

    ``root`` (made here; it must not exist) fixes the sandbox's paths, which the agent's system prompt shows:
    two runs at the same root give a deterministic model the same prompts. By default a fresh temp dir.
    """
    if root is None:
        root = Path(tempfile.mkdtemp(prefix="lh-e2e-", dir="/tmp"))
    else:
        root.mkdir(mode=0o700)
    home = root / "home"
    agent_dir = root / "agent"
    project = root / "proj"
    run_dir = root / "run"
    for d in (home, agent_dir, project, run_dir):
        d.mkdir(mode=0o700)
    sandbox = Sandbox(
        root=root,
        home=home,
        agent_dir=agent_dir,
        project=project,
        socket_path=run_dir / "d.sock",
        model_base_url=model_base_url,
        pi_bin=REPO_ROOT / PI_BIN_RELATIVE,
        shim_dir=SHIM_DIR,
    )
    _write_agent_config(agent_dir, model_base_url)
    env = sandbox.base_env() | {"GIT_AUTHOR_DATE": FIXED_COMMIT_DATE, "GIT_COMMITTER_DATE": FIXED_COMMIT_DATE}
    _git(project, env, "init", "-q", "-b", "main")
    _git(project, env, "config", "user.name", "Longhaul E2E")
    _git(project, env, "config", "user.email", "e2e@longhaul.invalid")
    _git(project, env, "config", "commit.gpgsign", "false")
    (project / "README.md").write_text("# e2e project\n")
    (project / "notes.txt").write_text("notes for the e2e model to read\n")
    _git(project, env, "add", "-A")
    _git(project, env, "commit", "-q", "-m", "initial commit")
    return sandbox
