"""The ``longhaul-daemon`` command line: ``status`` exit codes and output, ``serve`` refusing to start."""

from __future__ import annotations

import json
import os
import pty
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from server.in_process_daemon import WAIT_S, daemon_command, running_daemon

from longhaul_daemon import __version__
from longhaul_daemon.cli import main
from longhaul_daemon.protocol import PROTOCOL_VERSION
from longhaul_daemon.status_client import EXIT_ERROR, EXIT_NOT_RUNNING, EXIT_RUNNING


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        daemon_command(*args),
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=WAIT_S * 2,
        check=False,
    )


@pytest.mark.anyio
async def test_status_prints_a_table_and_exits_0(short_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    async with running_daemon(short_tmp / "d.sock") as handle:
        with anyio.fail_after(WAIT_S):
            code = await anyio.to_thread.run_sync(main, ["status", "--socket", str(handle.socket_path)])
    assert code == EXIT_RUNNING
    out = capsys.readouterr().out
    assert f"longhaul-daemon {__version__} (protocol {PROTOCOL_VERSION})" in out
    assert f"pid        {os.getpid()}" in out
    assert "whole 0, partial 0, narrative-less 0, chunk missing 0, empty 0, fallback 0, aborted 0" in out
    assert str(handle.socket_path) in out


@pytest.mark.anyio
async def test_status_json_carries_version_and_pid(
    short_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with running_daemon(short_tmp / "d.sock") as handle:
        with anyio.fail_after(WAIT_S):
            code = await anyio.to_thread.run_sync(
                main, ["status", "--json", "--socket", str(handle.socket_path)]
            )
    assert code == EXIT_RUNNING
    out = capsys.readouterr().out  # the in-process daemon's own log lines share stdout here
    status = json.loads(out[out.index("{\n") : out.index("\n}\n") + 2])
    assert status["version"] == __version__
    assert status["pid"] == os.getpid()
    assert status["inFlight"] == 0


def test_status_exits_3_when_there_is_no_socket(short_tmp: Path) -> None:
    result = run_cli("status", "--socket", str(short_tmp / "missing" / "d.sock"))
    assert result.returncode == EXIT_NOT_RUNNING
    assert "no daemon is running" in result.stderr


def test_status_exits_3_when_the_socket_is_stale(short_tmp: Path) -> None:
    path = short_tmp / "d.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as dead:
        dead.bind(str(path))  # bound but never listening: connect() is refused
    result = run_cli("status", env={"LONGHAUL_SOCKET": str(path)})
    assert result.returncode == EXIT_NOT_RUNNING


@pytest.fixture
def garbage_server(short_tmp: Path) -> Iterator[Path]:
    """Something on the socket that answers, but not with JSON-RPC."""
    path = short_tmp / "g.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    server.settimeout(WAIT_S)

    def answer_once() -> None:
        try:
            connection, _ = server.accept()
        except OSError:
            return
        with connection:
            connection.recv(65536)
            connection.sendall(b"this is not json\n")

    thread = threading.Thread(target=answer_once, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        server.close()
        thread.join(WAIT_S)


def test_status_exits_1_on_a_garbled_answer(garbage_server: Path) -> None:
    result = run_cli("status", "--socket", str(garbage_server))
    assert result.returncode == EXIT_ERROR
    assert "not JSON" in result.stderr


def test_serve_refuses_a_symlinked_socket_directory(short_tmp: Path) -> None:
    real = short_tmp / "real"
    real.mkdir(mode=0o700)
    (short_tmp / "link").symlink_to(real)
    result = run_cli("serve", "--socket", str(short_tmp / "link" / "d.sock"))
    assert result.returncode == 1
    assert "symbolic link" in result.stderr
    assert list(real.iterdir()) == []


@pytest.mark.parametrize("shared", ["/tmp", "made here"])
def test_serve_in_a_shared_directory_suggests_a_private_one_and_never_a_chmod(
    short_tmp: Path, shared: str
) -> None:
    """``--socket /tmp/x.sock`` once advised 'chmod 700 /tmp'; the refusal now points at a private place."""
    directory = Path(shared)
    if shared == "made here":
        directory = short_tmp / "shared"
        directory.mkdir()
        directory.chmod(0o1777)
    mode = directory.stat().st_mode
    result = run_cli("serve", "--socket", str(directory / "lh-cli-test.sock"))
    assert result.returncode == 1
    assert "chmod" not in result.stderr
    assert "a directory only you can reach" in result.stderr
    assert "mkdir -m 700 ~/.longhaul" in result.stderr
    assert directory.stat().st_mode == mode
    assert not (directory / "lh-cli-test.sock").exists()


@pytest.mark.parametrize("tty", [True, False])
def test_serve_in_a_terminal_says_where_it_listens_in_one_human_line(short_tmp: Path, tty: bool) -> None:
    """Issue #13: the foreground daemon printed only JSON lines; a person at a terminal now gets one line."""
    socket_path = short_tmp / "d.sock"
    primary, secondary = pty.openpty() if tty else os.pipe()
    proc = subprocess.Popen(
        daemon_command("serve", "--socket", str(socket_path), "--pass-budget", "42"),
        stdout=secondary,
        stderr=subprocess.PIPE,
        env={**os.environ},
    )
    os.close(secondary)
    try:
        deadline = time.monotonic() + WAIT_S
        while not socket_path.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the daemon never listened"
            time.sleep(0.02)
        time.sleep(0.2)  # the line is written right after the socket appears
        proc.send_signal(signal.SIGTERM)
        _, log = proc.communicate(timeout=WAIT_S)
        shown = _read_all(primary)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        os.close(primary)
    assert proc.returncode == 0
    assert '"event":"daemon_ready"' in log.decode()  # the JSON log is still there, on stderr
    expected = f"longhaul-daemon {__version__} listening on {socket_path}, pass budget 42 s"
    assert (expected in shown) is tty
    assert shown.strip() == "" or tty


def _read_all(fd: int) -> str:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # a pty reports EIO once the other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def test_serve_refuses_an_overlong_socket_path() -> None:
    result = run_cli("serve", "--socket", "/tmp/" + "x" * 120 + "/d.sock")
    assert result.returncode == 1
    assert "longer than 107 bytes" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--pass-budget", "0"],
        ["serve", "--turn-budget", "-2"],
        ["serve", "--grace", "-1"],
        ["serve", "--max-frame", "big"],
        [],
    ],
)
def test_bad_arguments_are_usage_errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"longhaul-daemon {__version__}"


def test_serve_loads_the_pass_once_listening_and_logs_how_long_it_took(short_tmp: Path) -> None:
    """Issue #10: the first compaction must not pay for importing the pass; the daemon loads it right after it
    starts serving and says so in its log (``pass_loaded`` with the milliseconds, no text of any session)."""
    socket_path = short_tmp / "d.sock"
    log_path = short_tmp / "daemon.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            daemon_command("serve", "--socket", str(socket_path)),
            stdout=subprocess.DEVNULL,
            stderr=log,
            env={**os.environ},
        )
    try:
        deadline = time.monotonic() + WAIT_S
        loaded: list[dict[str, object]] = []
        while not loaded:
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            lines = log_path.read_text().splitlines()
            loaded = [r for r in map(json.loads, lines) if r.get("event") == "pass_loaded"]
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    (record,) = loaded
    assert isinstance(record["ms"], int) and record["ms"] >= 0
    assert "pass_import_failed" not in log_path.read_text()
