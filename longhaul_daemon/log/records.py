"""The record log's public API: where a session's log lives, what every record carries, and writing one.

The path comes from the facts the shim sends for each pi process, never from the daemon's own environment
(LOG-1..LOG-3, CONFIG-10). Every record is ``{v: 1, ts, event, session: {cwd, sessionId, model,
thinkingLevel}, …}`` (LOG-4, LOG-6), written whole by the :class:`~longhaul_daemon.log.sink.LogSink` of its
path. Excerpts and stack traces are kept only when the session asked for them (LOG-14, LOG-15); errors are cut
per LOG-7.
"""

from __future__ import annotations

import json
import threading
import traceback
from collections import OrderedDict
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypedDict

from longhaul_daemon.log.fields import error_class_field, model_spec_field, reason_field, session_id_field
from longhaul_daemon.log.sink import LogSink
from longhaul_daemon.secrets.redaction import EMPTY, Redactor

if TYPE_CHECKING:  # annotations only: `longhaul-daemon report` reads the log without loading pydantic
    from longhaul_daemon.protocol import SessionFacts

__all__ = [
    "ERROR_CHARS",
    "LOG_NAME",
    "MAX_SINKS",
    "OFF_VALUES",
    "RECORD_VERSION",
    "VERIFIED_PI_LINES",
    "VERIFIED_PI_VERSIONS",
    "LogFile",
    "RecordLog",
    "error_fields",
    "home_as_tilde",
    "log_path",
    "pi_version_verified",
    "resolve_log_path",
]

RECORD_VERSION = 1
LOG_NAME = "compaction-state.jsonl"
LOGS_DIR = "logs"
DEBUG_ENV = "PI_COMPACT_STATE_DEBUG"
OFF_VALUES = frozenset({"off", "none", "0", "false", "no", ""})  # LOG-3, compared stripped and lower-cased
ERROR_CHARS = 200  # LOG-7
EXCERPT_KEYS = frozenset({"excerpts"})  # LOG-14: only with PI_COMPACT_STATE_DEBUG_EXCERPTS=1
STACK_KEY = "stack"  # LOG-15: only with PI_COMPACT_STATE_DEBUG_STACK=1

# LOG-16: the one constant naming what Longhaul was verified against.
VERIFIED_PI_VERSIONS = frozenset({"0.69.0", "0.73.1"})  # both ends of the supported range (README.md)
VERIFIED_PI_LINES = frozenset({"0.73"})


class LogFile(TypedDict):
    """One known record-log file, for the status view."""

    path: str
    bytes: int
    dropped: int


def pi_version_verified(version: str) -> bool | Literal["line"]:
    """``True`` for a verified version, ``"line"`` for a verified release line, else ``False`` (LOG-16)."""
    if version in VERIFIED_PI_VERSIONS:
        return True
    parts = version.split(".")
    if len(parts) >= 2 and ".".join(parts[:2]) in VERIFIED_PI_LINES:
        return "line"
    return False


def log_path(session: SessionFacts) -> Path | None:
    """The log file in effect for ``session``, or None when logging is off (LOG-1..LOG-3).

    ``PI_COMPACT_STATE_DEBUG`` is a path taken literally: no ``~`` expansion, relative to the pi process's
    working directory, ``1`` is a file named ``1``.
    """
    return resolve_log_path(session.agentDir, session.cwd, session.env.PI_COMPACT_STATE_DEBUG)


def resolve_log_path(agent_dir: str, cwd: str, debug: str | None) -> Path | None:
    """:func:`log_path` from its three inputs (the ``report`` command has no session)."""
    if debug is None:
        return Path(agent_dir) / LOGS_DIR / LOG_NAME
    if debug.strip().lower() in OFF_VALUES:
        return None
    return Path(cwd) / debug


def is_default_path(session: SessionFacts) -> bool:
    """True when the log lives in Longhaul's own ``<agentDir>/logs`` directory (strict directory rules)."""
    return session.env.PI_COMPACT_STATE_DEBUG is None


def home_as_tilde(text: str, home: str | None = None) -> str:
    """The user's home directory written as ``~`` (LOG-7, LOG-15)."""
    home = home if home is not None else str(Path.home())
    home = home.rstrip("/")
    if len(home) <= 1:
        return text
    return text.replace(home, "~")


def error_fields(
    exc: BaseException | None = None,
    *,
    error_class: str | None = None,
    error: str | None = None,
    home: str | None = None,
    redactor: Redactor = EMPTY,
) -> dict[str, object]:
    """``errorClass``, ``error`` (``redactor``'s credentials taken out, home replaced, then cut to 200
    characters) and ``stack`` (LOG-7, LOG-15).

    Redaction comes before the cut, so a credential the cut runs through never leaves a fragment behind. The
    ``stack`` field is dropped again by :meth:`RecordLog.write` unless the session turned stacks on.
    """
    fields: dict[str, object] = {}
    if exc is not None:
        error_class = type(exc).__name__
        error = str(exc)
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        fields[STACK_KEY] = home_as_tilde(redactor.text(tb), home)
    fields["errorClass"] = error_class_field(error_class)
    fields["error"] = None if error is None else home_as_tilde(redactor.text(error), home)[:ERROR_CHARS]
    return fields


def _session_block(session: SessionFacts) -> dict[str, object]:
    """LOG-6: working directory, session id, model and thinking level."""
    return {
        "cwd": session.cwd,
        "sessionId": session_id_field(session.sessionId),
        "model": model_spec_field(session.model.spec) if session.model is not None else None,
        "thinkingLevel": reason_field(session.thinkingLevel),
    }


def build_record(session: SessionFacts, event: str, fields: Mapping[str, object]) -> dict[str, object]:
    """The record as written: fixed head, then ``fields`` minus excerpts/stack the session did not ask for."""
    excerpts = session.env.PI_COMPACT_STATE_DEBUG_EXCERPTS == "1"  # LOG-14: the exact value only
    stacks = session.env.PI_COMPACT_STATE_DEBUG_STACK == "1"
    record: dict[str, object] = {
        "v": RECORD_VERSION,
        "ts": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "event": event,
        "session": _session_block(session),
    }
    for key, value in fields.items():
        if key in record or (key in EXCERPT_KEYS and not excerpts) or (key == STACK_KEY and not stacks):
            continue
        record[key] = value
    return record


MAX_SINKS = 64
"""Record-log files the daemon keeps a sink for (and ``status`` lists): the most recently written. Each client
names its own agent dir and log path, so without a bound a stream of made-up ones grows the table forever."""


class RecordLog:
    """The daemon's record-log writer: one :class:`LogSink` per path it has written to (LOG-13), the newest
    :data:`MAX_SINKS` of them; a path written again after it fell out gets a new sink (its dropped-line count
    starts again)."""

    def __init__(self, max_sinks: int = MAX_SINKS) -> None:
        self._sinks: OrderedDict[Path, LogSink] = OrderedDict()
        self._max_sinks = max_sinks
        self._lock = threading.Lock()

    def sink_for(self, path: Path, *, strict_dir: bool) -> LogSink:
        """The sink for ``path``, made on first use and now the newest; the oldest past the cap is dropped."""
        with self._lock:
            sink = self._sinks.get(path)
            if sink is None:
                sink = self._sinks[path] = LogSink(path, strict_dir=strict_dir)
                while len(self._sinks) > self._max_sinks:
                    self._sinks.popitem(last=False)
            self._sinks.move_to_end(path)
            return sink

    def write(
        self,
        session: SessionFacts,
        event: str,
        fields: Mapping[str, object],
        *,
        redactor: Redactor = EMPTY,
    ) -> None:
        """Write one record for ``session``, with ``redactor``'s credentials (a pass's) taken out of every
        field; never raises (LOG-12)."""
        try:
            path = log_path(session)
            if path is None:
                return
            sink = self.sink_for(path, strict_dir=is_default_path(session))
            try:
                # Whatever a field holds, the credentials of the pass never reach the file.
                record = redactor.value(build_record(session, event, fields))
                line = json.dumps(
                    record,
                    ensure_ascii=False,
                    separators=(",", ":"),
                    default=repr,
                )
            except Exception:
                line = json.dumps({"v": RECORD_VERSION, "event": event, "renderFailed": True})
            sink.write_line(line)
        except Exception:
            return

    def files(self) -> list[LogFile]:
        """Every log file written to since the daemon started, with its size and dropped-line count."""
        with self._lock:
            sinks = list(self._sinks.values())
        return [{"path": str(s.path), "bytes": s.size(), "dropped": s.dropped} for s in sinks]
