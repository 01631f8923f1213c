"""What ``longhaul-daemon status`` shows: model routes and health, the record-log files, and the table itself.

The daemon side keeps a :class:`RouteHealthBook` (the model-access code calls :meth:`RouteHealthBook.record`
once per model call; bounded, since a client names the routes) and reads the record log's files through
:func:`known_log_files`; the client side turns a
:class:`~longhaul_daemon.protocol.StatusResult` into the readable table. Nothing here may break ``status``: a
failing log listing shows as no files, and text from the daemon is stripped of control characters before it
reaches a terminal.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from longhaul_daemon.log.fields import error_class_field, model_spec_field
from longhaul_daemon.protocol import ConfigStatus, LogFileStatus, RouteHealth, StatusResult
from longhaul_daemon.secrets.redaction import current as current_redactor

__all__ = [
    "MAX_ROUTES",
    "MAX_SESSIONS_COUNTED",
    "OTHER_ROUTES",
    "RouteHealthBook",
    "SeenSessions",
    "format_status",
    "format_uptime",
    "known_log_files",
]

LATENCY_WINDOW = 200
"""How many recent successful calls per route the percentiles are taken over."""

MAX_ROUTES = 32
"""Routes ``status`` shows one row each, the most recently called; older ones are folded into ``other``."""

OTHER_ROUTES = "(other routes)"
"""The row counting the calls of routes beyond :data:`MAX_ROUTES` (a space: no model spec has one)."""

MAX_SESSIONS_COUNTED = 65_536
"""Distinct sessions ``sessionsSeen`` counts up to; past it the count stays there."""


@dataclass
class _Route:
    calls: int = 0
    last_error_class: str | None = None
    last_success: datetime | None = None
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    via: str | None = None
    via_why: str | None = None


def _percentile(values: list[float], fraction: float) -> int | None:
    """Nearest-rank percentile, rounded to whole milliseconds; ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return round(ordered[rank - 1])


class RouteHealthBook:
    """Per-route counters for the status view: calls, the last error class, the last success, latencies.

    Bounded, because the route is whatever model id a client names: at most ``max_routes`` rows, the most
    recently called, each named in its real shape (:func:`~longhaul_daemon.log.fields.model_spec_field`);
    the calls of the routes that fell out are counted in one :data:`OTHER_ROUTES` row.
    """

    def __init__(self, max_routes: int = MAX_ROUTES) -> None:
        self._routes: OrderedDict[str, _Route] = OrderedDict()
        self._max_routes = max_routes
        self._other = _Route()

    def record(
        self,
        route: str,
        *,
        duration_ms: float,
        error_class: str | None = None,
        now: datetime | None = None,
        via: str | None = None,
        via_why: str | None = None,
    ) -> None:
        """One model call on ``route`` (``provider/modelId``): a success unless ``error_class`` is given;
        ``via`` and ``via_why`` say which way it went and why (the row shows the last call's)."""
        name = current_redactor().text(model_spec_field(route) or "")
        entry = self._routes.get(name)
        if entry is None:
            entry = self._routes[name] = _Route()
            while len(self._routes) > self._max_routes:
                _, dropped = self._routes.popitem(last=False)
                self._other.calls += dropped.calls
        self._routes.move_to_end(name)
        entry.calls += 1
        if via is not None:
            entry.via, entry.via_why = via, via_why
        if error_class is not None:
            entry.last_error_class = error_class_field(error_class)
            return
        entry.last_success = now if now is not None else datetime.now(UTC)
        entry.latencies_ms.append(max(0.0, duration_ms))

    def snapshot(self) -> list[RouteHealth]:
        """Every route kept, sorted by name, then the :data:`OTHER_ROUTES` row when routes fell out."""
        health: list[RouteHealth] = []
        for route in sorted(self._routes):
            entry = self._routes[route]
            latencies = list(entry.latencies_ms)
            success = entry.last_success
            health.append(
                RouteHealth(
                    route=route,
                    lastErrorClass=entry.last_error_class,
                    lastSuccess=None if success is None else success.isoformat(timespec="seconds"),
                    p50Ms=_percentile(latencies, 0.5),
                    p90Ms=_percentile(latencies, 0.9),
                    calls=entry.calls,
                    via=entry.via,
                    viaWhy=entry.via_why,
                )
            )
        if self._other.calls:
            health.append(RouteHealth(route=OTHER_ROUTES, calls=self._other.calls))
        return health


class SeenSessions:
    """How many distinct pi sessions talked to the daemon, for ``status``: a count, not a list of ids.

    A session id is whatever the client sends (up to 4 KiB), so only an 8-byte digest of each is kept, and
    at most :data:`MAX_SESSIONS_COUNTED` of them (half a megabyte at most).
    """

    def __init__(self, limit: int = MAX_SESSIONS_COUNTED) -> None:
        self._digests: set[int] = set()
        self._limit = limit

    @staticmethod
    def _digest(session_id: str) -> int:
        raw = session_id.encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")

    def add(self, session_id: str) -> None:
        if len(self._digests) < self._limit:
            self._digests.add(self._digest(session_id))

    def __contains__(self, session_id: object) -> bool:
        return isinstance(session_id, str) and self._digest(session_id) in self._digests

    def __len__(self) -> int:
        return len(self._digests)


def known_log_files() -> list[LogFileStatus]:
    """The record-log files this daemon has written to, with sizes and dropped lines; ``[]`` if that fails."""
    try:
        from longhaul_daemon.log.records import log_files

        return [
            LogFileStatus(path=str(f["path"]), bytes=int(f["bytes"]), dropped=int(f["dropped"]))
            for f in log_files()
        ]
    except Exception:  # the status view must answer even when the log module misbehaves
        return []


def format_uptime(seconds: float) -> str:
    total = int(seconds)
    days, rest = divmod(total, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h {minutes:02d}m"
    if hours:
        return f"{hours}h {minutes:02d}m {secs:02d}s"
    return f"{minutes}m {secs:02d}s"


def _printable(text: str) -> str:
    """Control characters (escapes included) replaced, so a route or path cannot drive the terminal."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1024 * 1024):.1f} MiB"


def _table(headers: list[str], rows: list[list[str]], *, right: set[int]) -> list[str]:
    widths = [max(len(cell) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: list[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(cells)
        ]
        return "    " + "  ".join(parts).rstrip()

    return [line(headers), *(line(row) for row in rows)]


def _via(route: RouteHealth) -> str:
    """``pi (oauth)``, ``daemon (anthropic-key)``: which way the route's last call went, and why."""
    if route.via is None:
        return "-"
    return f"{route.via} ({route.viaWhy})" if route.viaWhy else route.via


def _route_lines(routes: list[RouteHealth]) -> list[str]:
    if not routes:
        return ["  routes     none used yet"]
    rows = [
        [
            _printable(r.route),
            str(r.calls),
            "-" if r.p50Ms is None else str(r.p50Ms),
            "-" if r.p90Ms is None else str(r.p90Ms),
            _printable(r.lastSuccess or "never"),
            _printable(r.lastErrorClass or "-"),
            _printable(_via(r)),
        ]
        for r in routes
    ]
    headers = ["route", "calls", "p50 ms", "p90 ms", "last success", "last error", "via"]
    return ["  routes", *_table(headers, rows, right={1, 2, 3})]


def _log_lines(files: list[LogFileStatus]) -> list[str]:
    if not files:
        return ["  logs       none written yet"]
    rows = [[_printable(f.path), _size(f.bytes), str(f.dropped)] for f in files]
    return ["  logs", *_table(["file", "size", "dropped lines"], rows, right={1, 2})]


def _config_lines(config: ConfigStatus | None) -> list[str]:
    """The last pass's summarizer, the model it used and why, and every problem with longhaul.json."""
    if config is None:
        return ["  summarizer no pass yet"]
    configured = (
        "none configured (the session's model)"
        if config.summarizer is None
        else f"{config.summarizer}" + (f" from {config.summarizerFile}" if config.summarizerFile else "")
    )
    used = f"last pass ({config.at or 'time unknown'}) used {config.used or 'no model'}"
    if config.why:
        used += f", not the summarizer: {config.why}"
    lines = [f"  summarizer {_printable(configured)}", f"             {_printable(used)}"]
    for index, problem in enumerate(config.problems):
        lines.append(f"  {'problems' if index == 0 else '':<10} {_printable(problem)}")
    return lines


def format_status(status: StatusResult) -> str:
    """The readable table: identity, passes, then one sub-table per route and per log file."""
    passes = status.passes
    socket_note = " (socket-activated)" if status.socketActivated else ""
    rows = [
        ("pid", str(status.pid)),
        ("uptime", format_uptime(status.uptimeS)),
        ("socket", f"{_printable(status.socket)}{socket_note}"),
        (
            "passes",
            f"whole {passes.whole}, narrative-less {passes.narrativeLess}, "
            f"chunk missing {passes.chunkMissing}, empty {passes.empty}, "
            f"fallback {passes.fallback}, aborted {passes.aborted}",
        ),
        *(
            [("reasons", ", ".join(f"{_printable(k)} {n}" for k, n in sorted(passes.reasons.items())))]
            if passes.reasons
            else []
        ),
        ("in flight", str(status.inFlight)),
        ("sessions", str(status.sessionsSeen)),
        ("files", f"{status.sessionFiles} indexed, {status.sessionFilesWarmed} warmed after hello"),
    ]
    header = f"longhaul-daemon {_printable(status.version)} (protocol {status.protocolVersion})"
    lines = [header, *(f"  {name:<10} {value}" for name, value in rows)]
    return "\n".join(
        [*lines, *_config_lines(status.config), *_route_lines(status.routes), *_log_lines(status.logFiles)]
    )
