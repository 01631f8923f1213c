"""``install`` / ``uninstall`` in a private HOME, with fake ``systemctl`` and ``pi`` recording their argv."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from longhaul_daemon.ops.install import run_install, run_uninstall
from longhaul_daemon.ops.units import DROPIN_DIR, DROPIN_NAME, SERVICE, SOCKET, render_units

ARGV = ["/opt/longhaul/bin/longhaul-daemon"]
VENV_DAEMON = Path(sys.executable).parent / "longhaul-daemon"

# The fakes append their arguments to $FAKE_LOG; $FAKE_FAIL names an argument that makes them exit 1.
_FAKE = """#!/bin/sh
echo "${0##*/} $*" >> "$FAKE_LOG"
if [ "$1 $2" = "--user show-environment" ] && [ -n "$FAKE_NO_MANAGER" ]; then
  echo "Failed to connect to bus: No medium found" >&2; exit 1
fi
for arg in "$@"; do
  if [ -n "$FAKE_FAIL" ] && [ "$arg" = "$FAKE_FAIL" ]; then echo "fake failure on $arg" >&2; exit 1; fi
done
exit 0
"""


class World:
    """A private HOME with fake programs on PATH, and helpers to read what happened."""

    def __init__(self, root: Path, programs: tuple[str, ...] = ("systemctl", "pi")) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        for program in programs:
            fake = self.bin / program
            fake.write_text(_FAKE, encoding="utf-8")
            fake.chmod(0o755)
        self.log = root / "calls.log"
        self.shim = root / "checkout" / "client_shim"
        self.shim.mkdir(parents=True)
        self.restriction = root / "apparmor_restrict_unprivileged_userns"
        self.restriction.write_text("0\n", encoding="ascii")
        self.env = {
            "HOME": str(root / "home"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "PATH": str(self.bin),
            "FAKE_LOG": str(self.log),
        }
        self.units = root / "config" / "systemd" / "user"

    def install(self, *, dry_run: bool = False, sandbox: bool | None = None, **env: str) -> tuple[int, str]:
        out = io.StringIO()
        code = run_install(
            dry_run=dry_run,
            sandbox=sandbox,
            env={**self.env, **env},
            out=out,
            argv=ARGV,
            shim=self.shim,
            restriction=self.restriction,
        )
        return code, out.getvalue()

    def uninstall(self, *, dry_run: bool = False, **env: str) -> tuple[int, str]:
        out = io.StringIO()
        code = run_uninstall(dry_run=dry_run, env={**self.env, **env}, out=out, shim=self.shim)
        return code, out.getvalue()

    def calls(self) -> list[str]:
        return self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []

    def files(self) -> dict[str, str]:
        if not self.units.exists():
            return {}
        return {
            str(p.relative_to(self.units)): p.read_text(encoding="utf-8")
            for p in sorted(self.units.rglob("*"))
            if p.is_file()
        }


@pytest.fixture
def world(tmp_path: Path) -> World:
    return World(tmp_path)


def expected_files(*, sandbox: bool) -> dict[str, str]:
    return {unit.relative: unit.content for unit in render_units(ARGV, sandbox=sandbox)}


def test_install_writes_the_units_enables_the_socket_and_installs_the_shim(world: World) -> None:
    code, out = world.install()
    assert code == 0, out
    assert world.files() == expected_files(sandbox=True)
    assert "ExecStart=/opt/longhaul/bin/longhaul-daemon serve" in world.files()[SERVICE]
    assert world.calls() == [
        "systemctl --user show-environment",
        "systemctl --user daemon-reload",
        "systemctl --user enable --now longhaul-daemon.socket",
        "systemctl --user try-restart longhaul-daemon.service",
        f"pi install {world.shim}",
    ]
    assert all(os.stat(world.units / name).st_mode & 0o777 == 0o644 for name in (SOCKET, SERVICE))
    assert 'loginctl enable-linger "$USER"' in out


def test_install_twice_changes_nothing_the_second_time(world: World) -> None:
    world.install()
    before = {p: p.stat().st_mtime_ns for p in world.units.rglob("*") if p.is_file()}
    code, out = world.install()
    assert code == 0, out
    assert {p: p.stat().st_mtime_ns for p in world.units.rglob("*") if p.is_file()} == before
    assert out.count("unchanged  ") == 3
    assert world.files() == expected_files(sandbox=True)


def test_install_leaves_the_sandbox_out_where_user_namespaces_are_blocked(world: World) -> None:
    world.install()
    own_override = world.units / DROPIN_DIR / "90-mine.conf"
    own_override.write_text("[Service]\nNice=5\n", encoding="utf-8")
    world.restriction.write_text("1\n", encoding="ascii")
    code, out = world.install()
    assert code == 0, out
    assert "reads 1" in out
    assert not (world.units / DROPIN_DIR / DROPIN_NAME).exists()
    assert own_override.exists()  # only our drop-in goes; a user's own override stays
    code, _ = world.install(sandbox=True)
    assert code == 0
    assert (world.units / DROPIN_DIR / DROPIN_NAME).exists()


def test_without_a_user_manager_install_enables_offline_and_prints_the_rest(world: World) -> None:
    code, out = world.install(FAKE_NO_MANAGER="1")
    assert code == 0, out
    assert world.files() == expected_files(sandbox=True)
    assert "no systemd user manager answers" in out
    assert "Failed to connect to bus" in out
    assert world.calls() == [
        "systemctl --user show-environment",
        "systemctl --user enable longhaul-daemon.socket",
        f"pi install {world.shim}",
    ]
    assert "  systemctl --user daemon-reload\n" in out
    assert "  systemctl --user start longhaul-daemon.socket\n" in out


def test_without_systemctl_and_pi_install_writes_the_units_and_prints_every_command(tmp_path: Path) -> None:
    world = World(tmp_path, programs=())
    code, out = world.install()
    assert code == 0, out
    assert world.files() == expected_files(sandbox=True)
    assert world.calls() == []
    for command in (
        "systemctl --user daemon-reload",
        "systemctl --user enable --now longhaul-daemon.socket",
        f"pi install {world.shim}",
    ):
        assert f"  {command}\n" in out


def test_install_without_the_shim_beside_it_says_how_to_install_it(world: World) -> None:
    out = io.StringIO()
    code = run_install(
        dry_run=False,
        sandbox=False,
        env=world.env,
        out=out,
        argv=ARGV,
        shim=None,
        restriction=world.restriction,
    )
    assert code == 0
    assert "pi install <checkout>/client_shim" in out.getvalue()
    assert not any(call.startswith("pi ") for call in world.calls())


def test_dry_run_prints_every_file_and_command_and_touches_nothing(world: World) -> None:
    code, out = world.install(dry_run=True)
    assert code == 0, out
    assert not (world.root / "config").exists()
    assert world.calls() == []
    for unit in render_units(ARGV, sandbox=True):
        assert f"would write {world.units / unit.relative} (mode 0644):\n{unit.content}" in out
    for command in (
        "systemctl --user daemon-reload",
        "systemctl --user enable --now longhaul-daemon.socket",
        "systemctl --user try-restart longhaul-daemon.service",
        f"pi install {world.shim}",
    ):
        assert f"would run  {command}\n" in out
    assert "nothing was written" in out


def test_an_unwritable_unit_directory_fails_before_running_anything(world: World) -> None:
    (world.root / "config").write_text("a file where a directory should be", encoding="utf-8")
    code, out = world.install()
    assert code == 1
    assert "FAILED     cannot write" in out
    assert world.calls() == []


def test_a_failing_systemctl_command_fails_the_install(world: World) -> None:
    code, out = world.install(FAKE_FAIL="enable")
    assert code == 1
    assert "FAILED     " in out and "fake failure on enable" in out
    assert not any(call.startswith("pi ") for call in world.calls())


def test_uninstall_reverses_install_and_is_idempotent(world: World) -> None:
    world.install()
    world.log.unlink()
    code, out = world.uninstall()
    assert code == 0, out
    assert world.files() == {}
    assert not (world.units / DROPIN_DIR).exists()
    assert world.calls() == [
        "systemctl --user show-environment",
        "systemctl --user disable --now longhaul-daemon.socket longhaul-daemon.service",
        "systemctl --user daemon-reload",
        f"pi remove {world.shim}",
    ]
    world.log.unlink()
    code, out = world.uninstall(FAKE_FAIL="remove")  # pi: "No matching package found"
    assert code == 0, out
    assert "nothing to stop" in out
    assert world.calls() == [f"pi remove {world.shim}"]


def test_uninstall_dry_run_lists_the_steps_and_removes_nothing(world: World) -> None:
    world.install()
    world.log.unlink()
    before = world.files()
    code, out = world.uninstall(dry_run=True)
    assert code == 0, out
    assert world.files() == before
    assert world.calls() == []
    for name in (SOCKET, SERVICE, f"{DROPIN_DIR}/{DROPIN_NAME}"):
        assert f"would remove {world.units / name}\n" in out
    assert "would run  systemctl --user disable --now longhaul-daemon.socket longhaul-daemon.service\n" in out
    assert f"would run  pi remove {world.shim}\n" in out


def test_the_command_line_install_points_exec_start_at_the_running_executable(tmp_path: Path) -> None:
    world = World(tmp_path)
    env = {**world.env, "PATH": f"{world.bin}:/usr/bin:/bin"}
    dry = subprocess.run(
        [str(VENV_DAEMON), "install", "--dry-run"], env=env, capture_output=True, text=True, check=False
    )
    assert dry.returncode == 0, dry.stderr
    assert f"ExecStart={VENV_DAEMON} serve\n" in dry.stdout
    assert not world.units.exists()
    done = subprocess.run(
        [str(VENV_DAEMON), "install", "--no-sandbox"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ExecStart={VENV_DAEMON} serve\n" in (world.units / SERVICE).read_text(encoding="utf-8")
    assert not (world.units / DROPIN_DIR).exists()
    assert "systemctl --user enable --now longhaul-daemon.socket" in world.calls()
    gone = subprocess.run(
        [str(VENV_DAEMON), "uninstall"], env=env, capture_output=True, text=True, check=False
    )
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert not (world.units / SERVICE).exists()
