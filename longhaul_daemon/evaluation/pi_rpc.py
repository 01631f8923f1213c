"""Drives a real ``pi --mode rpc`` for a replay: prompts, user commands, compactions, model switches.

pi's RPC output mixes command responses with session events on stdout, one JSON object per line; lines are
split on ``\\n`` only, since a JSON string may hold U+2028 (pi-api.md §7). A reader thread collects every
line; waits are bounded. Extension handler errors arrive as ``extension_error`` events and are counted
(REPLAY-8), never printed: their text can quote the transcript.
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

__all__ = ["PiFailed", "PiRpc"]

Event = dict[str, Any]
_CLOSE_S = 15.0


class PiFailed(RuntimeError):
    """pi exited, timed out or refused a command; the message is a fixed phrase, never pi's own text."""


class PiRpc:
    """One pi process: ``pi --mode rpc -e EXT…`` in ``cwd`` with ``env``."""

    def __init__(self, pi_bin: Path, extensions: Sequence[Path], *, cwd: Path, env: dict[str, str]) -> None:
        argv = [str(pi_bin), "--mode", "rpc"]
        for extension in extensions:
            argv += ["-e", str(extension)]
        try:
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                bufsize=0,
                start_new_session=True,
            )
        except OSError as exc:
            raise PiFailed(f"pi could not be started ({type(exc).__name__})") from None
        self._cond = threading.Condition()
        self._events: list[Event] = []
        self._eof = False
        self._ids = itertools.count(1)
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
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
                    continue  # not a protocol line (pi prints nothing else to stdout in RPC mode)
                if isinstance(event, dict):
                    with self._cond:
                        self._events.append(event)
                        self._cond.notify_all()
        with self._cond:
            self._eof = True
            self._cond.notify_all()

    def mark(self) -> int:
        with self._cond:
            return len(self._events)

    def events(self, start: int = 0) -> list[Event]:
        with self._cond:
            return list(self._events[start:])

    def count(self, event_type: str) -> int:
        return sum(1 for e in self.events() if e.get("type") == event_type)

    def wait_for(self, predicate: Callable[[Event], bool], *, start: int, timeout: float, what: str) -> Event:
        deadline = time.monotonic() + timeout
        with self._cond:
            index = start
            while True:
                while index < len(self._events):
                    if predicate(self._events[index]):
                        return self._events[index]
                    index += 1
                if self._eof:
                    raise PiFailed(f"pi exited while waiting for {what}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise PiFailed(f"pi did not send {what} within {timeout:g}s")
                self._cond.wait(timeout=left)

    def request(self, command: dict[str, Any], *, timeout: float) -> Event:
        """Send one command and return its ``response`` line (successful or not)."""
        start = self.mark()
        request_id = f"replay-{next(self._ids)}"
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps({"id": request_id, **command}).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError:
            raise PiFailed("pi stopped reading its commands") from None
        return self.wait_for(
            lambda e: e.get("type") == "response" and e.get("id") == request_id,
            start=start,
            timeout=timeout,
            what=f"the response to {command.get('type')}",
        )

    def ok(self, command: dict[str, Any], *, timeout: float) -> Event:
        response = self.request(command, timeout=timeout)
        if not response.get("success"):
            raise PiFailed(f"pi refused {command.get('type')}")
        return response

    def prompt(self, text: str, images: Sequence[dict[str, Any]], *, timeout: float) -> None:
        """One user message; returns when pi's agent loop for it has ended."""
        start = self.mark()
        command: dict[str, Any] = {"type": "prompt", "message": text}
        if images:
            command["images"] = list(images)
        self.ok(command, timeout=timeout)
        self.wait_for(lambda e: e.get("type") == "agent_end", start=start, timeout=timeout, what="agent_end")

    def session_file(self, *, timeout: float) -> Path | None:
        data = self.ok({"type": "get_state"}, timeout=timeout).get("data")
        path = data.get("sessionFile") if isinstance(data, dict) else None
        return Path(path) if isinstance(path, str) else None

    def close(self) -> int | None:
        """Close stdin (pi's clean exit), wait bounded, then kill the whole group."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=_CLOSE_S)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=_CLOSE_S)
        self._reader.join(timeout=5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return self.proc.returncode
