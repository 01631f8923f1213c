"""The steps ``install`` and ``uninstall`` are made of, each printed as one line, honest on a dry run too.

A dry run must say what the real run would do, not what it would try: so it looks for ``systemctl`` and ``pi``
on ``PATH`` and asks ``systemctl --user show-environment`` (read-only) whether a user manager answers, exactly
as the real run does, and then prints ``would run`` or ``would skip`` where the real run prints ``ran`` or
``skipped``. It writes, removes and runs nothing else.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from longhaul_daemon.ops.user_manager import probe_user_manager

__all__ = ["EXIT_FAILED", "EXIT_OK", "PI_TIMEOUT_S", "SYSTEMCTL_TIMEOUT_S", "Steps"]

EXIT_OK = 0
EXIT_FAILED = 1
SYSTEMCTL_TIMEOUT_S = 60.0
PI_TIMEOUT_S = 300.0


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


@dataclass
class Steps:
    """One install/uninstall run: where output goes, whether anything failed, how programs are found."""

    env: Mapping[str, str]
    out: TextIO
    dry_run: bool
    failed: bool = False
    later: list[list[str]] = field(default_factory=list)
    systemctl: str | None = None
    manager_down: str | None = None
    _probed: bool = False

    def say(self, text: str) -> None:
        """Print one line of the run's output."""
        print(text, file=self.out)

    def skipped(self, what: str, why: str) -> None:
        """Say that a step is skipped (or would be, in a dry run), and why."""
        self.say(f"{'would skip' if self.dry_run else 'skipped':<10} {what}: {why}")

    def which(self, program: str) -> str | None:
        """The path of ``program`` on the run's ``PATH``, or None."""
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

    def _probe_manager(self) -> None:
        """Find systemctl and ask whether a user manager answers (read-only, so a dry run asks too)."""
        self._probed = True
        probe = probe_user_manager(self.env, timeout_s=SYSTEMCTL_TIMEOUT_S)
        self.systemctl, self.manager_down = probe.systemctl, probe.problem

    def systemctl_steps(
        self, live: list[list[str]], offline: list[list[str]], later: list[list[str]]
    ) -> None:
        """``systemctl --user`` commands: ``live`` with a user manager; without one, the file-only ``offline``
        ones (enable/disable work on the unit directory alone) and ``later`` printed for the user."""
        if not self._probed:
            self._probe_manager()
        if self.manager_down is None and self.systemctl is not None:
            for command in live:
                may_fail = command[0] == "disable"  # nothing to disable is not a failure
                self.run(
                    [self.systemctl, "--user", *command], timeout_s=SYSTEMCTL_TIMEOUT_S, may_fail=may_fail
                )
            return
        self.skipped(f"systemctl --user {' '.join(live[0])}", self.manager_down or "no systemctl")
        if self.systemctl is None:
            return  # no systemd here at all: no systemctl command could ever run (the end says what to do)
        for command in offline:
            self.run([self.systemctl, "--user", *command], timeout_s=SYSTEMCTL_TIMEOUT_S, may_fail=True)
        self.later.extend(["systemctl", "--user", *command] for command in later)

    def write_file(self, path: Path, content: str, *, show: bool) -> bool:
        """Write atomically (same-directory temp file, mode 0644, rename); unchanged content is left alone.
        ``show`` prints the content on a dry run (unit files); a copied source file is only named."""
        if self.dry_run:
            self.say(f"would write {path} (mode 0644){':' if show else ''}")
            if show:
                self.say(content.rstrip("\n"))
                self.say("")
            return True
        try:
            with contextlib.suppress(FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
                if path.read_text(encoding="utf-8") == content:
                    self.say(f"unchanged  {path}")
                    return True
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
            try:
                temporary.write_text(content, encoding="utf-8")
                temporary.chmod(0o644)
                os.replace(temporary, path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    temporary.unlink()
        except OSError as exc:
            self.say(f"FAILED     cannot write {path}: {exc.strerror or exc}")
            self.failed = True
            return False
        self.say(f"wrote      {path}")
        return True

    def remove(self, path: Path) -> None:
        """Remove the file at ``path`` (a dry run only says so); a missing file is fine, a failure is said."""
        if self.dry_run:
            if path.is_file() or path.is_symlink():
                self.say(f"would remove {path}")
            return
        try:
            path.unlink()
        except FileNotFoundError:
            return
        except OSError as exc:
            self.say(f"FAILED     cannot remove {path}: {exc.strerror or exc}")
            self.failed = True
            return
        self.say(f"removed    {path}")

    def remove_empty_dirs(self, *directories: Path) -> None:
        """Remove each directory in turn if it is empty; one still holding the user's files stays."""
        if self.dry_run:
            return
        for directory in directories:
            with contextlib.suppress(OSError):
                directory.rmdir()

    def finish(self, done: str) -> int:
        """Print the commands left for the user and the outcome; return the exit status."""
        if self.later:
            self.say(
                "Run these yourself when the tools are available:"
                if not self.dry_run
                else "The real run would leave these for you to run when the tools are available:"
            )
            for command in self.later:
                self.say(f"  {shlex.join(command)}")
        if self.failed:
            self.say("Some steps failed (see FAILED above).")
            return EXIT_FAILED
        self.say("Dry run: nothing was written, removed or changed." if self.dry_run else done)
        return EXIT_OK
