"""Drives a real pi process with the Longhaul shim loaded: RPC mode (JSON lines) and print mode (pi -p)."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .sandbox import Sandbox

__all__ = ["PiError", "PiRpc", "PrintRun", "run_print"]

Event = dict[str, Any]

DEFAULT_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 15.0


class PiError(RuntimeError):
    """pi did not answer as expected (timeout, exit, rejected command)."""


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=CLOSE_TIMEOUT_S)


class PiRpc:
    """``pi --mode rpc -e <shim>``; stdout is framed on b"\\n" only (JSON may contain U+2028)."""

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        extra_args: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        with_e: bool = True,
    ) -> None:
        """``with_e=False`` starts pi without ``-e``, so only what pi's settings install is loaded (the
        install e2e); ``env`` replaces the sandbox's pi environment."""
        self.sandbox = sandbox
        load = ["-e", str(sandbox.shim_dir)] if with_e else []
        argv = [str(sandbox.pi_bin), "--mode", "rpc", *load, *extra_args]
        self.proc = subprocess.Popen(
            argv,
            cwd=sandbox.project,
            env=sandbox.pi_env() if env is None else env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            start_new_session=True,
        )
        self._cond = threading.Condition()
        self._events: list[Event] = []
        self._stderr: list[str] = []
        self._eof = False
        self._ids = itertools.count(1)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._read_stdout, args=(self.proc.stdout,), daemon=True),
            threading.Thread(target=self._read_stderr, args=(self.proc.stderr,), daemon=True),
        ]
        for t in self._threads:
            t.start()

    # ---- reading ---------------------------------------------------------------------------------------
    def _read_stdout(self, stream: IO[bytes]) -> None:
        buf = b""
        while True:
            chunk = stream.read(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                raw, buf = buf.split(b"\n", 1)
                raw = raw.rstrip(b"\r")
                if not raw:
                    continue
                try:
                    event = json.loads(raw)
                except json.JSONDecodeError:
                    event = {"type": "_non_json", "raw": raw.decode(errors="replace")}
                if not isinstance(event, dict):
                    event = {"type": "_non_object", "raw": event}
                with self._cond:
                    self._events.append(event)
                    self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def _read_stderr(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            with self._cond:
                self._stderr.append(line.decode(errors="replace"))

    @property
    def stderr(self) -> str:
        with self._cond:
            return "".join(self._stderr)

    def events(self, start: int = 0) -> list[Event]:
        with self._cond:
            return list(self._events[start:])

    def mark(self) -> int:
        """A position in the event stream; pass it as ``start`` to wait only for later events."""
        with self._cond:
            return len(self._events)

    def extension_errors(self) -> list[Event]:
        return [e for e in self.events() if e.get("type") == "extension_error"]

    def diagnostics(self) -> str:
        errs = json.dumps(self.extension_errors())[:2000]
        return f"extension_error events: {errs}\npi stderr (tail):\n{self.stderr[-2000:]}"

    def wait_event(
        self,
        predicate: Callable[[Event], bool],
        *,
        start: int = 0,
        timeout: float = DEFAULT_TIMEOUT_S,
        what: str = "event",
    ) -> tuple[int, Event]:
        """The first event at index >= ``start`` matching ``predicate``, with its index (bounded wait)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            index = start
            while True:
                while index < len(self._events):
                    event = self._events[index]
                    if predicate(event):
                        return index, event
                    index += 1
                if self._eof:
                    raise PiError(f"pi exited while waiting for {what}\n{self._diag_locked()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PiError(f"timed out after {timeout}s waiting for {what}\n{self._diag_locked()}")
                self._cond.wait(timeout=left)

    def _diag_locked(self) -> str:
        errs = [e for e in self._events if e.get("type") == "extension_error"]
        tail = "".join(self._stderr)[-2000:]
        return f"extension_error events: {json.dumps(errs)[:2000]}\npi stderr (tail):\n{tail}"

    # ---- commands --------------------------------------------------------------------------------------
    def send(self, command: dict[str, Any]) -> str:
        rid = f"e2e-{next(self._ids)}"
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": rid, **command}).encode() + b"\n")
        self.proc.stdin.flush()
        return rid

    def request(self, command: dict[str, Any], *, timeout: float = DEFAULT_TIMEOUT_S) -> Event:
        """Send a command and return its ``response`` line (success or not)."""
        start = self.mark()
        rid = self.send(command)
        _, response = self.wait_event(
            lambda e: e.get("type") == "response" and e.get("id") == rid,
            start=start,
            timeout=timeout,
            what=f"response to {command.get('type')}",
        )
        return response

    def prompt(self, message: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> list[Event]:
        """Send a prompt and wait for its ``agent_end``; returns the events of the run."""
        start = self.mark()
        response = self.request({"type": "prompt", "message": message}, timeout=timeout)
        if not response.get("success"):
            raise PiError(f"prompt rejected: {response}\n{self.diagnostics()}")
        end, _ = self.wait_event(
            lambda e: e.get("type") == "agent_end", start=start, timeout=timeout, what="agent_end"
        )
        return self.events(start)[: end - start + 1]

    def compact(self, instructions: str | None = None, *, timeout: float = DEFAULT_TIMEOUT_S) -> Event:
        """RPC ``compact``; the response's ``data`` = {summary, firstKeptEntryId, tokensBefore, details}."""
        command: dict[str, Any] = {"type": "compact"}
        if instructions is not None:
            command["customInstructions"] = instructions
        return self.request(command, timeout=timeout)

    def bash(self, command: str, *, timeout: float = DEFAULT_TIMEOUT_S) -> Event:
        """RPC ``bash``: runs like a user's ``!cmd`` and records a bashExecution message."""
        response = self.request({"type": "bash", "command": command}, timeout=timeout)
        if not response.get("success"):
            raise PiError(f"bash rejected: {response}\n{self.diagnostics()}")
        return response

    def get_state(self) -> dict[str, Any]:
        response = self.request({"type": "get_state"})
        data = response.get("data")
        if not response.get("success") or not isinstance(data, dict):
            raise PiError(f"get_state failed: {response}")
        return data

    def session_file(self) -> Path:
        path = self.get_state().get("sessionFile")
        if not isinstance(path, str):
            raise PiError("get_state has no sessionFile")
        return Path(path)

    # ---- shutdown ----------------------------------------------------------------------------------------
    def close(self) -> int | None:
        """Close stdin (pi's clean shutdown), wait bounded, kill the process group if it hangs."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(BrokenPipeError, OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=CLOSE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _kill_group(self.proc)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # leftovers of bash tool calls
        for t in self._threads:
            t.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return self.proc.returncode

    def __enter__(self) -> PiRpc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class PrintRun:
    """The outcome of one ``pi -p`` run."""

    returncode: int
    stdout: str
    stderr: str
    session_file: Path | None


def run_print(
    sandbox: Sandbox, *messages: str, flags: tuple[str, ...] = (), timeout: float = 90.0
) -> PrintRun:
    """``pi -p -e <shim> [flags] msg…`` in the project; returns exit code, output and the session file written
    (a new file, else the most recently written one, e.g. with ``flags=("-c",)``)."""
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
        raise PiError(
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
