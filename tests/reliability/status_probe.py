"""``status`` asked again and again from a process of its own, so nothing the asking process does (serving a
model's 5 MB reply, parsing a big request) shows up as the daemon's latency.

``python status_probe.py SOCKET EVERY_S``: prints ``ready`` once the first ``status`` is answered (or went
unanswered for 10 s), then probes
every ``EVERY_S`` seconds on a fresh connection until stdin closes, and prints one JSON line:
``{"latenciesMs": [...], "unanswered": N}``. :class:`StatusProbe` runs it as a context manager.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from daemon_under_test import status

__all__ = ["StatusProbe"]


class StatusProbe:
    """The probe process for the duration of a block; then :attr:`latencies_ms` and :attr:`unanswered`."""

    def __init__(self, socket_path: Path, every_s: float) -> None:
        self.socket_path = socket_path
        self.every_s = every_s
        self.latencies_ms: list[float] = []
        self.unanswered = 0
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> StatusProbe:
        command = [sys.executable, str(Path(__file__)), str(self.socket_path), str(self.every_s)]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        self._process.stdout.readline()  # "ready"
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._process is not None
        out, _ = self._process.communicate(timeout=60)  # closes stdin: the probe stops and reports
        report = json.loads(out.strip().splitlines()[-1])
        self.latencies_ms, self.unanswered = report["latenciesMs"], report["unanswered"]


def _probe(socket_path: Path, every_s: float) -> None:
    done = threading.Event()

    def until_stdin_closes() -> None:
        sys.stdin.read()
        done.set()

    threading.Thread(target=until_stdin_closes, daemon=True).start()
    latencies: list[float] = []
    unanswered = 0
    try:
        status(socket_path, timeout=10.0)
    except (OSError, ValueError):
        unanswered += 1  # a daemon that cannot answer now is what the probe is for: counted, not fatal
    print("ready", flush=True)
    while not done.is_set():
        started = time.perf_counter()
        try:
            status(socket_path, timeout=5.0)
            latencies.append(round((time.perf_counter() - started) * 1000, 3))
        except (OSError, ValueError):
            unanswered += 1
        done.wait(every_s)
    print(json.dumps({"latenciesMs": latencies, "unanswered": unanswered}), flush=True)


if __name__ == "__main__":
    _probe(Path(sys.argv[1]), float(sys.argv[2]))
