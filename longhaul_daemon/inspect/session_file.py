"""Read one pi session file without trusting it, and find the branch pi would resume (INSPECT-10, INSPECT-11).

A session file is JSONL: a ``{"type": "session", ...}`` header, then one entry per line, linked into a tree
by ``parentId`` (pi-api.md §3). The file is opened read-only and read once, bounded in size (INSPECT-12). A
line that is not a JSON object is counted as a :class:`LineProblem` and the rest is read; a broken
``parentId`` chain ends the branch where it breaks. Only a path that holds no readable pi transcript at
all raises :class:`TranscriptError`.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "AGENT_DIR_ENV",
    "MAX_FILE_BYTES",
    "LineProblem",
    "Transcript",
    "TranscriptError",
    "agent_dir",
    "newest_transcript",
    "read_transcript",
]

AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
MAX_FILE_BYTES = 512 * 1024 * 1024  # a larger file is refused rather than read into memory
_HEADER_TYPE = "session"


class TranscriptError(Exception):
    """The path holds no pi transcript the inspector can read; the message is meant for the user."""


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
        raise TranscriptError(f"no pi transcript found: {sessions} does not exist")
    found: list[tuple[int, str, Path]] = []
    for path in sessions.glob("*/*.jsonl"):
        try:
            info = path.stat()
        except OSError:
            continue  # removed or unreadable since the listing: not a candidate
        if stat.S_ISREG(info.st_mode):
            found.append((info.st_mtime_ns, str(path), path))
    if not found:
        raise TranscriptError(f"no pi transcript found: no .jsonl file under {sessions}/*/")
    return max(found)[2]


def _read_bytes(path: Path) -> bytes:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise TranscriptError(f"{path}: no such file") from None
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise TranscriptError(f"{path}: is a directory, not a pi session file")
    if not stat.S_ISREG(info.st_mode):
        raise TranscriptError(f"{path}: not a regular file")
    if info.st_size > MAX_FILE_BYTES:
        raise TranscriptError(f"{path}: {info.st_size} bytes, more than the {MAX_FILE_BYTES} this reads")
    try:
        # Read-only and opened once: the inspector never writes to the transcript it reads (INSPECT-12).
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise TranscriptError(f"{path}: more than the {MAX_FILE_BYTES} bytes this reads")
    return data


def _parse_line(raw: bytes) -> tuple[object, str | None]:
    """The line's JSON value, or an error code; lines are split on b"\\n" only (JSON may hold U+2028)."""
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "not UTF-8"
    except (json.JSONDecodeError, RecursionError):
        return None, "not valid JSON"


def _header(lines: list[tuple[int, bytes]], path: Path) -> dict[str, Any]:
    if not lines:
        raise TranscriptError(f"{path}: the file is empty, not a pi session file")
    value, _ = _parse_line(lines[0][1])
    if not isinstance(value, dict) or value.get("type") != _HEADER_TYPE:
        raise TranscriptError(
            f'{path}: not a pi session file (the first line is not a {{"type": "session"}} header)'
        )
    return value


def _branch(
    entries: list[tuple[int, dict[str, Any]]], problems: list[LineProblem]
) -> tuple[list[dict[str, Any]], str | None]:
    """INSPECT-11: the path from the file's last entry to the root, root first, as pi resumes it."""
    if not entries:
        return [], None
    by_id: dict[str, tuple[int, dict[str, Any]]] = {}
    for line_no, entry in entries:
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            by_id[entry_id] = (line_no, entry)  # a repeated id: the later line is the one a walk reaches
    line_no, leaf = entries[-1]
    leaf_id = leaf.get("id") if isinstance(leaf.get("id"), str) else None
    if leaf_id is None and all(not isinstance(e.get("id"), str) for _, e in entries):
        return [e for _, e in entries], None  # a v1 file: linear, no ids (pi-api.md §3.2)
    path: list[dict[str, Any]] = [leaf]
    seen: set[int] = {id(leaf)}
    current = leaf
    while True:
        parent = current.get("parentId")
        if parent is None:
            break
        found = by_id.get(parent) if isinstance(parent, str) else None
        current_id = current.get("id") if isinstance(current.get("id"), str) else None
        if found is None:
            problems.append(
                LineProblem(line_no, current_id, "missing-parent", "its parentId names no entry; branch cut")
            )
            break
        if id(found[1]) in seen:
            problems.append(
                LineProblem(line_no, current_id, "parent-cycle", "parentId links loop; branch cut")
            )
            break
        line_no, current = found
        seen.add(id(current))
        path.append(current)
    path.reverse()
    return path, leaf_id


def read_transcript(path: Path) -> Transcript:
    """The parsed session file at ``path``; raises :class:`TranscriptError` only when it is no transcript."""
    data = _read_bytes(path)
    lines = [(n, raw) for n, raw in enumerate(data.split(b"\n"), start=1) if raw.strip()]
    header = _header(lines, path)
    problems: list[LineProblem] = []
    entries: list[tuple[int, dict[str, Any]]] = []
    for line_no, raw in lines[1:]:
        value, error = _parse_line(raw)
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
