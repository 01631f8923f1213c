"""A stand-in ``git`` for the daemon's PATH that can be armed to hang, so a pass is caught mid-World step."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import time
from pathlib import Path

__all__ = ["FakeGit"]

_SCRIPT = '''#!{python}
"""Fake git for the Longhaul e2e suite: when armed, note the call and sleep before running the real git."""
import os
import sys
import time

ARM = {arm!r}
MARKER = {marker!r}
if os.path.exists(ARM):
    with open(MARKER, "a") as f:
        f.write(str(os.getpid()) + " " + " ".join(sys.argv[1:]) + "\\n")
    time.sleep({sleep_s})
os.execv({real_git!r}, [{real_git!r}, *sys.argv[1:]])
'''


class FakeGit:
    """``bin_dir/git`` runs the real git; while armed it first appends its argv to ``marker`` and sleeps."""

    def __init__(self, bin_dir: Path, *, sleep_s: float = 30.0) -> None:
        real_git = shutil.which("git")
        if real_git is None:
            raise RuntimeError("git is not on PATH")
        self.bin_dir = bin_dir
        self.arm_file = bin_dir / "ARMED"
        self.marker = bin_dir / "git-calls.log"
        script = bin_dir / "git"
        script.write_text(
            _SCRIPT.format(
                python=sys.executable,
                arm=str(self.arm_file),
                marker=str(self.marker),
                sleep_s=sleep_s,
                real_git=real_git,
            )
        )
        script.chmod(0o755)

    def arm(self) -> None:
        self.kill_sleepers()
        self.marker.unlink(missing_ok=True)
        self.arm_file.touch()

    def disarm(self) -> None:
        self.arm_file.unlink(missing_ok=True)

    def _lines(self) -> list[str]:
        try:
            return self.marker.read_text().splitlines()
        except FileNotFoundError:
            return []

    def calls(self) -> list[str]:
        """The argv of every armed call so far (one string per call)."""
        return [line.partition(" ")[2] for line in self._lines()]

    def kill_sleepers(self) -> None:
        """SIGKILL the armed calls still sleeping (the daemon may start git in its own session, so a group
        kill of the daemon does not reach them). Only pids whose command line is this fake git are touched."""
        script = str(self.bin_dir / "git")
        for line in self._lines():
            pid_text = line.partition(" ")[0]
            if not pid_text.isdigit():
                continue
            pid = int(pid_text)
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if script.encode() in cmdline:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def wait_for_call(self, timeout: float) -> list[str]:
        """Wait (bounded) until an armed git call has started; returns the calls seen so far."""
        deadline = time.monotonic() + timeout
        while not self.calls():
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"the daemon never ran git within {timeout}s of the compaction (no World step seen)"
                )
            time.sleep(0.02)
        return self.calls()
