"""``longhaul-daemon install`` / ``uninstall``: put the daemon under the user's systemd and the shim into pi.

Both are idempotent and say what they did line by line. ``--dry-run`` prints every file (with its content) and
every command, and touches nothing: no file, no directory, no program run. Where a program or the systemd user
manager is missing (containers, WSL, CI), the files are still written and the commands to run later are
printed; only a real failure (an unwritable directory, a command that ran and failed) makes the exit code 1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from longhaul_daemon.ops.units import (
    DROPIN_DIR,
    DROPIN_NAME,
    SERVICE,
    SOCKET,
    USERNS_RESTRICTION,
    UnitFile,
    choose_sandbox,
    daemon_argv,
    render_units,
    unit_dir,
)

__all__ = ["default_shim_dir", "run_install", "run_install_command", "run_uninstall"]

EXIT_OK = 0
EXIT_FAILED = 1
_SYSTEMCTL_TIMEOUT_S = 60.0
_PI_TIMEOUT_S = 300.0
_NEXT_STEPS = """Done. Next:
  longhaul-daemon status                    # does the daemon answer? (the first call starts it)
  systemctl --user status longhaul-daemon.socket longhaul-daemon.service
  journalctl --user -u longhaul-daemon.service
  loginctl enable-linger "$USER"            # keep it reachable while you are logged out, and from boot"""


def default_shim_dir() -> Path | None:
    """The pi extension beside this package (a source checkout or an editable install), if it is there."""
    shim = Path(__file__).resolve().parent.parent.parent / "client_shim"
    return shim if (shim / "package.json").is_file() else None


@dataclass
class _Session:
    """One install/uninstall run: where output goes, whether anything failed, how programs are found."""

    env: Mapping[str, str]
    out: TextIO
    dry_run: bool
    failed: bool = False
    later: list[list[str]] = field(default_factory=list)
    systemctl: str | None = None
    manager_down: str | None = None

    def say(self, text: str) -> None:
        print(text, file=self.out)

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=self.env.get("PATH", os.defpath))

    def run(self, argv: list[str], *, timeout_s: float, may_fail: bool = False) -> bool:
        """Run ``argv`` (on a dry run, only say so); a failure is reported, counted unless ``may_fail``."""
        shown = shlex.join(argv)
        if self.dry_run:
            self.say(f"would run  {shown}")
            return True
        try:
            done = subprocess.run(
                argv,
                env=dict(self.env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            self.say(f"FAILED     {shown}: {exc}")
            self.failed = self.failed or not may_fail
            return False
        if done.returncode == 0:
            self.say(f"ran        {shown}")
            return True
        detail = _first_line(done.stderr) or _first_line(done.stdout) or "no output"
        label = "note" if may_fail else "FAILED"
        self.say(f"{label:<10} {shown} exited {done.returncode}: {detail}")
        self.failed = self.failed or not may_fail
        return False


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _probe_manager(session: _Session) -> None:
    """Find systemctl and ask whether a user manager answers; never run on a dry run."""
    session.systemctl = session.which("systemctl")
    if session.systemctl is None:
        session.manager_down = "systemctl is not on PATH"
        return
    try:
        probe = subprocess.run(
            [session.systemctl, "--user", "show-environment"],
            env=dict(session.env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_SYSTEMCTL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        session.manager_down = f"systemctl --user could not be run: {exc}"
        return
    if probe.returncode != 0:
        reason = _first_line(probe.stderr) or f"exit {probe.returncode}"
        session.manager_down = f"no systemd user manager answers (systemctl --user: {reason})"


def _systemctl(
    session: _Session, live: list[list[str]], offline: list[list[str]], later: list[list[str]]
) -> None:
    """Run ``systemctl --user`` commands: ``live`` with a user manager; without one, the file-only ``offline``
    ones (enable/disable work on the unit directory alone) and ``later`` printed for the user."""
    if session.dry_run:
        for command in live:
            session.run(["systemctl", "--user", *command], timeout_s=_SYSTEMCTL_TIMEOUT_S)
        return
    if session.manager_down is None and session.systemctl is None:
        _probe_manager(session)
    if session.manager_down is None and session.systemctl is not None:
        for command in live:
            may_fail = command[0] == "disable"  # nothing to disable is not a failure
            session.run(
                [session.systemctl, "--user", *command], timeout_s=_SYSTEMCTL_TIMEOUT_S, may_fail=may_fail
            )
        return
    session.say(f"skipped    systemctl --user {' '.join(live[0])}: {session.manager_down}")
    if session.systemctl is None:
        session.later.extend(["systemctl", "--user", *command] for command in live)
        return
    for command in offline:
        session.run([session.systemctl, "--user", *command], timeout_s=_SYSTEMCTL_TIMEOUT_S, may_fail=True)
    session.later.extend(["systemctl", "--user", *command] for command in later)


def _pi(session: _Session, verb: str, shim: Path | None, *, may_fail: bool = False) -> None:
    """``pi install|remove <shim>``, or the command to run by hand when pi or the shim is not here."""
    if shim is None:
        session.say(
            "skipped    pi: the shim (client_shim/) is not beside this install; from a Longhaul checkout: "
            f"pi {verb} <checkout>/client_shim"
        )
        return
    pi = "pi" if session.dry_run else session.which("pi")
    if pi is None:
        session.say("skipped    pi: pi is not on PATH")
        session.later.append(["pi", verb, str(shim)])
        return
    session.run([pi, verb, str(shim)], timeout_s=_PI_TIMEOUT_S, may_fail=may_fail)


def _write_unit(session: _Session, directory: Path, unit: UnitFile) -> bool:
    """Write one unit atomically (same-directory temp file + rename); unchanged content is left alone."""
    path = directory / unit.relative
    if session.dry_run:
        session.say(f"would write {path} (mode 0644):")
        session.say(unit.content.rstrip("\n"))
        session.say("")
        return True
    try:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
            if path.read_text(encoding="utf-8") == unit.content:
                session.say(f"unchanged  {path}")
                return True
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            temporary.write_text(unit.content, encoding="utf-8")
            temporary.chmod(0o644)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                temporary.unlink()
    except OSError as exc:
        session.say(f"FAILED     cannot write {path}: {exc.strerror or exc}")
        session.failed = True
        return False
    session.say(f"wrote      {path}")
    return True


def _remove(session: _Session, path: Path) -> None:
    if session.dry_run:
        if path.is_file() or path.is_symlink():
            session.say(f"would remove {path}")
        return
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as exc:
        session.say(f"FAILED     cannot remove {path}: {exc.strerror or exc}")
        session.failed = True
        return
    session.say(f"removed    {path}")


def _remove_dropin(session: _Session, directory: Path) -> None:
    """Remove our drop-in, and its directory when nothing else (a user's own override) is left in it."""
    _remove(session, directory / DROPIN_DIR / DROPIN_NAME)
    if not session.dry_run:
        with contextlib.suppress(OSError):
            (directory / DROPIN_DIR).rmdir()


def _finish(session: _Session, done: str) -> int:
    if session.later:
        session.say("Run these yourself when the tools are available:")
        for command in session.later:
            session.say(f"  {shlex.join(command)}")
    if session.failed:
        session.say("Some steps failed (see FAILED above).")
        return EXIT_FAILED
    session.say("Dry run: nothing was written, removed or run." if session.dry_run else done)
    return EXIT_OK


def run_install(
    *,
    dry_run: bool,
    sandbox: bool | None,
    env: Mapping[str, str],
    out: TextIO,
    argv: Sequence[str] | None = None,
    shim: Path | None = None,
    restriction: Path = USERNS_RESTRICTION,
) -> int:
    """Write the units, reload and enable the socket, install the shim; returns the exit code."""
    session = _Session(env=env, out=out, dry_run=dry_run)
    directory = unit_dir(env)
    command = list(argv) if argv is not None else daemon_argv()
    choice = choose_sandbox(sandbox, restriction=restriction)
    session.say(f"Installing longhaul-daemon as a systemd user service: {shlex.join([*command, 'serve'])}")
    session.say(choice.reason)
    for unit in render_units(command, sandbox=choice.install):
        if not _write_unit(session, directory, unit):
            return _finish(session, "")
    if not choice.install:
        _remove_dropin(session, directory)
    _systemctl(
        session,
        live=[["daemon-reload"], ["enable", "--now", SOCKET], ["try-restart", SERVICE]],
        offline=[["enable", SOCKET]],
        later=[["daemon-reload"], ["start", SOCKET]],
    )
    if session.failed:
        return _finish(session, "")
    _pi(session, "install", shim)
    return _finish(session, _NEXT_STEPS)


def run_uninstall(*, dry_run: bool, env: Mapping[str, str], out: TextIO, shim: Path | None = None) -> int:
    """Stop and disable the units, remove them, reload, and remove the shim from pi; returns the exit code."""
    session = _Session(env=env, out=out, dry_run=dry_run)
    directory = unit_dir(env)
    session.say("Uninstalling the longhaul-daemon systemd user service")
    installed = any((directory / name).exists() for name in (SOCKET, SERVICE))
    if installed:
        _systemctl(
            session,
            live=[["disable", "--now", SOCKET, SERVICE]],
            offline=[["disable", SOCKET, SERVICE]],
            later=[["stop", SOCKET, SERVICE], ["daemon-reload"]],
        )
    else:
        session.say(f"no units in {directory}: nothing to stop")
    for name in (SOCKET, SERVICE):
        _remove(session, directory / name)
    _remove_dropin(session, directory)
    if installed and session.manager_down is None:
        _systemctl(session, live=[["daemon-reload"]], offline=[], later=[])
    _pi(session, "remove", shim, may_fail=True)
    return _finish(session, "Done. The record logs under <agent dir>/logs/ are left in place.")


def run_install_command(args: argparse.Namespace, *, out: TextIO) -> int:
    """Dispatch ``install``/``uninstall`` from parsed arguments."""
    shim = default_shim_dir()
    if args.command == "install":
        return run_install(dry_run=args.dry_run, sandbox=args.sandbox, env=os.environ, out=out, shim=shim)
    return run_uninstall(dry_run=args.dry_run, env=os.environ, out=out, shim=shim)
