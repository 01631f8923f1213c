"""The real Longhaul daemon as a child process on a private socket, which can be crashed and restarted.

``python -m longhaul_daemon serve --socket PATH`` in its own process group, its output in a log file per
start; :meth:`Daemon.start` returns once the socket answers ``status``. :meth:`Daemon.sweep` stops it and
kills whatever is left in every group it ran in (a ``git`` the World step started and the daemon left).
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

__all__ = ["Daemon", "DaemonError", "rpc_call"]

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class DaemonError(RuntimeError):
    """The daemon did not start, answer or stop as expected."""


def rpc_call(socket_path: Path, method: str, params: dict[str, Any], *, timeout: float = 5.0) -> Any:
    """One JSON-RPC 2.0 call over the daemon's NDJSON socket; returns ``result`` or raises ``DaemonError``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(socket_path))
        request = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        sock.sendall(json.dumps(request).encode() + b"\n")
        buffer = b""
        while b"\n" not in buffer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buffer += chunk
    line = buffer.split(b"\n", 1)[0]
    if not line:
        raise DaemonError(f"{method}: the daemon closed the connection without answering")
    answer = json.loads(line)
    if not isinstance(answer, dict) or "result" not in answer:
        raise DaemonError(f"{method}: error answer {answer!r}")
    return answer["result"]


class Daemon:
    """One daemon on ``socket_path``, logging to ``log_dir/daemon-<n>.log`` for its n-th start."""

    def __init__(self, socket_path: Path, log_dir: Path) -> None:
        self.socket_path = socket_path
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._starts = 0
        self._pgids: list[int] = []  # every group it ran in, for the final sweep of leftovers

    @property
    def log_path(self) -> Path:
        """The log file of the current start (each restart writes a new one)."""
        return self.log_dir / f"daemon-{self._starts}.log"

    def log_tail(self, chars: int = 3000) -> str:
        """The last ``chars`` of the current log, for a failing test's message."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "<no daemon log>"

    def start(self, env: dict[str, str], *, extra_args: tuple[str, ...] = ()) -> None:
        """Start and wait until the socket answers ``status``; ``extra_args`` go after ``serve --socket
        PATH`` (e.g. ``("--pass-budget", "5")``). The error names the daemon's output."""
        if self.proc is not None and self.proc.poll() is None:
            raise DaemonError("daemon already running")
        self._close_log()
        self._starts += 1
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in _close_log
        argv = [sys.executable, "-m", "longhaul_daemon", "serve", "--socket", str(self.socket_path)]
        self.proc = subprocess.Popen(
            [*argv, *extra_args],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._pgids.append(self.proc.pid)
        deadline = time.monotonic() + START_TIMEOUT_S
        last_error = "no attempt"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DaemonError(
                    f"daemon exited with {self.proc.returncode} before answering status; output:\n"
                    + self.log_tail()
                )
            try:
                self.status()
                return
            except (OSError, DaemonError, ValueError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            time.sleep(0.1)
        self.kill()
        raise DaemonError(
            f"daemon did not answer status on {self.socket_path} within {START_TIMEOUT_S}s "
            f"(last error {last_error}); output:\n{self.log_tail()}"
        )

    def status(self) -> dict[str, Any]:
        """The daemon's ``status`` RPC result."""
        result = rpc_call(self.socket_path, "status", {})
        if not isinstance(result, dict):
            raise DaemonError(f"status returned {result!r}")
        return result

    @property
    def pid(self) -> int:
        """The daemon's process id; raises when it was never started."""
        if self.proc is None:
            raise DaemonError("daemon not started")
        return self.proc.pid

    def running(self) -> bool:
        """Whether the daemon process is started and has not exited."""
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the daemon process itself (a crash): no cleanup runs, the socket file stays behind."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=STOP_TIMEOUT_S)

    def stop(self) -> int | None:
        """SIGTERM and wait (SIGKILL after a bound); returns the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._close_log()
        return self.proc.returncode

    def sweep(self) -> None:
        """Stop the daemon and kill what is left in the process groups it ran in."""
        self.stop()
        for pgid in self._pgids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)
        self._pgids.clear()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
