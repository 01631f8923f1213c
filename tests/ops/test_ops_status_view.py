"""The full ``status`` view: route health, record-log files, the table and ``--json`` with every field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from server.harness import WAIT_S, connect, running_daemon, session

from longhaul_daemon.cli import main
from longhaul_daemon.ops import status_view
from longhaul_daemon.ops.status_view import (
    OTHER_ROUTES,
    RouteHealthBook,
    SeenSessions,
    format_status,
    known_log_files,
)
from longhaul_daemon.protocol import LogFileStatus, PassCounts, RouteHealth, StatusResult
from longhaul_daemon.status_client import EXIT_RUNNING

NOON = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def test_route_health_counts_calls_keeps_the_last_error_and_takes_nearest_rank_percentiles() -> None:
    book = RouteHealthBook()
    for ms in range(10, 0, -1):  # 10 … 1, out of order on purpose
        book.record("anthropic/claude", duration_ms=ms * 100, now=NOON)
    book.record("anthropic/claude", duration_ms=50, error_class="RateLimited")
    book.record("openai/gpt", duration_ms=5, error_class="Timeout")
    claude, gpt = book.snapshot()
    assert claude == RouteHealth(
        route="anthropic/claude",
        lastErrorClass="RateLimited",
        lastSuccess="2026-12-02T12:00:00+00:00",
        p50Ms=500,
        p90Ms=900,
        calls=11,
    )
    assert gpt == RouteHealth(route="openai/gpt", lastErrorClass="Timeout", calls=1)


def test_route_health_shows_which_way_the_last_call_went() -> None:
    book = RouteHealthBook()
    book.record("anthropic/claude", duration_ms=5, via="daemon", via_why="anthropic-key")
    book.record(
        "anthropic/claude", duration_ms=9, error_class="FatalError", via="daemon", via_why="anthropic-key"
    )
    book.record("anthropic/claude", duration_ms=7, via="pi", via_why="refused-401")
    book.record("openai/gpt", duration_ms=3)
    rows = {row.route: row for row in book.snapshot()}
    assert (rows["anthropic/claude"].via, rows["anthropic/claude"].viaWhy) == ("pi", "refused-401")
    assert (rows["openai/gpt"].via, rows["openai/gpt"].viaWhy) == (None, None)


def test_route_health_is_empty_until_a_model_is_called() -> None:
    assert RouteHealthBook().snapshot() == []


def test_route_health_percentiles_cover_only_the_recent_window() -> None:
    book = RouteHealthBook()
    for _ in range(status_view.LATENCY_WINDOW):
        book.record("r", duration_ms=10_000)
    for _ in range(status_view.LATENCY_WINDOW):
        book.record("r", duration_ms=20)
    (route,) = book.snapshot()
    assert (route.p50Ms, route.p90Ms, route.calls) == (20, 20, 2 * status_view.LATENCY_WINDOW)


def _full_status() -> StatusResult:
    return StatusResult(
        version="9.9.9",
        protocolVersion=1,
        pid=4242,
        uptimeS=3725.5,
        socket="/run/user/1000/longhaul/daemon.sock",
        socketActivated=True,
        passes=PassCounts(whole=7, narrativeLess=2, fallback=1, aborted=3),
        inFlight=1,
        sessionsSeen=5,
        routes=[
            RouteHealth(
                route="anthropic/claude\x1b[31m",
                lastErrorClass="RateLimited",
                lastSuccess="2026-12-02T12:00:00+00:00",
                p50Ms=820,
                p90Ms=1900,
                calls=12,
                via="pi",
                viaWhy="oauth",
            ),
            RouteHealth(route="openai/gpt", calls=1, lastErrorClass="Timeout"),
        ],
        logFiles=[
            LogFileStatus(path="/home/u/.pi/agent/logs/compaction-state.jsonl", bytes=12_800, dropped=2)
        ],
    )


def test_the_table_shows_every_field() -> None:
    table = format_status(_full_status())
    lines = table.splitlines()
    assert lines[0] == "longhaul-daemon 9.9.9 (protocol 1)"
    for expected in (
        "  pid        4242",
        "  uptime     1h 02m 05s",
        "  socket     /run/user/1000/longhaul/daemon.sock (socket-activated)",
        "  passes     whole 7, narrative-less 2, chunk missing 0, empty 0, fallback 1, aborted 3",
        "  in flight  1",
        "  sessions   5",
        "  routes",
        "  logs",
    ):
        assert expected in lines
    route_header = next(line for line in lines if "p50 ms" in line)
    assert " ".join(route_header.split()) == "route calls p50 ms p90 ms last success last error via"
    claude = next(line for line in lines if "anthropic" in line)
    assert claude.split() == [
        "anthropic/claude?[31m",  # an escape sequence never reaches the terminal
        "12",
        "820",
        "1900",
        "2026-12-02T12:00:00+00:00",
        "RateLimited",
        "pi",
        "(oauth)",  # which way the route's last call went, and why (docs/models.md)
    ]
    gpt = next(line for line in lines if "openai" in line)
    assert gpt.split() == ["openai/gpt", "1", "-", "-", "never", "Timeout", "-"]
    log_line = next(line for line in lines if "compaction-state.jsonl" in line)
    assert log_line.split() == ["/home/u/.pi/agent/logs/compaction-state.jsonl", "12.5", "KiB", "2"]
    assert "\x1b" not in table


def test_the_table_says_when_there_are_no_routes_or_logs_yet() -> None:
    status = _full_status().model_copy(update={"routes": [], "logFiles": []})
    table = format_status(status)
    assert "  routes     none used yet" in table
    assert "  logs       none written yet" in table


def test_a_status_without_the_new_fields_still_validates() -> None:
    old = _full_status().model_dump(exclude={"routes", "logFiles"})
    status = StatusResult.model_validate(old)
    assert status.routes == [] and status.logFiles == []


def test_known_log_files_is_empty_when_the_log_module_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from longhaul_daemon.log import records

    def broken() -> list[records.LogFile]:
        raise OSError("disk on fire")

    monkeypatch.setattr(records, "log_files", broken)
    assert known_log_files() == []


@pytest.mark.anyio
async def test_status_json_and_table_show_routes_and_the_log_files_the_daemon_wrote(
    short_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_dir = short_tmp / "agent"
    agent_dir.mkdir()  # pi creates its agent directory; the daemon creates only logs/ inside it
    missing_dir = short_tmp / "no-agent"
    facts = {**session("s-ops"), "agentDir": str(agent_dir)}
    lost = {**session("s-lost"), "agentDir": str(missing_dir)}
    async with running_daemon(short_tmp / "d.sock") as handle:
        handle.services.route_health.record(
            "anthropic/claude", duration_ms=640, now=NOON, via="daemon", via_why="anthropic-key"
        )
        async with connect(handle.socket_path) as rpc:
            reply = await rpc.call("hello", {"session": facts})  # writes an extension-loaded record
            assert "result" in reply, reply
            reply = await rpc.call("hello", {"session": lost})  # its record cannot be written: dropped
            assert "result" in reply, reply
        with anyio.fail_after(WAIT_S):
            json_code = await anyio.to_thread.run_sync(
                main, ["status", "--json", "--socket", str(handle.socket_path)]
            )
            json_out = capsys.readouterr().out
            table_code = await anyio.to_thread.run_sync(main, ["status", "--socket", str(handle.socket_path)])
            table_out = capsys.readouterr().out
    assert json_code == table_code == EXIT_RUNNING
    status = json.loads(json_out[json_out.index("{\n") : json_out.index("\n}\n") + 2])
    assert set(status) == {"running", *StatusResult.model_fields} and status["running"] is True
    assert status["routes"] == [
        {
            "route": "anthropic/claude",
            "lastErrorClass": None,
            "lastSuccess": "2026-12-02T12:00:00+00:00",
            "p50Ms": 640,
            "p90Ms": 640,
            "calls": 1,
            "via": "daemon",
            "viaWhy": "anthropic-key",
        }
    ]
    log_file = str(agent_dir / "logs" / "compaction-state.jsonl")
    ours = [entry for entry in status["logFiles"] if entry["path"] == log_file]
    assert len(ours) == 1
    assert ours[0]["bytes"] == (await anyio.Path(log_file).stat()).st_size > 0
    assert ours[0]["dropped"] == 0
    lost_file = str(missing_dir / "logs" / "compaction-state.jsonl")
    (dropped,) = [entry for entry in status["logFiles"] if entry["path"] == lost_file]
    assert dropped["dropped"] == 1
    assert "anthropic/claude" in table_out
    assert log_file in table_out


def test_routes_are_bounded_to_the_newest_and_the_rest_are_counted_as_other() -> None:
    """Issue 12 item 8: a client names any model id; 45 invented ids must not make 45 rows."""
    book = RouteHealthBook(max_routes=3)
    for n in range(45):
        book.record(f"fuzz/model-{n}", duration_ms=1)
    book.record("fuzz/model-0", duration_ms=1, error_class="Timeout")  # called again: among the newest
    rows = book.snapshot()
    assert [r.route for r in rows] == ["fuzz/model-0", "fuzz/model-43", "fuzz/model-44", OTHER_ROUTES]
    assert rows[-1].calls == 43 and sum(r.calls for r in rows) == 46


def test_route_names_are_kept_in_their_real_shape() -> None:
    book = RouteHealthBook()
    book.record("p/\u202emodel\x1b[2J", duration_ms=1, error_class="Bad\nClass")
    (row,) = book.snapshot()
    assert row.route.startswith("#") and row.route.isascii() and "\x1b" not in row.route
    assert row.lastErrorClass == "invalid (9 chars)"


def test_sessions_seen_counts_distinct_ids_up_to_its_bound() -> None:
    seen = SeenSessions(limit=5)
    for n in range(3):
        seen.add("s" * 4000 + str(n))
        seen.add("s" * 4000 + str(n))
    assert len(seen) == 3 and "s" * 4000 + "1" in seen and "other" not in seen
    for n in range(10):
        seen.add(f"more-{n}")
    assert len(seen) == 5
