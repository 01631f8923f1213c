"""The private world pi and the daemon run in: HOME, pi's agent dir, a project, a socket, and which pi.

REPLAY-7: every run gets a fresh ``0700`` tree under a short path in ``/tmp`` (a Unix socket path must fit
in 107 bytes), so the user's sessions, settings and record log are never read or written. REPLAY-5: the
environment is built from a short allowlist, or from an environment handed in (``score``'s API keys, the
test suite's own) with every ``PI_*``, ``LONGHAUL_*``, ``XDG_*``, ``GIT_*`` and proxy variable taken out;
then the private places, pi's offline switches, and ``PYTHONPATH`` so the daemon runs this very code.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import longhaul_daemon

__all__ = [
    "CHECKOUT",
    "SCRIPTED_KEY",
    "Sandbox",
    "Tools",
    "default_shim",
    "find_tools",
    "make_sandbox",
    "write_agent_config",
]

CHECKOUT = Path(longhaul_daemon.__file__).resolve().parent.parent  # the package root (a checkout's root)
_PINNED_PI = CHECKOUT / "client_shim" / "node_modules" / ".bin" / "pi"
_ALLOWED_ENV = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR")
_DROPPED_PREFIXES = ("PI_", "LONGHAUL_", "XDG_", "GIT_")
_OFFLINE = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
# The scripted model's API key (pi compacts only with resolvable auth, pi-api.md §1.1). The daemon redacts it
# as a credential; it is shorter than the redactor's piece length, so the words of the fixed answers, which
# share none of it whole, stay as written.
SCRIPTED_KEY = "local-key"


@dataclass(frozen=True)
class Tools:
    """The pi executable and the Longhaul extension pi loads."""

    pi: Path
    shim: Path


@dataclass
class Sandbox:
    """Paths and environments for one run; ``pi_bin`` and ``shim_dir`` may be swapped before pi starts."""

    root: Path
    home: Path
    agent_dir: Path
    project: Path
    tools_dir: Path  # the replay's stand-ins
    socket_path: Path
    pi_bin: Path
    shim_dir: Path
    inherit: Mapping[str, str] | None = None  # None: the allowlist of this process's environment
    extra_pi_env: dict[str, str] = field(default_factory=dict)
    keep: bool = False  # cleanup() leaves the tree for a post-mortem

    def base_env(self) -> dict[str, str]:
        """What pi and the daemon both run with."""
        if self.inherit is None:
            env = {k: os.environ[k] for k in _ALLOWED_ENV if k in os.environ}
        else:
            env = {
                k: v
                for k, v in self.inherit.items()
                if not k.startswith(_DROPPED_PREFIXES) and not k.upper().endswith("_PROXY")
            }
        env.update(
            HOME=str(self.home),
            PI_CODING_AGENT_DIR=str(self.agent_dir),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_STATE_HOME=str(self.home / ".local" / "state"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_RUNTIME_DIR=str(self.socket_path.parent),
            LONGHAUL_SOCKET=str(self.socket_path),
            PYTHONPATH=str(CHECKOUT),  # the daemon runs this very code, installed or not
            **_OFFLINE,
        )
        return env

    def pi_env(self) -> dict[str, str]:
        """The environment pi (and so the shim) runs with."""
        return self.base_env() | self.extra_pi_env

    def daemon_env(self, *, path_prefix: Path | None = None) -> dict[str, str]:
        """The environment the daemon runs with; ``path_prefix`` goes first on PATH (fake executables)."""
        env = self.base_env()
        if path_prefix is not None:
            env["PATH"] = f"{path_prefix}{os.pathsep}{env.get('PATH', '')}"
        return env

    def sessions_dir(self) -> Path:
        """Where pi writes session files inside the sandbox's agent dir."""
        return self.agent_dir / "sessions"

    def session_files(self) -> list[Path]:
        """Every session file pi has written, sorted."""
        return sorted(self.sessions_dir().rglob("*.jsonl"))

    def cleanup(self) -> None:
        """Remove the sandbox unless it is kept for inspection."""
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def make_sandbox(
    tools: Tools,
    *,
    prefix: str = "lh-",
    root: Path | None = None,
    inherit: Mapping[str, str] | None = None,
    keep: bool = False,
) -> Sandbox:
    """A fresh tree: ``root`` (made here; it must not exist) or a new temporary directory under ``/tmp``.

    A fixed ``root`` fixes every path, which pi's system prompt shows: two runs at one root send a
    deterministic model the same prompts.
    """
    if root is None:
        root = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp" if os.path.isdir("/tmp") else None))
    else:
        root.mkdir(mode=0o700)
    box = Sandbox(
        root=root,
        home=root / "home",
        agent_dir=root / "agent",
        project=root / "project",
        tools_dir=root / "tools",
        socket_path=root / "run" / "d.sock",
        pi_bin=tools.pi,
        shim_dir=tools.shim,
        inherit=inherit,
        keep=keep,
    )
    for path in (box.home, box.agent_dir, box.project, box.tools_dir, box.socket_path.parent):
        path.mkdir(mode=0o700)
    return box


def write_agent_config(
    box: Sandbox,
    *,
    base_url: str,
    provider: str,
    model: Mapping[str, Any],
    compaction: Mapping[str, Any],
    shell: Path | None = None,
    models: Mapping[str, Any] | None = None,
    auth: bytes | None = None,
) -> None:
    """pi's ``models.json`` (the scripted model as ``provider``, beside the providers of ``models``),
    ``settings.json`` (that model by default, quiet, telemetry and retries off, ``compaction`` as given,
    ``shell`` as pi's shell) and, when given, ``auth.json``."""
    document = json.loads(json.dumps(models)) if models else {}
    entry = {
        "name": "Scripted model",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        **model,
    }
    document.setdefault("providers", {})[provider] = {
        "baseUrl": base_url,
        "api": "openai-completions",
        "apiKey": SCRIPTED_KEY,
        "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
        "models": [entry],
    }
    settings: dict[str, Any] = {
        "defaultProvider": provider,
        "defaultModel": entry["id"],
        "quietStartup": True,
        "enableInstallTelemetry": False,
        "compaction": dict(compaction),
        "retry": {"enabled": False},
    }
    if shell is not None:
        settings["shellPath"] = str(shell)
    (box.agent_dir / "models.json").write_text(json.dumps(document, indent=2), encoding="utf-8")
    (box.agent_dir / "settings.json").write_text(json.dumps(settings, indent=2), encoding="utf-8")
    if auth is not None:
        fd = os.open(box.agent_dir / "auth.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(auth)


def _is_shim(path: Path) -> bool:
    return (path / "index.ts").is_file() or path.is_file()


def default_shim(env: Mapping[str, str]) -> Path | None:
    """The shim this package carries (``pi_shim/`` in a wheel, ``client_shim/`` in a checkout), else the
    copy ``longhaul-daemon install`` put within pi's reach; the first matches the daemon that runs."""
    from longhaul_daemon.ops.shim import shim_source, shim_target

    for candidate in (shim_source(), shim_target(env)):
        if candidate is not None and _is_shim(candidate):
            return candidate
    return None


def find_tools(pi: str | None, shim: str | None, env: Mapping[str, str] | None = None) -> Tools | str:
    """pi (``pi``, else the checkout's pinned pi, else pi on PATH) and the shim (``shim``, else
    :func:`default_shim`), or why one is missing."""
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
