"""Binding the socket: modes, single instance, stale-socket recovery, and cleanup at exit."""

from __future__ import annotations

import os
import signal
import socket
import stat
from pathlib import Path

import anyio
import pytest

from longhaul_daemon.errors import AlreadyRunning, SocketPathInvalid, StartupError
from longhaul_daemon.server.listener import acquire_instance_lock, open_listener, remove_stale_socket

from .in_process_daemon import (
    WAIT_S,
    call_sync,
    connect,
    running_daemon,
    spawn_daemon,
    stop_process,
    wait_until_serving,
)

UID = os.getuid()


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.mark.anyio
async def test_socket_is_0600_in_a_0700_directory_and_removed_at_exit(short_tmp: Path) -> None:
    socket_path = short_tmp / "run" / "d.sock"
    previous = os.umask(0)  # the daemon must not depend on a friendly umask
    try:
        async with running_daemon(socket_path) as handle:
            assert handle.socket_path == socket_path
            assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)
            assert mode_of(socket_path) == 0o600
            assert mode_of(socket_path.parent) == 0o700
            assert mode_of(short_tmp / "run" / "d.sock.lock") == 0o600
            async with connect(socket_path) as connection:
                reply = await connection.call("status", {})
                assert reply["result"]["socket"] == str(socket_path)
    finally:
        os.umask(previous)
    assert not socket_path.exists()


def test_second_instance_exits_non_zero_and_the_first_keeps_serving(short_tmp: Path) -> None:
    socket_path = short_tmp / "d.sock"
    first = spawn_daemon(socket_path)
    try:
        first_pid = wait_until_serving(socket_path, first)["pid"]
        second = spawn_daemon(socket_path)
        try:
            _, stderr = second.communicate(timeout=WAIT_S)
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
        assert second.returncode != 0
        assert "already serving" in stderr.decode()
        assert socket_path.exists()
        assert call_sync(socket_path, "status")["result"]["pid"] == first_pid
    finally:
        code, _ = stop_process(first)
    assert code == 0
    assert not socket_path.exists()


def test_a_socket_left_by_a_killed_daemon_is_recovered(short_tmp: Path) -> None:
    socket_path = short_tmp / "d.sock"
    crashed = spawn_daemon(socket_path)
    wait_until_serving(socket_path, crashed)
    stop_process(crashed, sig=signal.SIGKILL)
    assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)  # SIGKILL left it behind
    with pytest.raises(ConnectionRefusedError):
        call_sync(socket_path, "status")
    restarted = spawn_daemon(socket_path)
    try:
        status = wait_until_serving(socket_path, restarted)
        assert status["pid"] == restarted.pid
    finally:
        code, _ = stop_process(restarted)
    assert code == 0


def test_lock_refuses_a_second_holder_in_the_same_process(short_tmp: Path) -> None:
    lock_path = short_tmp / "d.sock.lock"
    fd = acquire_instance_lock(lock_path, uid=UID)
    try:
        with pytest.raises(AlreadyRunning, match=f"pid {os.getpid()}"):
            acquire_instance_lock(lock_path, uid=UID)
    finally:
        os.close(fd)
    os.close(acquire_instance_lock(lock_path, uid=UID))  # free again once closed


def test_lock_file_must_not_be_a_symlink(short_tmp: Path) -> None:
    target = short_tmp / "elsewhere"
    target.write_text("")
    (short_tmp / "d.sock.lock").symlink_to(target)
    with pytest.raises(StartupError, match="symbolic link"):
        acquire_instance_lock(short_tmp / "d.sock.lock", uid=UID)


def test_a_regular_file_at_the_socket_path_is_never_replaced(short_tmp: Path) -> None:
    victim = short_tmp / "d.sock"
    victim.write_text("precious")
    with pytest.raises(SocketPathInvalid, match="not a socket"):
        remove_stale_socket(victim)
    assert victim.read_text() == "precious"


def test_a_live_socket_without_our_lock_is_not_stolen(short_tmp: Path) -> None:
    path = short_tmp / "d.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as squatter:
        squatter.bind(str(path))
        squatter.listen(1)
        with pytest.raises(AlreadyRunning, match="refusing to take over"):
            remove_stale_socket(path)
        assert path.exists()


@pytest.mark.anyio
async def test_open_listener_releases_the_lock_when_binding_fails(short_tmp: Path) -> None:
    path = short_tmp / "d.sock"
    path.write_text("not a socket")
    with anyio.fail_after(WAIT_S), pytest.raises(SocketPathInvalid):
        await open_listener(path, uid=UID, may_narrow_dir=False, env={})
    os.close(acquire_instance_lock(short_tmp / "d.sock.lock", uid=UID))
