"""Whether a systemd user manager can start the daemon here, and what to run where none can.

``install`` asks before choosing its ``systemctl --user`` steps. ``status`` asks only when no daemon answers,
to say how to get one (the answer depends on the machine: a container or WSL has no user manager, a shell
reached through ``su`` cannot reach the one that runs). ``uninstall`` looks for a daemon systemd did not
start, found through the socket it serves (its pid from the kernel's peer credentials), and stops it.
Standard library only: ``status`` imports this on its quick path.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from longhaul_daemon.status_client import DaemonNotRunning, StatusQueryFailed, query_daemon

__all__ = [
    "BACKGROUND_LOG",
    "ManagerProbe",
    "RunningDaemon",
    "manual_start_lines",
    "not_running_hint",
    "probe_user_manager",
    "running_daemon",
    "stop_daemon",
]

BACKGROUND_LOG = "~/.local/state/longhaul/daemon.log"
"""Where the background one-liner sends the daemon's operational log."""
_STOP_WAIT_S = 20.0  # the daemon's SIGTERM grace (10 s by default) and its exit


def _first_line(text: str | None) -> str:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), "")


@dataclass(frozen=True)
class ManagerProbe:
    """``systemctl`` on PATH (or None), and why no user manager can be used (None when one answers)."""

    systemctl: str | None
    problem: str | None


def probe_user_manager(env: Mapping[str, str], *, timeout_s: float) -> ManagerProbe:
    """Find ``systemctl``; ask ``systemctl --user show-environment`` (read-only) whether a manager answers."""
    systemctl = shutil.which("systemctl", path=env.get("PATH", os.defpath))
    if systemctl is None:
        return ManagerProbe(None, "systemctl is not on PATH")
    try:
        probe = subprocess.run(
            [systemctl, "--user", "show-environment"],
            env=dict(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return ManagerProbe(systemctl, f"systemctl --user could not be run: {exc}")
    if probe.returncode != 0:
        reason = _first_line(probe.stderr) or f"exit {probe.returncode}"
        return ManagerProbe(systemctl, f"no systemd user manager answers (systemctl --user: {reason})")
    return ManagerProbe(systemctl, None)


def _command(env: Mapping[str, str]) -> str:
    """``longhaul-daemon`` when that name finds a program on PATH, else how this install is started."""
    if shutil.which("longhaul-daemon", path=env.get("PATH", os.defpath)):
        return "longhaul-daemon"
    from longhaul_daemon.ops.units import daemon_argv

    return shlex.join(daemon_argv())


def manual_start_lines(env: Mapping[str, str], socket: str | None = None) -> list[str]:
    """How to run the daemon without systemd: in the foreground, or in the background with its log kept."""
    serve = f"{_command(env)} serve" + (f" --socket {shlex.quote(socket)}" if socket else "")
    folder = BACKGROUND_LOG.rsplit("/", 1)[0]
    return [
        "Start it yourself, in a terminal or a tmux window (Ctrl-C stops it):",
        f"  {serve}",
        "or in the background, for as long as the machine runs (the log goes to a file):",
        f"  mkdir -p {folder} && nohup {serve} >>{BACKGROUND_LOG} 2>&1 &",
    ]


def not_running_hint(
    env: Mapping[str, str], socket_path: Path, *, socket_named: bool, default_socket: Path
) -> list[str]:
    """What ``status`` says after "no daemon is running": the lines that get one running on this machine.
    ``socket_named``: the user gave ``--socket``, so a daemon started by hand must be given it too."""
    from longhaul_daemon.ops.units import SOCKET, unit_dir

    by_hand = manual_start_lines(env, str(socket_path) if socket_named else None)
    probe = probe_user_manager(env, timeout_s=5.0)
    if probe.problem is not None:
        return [
            f"Nothing will start the daemon for you here: {probe.problem}.",
            *by_hand,
        ]
    if socket_path != default_socket:
        return [f"systemd's socket unit would listen on {default_socket}, not on {socket_path}.", *by_hand]
    if not (unit_dir(env) / SOCKET).is_file():
        return ["Run 'longhaul-daemon install' to have systemd start it on demand.", *by_hand]
    return [
        f"The {SOCKET} unit is installed but nothing listens: run 'systemctl --user start {SOCKET}'; "
        f"'systemctl --user status {SOCKET}' says why it stopped.",
    ]


@dataclass(frozen=True)
class RunningDaemon:
    """A daemon that answered on a socket: its pid as the kernel tells it, and whether systemd started it."""

    pid: int
    socket: Path
    socket_activated: bool


def running_daemon(socket_path: Path) -> RunningDaemon | None:
    """The daemon of this user serving ``socket_path``, or None when none answers (or it is not ours).

    The pid is the kernel's (SO_PEERCRED), and it is trusted only when the daemon reports the same pid:
    on a socket systemd holds, the peer is systemd itself."""
    try:
        answer = query_daemon(socket_path)
    except (DaemonNotRunning, StatusQueryFailed):
        return None
    activated = bool(answer.status.get("socketActivated")) or answer.status.get("pid") != answer.peer_pid
    return RunningDaemon(answer.peer_pid, socket_path, activated)


def stop_daemon(daemon: RunningDaemon, *, wait_s: float = _STOP_WAIT_S) -> bool:
    """SIGTERM the daemon and wait until its socket stops answering; False if it is still there."""
    try:
        os.kill(daemon.pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if running_daemon(daemon.socket) is None:
            return True
        time.sleep(0.1)
    return False
