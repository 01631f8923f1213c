"""``pi -p`` with the shim loaded, run to its end in a sandbox: exit code, output and the session it wrote."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from longhaul_daemon.evaluation.harness.sandbox import Sandbox

__all__ = ["PrintRun", "run_print"]

_KILL_WAIT_S = 15.0


@dataclass(frozen=True)
class PrintRun:
    """The outcome of one ``pi -p`` run."""

    returncode: int
    stdout: str
    stderr: str
    session_file: Path | None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=_KILL_WAIT_S)


def run_print(
    sandbox: Sandbox, *messages: str, flags: tuple[str, ...] = (), timeout: float = 90.0
) -> PrintRun:
    """``pi -p -e <shim> [flags] msg…`` in the project; the session file is the one it wrote (a new file,
    else the most recently written one, e.g. with ``flags=("-c",)``)."""
    before = set(sandbox.session_files())
    argv = [str(sandbox.pi_bin), "-p", "-e", str(sandbox.shim_dir), *flags, *messages]
    proc = subprocess.Popen(
        argv,
        cwd=sandbox.project,
        env=sandbox.pi_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        raise AssertionError(
            f"pi -p did not exit within {timeout}s\nstdout:\n{out.decode(errors='replace')[-2000:]}\n"
            f"stderr:\n{err.decode(errors='replace')[-2000:]}"
        ) from None
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    files = sandbox.session_files()
    new = sorted(set(files) - before)
    latest = max(files, key=lambda f: f.stat().st_mtime_ns) if files else None
    return PrintRun(
        returncode=proc.returncode,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        session_file=new[-1] if new else latest,
    )
