"""Read one pi session file without trusting it, and find the branch pi would resume (INSPECT-10, INSPECT-11).

A session file is JSONL: a ``{"type": "session", ...}`` header, then one entry per line, linked into a tree
by ``parentId`` (pi-api.md §3). The file is opened read-only and read once, bounded in size (INSPECT-12). A
line that is not a JSON object is counted as a :class:`LineProblem` and the rest is read; a broken
``parentId`` chain ends the branch where it breaks. Only a path that holds no readable pi transcript at
all raises :class:`TranscriptError`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longhaul_daemon.state.sanitize import is_safe_char, sanitize
from longhaul_daemon.transcript.jsonl import is_session_header, parse_line, walk_branch

__all__ = [
    "AGENT_DIR_ENV",
    "MAX_FILE_BYTES",
    "LineProblem",
    "Transcript",
    "TranscriptError",
    "agent_dir",
    "check_transcript",
    "newest_transcript",
    "read_transcript",
    "transcript_error_line",
]

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
MAX_FILE_BYTES = 512 * 1024 * 1024  # a larger file is refused rather than read into memory
_HEADER_BYTES = 1024 * 1024  # pi's session header is one short line
_WALK_PROBLEMS = {
    "missing-parent": "its parentId names no entry; branch cut",
    "parent-cycle": "parentId links loop; branch cut",
}


class TranscriptError(Exception):
    """The path holds no pi transcript the inspector can read; the message is meant for the user.

    ``reason`` says why in a short code that names no path (``missing``, ``directory``, ``not-a-file``,
    ``unreadable``, ``too-large``, ``empty``, ``not-a-session``, ``none-found``), for reports that must not
    carry the path (REPLAY-6).
    """

    def __init__(self, message: str, reason: str = "unreadable") -> None:
        super().__init__(message)
        self.reason = reason


def transcript_error_line(command: str, error: TranscriptError, *, listed_as: str | None = None) -> str:
    """The one line every command prints when a transcript cannot be read: the command, the file and why.

    The path is the user's own argument (or found in their agent dir) and goes only to stderr, never into
    a report, which names the file by ``listed_as`` (its hash); it is made printable, since a file name can
    hold escape sequences.
    """
    text = "".join(ch for ch in sanitize(str(error)) if is_safe_char(ch))
    listed = f" (listed as {listed_as})" if listed_as else ""
    return f"longhaul-daemon {command}: {text}{listed}\n"


@dataclass(frozen=True)
class LineProblem:
    """A line of the file, or a link between entries, that could not be used (INSPECT-10)."""

    line: int  # 1-based line number in the file
    entry_id: str | None
    code: str  # invalid-json, not-an-object, missing-parent, parent-cycle
    detail: str


@dataclass(frozen=True)
class Transcript:
    """A parsed session file: its header, every entry in file order and the branch ending at the leaf."""

    path: Path
    header: dict[str, Any]
    entries: list[dict[str, Any]]
    branch: list[dict[str, Any]]
    leaf_id: str | None
    problems: list[LineProblem] = field(default_factory=list)
    entry_lines: dict[str, int] = field(default_factory=dict)  # entry id -> its line in the file


def agent_dir(env: Mapping[str, str]) -> Path:
    """pi's agent directory: ``$PI_CODING_AGENT_DIR`` when set and not empty, else ``~/.pi/agent``."""
    configured = env.get(AGENT_DIR_ENV, "")
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME", "")
    return (Path(home) if home else Path.home()) / ".pi" / "agent"


def newest_transcript(agent: Path) -> Path:
    """INSPECT-1: the most recently modified ``sessions/<dir>/*.jsonl`` under ``agent`` (ties: by path)."""
    sessions = agent / "sessions"
    if not sessions.is_dir():
        raise TranscriptError(f"no pi transcript found: {sessions} does not exist", "none-found")
    found: list[tuple[int, str, Path]] = []
    for path in sessions.glob("*/*.jsonl"):
        try:
            info = path.stat()
        except OSError:
            continue  # removed or unreadable since the listing: not a candidate
        if stat.S_ISREG(info.st_mode):
            found.append((info.st_mtime_ns, str(path), path))
    if not found:
        raise TranscriptError(f"no pi transcript found: no .jsonl file under {sessions}/*/", "none-found")
    return max(found)[2]


def _checked_size(path: Path) -> int:
    """The file's size, once it is known to be a regular file this reads; else why not."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such file", "missing") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise TranscriptError(f"{path}: is a directory, not a pi session file", "directory")
    if not stat.S_ISREG(info.st_mode):
        raise TranscriptError(f"{path}: not a regular file", "not-a-file")
    if info.st_size > MAX_FILE_BYTES:
        raise TranscriptError(
            f"{path}: {info.st_size} bytes, more than the {MAX_FILE_BYTES} this reads", "too-large"
        )
    return info.st_size


def _read_bytes(path: Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, or only its first ``limit`` bytes when ``limit`` is below the size cap."""
    _checked_size(path)
    try:
        # Read-only and opened once: the inspector never writes to the transcript it reads (INSPECT-12).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise TranscriptError(f"{path}: more than the {MAX_FILE_BYTES} bytes this reads", "too-large")
    return data[:limit]


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    return [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]


def check_transcript(path: Path) -> None:
    """Raise :class:`TranscriptError` where :func:`read_transcript` would, judged by the file's type, size
    and first line alone: commands check every file they were named before starting work that costs time
    or money."""
    _header(_lines(_read_bytes(path, _HEADER_BYTES))[:1], path)


def _header(lines: list[tuple[int, bytes]], path: Path) -> dict[str, Any]:
    if not lines:
        raise TranscriptError(f"{path}: the file is empty, not a pi session file", "empty")
    value, _ = parse_line(lines[0][1])
    if not is_session_header(value):
        raise TranscriptError(
            f'{path}: not a pi session file (the first line is not a {{"type": "session"}} header)',
            "not-a-session",
        )
    return value


def _branch(
    entries: list[tuple[int, dict[str, Any]]], problems: list[LineProblem]
) -> tuple[list[dict[str, Any]], str | None]:
    """INSPECT-11: the path from the file's last entry to the root, root first, as pi resumes it."""
    if not entries:
        return [], None
    position_of: dict[str, int] = {}
    for position, (_, entry) in enumerate(entries):
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            position_of[entry_id] = position  # a repeated id: the later line is the one a walk reaches
    leaf = entries[-1][1]
    leaf_id = leaf.get("id") if isinstance(leaf.get("id"), str) else None
    if leaf_id is None and all(not isinstance(e.get("id"), str) for _, e in entries):
        return [e for _, e in entries], None  # a v1 file: linear, no ids (pi-api.md §3.2)

    walk = walk_branch(len(entries) - 1, lambda position: entries[position][1].get("parentId"), position_of)
    if walk.broken_at is not None and walk.problem is not None:
        line_no, broken = entries[walk.broken_at]
        broken_id = broken.get("id") if isinstance(broken.get("id"), str) else None
        detail = _WALK_PROBLEMS[walk.problem]
        problems.append(LineProblem(line_no, broken_id, walk.problem, detail))
    return [entries[p][1] for p in walk.positions], leaf_id


def read_transcript(path: Path) -> Transcript:
    """The parsed session file at ``path``; raises :class:`TranscriptError` only when it is no transcript."""
    lines = _lines(_read_bytes(path))
    header = _header(lines, path)
    problems: list[LineProblem] = []
    entries: list[tuple[int, dict[str, Any]]] = []
    for line_no, raw in lines[1:]:
        value, error = parse_line(raw)
        if error is not None:
            problems.append(LineProblem(line_no, None, "invalid-json", f"{error}; the rest was read"))
        elif not isinstance(value, dict):
            problems.append(
                LineProblem(line_no, None, "not-an-object", "not a JSON object; the rest was read")
            )
        else:
            entries.append((line_no, value))
    branch, leaf_id = _branch(entries, problems)
    return Transcript(
        path=path,
        header=header,
        entries=[e for _, e in entries],
        branch=branch,
        leaf_id=leaf_id,
        problems=problems,
        entry_lines={e["id"]: n for n, e in entries if isinstance(e.get("id"), str)},
    )
