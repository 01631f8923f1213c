"""The sink's file rules: modes, rotation, every refusal counted as a drop and never raised (LOG-8..13)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from longhaul_daemon.log.sink import BACKUP_SUFFIX, ROTATE_BYTES, LogSink

NOBODY = 65534


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "agent" / "logs"


@pytest.fixture
def sink(tmp_path: Path, logs: Path) -> LogSink:
    (tmp_path / "agent").mkdir()
    return LogSink(logs / "compaction-state.jsonl")


@pytest.fixture
def umask_zero() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(raw) for raw in path.read_text().splitlines()]


def test_log8_created_0600_in_0700_even_with_umask_0(sink: LogSink, logs: Path, umask_zero: None) -> None:
    assert sink.write_line('{"n":1}')
    assert mode(logs) == 0o700
    assert mode(sink.path) == 0o600
    assert lines(sink.path) == [{"n": 1}]


def test_log8_existing_broader_modes_are_narrowed(sink: LogSink, logs: Path) -> None:
    logs.mkdir(mode=0o755)
    logs.chmod(0o755)
    sink.path.write_text("")
    sink.path.chmod(0o644)
    assert sink.write_line("{}")
    assert mode(logs) == 0o700
    assert mode(sink.path) == 0o600


def test_only_one_directory_level_is_created(tmp_path: Path) -> None:
    sink = LogSink(tmp_path / "no-agent-dir" / "logs" / "x.jsonl")
    assert not sink.write_line("{}")
    assert (sink.dropped, sink.last_refusal) == (1, "no-parent-directory")
    assert not (tmp_path / "no-agent-dir").exists()


def test_log13_one_whole_line_per_write(sink: LogSink) -> None:
    assert sink.write_line('{"a":"x\\ny"}')
    assert sink.write_line('{"b":1}\n{"c":2}')  # a stray newline can never split a record into two lines
    assert len(sink.path.read_bytes().splitlines()) == 2


def test_log9_rotation_at_exactly_5_mib_keeps_one_backup(sink: LogSink) -> None:
    assert ROTATE_BYTES == 5_242_880
    line = "x" * 1023  # 1024 bytes with the newline
    for _ in range(ROTATE_BYTES // 1024):
        assert sink.write_line(line)
    assert sink.path.stat().st_size == ROTATE_BYTES  # exactly at the limit: no rotation yet
    backup = sink.path.with_name(sink.path.name + BACKUP_SUFFIX)
    assert not backup.exists()
    assert sink.write_line("next")  # would pass the limit: rotate first
    assert backup.stat().st_size == ROTATE_BYTES
    assert sink.path.read_text() == "next\n"
    assert mode(sink.path) == 0o600 and mode(backup) == 0o600
    for _ in range(ROTATE_BYTES // 1024):
        sink.write_line(line)
    assert backup.stat().st_size <= ROTATE_BYTES  # the older backup was replaced, not kept
    assert sorted(p.name for p in sink.path.parent.iterdir()) == [sink.path.name, backup.name]


def test_log10_symlink_at_the_path_is_refused(sink: LogSink, logs: Path, tmp_path: Path) -> None:
    logs.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    sink.path.symlink_to(victim)
    assert not sink.write_line("{}")
    assert victim.read_text() == "untouched\n"
    assert (sink.dropped, sink.last_refusal) == (1, "symlink")


def test_log10_dangling_symlink_creates_nothing(sink: LogSink, logs: Path, tmp_path: Path) -> None:
    logs.mkdir(mode=0o700)
    sink.path.symlink_to(tmp_path / "would-be-created")
    assert not sink.write_line("{}")
    assert not (tmp_path / "would-be-created").exists()


def test_log10_symlinked_logs_dir_is_refused(sink: LogSink, logs: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    logs.symlink_to(elsewhere)
    assert not sink.write_line("{}")
    assert list(elsewhere.iterdir()) == []


def test_log10_symlinked_backup_refuses_the_rotating_write(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    sink = LogSink(tmp_path / "logs" / "l.jsonl", limit=100)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    assert sink.write_line("x" * 80)
    Path(str(sink.path) + BACKUP_SUFFIX).symlink_to(victim)
    assert not sink.write_line("y" * 80)
    assert victim.read_text() == "untouched\n"
    assert sink.path.read_text() == "x" * 80 + "\n"
    assert sink.last_refusal == "backup-not-a-regular-file"


def test_log11_fifo_without_reader_never_blocks(sink: LogSink, logs: Path) -> None:
    logs.mkdir(mode=0o700)
    os.mkfifo(sink.path)
    assert not sink.write_line("{}")
    assert sink.last_refusal == "not-a-regular-file"


def test_log11_fifo_with_a_reader_is_not_written(sink: LogSink, logs: Path) -> None:
    logs.mkdir(mode=0o700)
    os.mkfifo(sink.path)
    reader = os.open(sink.path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert not sink.write_line("{}")
        assert os.read(reader, 10) == b""  # end of file: nothing was written into the pipe
    finally:
        os.close(reader)


def test_log11_directory_at_the_path(sink: LogSink, logs: Path) -> None:
    logs.mkdir(mode=0o700)
    sink.path.mkdir()
    assert not sink.write_line("{}")
    assert sink.last_refusal == "not-a-regular-file"


def test_file_owned_by_someone_else_is_refused(sink: LogSink, logs: Path) -> None:
    logs.mkdir(mode=0o700)
    sink.path.write_text("theirs\n")
    os.chown(sink.path, NOBODY, NOBODY)
    assert not sink.write_line("{}")
    assert sink.path.read_text() == "theirs\n"
    assert sink.last_refusal == "file-not-ours"


def test_logs_dir_owned_by_someone_else_is_refused(sink: LogSink, logs: Path) -> None:
    logs.mkdir(mode=0o755)
    os.chown(logs, NOBODY, NOBODY)
    assert not sink.write_line("{}")
    assert not sink.path.exists()
    assert mode(logs) == 0o755  # not ours: not narrowed either


def test_hard_link_is_refused(sink: LogSink, logs: Path, tmp_path: Path) -> None:
    logs.mkdir(mode=0o700)
    other = tmp_path / "other"
    other.write_text("")
    os.link(other, sink.path)
    assert not sink.write_line("{}")
    assert other.read_text() == ""


def test_recovers_after_the_obstacle_is_gone(sink: LogSink, logs: Path) -> None:
    logs.mkdir(mode=0o700)
    sink.path.mkdir()
    assert not sink.write_line('{"n":1}')
    sink.path.rmdir()
    assert sink.write_line('{"n":2}')
    assert lines(sink.path) == [{"n": 2}]
    assert (sink.dropped, sink.written) == (1, 1)


def test_log12_full_disk_drops_lines_whole_and_never_raises(tmp_path: Path) -> None:
    """RLIMIT_FSIZE (a full-disk stand-in) in a child: EFBIG and short writes leave only whole lines."""
    script = textwrap.dedent(
        f"""
        import json, resource
        from pathlib import Path
        from longhaul_daemon.log.sink import LogSink
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        (Path({str(tmp_path)!r}) / "logs").mkdir()
        sink = LogSink(Path({str(tmp_path)!r}) / "logs" / "l.jsonl")
        results = [sink.write_line(json.dumps({{"n": i, "pad": "p" * 90}})) for i in range(30)]
        print(json.dumps({{"results": results, "dropped": sink.dropped}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    outcome = json.loads(done.stdout.splitlines()[-1])  # structlog's default config may print the drop note
    assert outcome["dropped"] > 0 and any(outcome["results"])
    data = (tmp_path / "logs" / "l.jsonl").read_bytes()
    assert len(data) <= 1000 and data.endswith(b"\n")
    assert [json.loads(raw)["n"] for raw in data.splitlines()] == list(range(len(data.splitlines())))
