"""The ``status`` table: a :class:`~longhaul_daemon.protocol.StatusResult` as a person reads it.

Formatting only: the daemon's side of ``status`` lives with what owns it (route health in
:mod:`longhaul_daemon.models.route_health`, the record-log files in :mod:`longhaul_daemon.log.records`, the
counters in :mod:`longhaul_daemon.rpc.services`). Text from the daemon is stripped of control characters
before it reaches a terminal.
"""

from __future__ import annotations

from longhaul_daemon.protocol import (
    ConfigStatus,
    LogFileStatus,
    NarrativeChoiceStatus,
    RouteHealth,
    StatusResult,
)

__all__ = ["format_status", "format_uptime"]


def format_uptime(seconds: float) -> str:
    """``seconds`` as ``status`` prints uptime: ``2d 03h 04m``, ``3h 04m 05s`` or ``4m 05s``."""
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


def _narrative_lines(choices: list[NarrativeChoiceStatus]) -> list[str]:
    """Under ``"narrativeMode": "auto"``: each route's stage and what put it there (none: no auto pass)."""
    lines: list[str] = []
    for index, choice in enumerate(choices):
        failures = choice.diffFailuresInRow
        last = f", last {choice.lastDiffFailure}" if choice.lastDiffFailure else ""
        if choice.stage == "turns":
            said = (
                f"turns mode since {choice.turnsSince or 'time unknown'}: the Diff's answers failed"
                f" {failures} passes in a row{last}"
            )
        else:
            said = "the Diff" + (
                f" ({failures} answer failure{'s' if failures != 1 else ''} in a row{last})"
                if failures
                else ""
            )
        name = "narrative" if index == 0 else ""
        lines.append(f"  {name:<10} auto: {_printable(choice.route)} on {_printable(said)}")
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
            f"whole {passes.whole}, partial {passes.partial}, narrative-less {passes.narrativeLess}, "
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
        [
            *lines,
            *_config_lines(status.config),
            *_narrative_lines(status.narrative),
            *_route_lines(status.routes),
            *_log_lines(status.logFiles),
        ]
    )
