"""``install`` / ``uninstall`` in a private HOME, with fake ``systemctl`` and ``pi`` recording their argv."""

from __future__ import annotations

import io
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from longhaul_daemon.cli import main
from longhaul_daemon.ops import shim as shim_module
from longhaul_daemon.ops.install import run_install, run_uninstall
from longhaul_daemon.ops.shim import shim_files, shim_source
from longhaul_daemon.ops.units import DROPIN_DIR, DROPIN_NAME, SERVICE, SOCKET, daemon_argv, render_units

ARGV = ["/opt/longhaul/bin/longhaul-daemon"]
VENV_DAEMON = Path(sys.executable).parent / "longhaul-daemon"
# How the end of an install names the daemon to start by hand: the fake PATH holds no longhaul-daemon.
_SERVE = shlex.join(daemon_argv())

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
        self.restriction = root / "apparmor_restrict_unprivileged_userns"
        self.restriction.write_text("0\n", encoding="ascii")
        self.home = root / "home"
        self.env = {
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(root / "run"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "PATH": str(self.bin),
            "FAKE_LOG": str(self.log),
        }
        self.units = root / "config" / "systemd" / "user"
        self.shim = self.home / ".local" / "share" / "longhaul" / "pi-extension"

    def install(
        self,
        *,
        dry_run: bool = False,
        sandbox: bool | None = None,
        env: dict[str, str] | None = None,
        **more: str,
    ) -> tuple[int, str]:
        out = io.StringIO()
        code = run_install(
            dry_run=dry_run,
            sandbox=sandbox,
            env={**self.env, **(env or {}), **more},
            out=out,
            argv=ARGV,
            restriction=self.restriction,
        )
        return code, out.getvalue()

    def uninstall(self, *, dry_run: bool = False, **env: str) -> tuple[int, str]:
        out = io.StringIO()
        code = run_uninstall(dry_run=dry_run, env={**self.env, **env}, out=out)
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


def test_install_writes_the_units_enables_the_socket_and_installs_a_copy_of_the_shim(world: World) -> None:
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
    source = shim_source()
    assert source is not None
    assert shim_files(world.shim) == shim_files(source) and "index.ts" in shim_files(source)
    for relative in shim_files(source):
        assert (world.shim / relative).read_bytes() == (source / relative).read_bytes()
    assert 'loginctl enable-linger "$USER"' in out


def test_install_twice_changes_nothing_the_second_time(world: World) -> None:
    world.install()
    before = {p: p.stat().st_mtime_ns for p in world.root.rglob("*") if p.is_file() and p != world.log}
    code, out = world.install()
    assert code == 0, out
    after = {p: p.stat().st_mtime_ns for p in world.root.rglob("*") if p.is_file() and p != world.log}
    assert after == before
    assert out.count("unchanged  ") == 3 + len(shim_files(world.shim))


def test_a_file_the_new_shim_no_longer_has_is_removed_from_the_copy(world: World) -> None:
    world.install()
    stale = world.shim / "lib" / "gone.ts"
    stale.write_text("export {};\n", encoding="utf-8")
    code, out = world.install()
    assert code == 0, out
    assert f"removed    {stale}" in out and not stale.exists()


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
    assert (
        "Done, but nothing will start the daemon for you here: no systemd user manager answers (systemctl "
        "--user: Failed to connect to bus: No medium found); the socket unit starts it at your next login "
        "where one runs.\n"
    ) in out
    assert f"  {_SERVE} serve\n" in out


def test_without_systemctl_and_pi_install_writes_the_files_and_says_how_to_start_the_daemon(
    tmp_path: Path,
) -> None:
    world = World(tmp_path, programs=())
    code, out = world.install()
    assert code == 0, out
    assert world.files() == expected_files(sandbox=True)
    assert (world.shim / "index.ts").is_file()
    assert world.calls() == []
    assert "skipped    systemctl --user daemon-reload: systemctl is not on PATH\n" in out
    assert f"Run these yourself when the tools are available:\n  pi install {world.shim}\n" in out
    assert "\n  systemctl --user" not in out  # no systemd here: no systemctl command to run, now or later
    assert "longhaul-daemon status                    # does the daemon answer? (the first call" not in out
    assert out.endswith(
        "Done, but nothing will start the daemon for you here: systemctl is not on PATH.\n"
        "Start it yourself, in a terminal or a tmux window (Ctrl-C stops it):\n"
        f"  {_SERVE} serve\n"
        "or in the background, for as long as the machine runs (the log goes to a file):\n"
        f"  mkdir -p ~/.local/state/longhaul && nohup {_SERVE} serve"
        " >>~/.local/state/longhaul/daemon.log 2>&1 &\n"
        "Then check that it answers: longhaul-daemon status\n"
    )


def _steps(out: str, *, dry: bool) -> list[str]:
    """The programs run or skipped, in the dry run's wording (labels are 11 characters wide)."""
    if dry:
        return [line for line in out.splitlines() if line.startswith(("would run  ", "would skip "))]
    wording = {"ran        ": "would run  ", "skipped    ": "would skip "}
    return [wording[line[:11]] + line[11:] for line in out.splitlines() if line[:11] in wording]


@pytest.mark.parametrize("case", ["manager", "no manager", "no programs", "no pi"])
def test_a_dry_run_says_what_the_real_run_then_does(tmp_path: Path, case: str) -> None:
    """Issue #13: the dry run said it would run systemctl and pi where neither was reachable."""
    programs = {"no programs": (), "no pi": ("systemctl",)}.get(case, ("systemctl", "pi"))
    world = World(tmp_path, programs=programs)
    env = {"FAKE_NO_MANAGER": "1"} if case == "no manager" else {}
    code, dry = world.install(dry_run=True, env=env)
    assert code == 0, dry
    assert not world.units.exists() and not world.shim.exists()
    assert [c for c in world.calls() if "show-environment" not in c] == []  # only the read-only probe ran
    code, real = world.install(env=env)
    assert code == 0, real
    assert _steps(dry, dry=True) == _steps(real, dry=False)
    assert _steps(real, dry=False), real
    if case != "manager":
        later = real.split("Run these yourself when the tools are available:\n")[1].split("Done")[0]
        assert later in dry


def test_install_without_a_copy_of_the_shim_says_so(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shim_module, "shim_source", lambda: None)
    code, out = world.install(sandbox=False)
    assert code == 0
    assert "skipped    pi: this install carries no copy of the shim" in out
    assert not any(call.startswith("pi ") for call in world.calls())


def test_an_earlier_longhaul_entry_in_pi_is_removed_so_the_hook_runs_once(world: World) -> None:
    agent = world.home / ".pi" / "agent"
    checkout = world.root / "checkout"
    (checkout / "client_shim").mkdir(parents=True)
    (checkout / "client_shim" / "package.json").write_text(
        '{"name": "longhaul-client-shim"}', encoding="utf-8"
    )
    other = world.root / "other"
    other.mkdir()
    (other / "package.json").write_text('{"name": "some-other-extension"}', encoding="utf-8")
    agent.mkdir(parents=True)
    entries = ["../../../checkout/client_shim", "../../../other", "npm:@someone/pkg"]
    (agent / "settings.json").write_text(f'{{"packages": {entries!r}}}'.replace("'", '"'), encoding="utf-8")
    code, out = world.install()
    assert code == 0, out
    assert [c for c in world.calls() if c.startswith("pi ")] == [
        "pi remove ../../../checkout/client_shim",
        f"pi install {world.shim}",
    ]
    assert "pi also loads a Longhaul shim from ../../../checkout/client_shim" in out


@pytest.mark.parametrize(
    ("agent_dir", "sandbox", "warned"),
    [
        ("/srv/pi-agent", None, True),
        ("/srv/pi-agent", False, False),
        ("~/.pi/agent", None, False),
        (None, None, False),
    ],
)
def test_a_sandbox_that_would_drop_the_record_log_is_warned_about(
    world: World, agent_dir: str | None, sandbox: bool | None, warned: bool
) -> None:
    env = {} if agent_dir is None else {"PI_CODING_AGENT_DIR": agent_dir.replace("~", str(world.home))}
    code, out = world.install(sandbox=sandbox, env=env)
    assert code == 0, out
    assert ("warning    PI_CODING_AGENT_DIR is /srv/pi-agent" in out) is warned
    assert ("ReadWritePaths=" in out and "--no-sandbox" in out) is warned


def test_a_service_run_out_of_the_checkout_is_warned_about(world: World) -> None:
    root = shim_module.checkout_root()
    assert root is not None, "the tests run from a checkout"
    out = io.StringIO()
    code = run_install(
        dry_run=True,
        sandbox=False,
        env=world.env,
        out=out,
        argv=[str(root / ".venv" / "bin" / "longhaul-daemon")],
    )
    assert code == 0
    assert f"inside the checkout {root}: 'make clean' there would stop the service" in out.getvalue()
    assert "inside the checkout" not in world.install(dry_run=True)[1]


def test_sandbox_and_no_sandbox_together_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["install", "--sandbox", "--no-sandbox", "--dry-run"])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


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
    assert not (world.root / "config" / "systemd").exists()
    assert not (world.home / ".local" / "share" / "longhaul").exists()
    assert world.calls() == [
        "systemctl --user show-environment",
        "systemctl --user disable --now longhaul-daemon.socket longhaul-daemon.service",
        "systemctl --user daemon-reload",
        f"pi remove {world.shim}",
    ]
    assert "pipx uninstall longhaul-daemon" in out
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
    assert world.files() == before and (world.shim / "index.ts").exists()
    assert world.calls() == ["systemctl --user show-environment"]
    for name in (SOCKET, SERVICE, f"{DROPIN_DIR}/{DROPIN_NAME}"):
        assert f"would remove {world.units / name}\n" in out
    assert f"would remove {world.shim / 'index.ts'}\n" in out
    disable = "--user disable --now longhaul-daemon.socket longhaul-daemon.service"
    assert f"would run  {world.bin / 'systemctl'} {disable}\n" in out
    assert f"would run  {world.bin / 'pi'} remove {world.shim}\n" in out


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
