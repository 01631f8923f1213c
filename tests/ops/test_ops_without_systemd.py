"""The README's path on a machine without a systemd user manager, through the real commands.

A user in a container (no ``systemctl`` at all) or in a shell that cannot reach a user manager (``systemctl``
is there but fails) runs ``install``, then ``status``: where the first ``status`` used to end at exit 3 with
"no daemon is running" and nothing else, it now says why nothing starts the daemon and what to run instead;
the user runs that, ``status`` answers, and ``uninstall`` stops the daemon they started by hand. Each command
runs as its own process in a scratch HOME, with a PATH holding only the fakes a case asks for.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_FAILING_SYSTEMCTL = """#!/bin/sh
echo "Failed to connect to bus: No medium found" >&2
exit 1
"""
_ANSWERING_SYSTEMCTL = """#!/bin/sh
exit 0
"""
STEP_S = 60.0


class Machine:
    """A scratch HOME and runtime dir, and a PATH of fakes: the only programs this "machine" has."""

    def __init__(self, root: Path, systemctl: str | None) -> None:
        self.root = root
        self.bin = root / "bin"
        self.bin.mkdir()
        if systemctl is not None:
            fake = self.bin / "systemctl"
            fake.write_text(systemctl, encoding="utf-8")
            fake.chmod(0o755)
        self.home = root / "home"
        self.home.mkdir()
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        self.socket = runtime / "longhaul" / "daemon.sock"
        self.env = {
            "HOME": str(self.home),
            "XDG_RUNTIME_DIR": str(runtime),
            "PATH": str(self.bin),
            "LANG": "C.UTF-8",
        }
        self.started: list[subprocess.Popen[bytes]] = []

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "longhaul_daemon", *args],
            env=self.env,
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=STEP_S,
            check=False,
        )

    def start(self, command_line: str) -> subprocess.Popen[bytes]:
        """Run a command line the way the user would paste it, and wait until ``status`` answers."""
        process = subprocess.Popen(
            shlex.split(command_line),
            env=self.env,
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.started.append(process)
        deadline = time.monotonic() + STEP_S
        while self.run("status").returncode != 0:
            assert process.poll() is None, f"{command_line} exited {process.returncode}"
            assert time.monotonic() < deadline, "the daemon started by hand never answered"
            time.sleep(0.1)
        return process

    def stop_all(self) -> None:
        for process in self.started:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                process.wait(timeout=STEP_S)


@pytest.fixture(params=["no systemctl", "systemctl fails"])
def machine(request: pytest.FixtureRequest, short_tmp: Path) -> Iterator[Machine]:
    fake = None if request.param == "no systemctl" else _FAILING_SYSTEMCTL
    box = Machine(short_tmp, fake)
    try:
        yield box
    finally:
        box.stop_all()


def _why(machine: Machine) -> str:
    if (machine.bin / "systemctl").exists():
        return "no systemd user manager answers (systemctl --user: Failed to connect to bus: No medium found)"
    return "systemctl is not on PATH"


def _start_line(text: str) -> str:
    lines = text.splitlines()
    return lines[
        lines.index("Start it yourself, in a terminal or a tmux window (Ctrl-C stops it):") + 1
    ].strip()


def test_status_with_no_daemon_says_why_nothing_starts_it_and_what_to_run(machine: Machine) -> None:
    done = machine.run("status")
    assert done.returncode == 3
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert lines[0] == f"longhaul-daemon: no daemon is running on {machine.socket}"
    assert lines[1] == f"Nothing will start the daemon for you here: {_why(machine)}."
    serve = _start_line(done.stderr)
    assert serve.endswith("longhaul-daemon serve") and "--socket" not in serve
    assert lines[-1].strip().startswith("mkdir -p ~/.local/state/longhaul && nohup ")
    assert lines[-1].strip().endswith(f"{serve} >>~/.local/state/longhaul/daemon.log 2>&1 &")

    as_json = machine.run("status", "--json")
    assert as_json.returncode == 3
    document = json.loads(as_json.stdout)
    assert document == {
        "running": False,
        "socket": str(machine.socket),
        "problem": "not-running",
        "message": f"no daemon is running on {machine.socket}",
        "hint": lines[1:],
    }


def test_a_named_socket_is_passed_on_to_the_serve_the_hint_suggests(machine: Machine) -> None:
    other = machine.root / "mine" / "d.sock"
    done = machine.run("status", "--socket", str(other))
    assert done.returncode == 3
    assert _start_line(done.stderr).endswith(f"longhaul-daemon serve --socket {other}")


def test_the_readme_path_install_start_by_hand_status_uninstall(machine: Machine) -> None:
    installed = machine.run("install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert f"Done, but nothing will start the daemon for you here: {_why(machine)}" in installed.stdout
    assert "the first call starts it" not in installed.stdout  # the systemd wording would be untrue here
    if not (machine.bin / "systemctl").exists():
        assert "\n  systemctl --user" not in installed.stdout

    daemon = machine.start(_start_line(installed.stdout))  # exactly what install said to run
    status = machine.run("status")
    assert status.returncode == 0 and f"socket     {machine.socket}\n" in status.stdout
    assert f"pid        {daemon.pid}\n" in status.stdout

    dry = machine.run("uninstall", "--dry-run")
    assert dry.returncode == 0, dry.stdout
    named = f"the daemon started by hand (pid {daemon.pid}) that serves {machine.socket}"
    assert f"would stop {named}\n" in dry.stdout
    assert daemon.poll() is None and machine.run("status").returncode == 0  # a dry run stops nothing

    removed = machine.run("uninstall")
    assert removed.returncode == 0, removed.stdout
    assert f"stopped    {named}\n" in removed.stdout
    assert daemon.wait(timeout=STEP_S) == 0  # a clean SIGTERM exit
    assert machine.run("status").returncode == 3
    again = machine.run("uninstall")
    assert again.returncode == 0 and "started by hand" not in again.stdout


def test_with_a_user_manager_the_hint_points_at_install_then_at_the_socket_unit(short_tmp: Path) -> None:
    machine = Machine(short_tmp, _ANSWERING_SYSTEMCTL)
    first = machine.run("status")
    assert first.returncode == 3
    assert "Run 'longhaul-daemon install' to have systemd start it on demand." in first.stderr
    units = Path(machine.env["HOME"]) / ".config" / "systemd" / "user"
    units.mkdir(parents=True)
    (units / "longhaul-daemon.socket").write_text("[Socket]\n", encoding="utf-8")
    second = machine.run("status")
    assert second.returncode == 3
    assert (
        "The longhaul-daemon.socket unit is installed but nothing listens: "
        "run 'systemctl --user start longhaul-daemon.socket'" in second.stderr
    )
