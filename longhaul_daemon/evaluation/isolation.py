"""The private world one replay runs in: its own directories, environment, pi configuration and daemon.

REPLAY-7: every replay gets a fresh temporary directory holding a HOME, pi's agent dir, a project to run in
and the daemon's socket, so the user's sessions, settings and record log are never read or written. REPLAY-5:
the environment is built from a short allowlist (no API key, no proxy, no ``PI_*`` of the user's), pi runs
offline with telemetry and version checks off, and the only provider configured is the fake on loopback. The
daemon is this very package, started as a child on the private socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import longhaul_daemon

__all__ = [
    "REPLAY_MODEL",
    "REPLAY_PROVIDER",
    "DaemonProcess",
    "ReplayDirs",
    "StartError",
    "Tools",
    "default_shim",
    "find_tools",
    "make_dirs",
    "replay_env",
    "write_agent_config",
]

REPLAY_PROVIDER = "longhaul-replay"
REPLAY_MODEL = "replay"
CONTEXT_WINDOW = 1_000_000  # large, so pi never compacts on its own: compactions come only where recorded
_ALLOWED_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR")
_OFFLINE = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
_START_S = 30.0
_STOP_S = 10.0


class StartError(RuntimeError):
    """The replay's daemon or pi could not be started; the message holds no path from the transcript."""


@dataclass(frozen=True)
class ReplayDirs:
    root: Path
    home: Path
    agent: Path
    project: Path
    tools: Path
    socket: Path

    def cleanup(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def session_files(self) -> list[Path]:
        return sorted((self.agent / "sessions").rglob("*.jsonl"))


_CHECKOUT = Path(longhaul_daemon.__file__).resolve().parent.parent
_PINNED_PI = _CHECKOUT / "client_shim" / "node_modules" / ".bin" / "pi"


@dataclass(frozen=True)
class Tools:
    pi: Path
    shim: Path


def _is_shim(path: Path) -> bool:
    return (path / "index.ts").is_file() or path.is_file()


def default_shim(env: Mapping[str, str]) -> Path | None:
    """The shim this package carries (``pi_shim/`` in a wheel, ``client_shim/`` in a checkout), else the
    copy ``longhaul-daemon install`` put within pi's reach; the first matches the daemon that replays."""
    from longhaul_daemon.ops.shim import shim_source, shim_target

    for candidate in (shim_source(), shim_target(env)):
        if candidate is not None and _is_shim(candidate):
            return candidate
    return None


def find_tools(pi: str | None, shim: str | None, env: Mapping[str, str] | None = None) -> Tools | str:
    """pi (--pi, else the checkout's pinned pi, else pi on PATH) and the shim (--shim, else
    :func:`default_shim`), or why they are missing."""
    if pi is not None:
        pi_path: Path | None = Path(pi) if Path(pi).is_file() else None
    elif _PINNED_PI.is_file():
        pi_path = _PINNED_PI
    else:
        found = shutil.which("pi")
        pi_path = Path(found) if found else None
    if pi_path is None:
        where = "at the path --pi names" if pi is not None else "on PATH or in this checkout"
        return f"pi was not found {where}; install pi or name it with --pi"
    if shim is not None and not _is_shim(Path(shim)):
        return f"{shim} is not the Longhaul pi extension (no index.ts in it)"
    shim_path = Path(shim) if shim is not None else default_shim(os.environ if env is None else env)
    if shim_path is None:
        return (
            "the Longhaul pi extension was not found: this install carries none and 'longhaul-daemon "
            "install' has not copied one into pi's reach; reinstall the package or name it with --shim"
        )
    return Tools(pi=pi_path.absolute(), shim=shim_path.absolute())


def make_dirs() -> ReplayDirs:
    """A fresh 0700 tree under a short temporary path (a Unix socket path must fit in 107 bytes)."""
    base = "/tmp" if os.path.isdir("/tmp") else None
    root = Path(tempfile.mkdtemp(prefix="lh-replay-", dir=base))
    dirs = ReplayDirs(
        root=root,
        home=root / "home",
        agent=root / "agent",
        project=root / "project",
        tools=root / "tools",
        socket=root / "run" / "d.sock",
    )
    for path in (dirs.home, dirs.agent, dirs.project, dirs.tools, dirs.socket.parent):
        path.mkdir(mode=0o700)
    return dirs


def replay_env(dirs: ReplayDirs, *, base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The environment pi and the daemon run with: ``base`` (default: the allowlist of ours) and the
    private locations; nothing of the user's pi, Longhaul or XDG setup comes through."""
    if base is None:
        env = {k: os.environ[k] for k in _ALLOWED_ENV if k in os.environ}
    else:
        # The user's environment carries API keys for score; never a proxy, since every call is to loopback.
        env = {
            k: v
            for k, v in base.items()
            if not k.startswith(("PI_", "LONGHAUL_", "XDG_", "GIT_")) and not k.upper().endswith("_PROXY")
        }
    package_root = str(Path(longhaul_daemon.__file__).resolve().parent.parent)
    env.update(
        HOME=str(dirs.home),
        PI_CODING_AGENT_DIR=str(dirs.agent),
        XDG_CONFIG_HOME=str(dirs.home / ".config"),
        XDG_STATE_HOME=str(dirs.home / ".local" / "state"),
        XDG_CACHE_HOME=str(dirs.home / ".cache"),
        XDG_DATA_HOME=str(dirs.home / ".local" / "share"),
        XDG_RUNTIME_DIR=str(dirs.socket.parent),
        LONGHAUL_SOCKET=str(dirs.socket),
        PYTHONPATH=package_root,  # the daemon runs this very code, installed or not
        **_OFFLINE,
    )
    env.update(extra)
    return env


def _replay_provider(base_url: str) -> dict[str, Any]:
    return {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": "replay-key",  # pi compacts only with resolvable auth (pi-api.md §1.1)
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [
            {
                "id": REPLAY_MODEL,
                "name": "Longhaul replay",
                "reasoning": False,
                "input": ["text", "image"],
                "contextWindow": CONTEXT_WINDOW,
                "maxTokens": 16384,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            }
        ],
    }


def write_agent_config(
    dirs: ReplayDirs,
    *,
    base_url: str,
    keep_recent_tokens: int,
    shell: Path,
    models: Mapping[str, Any] | None = None,
    auth: bytes | None = None,
) -> None:
    """models.json (the fake, plus the user's ``models`` for score), settings.json and score's auth.json."""
    document = json.loads(json.dumps(models)) if models else {}
    providers = document.setdefault("providers", {})
    providers[REPLAY_PROVIDER] = _replay_provider(base_url)
    settings = {
        "defaultProvider": REPLAY_PROVIDER,
        "defaultModel": REPLAY_MODEL,
        "quietStartup": True,
        "enableInstallTelemetry": False,
        "compaction": {"enabled": False, "reserveTokens": 16384, "keepRecentTokens": keep_recent_tokens},
        "retry": {"enabled": False},
        "shellPath": str(shell),
    }
    for name, data in (
        ("models.json", json.dumps(document, indent=2)),
        ("settings.json", json.dumps(settings)),
    ):
        (dirs.agent / name).write_text(data, encoding="utf-8")
    if auth is not None:
        fd = os.open(dirs.agent / "auth.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(auth)


def _status(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        sock.connect(str(path))
        sock.sendall(b'{"jsonrpc": "2.0", "id": 1, "method": "status", "params": {}}\n')
        data = b""
        while b"\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    answer = json.loads(data.split(b"\n", 1)[0] or b"null")
    return isinstance(answer, dict) and "result" in answer


class DaemonProcess:
    """``python -m longhaul_daemon serve`` on the replay's socket, in its own process group."""

    def __init__(self, dirs: ReplayDirs) -> None:
        self.dirs = dirs
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self, env: dict[str, str]) -> None:
        self._log = open(self.dirs.root / "daemon.log", "wb")  # noqa: SIM115 - closed in stop()
        argv = [sys.executable, "-m", "longhaul_daemon", "serve", "--socket", str(self.dirs.socket)]
        self.proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + _START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StartError(f"the replay's daemon exited with status {self.proc.returncode}")
            with contextlib.suppress(OSError, ValueError):
                if _status(self.dirs.socket):
                    return
            time.sleep(0.1)
        self.stop()
        raise StartError(f"the replay's daemon did not answer within {_START_S:g}s")

    def stop(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=_STOP_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=_STOP_S)
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # anything the daemon left in its group (a hung git)
        if self._log is not None:
            self._log.close()
            self._log = None
