"""Socket path resolution and the private-directory rules."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from longhaul_daemon.errors import SocketPathInvalid, UnsafeSocketDir
from longhaul_daemon.server.paths import (
    check_socket_path_length,
    ensure_private_dir,
    lock_path_for,
    resolve_socket_path,
)

UID = os.getuid()


def test_socket_flag_wins_over_everything() -> None:
    env = {"LONGHAUL_SOCKET": "/env/s.sock", "XDG_RUNTIME_DIR": "/run/user/7"}
    assert resolve_socket_path("/flag/s.sock", env, 7) == Path("/flag/s.sock")


def test_environment_variable_comes_next() -> None:
    env = {"LONGHAUL_SOCKET": "/env/s.sock", "XDG_RUNTIME_DIR": "/run/user/7"}
    assert resolve_socket_path(None, env, 7) == Path("/env/s.sock")


def test_runtime_dir_comes_next() -> None:
    assert resolve_socket_path(None, {"XDG_RUNTIME_DIR": "/run/user/7"}, 7) == Path(
        "/run/user/7/longhaul/daemon.sock"
    )


@pytest.mark.parametrize("env", [{}, {"XDG_RUNTIME_DIR": ""}, {"XDG_RUNTIME_DIR": "relative/dir"}])
def test_tmp_fallback_is_per_uid(env: dict[str, str]) -> None:
    assert resolve_socket_path(None, env, 1234) == Path("/tmp/longhaul-1234/daemon.sock")


def test_relative_paths_are_made_absolute() -> None:
    assert resolve_socket_path("rel.sock", {}, 7) == Path.cwd() / "rel.sock"


def test_lock_file_sits_beside_the_socket() -> None:
    assert lock_path_for(Path("/r/daemon.sock")) == Path("/r/daemon.sock.lock")


def test_overlong_socket_paths_are_refused_plainly() -> None:
    with pytest.raises(SocketPathInvalid, match="longer than 107 bytes"):
        check_socket_path_length(Path("/" + "x" * 120))


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_missing_directory_is_created_0700(short_tmp: Path) -> None:
    target = short_tmp / "a" / "run"
    previous = os.umask(0)
    try:
        ensure_private_dir(target, uid=UID, may_narrow=False)
    finally:
        os.umask(previous)
    assert mode_of(target) == 0o700


def test_a_default_location_is_narrowed_to_0700(short_tmp: Path) -> None:
    target = short_tmp / "run"
    target.mkdir()
    target.chmod(0o755)
    ensure_private_dir(target, uid=UID, may_narrow=True)
    assert mode_of(target) == 0o700


def test_an_explicit_directory_others_can_reach_is_refused_not_changed(short_tmp: Path) -> None:
    target = short_tmp / "run"
    target.mkdir()
    target.chmod(0o755)
    with pytest.raises(UnsafeSocketDir, match="accessible by other users"):
        ensure_private_dir(target, uid=UID, may_narrow=False)
    assert mode_of(target) == 0o755


def test_a_shared_sticky_directory_is_never_narrowed(short_tmp: Path) -> None:
    target = short_tmp / "shared"
    target.mkdir()
    target.chmod(0o1777)
    with pytest.raises(UnsafeSocketDir):
        ensure_private_dir(target, uid=UID, may_narrow=True)
    assert mode_of(target) == 0o1777


def test_a_symlinked_directory_is_refused(short_tmp: Path) -> None:
    real = short_tmp / "real"
    real.mkdir(mode=0o700)
    link = short_tmp / "link"
    link.symlink_to(real)
    with pytest.raises(UnsafeSocketDir, match="symbolic link"):
        ensure_private_dir(link, uid=UID, may_narrow=True)


def test_a_file_where_the_directory_should_be_is_refused(short_tmp: Path) -> None:
    (short_tmp / "run").write_text("")
    with pytest.raises(UnsafeSocketDir, match="not a directory"):
        ensure_private_dir(short_tmp / "run", uid=UID, may_narrow=True)


def test_a_directory_owned_by_someone_else_is_refused(short_tmp: Path) -> None:
    target = short_tmp / "run"
    target.mkdir(mode=0o700)
    # As root we can really hand it to another user; otherwise claim to be someone else.
    if UID == 0:
        os.chown(target, 65534, 65534)
        uid = 0
    else:
        uid = UID + 1
    with pytest.raises(UnsafeSocketDir, match="owned by uid"):
        ensure_private_dir(target, uid=uid, may_narrow=True)
