"""Drives a real ``pi --mode rpc`` in a sandbox: prompts, user commands, compactions, state, events.

pi's RPC output mixes command responses with session events on stdout, one JSON object per line; lines are
split on ``\\n`` only, since a JSON string may hold U+2028 (pi-api.md §7). Reader threads collect stdout and
stderr; every wait is bounded. A failure raises :class:`PiError`. Its message is a fixed phrase unless the
driver was started with ``diagnose`` (the test suite's default): then it adds pi's extension errors and the
tail of its stderr, which can quote the transcript, so ``replay`` and ``score`` leave it off.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from longhaul_daemon.evaluation.harness.sandbox import Sandbox

__all__ = ["DEFAULT_TIMEOUT_S", "Event", "PiError", "PiRpc"]

Event = dict[str, Any]
DEFAULT_TIMEOUT_S = 60.0
_CLOSE_S = 15.0
_TAIL = 2000


class PiError(RuntimeError):
    """pi exited, timed out or refused a command."""


class PiRpc:
    """``pi --mode rpc -e <extension>…`` in ``box.project``; by default the sandbox's shim alone."""

    def __init__(
        self,
        box: Sandbox,
        *,
        extensions: Sequence[Path] | None = None,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
        diagnose: bool = True,
    ) -> None:
        """``extensions=()`` loads none (what pi's own settings install still loads); ``env`` replaces the
        sandbox's pi environment."""
        self.diagnose = diagnose
        argv = [str(box.pi_bin), "--mode", "rpc"]
        for extension in [box.shim_dir] if extensions is None else extensions:
            argv += ["-e", str(extension)]
        try:
            self.proc = subprocess.Popen(
                [*argv, *extra_args],
                cwd=box.project,
                env=box.pi_env() if env is None else env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as exc:
            raise PiError(f"pi could not be started ({type(exc).__name__})") from None
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
        for thread in self._threads:
            thread.start()

    # ---- reading ----------------------------------------------------------------------------------------
    def _read_stdout(self, stream: IO[bytes]) -> None:
        buffer = b""
        while chunk := stream.read(65536):
            buffer += chunk
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                if not raw.strip():
                    continue
                try:
                    event = json.loads(raw)
                except ValueError:
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
        """Everything pi wrote to stderr so far."""
        with self._cond:
            return "".join(self._stderr)

    def events(self, start: int = 0) -> list[Event]:
        """The events pi sent, from index ``start`` on (see :meth:`mark`)."""
        with self._cond:
            return list(self._events[start:])

    def mark(self) -> int:
        """A position in the event stream; pass it as ``start`` to wait only for later events."""
        with self._cond:
            return len(self._events)

    def count(self, event_type: str) -> int:
        """How many events of ``event_type`` pi sent so far."""
        return sum(1 for e in self.events() if e.get("type") == event_type)

    def extension_errors(self) -> list[Event]:
        """The ``extension_error`` events: the shim failing inside pi."""
        return [e for e in self.events() if e.get("type") == "extension_error"]

    def diagnostics(self) -> str:
        """Recent events and stderr, for a failing test's message."""
        with self._cond:
            return self._diagnostics_locked()

    def _diagnostics_locked(self) -> str:
        errors = [e for e in self._events if e.get("type") == "extension_error"]
        tail = "".join(self._stderr)[-_TAIL:]
        return f"extension_error events: {json.dumps(errors)[:_TAIL]}\npi stderr (tail):\n{tail}"

    def _failed(self, phrase: str) -> PiError:
        return PiError(f"{phrase}\n{self._diagnostics_locked()}" if self.diagnose else phrase)

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
                    if predicate(self._events[index]):
                        return index, self._events[index]
                    index += 1
                if self._eof:
                    raise self._failed(f"pi exited while waiting for {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._failed(f"pi did not send {what} within {timeout:g}s")
                self._cond.wait(timeout=left)

    # ---- commands ---------------------------------------------------------------------------------------
    def send(self, command: dict[str, Any]) -> str:
        """Write one RPC command to pi's stdin and return the id its response will carry."""
        request_id = f"rpc-{next(self._ids)}"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"id": request_id, **command}).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            with self._cond:
                raise self._failed("pi stopped reading its commands") from None
        return request_id

    def request(self, command: dict[str, Any], *, timeout: float = DEFAULT_TIMEOUT_S) -> Event:
        """Send a command and return its ``response`` line (successful or not)."""
        start = self.mark()
        request_id = self.send(command)
        _, response = self.wait_event(
            lambda e: e.get("type") == "response" and e.get("id") == request_id,
            start=start,
            timeout=timeout,
            what=f"the response to {command.get('type')}",
        )
        return response

    def ok(self, command: dict[str, Any], *, timeout: float = DEFAULT_TIMEOUT_S) -> Event:
        """:meth:`request`, raising when pi refuses the command."""
        response = self.request(command, timeout=timeout)
        if not response.get("success"):
            with self._cond:
                raise self._failed(f"pi refused {command.get('type')}")
        return response

    def prompt(
        self, message: str, images: Sequence[dict[str, Any]] = (), *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> list[Event]:
        """One user message; returns the events of its agent run, once its ``agent_end`` came."""
        start = self.mark()
        command: dict[str, Any] = {"type": "prompt", "message": message}
        if images:
            command["images"] = list(images)
        self.ok(command, timeout=timeout)
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
        return self.ok({"type": "bash", "command": command}, timeout=timeout)

    def get_state(self, *, timeout: float = DEFAULT_TIMEOUT_S) -> dict[str, Any]:
        """pi's ``get_state`` data."""
        data = self.ok({"type": "get_state"}, timeout=timeout).get("data")
        if not isinstance(data, dict):
            with self._cond:
                raise self._failed("get_state has no data")
        return data

    def session_file(self, *, timeout: float = DEFAULT_TIMEOUT_S) -> Path:
        """The session file pi is writing, from ``get_state``."""
        path = self.get_state(timeout=timeout).get("sessionFile")
        if not isinstance(path, str):
            with self._cond:
                raise self._failed("get_state names no session file")
        return Path(path)

    # ---- shutdown ---------------------------------------------------------------------------------------
    def close(self) -> int | None:
        """Close stdin (pi's clean exit), wait bounded, then kill what is left of pi's process group."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=_CLOSE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # a hung pi, or leftovers of its bash tool calls
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=_CLOSE_S)
        for thread in self._threads:
            thread.join(timeout=5)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        return self.proc.returncode

    def __enter__(self) -> PiRpc:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
