"""The digest of the newest eight records, safe to paste into a public issue (REPORT-1..REPORT-5).

Both ``/longhaul-report`` (through the daemon's ``report`` method) and ``longhaul-daemon report`` call
:func:`build_report`, so the same log gives the same digest. The digest keeps event names, codes, counts,
lengths, durations, pi's version, provider/model ids, thinking level and error classes; the working directory,
the session id and every path (also inside error text) become a short stable hash; excerpts and stack traces
are dropped; any other free text is shown only as its length. Every printed line passes the sanitizer. No
model is called, and stand-down sessions work the same (REPORT-5).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from longhaul_daemon.log.records import DEBUG_ENV, LOG_NAME, resolve_log_path
from longhaul_daemon.log.sink import BACKUP_SUFFIX, ROTATE_BYTES
from longhaul_daemon.plural import counted
from longhaul_daemon.state.sanitize import sanitize_line

__all__ = [
    "REPORT_RECORDS",
    "Report",
    "build_report",
    "default_agent_dir",
    "digest",
    "read_newest",
    "short_hash",
]

REPORT_RECORDS = 8  # REPORT-2
_MAX_READ = ROTATE_BYTES + 65536  # a log file never grows past its rotation limit (plus one record)
_LINE_CHARS = 2000
_ERROR_CHARS = 200
_HASHED_KEYS = frozenset({"cwd", "sessionId", "sessionFile", "path", "agentDir"})
_DROPPED_KEYS = frozenset({"excerpts", "stack"})
_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@+/-]{0,127}")
_PATH = re.compile(r"(?:~|\.\.?)?/[^\s\"'`<>(),;]*")
_HEAD = ("ts", "event")


@dataclass(frozen=True)
class Report:
    """A digest and how many records it covers."""

    digest: str
    records: int


def default_agent_dir(env: Mapping[str, str]) -> str:
    """pi's agent directory: ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``."""
    value = env.get("PI_CODING_AGENT_DIR")
    return value if value else str(Path.home() / ".pi" / "agent")


def short_hash(value: str) -> str:
    """A short stable stand-in for a path or an id (REPORT-3)."""
    return "#" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]


_ABSENT = frozenset(
    {errno.ENOENT, errno.ELOOP, errno.ENXIO, errno.EACCES, errno.ENOTDIR, errno.EISDIR, errno.ENAMETOOLONG}
)


def _read_regular(path: Path) -> bytes:
    """The file's bytes, never through a link, never blocking on a FIFO; b"" when absent or refused."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except ValueError:  # a NUL or a lone surrogate: no file can have that name
        return b""
    except OSError as exc:
        if exc.errno in _ABSENT:
            return b""
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return b""
        if st.st_size > _MAX_READ:
            os.lseek(fd, st.st_size - _MAX_READ, os.SEEK_SET)
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _records(data: bytes) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for raw in data.split(b"\n"):
        with contextlib.suppress(ValueError):
            obj = json.loads(raw)
            if isinstance(obj, dict) and isinstance(obj.get("event"), str):
                out.append(obj)
    return out


def read_newest(path: Path, count: int = REPORT_RECORDS) -> list[dict[str, object]]:
    """The newest ``count`` records, oldest first; the ``.1`` backup fills up when the file holds fewer."""
    newest = _records(_read_regular(path))[-count:]
    if len(newest) < count:
        backup = _records(_read_regular(path.with_name(path.name + BACKUP_SUFFIX)))
        newest = backup[len(backup) - (count - len(newest)) :] + newest if backup else newest
    return newest


def _error_text(text: str) -> str:
    return sanitize_line(_PATH.sub(lambda m: short_hash(m.group(0)), text), _ERROR_CHARS)


def _value(key: str, value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if not isinstance(value, str):
        return f"<{type(value).__name__}>"
    if key in _HASHED_KEYS or value.startswith(("/", "~", "./", "../")):
        return short_hash(value)
    if key == "error":
        return json.dumps(_error_text(value), ensure_ascii=False)
    if _CODE.fullmatch(value):
        return value
    return f"<{len(value)} chars>"


def _flatten(prefix: str, obj: Mapping[str, object]) -> Iterator[tuple[str, object]]:
    for key, value in obj.items():
        if key in _DROPPED_KEYS:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from _flatten(name + ".", value)
        else:
            yield name, value


def _line(index: int, record: Mapping[str, object]) -> str:
    parts = [f"{index}.", *(_value(k, record.get(k)) for k in _HEAD)]
    for name, value in _flatten("", record):
        if name in _HEAD or name == "v":
            continue
        parts.append(f"{name}={_value(name.rsplit('.', 1)[-1], value)}")
    return sanitize_line(" ".join(parts), _LINE_CHARS)


def digest(records: list[dict[str, object]], *, logging_off: bool = False) -> str:
    """The text of the digest (REPORT-3); it names no file and carries no path."""
    if logging_off:
        return "Longhaul report: logging is off (PI_COMPACT_STATE_DEBUG), so there are no records to report."
    if not records:
        return f"Longhaul report: the log ({LOG_NAME}) holds no records yet."
    head = (
        f"Longhaul report: the newest {counted(len(records), 'record')}, oldest first. "
        "Paths and session ids appear as #hashes; message text is never logged."
    )
    return "\n".join([sanitize_line(head, _LINE_CHARS), *(_line(i, r) for i, r in enumerate(records, 1))])


def build_report(agent_dir: str, cwd: str, debug: str | None) -> Report:
    """The digest for the log in effect for these settings (REPORT-1, REPORT-2)."""
    path = resolve_log_path(agent_dir, cwd, debug)
    if path is None:
        return Report(digest(records=[], logging_off=True), 0)
    records = read_newest(path)
    return Report(digest(records), len(records))


def run_report(
    args: argparse.Namespace,
    *,
    out: TextIO,
    err: TextIO | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> int:
    """Print the digest without a daemon (the log is read directly); exit 1 when the agent dir is missing.

    The log in effect is the one this shell would give pi: ``PI_COMPACT_STATE_DEBUG`` against the current
    directory, else ``<agent dir>/logs/compaction-state.jsonl``. An empty or absent log is not an error (pi
    has not compacted yet), but an agent directory that does not exist is: "no records yet" would hide a typo
    in ``--agent-dir`` or ``PI_CODING_AGENT_DIR``.
    """
    env = os.environ if env is None else env
    agent_dir = args.agent_dir or default_agent_dir(env)
    if env.get(DEBUG_ENV) is None and not Path(agent_dir).is_dir():
        named_by = (
            "--agent-dir"
            if args.agent_dir
            else "$PI_CODING_AGENT_DIR"
            if env.get("PI_CODING_AGENT_DIR")
            else "the default"
        )
        (err if err is not None else sys.stderr).write(
            f"longhaul-daemon report: pi's agent directory {agent_dir} ({named_by}) does not exist; "
            "name the right one with --agent-dir DIR or $PI_CODING_AGENT_DIR\n"
        )
        return 1
    report = build_report(agent_dir, cwd if cwd is not None else os.getcwd(), env.get(DEBUG_ENV))
    out.write(report.digest + "\n")
    return 0
