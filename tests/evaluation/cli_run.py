"""Runs ``longhaul-daemon`` in a fresh process with a private HOME, agent dir and XDG dirs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["private_env", "run_cli"]


def private_env(scratch: Path, **extra: str) -> dict[str, str]:
    """The test's environment with every place the user's setup lives moved under ``scratch``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "LONGHAUL_", "XDG_"))}
    env.update(
        HOME=str(scratch / "home"),
        PI_CODING_AGENT_DIR=str(scratch / "agent"),
        XDG_CONFIG_HOME=str(scratch / "config"),
        XDG_RUNTIME_DIR=str(scratch / "run"),
        XDG_STATE_HOME=str(scratch / "state"),
        XDG_CACHE_HOME=str(scratch / "cache"),
        XDG_DATA_HOME=str(scratch / "data"),
    )
    env.update(extra)
    return env


def run_cli(
    *args: str, env: Mapping[str, str], cwd: Path, timeout: float = 600.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longhaul_daemon", *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
