"""The full ``status`` view: route health, record-log files, the table and ``--json`` with every field."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from server.in_process_daemon import WAIT_S, connect, running_daemon, session

from longhaul_daemon.cli import main
from longhaul_daemon.log.records import LogFile, RecordLog
from longhaul_daemon.ops.status_view import format_status
from longhaul_daemon.protocol import LogFileStatus, PassCounts, RouteHealth, StatusResult
from longhaul_daemon.rpc.recording import Recorder
from longhaul_daemon.rpc.services import SeenSessions, Services
from longhaul_daemon.status_client import EXIT_RUNNING

NOON = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


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
        "  passes     whole 7, partial 0, narrative-less 2, chunk missing 0, empty 0, fallback 1, aborted 3",
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


class _BrokenLog(RecordLog):
    def files(self) -> list[LogFile]:
        raise OSError("disk on fire")


def test_status_lists_no_log_files_when_listing_them_fails() -> None:
    services = Services(socket_path="/s", recorder=Recorder(_BrokenLog()))
    assert services.status().logFiles == []


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


def test_sessions_seen_counts_distinct_ids_up_to_its_bound() -> None:
    seen = SeenSessions(limit=5)
    for n in range(3):
        seen.add("s" * 4000 + str(n))
        seen.add("s" * 4000 + str(n))
    assert len(seen) == 3 and "s" * 4000 + "1" in seen and "other" not in seen
    for n in range(10):
        seen.add(f"more-{n}")
    assert len(seen) == 5
