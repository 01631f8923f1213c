"""The real small model for the e2e suite and ``bench/model_bench.py``: find it, serve it, read its log.

The model is installed outside the test run by ``realmodel/build_model.py`` (``make realmodel``, which
``make install`` and so ``make test`` run); :func:`installed` only checks it, through the installer's
``--check``, and never installs. :class:`RealModelServer` runs ``realmodel/server.py`` under the model's
own venv on a free loopback port, with a request log, and :func:`calls` reads that log: one :class:`Call`
per chat request, with who sent it (pi's agent loop, pi's own summariser, or anything else: the daemon).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from longhaul_daemon.evaluation.harness.callers import RequestKind, classify

from .e2e_sandbox import REPO_ROOT

__all__ = [
    "INSTALLER",
    "Call",
    "Installed",
    "RealModelError",
    "RealModelServer",
    "calls",
    "installed",
]

INSTALLER = REPO_ROOT / "realmodel" / "build_model.py"
START_TIMEOUT_S = 120.0  # loading takes well under a second on an idle machine; a loaded CI box is slower
STOP_TIMEOUT_S = 10.0
CHECK_TIMEOUT_S = 180.0


class RealModelError(RuntimeError):
    """The real model is not installed, or its server did not start."""


@dataclass(frozen=True)
class Installed:
    """Where the installer put the model: its venv's interpreter, the GGUF and the server script."""

    dir: Path
    python: Path
    model: Path
    server: Path


def installed() -> Installed:
    """The installed model, checked by ``realmodel/build_model.py --check`` (never installs)."""
    done = subprocess.run(
        [sys.executable, str(INSTALLER), "--check"],
        capture_output=True,
        text=True,
        timeout=CHECK_TIMEOUT_S,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise RealModelError(
            f"the real model is not ready (`{INSTALLER.name} --check` exited {done.returncode}):\n"
            f"{done.stderr.strip()}\nrun `make realmodel` first"
        )
    where = json.loads(lines[-1])
    return Installed(
        dir=Path(where["dir"]),
        python=Path(where["python"]),
        model=Path(where["model"]),
        server=Path(where["server"]),
    )


@dataclass(frozen=True)
class Call:
    """One chat request the server logged."""

    at: float  # wall-clock time it arrived
    kind: RequestKind  # "agent" (pi's loop), "pi-summary" (pi's own compaction), "other" (the daemon)
    status: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish: str | None
    response_format: str | None  # what the server made of ``response_format`` (None: plain text)
    client_gone: bool
    request: dict[str, Any]


def calls(log: Path) -> list[Call]:
    """Every request in the server's log so far (a partly written last line is left out)."""
    found: list[Call] = []
    try:
        raw = log.read_text(encoding="utf-8")
    except FileNotFoundError:
        return found
    for line in raw.splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        request = record.get("request") if isinstance(record.get("request"), dict) else {}
        usage = record.get("usage") if isinstance(record.get("usage"), dict) else {}
        found.append(
            Call(
                at=float(record.get("at", 0.0)),
                kind=classify(request),
                status=int(record.get("status", 0)),
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
                seconds=float(record.get("seconds", 0.0)),
                finish=record.get("finish"),
                response_format=record.get("responseFormat"),
                client_gone=bool(record.get("clientGone", False)),
                request=request,
            )
        )
    return found


class RealModelServer:
    """``realmodel/server.py`` in its own process group on a free port; ``with`` stops it."""

    def __init__(
        self,
        model: Installed,
        work_dir: Path,
        *,
        threads: int = 1,
        max_tokens: int = 512,
        agent_max_tokens: int | None = None,
        agent_prefix_reuse: bool = False,
        temperature: float = 0.0,
        seed: int = 0,
        alias: str = "smollm2",
    ) -> None:
        self.log = work_dir / "model-requests.jsonl"
        self.stderr_path = work_dir / "model-server.stderr"
        argv = [
            str(model.python), str(model.server), "--model", str(model.model), "--port", "0",
            "--alias", alias, "--threads", str(threads), "--max-tokens", str(max_tokens),
            "--temperature", str(temperature), "--seed", str(seed), "--log", str(self.log),
        ]  # fmt: skip
        if agent_max_tokens is not None:
            argv += ["--agent-max-tokens", str(agent_max_tokens)]
        if agent_prefix_reuse:
            argv.append("--agent-prefix-reuse")
        self._stderr: IO[bytes] = open(self.stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,
        )
        self.base_url = self._wait_ready()

    def _wait_ready(self) -> str:
        lines: queue.Queue[str] = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:  # reads to EOF, so the server never blocks on a full pipe
            for raw in iter(stdout.readline, b""):
                lines.put(raw.decode(errors="replace").strip())

        self._pump = threading.Thread(target=pump, daemon=True)
        self._pump.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or self.proc.poll() is not None:
                break
            try:
                line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if line.startswith("listening on "):
                return line.split()[2]
        self.close()
        raise RealModelError(
            f"the model server did not print its ready line within {START_TIMEOUT_S}s "
            f"(exit {self.proc.returncode}); stderr:\n{self.stderr_tail()}"
        )

    def stderr_tail(self, chars: int = 3000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "<no stderr>"

    def running(self) -> bool:
        return self.proc.poll() is None

    def calls(self) -> list[Call]:
        return calls(self.log)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._pump.join(timeout=STOP_TIMEOUT_S)  # it reads to EOF, which the exit brings
        if self.proc.stdout is not None and not self._pump.is_alive():
            self.proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> RealModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
