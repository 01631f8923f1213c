"""systemd integration: notify datagrams, the watchdog, and socket activation (real and hand-made)."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from server.in_process_daemon import WAIT_S, daemon_command, stop_process, wait_until_serving

from longhaul_daemon import systemd

SOCKET_ACTIVATE = "/usr/bin/systemd-socket-activate"


@pytest.fixture
def notify_socket(short_tmp: Path) -> Iterator[tuple[str, socket.socket]]:
    """A fake service manager: a datagram socket and the $NOTIFY_SOCKET value that reaches it."""
    path = short_tmp / "notify"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    receiver.settimeout(WAIT_S)
    with receiver:
        yield str(path), receiver


def receive_until(receiver: socket.socket, wanted: str) -> list[str]:
    """Assignments received (in order) up to and including the datagram holding ``wanted``."""
    seen: list[str] = []
    while wanted not in seen:
        seen.extend(receiver.recv(65536).decode().split("\n"))
    return seen


def test_notify_sends_newline_joined_assignments(notify_socket: tuple[str, socket.socket]) -> None:
    address, receiver = notify_socket
    assert systemd.notify("READY=1", "STATUS=hi", env={"NOTIFY_SOCKET": address})
    assert receiver.recv(100) == b"READY=1\nSTATUS=hi"


def test_notify_supports_the_abstract_namespace() -> None:
    name = f"longhaul-test-{os.getpid()}-{time.monotonic_ns()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind("\0" + name)
        receiver.settimeout(WAIT_S)
        assert systemd.notify("STOPPING=1", env={"NOTIFY_SOCKET": "@" + name})
        assert receiver.recv(100) == b"STOPPING=1"


@pytest.mark.parametrize("value", ["", "relative/path", "vsock:2:1234", "/nonexistent/notify"])
def test_notify_is_inert_or_silent_when_it_cannot_send(value: str) -> None:
    assert systemd.notify("READY=1", env={"NOTIFY_SOCKET": value} if value else {}) is False


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"WATCHDOG_USEC": "400000"}, 0.2),
        ({"WATCHDOG_USEC": "400000", "WATCHDOG_PID": "42"}, 0.2),
        ({"WATCHDOG_USEC": "400000", "WATCHDOG_PID": "43"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval_is_half_the_timeout_for_our_pid(
    env: dict[str, str], expected: float | None
) -> None:
    assert systemd.watchdog_interval(env, pid=42) == expected


def test_listen_sockets_ignores_fds_meant_for_another_process_and_clears_the_variables() -> None:
    env = {"LISTEN_PID": "1", "LISTEN_FDS": "1", "LISTEN_FDNAMES": "x", "OTHER": "kept"}
    assert systemd.listen_sockets(env, pid=2) == []
    assert env == {"OTHER": "kept"}


def test_daemon_notifies_ready_status_watchdog_and_stopping(
    short_tmp: Path, notify_socket: tuple[str, socket.socket]
) -> None:
    address, receiver = notify_socket
    env = {**os.environ, "NOTIFY_SOCKET": address, "WATCHDOG_USEC": "200000"}
    socket_path = short_tmp / "d.sock"
    daemon = subprocess.Popen(
        daemon_command("serve", "--socket", str(socket_path)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    terminated = False
    try:
        seen = receive_until(receiver, "READY=1")
        assert f"STATUS=Listening on {socket_path}" in seen
        pings = 0
        while pings < 3:  # pinged repeatedly from the running event loop
            pings += receive_until(receiver, "WATCHDOG=1").count("WATCHDOG=1")
        daemon.send_signal(signal.SIGTERM)
        terminated = True
        assert "STOPPING=1" in receive_until(receiver, "STOPPING=1")
    finally:
        code, stderr = stop_process(daemon, sig=None if terminated else signal.SIGKILL)
    assert code == 0, stderr


@pytest.mark.skipif(not Path(SOCKET_ACTIVATE).exists(), reason=f"{SOCKET_ACTIVATE} is not installed")
def test_socket_activation_with_systemd_socket_activate(short_tmp: Path) -> None:
    socket_path = short_tmp / "activated.sock"
    activator = subprocess.Popen(
        [
            SOCKET_ACTIVATE,
            "-l",
            str(socket_path),
            *daemon_command("serve", "--socket", str(short_tmp / "x.sock")),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # The socket file appears at bind(), before listen(): poll until a connection is taken. The first
        # connection execs the daemon.
        status = wait_until_serving(socket_path, activator)
        assert status["socketActivated"] is True
        assert status["socket"] == str(socket_path)
        assert status["pid"] == activator.pid  # exec'd in place, so LISTEN_PID matched
    finally:
        code, stderr = stop_process(activator)
    assert code == 0, stderr
    assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)  # systemd's socket outlives the daemon
    assert not (short_tmp / "x.sock").exists()


_EXEC_WITH_FD_3 = """
import os, sys
os.dup2(int(sys.argv[1]), 3)
os.environ["LISTEN_PID"] = str(os.getpid())  # exec keeps the pid, as systemd arranges
os.environ["LISTEN_FDS"] = "1"
os.execv(sys.executable, [sys.executable, *sys.argv[2:]])
"""


def test_socket_activation_with_a_hand_passed_fd(short_tmp: Path) -> None:
    socket_path = short_tmp / "passed.sock"
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(socket_path))
    listening.listen(8)
    with listening:
        fd = listening.fileno()
        daemon = subprocess.Popen(
            [sys.executable, "-c", _EXEC_WITH_FD_3, str(fd), "-m", "longhaul_daemon", "serve"],
            pass_fds=(fd,),
            env={**os.environ, "LONGHAUL_SOCKET": str(short_tmp / "unused.sock")},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
    try:
        status = wait_until_serving(socket_path, daemon)
        assert status["socketActivated"] is True
        assert status["pid"] == daemon.pid
    finally:
        code, stderr = stop_process(daemon)
    assert code == 0, stderr
    assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)  # never unlinked: it is not ours
    assert not (short_tmp / "unused.sock").exists()


def test_socket_activation_not_for_our_pid_is_ignored(short_tmp: Path) -> None:
    socket_path = short_tmp / "own.sock"
    env = {**os.environ, "LISTEN_PID": "1", "LISTEN_FDS": "1"}
    daemon = subprocess.Popen(
        daemon_command("serve", "--socket", str(socket_path)),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        assert wait_until_serving(socket_path, daemon)["socketActivated"] is False
    finally:
        code, stderr = stop_process(daemon)
    assert code == 0, stderr
    assert not socket_path.exists()
