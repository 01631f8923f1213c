"""The systemd user units: shipped copies agree, systemd accepts them, and their ExecStart really serves."""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from server.in_process_daemon import WAIT_S, stop_process, wait_until_serving

from longhaul_daemon.ops.units import (
    DROPIN_DIR,
    DROPIN_NAME,
    SERVICE,
    SOCKET,
    choose_sandbox,
    daemon_argv,
    exec_start_line,
    render_units,
    unit_dir,
    unit_template,
)
from longhaul_daemon.server.paths import resolve_socket_path

REPO = Path(__file__).resolve().parents[2]
SHIPPED = [SOCKET, SERVICE, f"{DROPIN_DIR}/{DROPIN_NAME}"]
VENV_DAEMON = Path(sys.executable).parent / "longhaul-daemon"


def _tool(name: str) -> str:
    found = shutil.which(name) or (f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None)
    if found is None:
        pytest.fail(f"{name} is missing: install Debian's systemd tools (apt-get install -y systemd)")
    return found


def _directives(text: str) -> dict[str, list[str]]:
    seen: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            seen.setdefault(key, []).append(value)
    return seen


@pytest.mark.parametrize("relative", SHIPPED)
def test_the_repository_copy_is_the_package_data(relative: str) -> None:
    assert (REPO / "systemd" / relative).read_text(encoding="utf-8") == unit_template(relative)


def test_the_socket_unit_listens_where_the_daemon_and_the_shim_look_by_default() -> None:
    socket_unit = _directives(unit_template(SOCKET))
    assert socket_unit["ListenStream"] == ["%t/longhaul/daemon.sock"]
    assert socket_unit["SocketMode"] == ["0600"]
    assert socket_unit["DirectoryMode"] == ["0700"]
    runtime = "/run/user/1000"  # what %t expands to in a user manager
    default = resolve_socket_path(None, {"XDG_RUNTIME_DIR": runtime}, 1000)
    assert str(default) == socket_unit["ListenStream"][0].replace("%t", runtime)


def test_the_service_unit_has_the_hardening_that_works_without_namespaces() -> None:
    service = _directives(unit_template(SERVICE))
    expected = {
        "Type": "notify",
        "Restart": "on-failure",
        "UMask": "0077",
        "NoNewPrivileges": "yes",
        "LockPersonality": "yes",
        "RestrictRealtime": "yes",
        "RestrictSUIDSGID": "yes",
        "RestrictNamespaces": "yes",
        "SystemCallArchitectures": "native",
        "SystemCallFilter": "@system-service",
        "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6",
    }
    for key, value in expected.items():
        assert service[key] == [value], key
    for key in ("WatchdogSec", "RestartSec", "TimeoutStopSec", "MemoryMax", "TasksMax"):
        assert len(service[key]) == 1, key
    assert "RuntimeDirectory" not in service  # it would delete the socket's directory on every stop
    namespaced = {"PrivateUsers", "ProtectSystem", "ProtectHome", "PrivateTmp", "ReadWritePaths"}
    assert not namespaced & service.keys()
    assert namespaced <= _directives(unit_template(f"{DROPIN_DIR}/{DROPIN_NAME}")).keys()


def _verify(directory: Path, *, home_script: bool = False) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze --user verify`` in a private HOME and runtime dir (it needs both)."""
    home = directory / "home"
    runtime = directory / "run"
    home.mkdir()
    if home_script:
        script = home / ".local" / "bin" / "longhaul-daemon"
        script.parent.mkdir(parents=True)
        script.write_text("#!/bin/sh\n", encoding="utf-8")
        script.chmod(0o755)
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_LOG_COLOR": "0"}
    env.pop("XDG_CONFIG_HOME", None)
    units = [str(directory / "units" / SOCKET), str(directory / "units" / SERVICE)]
    return subprocess.run(
        [_tool("systemd-analyze"), "--user", "verify", *units],
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT_S * 3,
        check=False,
    )


def _write(directory: Path, argv: list[str], *, sandbox: bool) -> None:
    for unit in render_units(argv, sandbox=sandbox):
        path = directory / "units" / unit.relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(unit.content, encoding="utf-8")


@pytest.mark.parametrize("sandbox", [True, False])
@pytest.mark.parametrize("how", ["script", "module"])
def test_systemd_analyze_verify_accepts_the_installed_units(tmp_path: Path, sandbox: bool, how: str) -> None:
    argv = [str(VENV_DAEMON)] if how == "script" else [sys.executable, "-m", "longhaul_daemon"]
    _write(tmp_path, argv, sandbox=sandbox)
    result = _verify(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no warning either: an unknown key would only warn


def test_the_repository_copies_verify_as_shipped_with_the_default_exec_start(tmp_path: Path) -> None:
    """``systemd/`` as is: ExecStart is ``%h/.local/bin/longhaul-daemon``, where pipx puts it."""
    shutil.copytree(REPO / "systemd", tmp_path / "units")
    result = _verify(tmp_path, home_script=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""


def test_systemd_analyze_verify_rejects_a_missing_executable(tmp_path: Path) -> None:
    _write(tmp_path, [str(tmp_path / "nowhere" / "longhaul-daemon")], sandbox=False)
    result = _verify(tmp_path)
    assert result.returncode != 0
    assert "is not executable" in result.stderr


def test_exec_start_quotes_blanks_and_escapes_specifiers_so_systemd_finds_the_file(tmp_path: Path) -> None:
    odd = tmp_path / "my 100% $HOME" / "longhaul-daemon"
    odd.parent.mkdir()
    odd.write_text("#!/bin/sh\n", encoding="utf-8")
    odd.chmod(0o755)
    assert exec_start_line([str(odd)]) == f'ExecStart="{tmp_path}/my 100%% $HOME/longhaul-daemon" serve'
    assert exec_start_line(["/p", "-m", "a $b"]) == 'ExecStart=/p -m "a $$b" serve'
    _write(tmp_path, [str(odd)], sandbox=False)
    result = _verify(tmp_path)
    assert result.returncode == 0, result.stderr


def test_daemon_argv_prefers_the_running_script_then_the_one_beside_python(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "longhaul-daemon"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n", encoding="utf-8")
    script.chmod(0o755)
    python = tmp_path / "bin" / "python3"
    assert daemon_argv("bin/longhaul-daemon", "/usr/bin/python3", cwd=str(tmp_path)) == [str(script)]
    assert daemon_argv("/x/__main__.py", str(python), cwd="/") == [str(script)]
    assert daemon_argv("/x/__main__.py", "/opt/py/bin/python3", cwd="/") == [
        "/opt/py/bin/python3",
        "-m",
        "longhaul_daemon",
    ]


def test_unit_dir_follows_xdg_config_home_only_when_absolute() -> None:
    assert unit_dir({"XDG_CONFIG_HOME": "/cfg", "HOME": "/h"}) == Path("/cfg/systemd/user")
    assert unit_dir({"XDG_CONFIG_HOME": "rel", "HOME": "/h"}) == Path("/h/.config/systemd/user")
    assert unit_dir({"HOME": "/h"}) == Path("/h/.config/systemd/user")


@pytest.mark.parametrize(
    ("requested", "content", "expected"),
    [(None, "1\n", False), (None, "0\n", True), (None, None, True), (True, "1\n", True), (False, "0", False)],
)
def test_the_sandbox_is_left_out_where_user_namespaces_are_blocked(
    tmp_path: Path, requested: bool | None, content: str | None, expected: bool
) -> None:
    restriction = tmp_path / "apparmor_restrict_unprivileged_userns"
    if content is not None:
        restriction.write_text(content, encoding="ascii")
    choice = choose_sandbox(requested, restriction=restriction)
    assert choice.install is expected
    assert choice.reason


def test_the_installed_exec_start_serves_under_systemd_socket_activate(short_tmp: Path) -> None:
    """The ExecStart ``install`` writes, run the way systemd runs it, answers ``status`` on first connect."""
    service = next(u for u in render_units([str(VENV_DAEMON)], sandbox=False) if u.relative == SERVICE)
    exec_start = shlex.split(_directives(service.content)["ExecStart"][0])
    assert exec_start == [str(VENV_DAEMON), "serve"]
    socket_path = short_tmp / "daemon.sock"
    activator = subprocess.Popen(
        [_tool("systemd-socket-activate"), "-l", str(socket_path), *exec_start, "--socket", str(socket_path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        # The socket file appears at bind(), before listen(): poll until a connection is taken. The first
        # connection execs the daemon.
        woken = wait_until_serving(socket_path, activator)
        assert woken["socketActivated"] is True
        status = subprocess.run(
            [str(VENV_DAEMON), "status", "--socket", str(socket_path)],
            capture_output=True,
            text=True,
            timeout=WAIT_S * 2,
            check=False,
        )
    finally:
        code, stderr = stop_process(activator)
    assert status.returncode == 0, status.stderr
    assert f"{socket_path} (socket-activated)" in status.stdout
    assert f"pid        {activator.pid}" in status.stdout  # exec'd in place: LISTEN_PID matched
    assert code == 0, stderr
    assert stat.S_ISSOCK(os.lstat(socket_path).st_mode)  # the activator's socket, never unlinked by us
