"""The README's "Install for everyday use", followed as a new user would, in a scratch HOME with the real pi.

From a fresh copy of the repository: ``pipx install`` the tool, ``longhaul-daemon install`` (the systemd
user units, and the shim into pi), start the daemon the way the socket unit would (this container has no
systemd user manager, so ``systemd-socket-activate`` runs the unit's ``ExecStart`` on the unit's socket),
start ``pi`` without ``-e`` so only what the install set up is loaded, compact through Longhaul, upgrade,
replay a session with the installed tool (which finds the shim in its own wheel), then ``uninstall`` and
``pipx uninstall`` and check that nothing of Longhaul is left. pip installs offline from the wheels
``make install`` put in ``<venv>/wheelhouse``, so the test needs no network.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .e2e_sandbox import REPO_ROOT, build_sandbox
from .scenario import agent_bash, expect_longhaul, wrap_up

pytestmark = pytest.mark.e2e

WHEELHOUSE = Path(sys.prefix) / "wheelhouse"
STEP_TIMEOUT_S = 300.0
_LEFT_BY_PI = (
    "sessions",
    "logs",
    "auth.json",
    "settings.json",
)  # pi's own files; the record log stays by design


def _missing() -> list[str]:
    problems = []
    if not WHEELHOUSE.is_dir():
        problems.append(f"no wheels for an offline install in {WHEELHOUSE}: run `make install`")
    if importlib.util.find_spec("pipx") is None:
        problems.append("pipx is not installed in this venv: run `make install` (it is a dev dependency)")
    tools = ("systemd-socket-activate", "systemd-analyze", "systemctl")
    problems += [f"{t} is not on PATH (apt-get install systemd)" for t in tools if shutil.which(t) is None]
    return problems


def _fresh_copy(destination: Path) -> Path:
    """The repository as a fresh clone of this working tree would have it: tracked and new files, no
    node_modules, no venv (``git ls-files`` honours .gitignore)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO_ROOT / name
        if "node_modules" in Path(name).parts or not source.is_file() or source.is_symlink():
            continue
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return destination


class User:
    """A person at a shell in the scratch HOME: pi's agent dir and the XDG dirs are the defaults there."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self.home = sandbox.home
        self.agent = sandbox.home / ".pi" / "agent"
        self.agent.mkdir(parents=True)
        for name in ("models.json", "settings.json"):  # the scripted model, as a user's own pi setup
            shutil.copy2(sandbox.agent_dir / name, self.agent / name)
        self.runtime = sandbox.root / "run"
        self.socket = self.runtime / "longhaul" / "daemon.sock"
        env = {k: v for k, v in sandbox.pi_env().items() if not k.startswith(("XDG_", "PIP_", "PIPX_"))}
        for name in ("PI_CODING_AGENT_DIR", "LONGHAUL_SOCKET", "PYTHONPATH", "VIRTUAL_ENV"):
            env.pop(name, None)
        # Everything ~/.local/bin and pi's bin dir need; not this venv, so `longhaul-daemon` is the pipx one.
        path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != Path(sys.prefix) / "bin"]
        env.update(
            PATH=os.pathsep.join([str(self.home / ".local" / "bin"), str(sandbox.pi_bin.parent), *path]),
            XDG_RUNTIME_DIR=str(self.runtime),
            PIP_NO_INDEX="1",
            PIP_FIND_LINKS=str(WHEELHOUSE),
        )
        self.env = env

    def run(self, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            list(argv),
            env=self.env,
            cwd=cwd or self.home,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )
        assert done.returncode == 0, (
            f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
        return done

    def pipx(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(sys.executable, "-m", "pipx", *args)

    def files(self) -> set[str]:
        """Every path under HOME, relative, but pi's own files in its agent dir and pipx's own bookkeeping."""
        found = set()
        for path in self.home.rglob("*"):
            parts = path.relative_to(self.home).parts
            if parts[:2] == (".pi", "agent") and len(parts) > 2 and parts[2] in _LEFT_BY_PI:
                continue
            if parts[:3] == (".local", "share", "pipx"):  # pipx keeps a lock file per app it ever had
                continue
            found.add("/".join(parts))
        return found


@pytest.fixture
def user(prerequisites: None, model_server: ModelServer) -> Iterator[User]:
    problems = _missing()
    if problems:
        pytest.fail("install e2e prerequisites missing:\n- " + "\n- ".join(problems), pytrace=False)
    box = build_sandbox(model_server.base_url)
    box.root.joinpath("run").chmod(0o700)
    try:
        yield User(box)
    finally:
        box.cleanup()


def _exec_start(service: Path) -> list[str]:
    line = next(x for x in service.read_text(encoding="utf-8").splitlines() if x.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


def _activate(user: User, exec_start: list[str]) -> subprocess.Popen[bytes]:
    """The socket unit's part: listen on %t/longhaul/daemon.sock (in a 0700 dir) and exec the service's
    command line on the first connection, as systemd does."""
    user.socket.parent.mkdir(mode=0o700)
    activator = subprocess.Popen(
        ["systemd-socket-activate", "-l", str(user.socket), *exec_start],
        env=user.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    # The socket file appears at bind(), before listen(), so wait until a connection is taken. This probe
    # is the first connection, so it is the one that execs the daemon.
    deadline = time.monotonic() + 30
    while True:
        assert activator.poll() is None and time.monotonic() < deadline, "the activator never listened"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(os.fspath(user.socket))
            except (FileNotFoundError, ConnectionRefusedError):
                time.sleep(0.05)
                continue
        return activator


def test_install_for_everyday_use_from_a_fresh_clone(user: User, model_server: ModelServer) -> None:
    clone = _fresh_copy(user.home.parent / "src" / "longhaul")
    assert not (clone / ".venv").exists() and not (clone / "client_shim" / "node_modules").exists()
    before = user.files()

    user.pipx("install", str(clone))
    daemon = user.home / ".local" / "bin" / "longhaul-daemon"
    assert daemon.is_symlink(), "pipx puts the entry point in ~/.local/bin"

    units = user.home / ".config" / "systemd" / "user"
    shim = user.home / ".local" / "share" / "longhaul" / "pi-extension"
    dry = user.run("longhaul-daemon", "install", "--dry-run").stdout
    assert "would skip systemctl --user daemon-reload: no systemd user manager answers" in dry
    assert f"/pi install {shim}\n" in dry
    assert not units.exists() and not shim.exists()
    installed = user.run("longhaul-daemon", "install").stdout
    assert _exec_start(units / "longhaul-daemon.service") == [str(daemon), "serve"], installed
    assert f"pi install {shim}" in installed
    assert (shim / "index.ts").is_file() and (shim / "package.json").is_file()
    assert (units / "sockets.target.wants" / "longhaul-daemon.socket").is_symlink()
    verify = subprocess.run(
        ["systemd-analyze", "--user", "verify", str(units / "longhaul-daemon.socket"),
         str(units / "longhaul-daemon.service")],
        env={**user.env, "SYSTEMD_LOG_COLOR": "0"}, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr

    activator = _activate(user, _exec_start(units / "longhaul-daemon.service"))
    pi: PiRpc | None = None
    try:
        status = user.run("longhaul-daemon", "status").stdout  # the default socket: no --socket anywhere
        assert f"{user.socket} (socket-activated)" in status
        pi = PiRpc(user.sandbox, env=user.env, extensions=())  # the shim comes from pi's settings only
        agent_bash(pi, model_server, "echo installed")
        wrap_up(pi, "install")
        response = pi.compact()
        assert response.get("success") is True, f"{response}\n{pi.diagnostics()}"
        found = expect_longhaul(pi.session_file(), 1, span=1)
        assert found.details["compactor"] == "longhaul"
        assert pi.extension_errors() == [], pi.diagnostics()
    finally:
        if pi is not None:
            pi.close()
        activator.terminate()
        activator.wait(timeout=30)

    # Upgrade: a newer checkout, reinstalled the way the README says; only what changed is rewritten.
    with (clone / "client_shim" / "index.ts").open("a", encoding="utf-8") as index:
        index.write("// a newer version\n")
    user.pipx("install", "--force", str(clone))
    upgraded = user.run("longhaul-daemon", "install").stdout
    assert f"unchanged  {units / 'longhaul-daemon.service'}" in upgraded
    assert f"wrote      {shim / 'index.ts'}" in upgraded
    assert (shim / "index.ts").read_text(encoding="utf-8").endswith("// a newer version\n")
    assert _pi_packages(user) == ["../../.local/share/longhaul/pi-extension"]

    # replay (and score) run pi with the shim the wheel carries (pi_shim/): no checkout, no --shim.
    corpus = user.home / "corpus"
    user.run("longhaul-daemon", "corpus", str(corpus), "--sessions", "1", "--max-compactions", "1")
    (recorded,) = sorted(corpus.glob("*.jsonl"))
    replayed = json.loads(user.run("longhaul-daemon", "replay", str(recorded), "--json").stdout)
    (outcome,) = replayed["transcripts"]
    assert outcome["problem"] is None and outcome["handlerErrors"] == 0, outcome
    assert outcome["compactions"] == outcome["recordedCompactions"] == outcome["longhaul"] == 1, outcome

    user.run("longhaul-daemon", "uninstall")
    assert _pi_packages(user) == []
    user.pipx("uninstall", "longhaul-daemon")
    left = user.files() - before
    assert not [p for p in left if "longhaul" in p], sorted(left)
    assert not (user.home / ".config" / "systemd").exists(), sorted(left)


def _pi_packages(user: User) -> list[object]:
    settings = json.loads((user.agent / "settings.json").read_text(encoding="utf-8"))
    packages = settings.get("packages", [])
    assert isinstance(packages, list)
    return packages


def test_pi_install_of_the_repository_root_loads_the_shim_without_node_modules(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer
) -> None:
    """``pi install <repo root>`` was accepted and then pi failed to start ("Cannot find module"): the root
    ``package.json`` now names the extension, and pi loads it from a copy that has no node_modules."""
    clone = _fresh_copy(sandbox.root / "src" / "longhaul")
    done = subprocess.run(
        [str(sandbox.pi_bin), "install", str(clone)],
        env=sandbox.pi_env(),
        cwd=sandbox.project,
        capture_output=True,
        text=True,
        timeout=STEP_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with PiRpc(sandbox, extensions=()) as pi:
        agent_bash(pi, model_server, "echo from-the-root-package")
        wrap_up(pi, "root")
        response = pi.compact()
        assert response.get("success") is True, f"{response}\n{pi.diagnostics()}"
        assert expect_longhaul(pi.session_file(), 1, span=1).details["compactor"] == "longhaul"
        assert pi.extension_errors() == [], pi.diagnostics()


def test_pi_refuses_to_start_with_the_shim_both_installed_and_given_with_e(sandbox: Sandbox) -> None:
    """What the README says about ``-e`` where Longhaul is installed: pi loads both copies, their tools
    conflict, and pi stops at start (exit 1); ``--no-extensions -e`` loads only the named one."""
    copy = sandbox.root / "installed-shim"
    (copy / "lib").mkdir(parents=True)
    for name in ("package.json", "index.ts"):
        shutil.copy2(REPO_ROOT / "client_shim" / name, copy / name)
    for source in (REPO_ROOT / "client_shim" / "lib").glob("*.ts"):
        shutil.copy2(source, copy / "lib" / source.name)

    def pi(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(sandbox.pi_bin), *args],
            env=sandbox.pi_env(),
            cwd=sandbox.project,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=STEP_TIMEOUT_S,
            check=False,
        )

    assert pi("install", str(copy)).returncode == 0
    both = pi("-e", str(REPO_ROOT / "client_shim"), "-p", "hello")
    assert both.returncode == 1, both.stdout + both.stderr
    assert 'Tool "longhaul_remember" conflicts with' in both.stderr
    only_e = pi("--no-extensions", "-e", str(REPO_ROOT / "client_shim"), "--mode", "rpc",
                stdin='{"id": "1", "type": "get_commands"}\n')  # fmt: skip
    reply = json.loads(only_e.stdout.splitlines()[0])
    names = [c["name"] for c in reply["data"]["commands"]]
    assert names.count("longhaul-report") == 1, only_e.stdout + only_e.stderr
