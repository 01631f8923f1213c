"""What facts, replay and score share: which transcripts to read, how a path is named, and the progress bar.

A transcript's path can name a customer, a project or a person, so the evaluation commands never print it: a
transcript is named by the first 12 hex digits of the SHA-256 of its absolute path (REPLAY-6, FACTS-4). The
progress bar writes counts and those hashes only, and only to a terminal, so a log or a pipe stays clean.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

__all__ = [
    "HASH_CHARS",
    "KEY_SUFFIX",
    "Progress",
    "agent_transcripts",
    "check_named_files",
    "input_transcripts",
    "key_path",
    "path_hash",
    "share",
]

HASH_CHARS = 12  # REPLAY-6: the first 12 hex digits of SHA-256 of the absolute path
KEY_SUFFIX = ".key.json"  # a corpus answer key sits beside its transcript: FILE.jsonl -> FILE.key.json
_BAR_CELLS = 24
_REDRAW_S = 0.2  # at most five redraws a second, so a fast loop does not flood the terminal


def path_hash(path: Path) -> str:
    """REPLAY-6: how a transcript is named in any output; the same file always gets the same name."""
    absolute = os.path.abspath(os.fspath(path))
    return hashlib.sha256(absolute.encode("utf-8", "surrogateescape")).hexdigest()[:HASH_CHARS]


def key_path(transcript: Path) -> Path:
    """Where the answer key of a corpus transcript lives (it may not exist)."""
    name = transcript.name[: -len(".jsonl")] if transcript.name.endswith(".jsonl") else transcript.name
    return transcript.with_name(name + KEY_SUFFIX)


def agent_transcripts(agent: Path) -> list[Path]:
    """FACTS-4: every ``sessions/<dir>/*.jsonl`` regular file under pi's agent dir, in path order."""
    found: list[Path] = []
    sessions = agent / "sessions"
    if not sessions.is_dir():
        return found
    for path in sorted(sessions.glob("*/*.jsonl")):
        try:
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path)
        except OSError:
            continue  # removed since the listing
    return found


def input_transcripts(files: Sequence[str], env: Mapping[str, str]) -> list[Path]:
    """The files named on the command line, else every transcript in the agent dir (FACTS-4)."""
    if files:
        return [Path(f) for f in files]
    from longhaul_daemon.inspector.session_file import agent_dir

    return agent_transcripts(agent_dir(env))


def check_named_files(files: Sequence[str], command: str, err: TextIO) -> bool:
    """Whether every file named on the command line holds a pi transcript; each one that does not is named
    on ``err`` with the reason, before a command starts pi, a daemon or a paid model on any of them."""
    from longhaul_daemon.inspector.session_file import (
        TranscriptError,
        check_transcript,
        transcript_error_line,
    )

    usable = True
    for file in files:
        try:
            check_transcript(Path(file))
        except TranscriptError as exc:
            err.write(transcript_error_line(command, exc))
            usable = False
    return usable


def share(part: float, whole: float) -> str:
    """``part`` of ``whole`` as a whole percentage, or a dash when there is nothing to divide."""
    return f"{100.0 * part / whole:.0f}%" if whole else "-"


@dataclass
class _BarState:
    done: int = 0
    detail: str = ""
    drawn_at: float = 0.0
    width: int = 0


class Progress:
    """A one-line progress bar on a terminal; silent when ``stream`` is not one (a pipe, a file, CI).

    ``detail`` must hold only counts and hashed names: it is printed as it is.
    """

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.label = label
        self.total = max(total, 0)
        self.stream = sys.stderr if stream is None else stream
        self.active = _is_terminal(self.stream)
        self._state = _BarState()
        self._started = time.monotonic()

    def update(self, done: int | None = None, detail: str | None = None, *, force: bool = False) -> None:
        """Move the bar to ``done`` of ``total`` (unchanged when None) with an optional detail."""
        state = self._state
        if done is not None:
            state.done = min(max(done, 0), self.total) if self.total else max(done, 0)
        if detail is not None:
            state.detail = detail
        if not self.active:
            return
        now = time.monotonic()
        if not force and now - state.drawn_at < _REDRAW_S:
            return
        state.drawn_at = now
        self._draw(now)

    def advance(self, detail: str | None = None) -> None:
        """One more item done; redraws at once, so each finished item shows."""
        self.update(self._state.done + 1, detail, force=True)

    def close(self) -> None:
        """Leave the terminal line clean for whatever is printed next."""
        if self.active and self._state.width:
            self.stream.write("\r" + " " * self._state.width + "\r")
            self.stream.flush()
            self._state.width = 0

    def _draw(self, now: float) -> None:
        state = self._state
        filled = round(_BAR_CELLS * state.done / self.total) if self.total else 0
        bar = "#" * filled + "." * (_BAR_CELLS - filled)
        elapsed = now - self._started
        line = f"{self.label} [{bar}] {state.done}/{self.total} {elapsed:4.0f}s"
        if state.detail:
            line += f" {state.detail}"
        pad = max(state.width - len(line), 0)
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()
        state.width = len(line)

    def __enter__(self) -> Progress:
        self.update(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False  # closed or not a real stream: never write escape-free noise into it
