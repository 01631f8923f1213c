"""A real daemon process for the reliability runs: started in a scratch directory, watched, measured, stopped.

The fuzzer and the kill loop need what an in-process daemon cannot give: the daemon's own resident memory
(``/proc/<pid>/status``), a crash that does not take the test with it, and SIGKILL. The daemon runs with its
working directory, HOME and agent directory inside the run's work directory, so whatever a mutated request
makes it write (relative log paths, for one) lands there.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

__all__ = ["DaemonUnderTest", "rss_mb", "status"]

START_WAIT_S = 30.0
STOP_WAIT_S = 15.0


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of ``pid`` in MB (``VmHWM``: its peak so far); 0 when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def status(socket_path: Path, *, timeout: float = 5.0) -> dict[str, Any]:
    """One ``status`` call on a fresh connection; raises ``OSError`` or ``ValueError`` when none answers."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(socket_path))
        sock.sendall(b'{"jsonrpc":"2.0","id":"st","method":"status"}\n')
        buffer = b""
        while b"\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                raise ValueError("closed without a reply")
            buffer += chunk
    reply = json.loads(buffer.split(b"\n", 1)[0])
    if not isinstance(reply, dict) or not isinstance(reply.get("result"), dict):
        raise ValueError(f"not a status reply: {reply!r}")
    result: dict[str, Any] = reply["result"]
    return result


class DaemonUnderTest:
    """``python -m longhaul_daemon serve`` on ``workdir/run/d.sock``, its output in ``workdir/daemon.log``."""

    def __init__(self, workdir: Path, *args: str) -> None:
        self.workdir = workdir
        self.args = args
        self.socket_path = workdir / "run" / "d.sock"
        self.log_path = workdir / "daemon.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        for sub in ("run", "home", "agent", "project"):
            (workdir / sub).mkdir(mode=0o700, exist_ok=True)

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "LONGHAUL_", "XDG_"))}
        home = self.workdir / "home"
        return {
            **keep,
            "HOME": str(home),
            "PI_CODING_AGENT_DIR": str(self.workdir / "agent"),
            "XDG_RUNTIME_DIR": str(self.workdir / "run"),
        }

    def start(self) -> float:
        """Start and wait until ``status`` answers; returns the seconds it took (a figure, never asserted)."""
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        argv = [
            sys.executable,
            "-m",
            "longhaul_daemon",
            "serve",
            "--socket",
            str(self.socket_path),
            *self.args,
        ]
        started = time.monotonic()
        self.proc = subprocess.Popen(
            argv,
            cwd=self.workdir,
            env=self.env(),
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the daemon exited with {self.proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError, ValueError):
                status(self.socket_path, timeout=1.0)
                return time.monotonic() - started
            if time.monotonic() - started > START_WAIT_S:
                self.kill()
                raise RuntimeError(f"the daemon did not answer within {START_WAIT_S} s:\n{self.log_tail()}")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return "<no log>"

    def kill(self) -> None:
        """SIGKILL (a crash: nothing is cleaned up, the socket file stays)."""
        if self.running():
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=STOP_WAIT_S)

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL past a bound; returns the exit code."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # a git the daemon left behind
            return self.proc.returncode
        return None
