"""``longhaul-daemon install`` / ``uninstall``: put the daemon under the user's systemd and the shim into pi.

Both are idempotent and say what they did line by line (:mod:`longhaul_daemon.ops.steps`). ``--dry-run``
prints every file and every command the real run would write or run, and skips the same steps the real run
would skip. Where a program or the systemd user manager is missing (containers, WSL, CI), the files are still
written and the commands to run later are printed; only a real failure (an unwritable directory, a command
that ran and failed) makes the exit code 1.
"""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from longhaul_daemon.ops.shim import checkout_root, install_shim, uninstall_shim
from longhaul_daemon.ops.steps import Steps
from longhaul_daemon.ops.units import (
    DROPIN_DIR,
    DROPIN_NAME,
    SERVICE,
    SOCKET,
    USERNS_RESTRICTION,
    choose_sandbox,
    daemon_argv,
    render_units,
    unit_dir,
)
from longhaul_daemon.ops.user_manager import manual_start_lines, running_daemon, stop_daemon
from longhaul_daemon.server.paths import resolve_socket_path

__all__ = ["run_install", "run_install_command", "run_uninstall", "sandbox_warnings"]

_NEXT_STEPS = """Done. Next:
  longhaul-daemon status                    # does the daemon answer? (the first call starts it)
  systemctl --user status longhaul-daemon.socket longhaul-daemon.service
  journalctl --user -u longhaul-daemon.service
  loginctl enable-linger "$USER"            # keep it reachable while you are logged out, and from boot"""
_UNINSTALLED = """Done. The record logs under <agent dir>/logs/ are left in place.
The longhaul-daemon program itself is still installed: remove it the way you installed it
(pipx uninstall longhaul-daemon, uv tool uninstall longhaul-daemon, or pip uninstall longhaul-daemon)."""
_LOG_OFF = frozenset({"off", "none", "0", "false", "no", ""})


def sandbox_warnings(env: Mapping[str, str], home: Path) -> list[str]:
    """Record logs the sandbox drop-in would keep the daemon from writing (it may write only ~/.pi/agent)."""
    writable = (home / ".pi" / "agent").resolve()
    warnings: list[str] = []
    agent = env.get("PI_CODING_AGENT_DIR", "")
    if agent and not Path(agent).expanduser().resolve().is_relative_to(writable):
        warnings.append(
            f"PI_CODING_AGENT_DIR is {agent}: with the sandbox drop-in the daemon may write only under "
            f"{writable}, so the record log in {agent}/logs would be dropped"
        )
    debug = env.get("PI_COMPACT_STATE_DEBUG")
    named = debug is not None and debug.strip().lower() not in _LOG_OFF and os.path.isabs(debug)
    if named and debug is not None and not Path(debug).resolve().is_relative_to(writable):
        warnings.append(
            f"PI_COMPACT_STATE_DEBUG names {debug}: with the sandbox drop-in the daemon cannot write it"
        )
    return warnings


def _warn_about_sandbox(steps: Steps) -> None:
    warnings = sandbox_warnings(steps.env, Path(steps.env.get("HOME") or os.path.expanduser("~")))
    for warning in warnings:
        steps.say(f"warning    {warning}")
    if warnings:
        steps.say(
            "           add a ReadWritePaths= line for it with "
            "'systemctl --user edit longhaul-daemon.service', or install with --no-sandbox"
        )


def _warn_about_checkout(steps: Steps, command: Sequence[str]) -> None:
    """The service would run out of a source checkout, which ``make clean`` (or deleting it) breaks."""
    root = checkout_root()
    if root is not None and Path(os.path.abspath(command[0])).is_relative_to(root):
        steps.say(
            f"warning    ExecStart runs {command[0]}, inside the checkout {root}: 'make clean' there would "
            "stop the service. For everyday use install the tool with pipx or uv (README: Install for "
            "everyday use) and run its 'longhaul-daemon install'."
        )


def run_install(
    *,
    dry_run: bool,
    sandbox: bool | None,
    env: Mapping[str, str],
    out: TextIO,
    argv: Sequence[str] | None = None,
    restriction: Path = USERNS_RESTRICTION,
) -> int:
    """Write the units, reload and enable the socket, install the shim; returns the exit code."""
    steps = Steps(env=env, out=out, dry_run=dry_run)
    directory = unit_dir(env)
    command = list(argv) if argv is not None else daemon_argv()
    choice = choose_sandbox(sandbox, restriction=restriction)
    steps.say(f"Installing longhaul-daemon as a systemd user service: {shlex.join([*command, 'serve'])}")
    _warn_about_checkout(steps, command)
    steps.say(choice.reason)
    if choice.install:
        _warn_about_sandbox(steps)
    for unit in render_units(command, sandbox=choice.install):
        if not steps.write_file(directory / unit.relative, unit.content, show=True):
            return steps.finish("")
    if not choice.install:
        steps.remove(directory / DROPIN_DIR / DROPIN_NAME)
        steps.remove_empty_dirs(directory / DROPIN_DIR)  # unless the user's own override is in there
    steps.systemctl_steps(
        live=[["daemon-reload"], ["enable", "--now", SOCKET], ["try-restart", SERVICE]],
        offline=[["enable", SOCKET]],
        later=[["daemon-reload"], ["start", SOCKET]],
    )
    if steps.failed:
        return steps.finish("")
    install_shim(steps)
    return steps.finish(_next_steps(steps))


def _next_steps(steps: Steps) -> str:
    """What to do next: under systemd, check on it; without a user manager, start the daemon by hand."""
    if steps.manager_down is None:
        return _NEXT_STEPS
    later = "; the socket unit starts it at your next login where one runs" if steps.systemctl else ""
    return "\n".join(
        [
            f"Done, but nothing will start the daemon for you here: {steps.manager_down}{later}.",
            *manual_start_lines(steps.env),
            "Then check that it answers: longhaul-daemon status",
        ]
    )


def _stop_daemon_started_by_hand(steps: Steps) -> None:
    """A daemon that systemd did not start (``serve`` in a terminal, nohup, tmux) still serves the default
    socket after the units are gone: stop it, named by its pid, so nothing of Longhaul keeps running."""
    socket_path = resolve_socket_path(None, steps.env, os.getuid())
    daemon = running_daemon(socket_path)
    if daemon is None:
        return
    if daemon.socket_activated:
        if steps.manager_down is None and steps.dry_run:
            return  # the real run's "systemctl --user disable --now" stops it
        steps.say(
            f"note       a socket-activated daemon still answers on {socket_path}; systemd holds its socket, "
            "so stop it through systemd where the user manager runs"
        )
        return
    what = f"the daemon started by hand (pid {daemon.pid}) that serves {socket_path}"
    if steps.dry_run:
        steps.say(f"would stop {what}")
    elif stop_daemon(daemon):
        steps.say(f"stopped    {what}")
    else:
        steps.say(f"FAILED     could not stop {what}; stop it with 'kill {daemon.pid}'")
        steps.failed = True


def run_uninstall(*, dry_run: bool, env: Mapping[str, str], out: TextIO) -> int:
    """Stop and disable the units, remove them, reload, and remove the shim from pi; returns the exit code."""
    steps = Steps(env=env, out=out, dry_run=dry_run)
    directory = unit_dir(env)
    steps.say("Uninstalling the longhaul-daemon systemd user service and the shim")
    installed = any((directory / name).exists() for name in (SOCKET, SERVICE))
    if installed:
        steps.systemctl_steps(
            live=[["disable", "--now", SOCKET, SERVICE]],
            offline=[["disable", SOCKET, SERVICE]],
            later=[["stop", SOCKET, SERVICE], ["daemon-reload"]],
        )
    else:
        steps.say(f"no units in {directory}: nothing to stop")
    for name in (SOCKET, SERVICE, f"{DROPIN_DIR}/{DROPIN_NAME}"):
        steps.remove(directory / name)
    steps.remove_empty_dirs(directory / DROPIN_DIR, directory, directory.parent)  # each only when empty
    if installed and steps.manager_down is None:
        steps.systemctl_steps(live=[["daemon-reload"]], offline=[], later=[])
    _stop_daemon_started_by_hand(steps)
    uninstall_shim(steps)
    return steps.finish(_UNINSTALLED)


def run_install_command(args: argparse.Namespace, *, out: TextIO) -> int:
    """Dispatch ``install``/``uninstall`` from parsed arguments."""
    if args.command == "install":
        return run_install(dry_run=args.dry_run, sandbox=args.sandbox, env=os.environ, out=out)
    return run_uninstall(dry_run=args.dry_run, env=os.environ, out=out)
