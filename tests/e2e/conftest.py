"""Fixtures for the e2e suite: model server, sandbox (agent dir, git project, socket), daemon, pi drivers."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .e2e_sandbox import build_sandbox, missing_prerequisites
from .fake_git import FakeGit
from .tui import PiScreen, tmux_missing


@pytest.fixture(scope="session")
def prerequisites() -> None:
    """Fail (never skip) when pi, the shim, node or git are missing: CI installs every one of them."""
    problems = missing_prerequisites()
    if problems:
        pytest.fail("e2e prerequisites missing:\n- " + "\n- ".join(problems), pytrace=False)


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    with ModelServer() as server:
        yield server


@pytest.fixture
def sandbox(prerequisites: None, model_server: ModelServer) -> Iterator[Sandbox]:
    box = build_sandbox(model_server.base_url)
    try:
        yield box
    finally:
        box.cleanup()


@pytest.fixture
def daemon_process(sandbox: Sandbox) -> Iterator[Daemon]:
    """A daemon object, not started (tests that need a special PATH or a restart start it themselves)."""
    daemon = Daemon(sandbox.socket_path, sandbox.root)
    try:
        yield daemon
    finally:
        daemon.sweep()


@pytest.fixture
def daemon(sandbox: Sandbox, daemon_process: Daemon) -> Daemon:
    """A running daemon on the sandbox socket (stopped with SIGTERM at teardown)."""
    daemon_process.start(sandbox.daemon_env())
    return daemon_process


@pytest.fixture
def start_pi(sandbox: Sandbox) -> Iterator[Callable[[], PiRpc]]:
    """A factory for ``pi --mode rpc`` processes; every one started is shut down at teardown."""
    started: list[PiRpc] = []

    def start() -> PiRpc:
        pi = PiRpc(sandbox)
        started.append(pi)
        return pi

    try:
        yield start
    finally:
        for pi in started:
            pi.close()


@pytest.fixture
def start_screen(sandbox: Sandbox) -> Iterator[Callable[[], PiScreen]]:
    """A factory for interactive pi in tmux (``sandbox.pi_bin`` with ``-e sandbox.shim_dir``), called once the
    test has written its files; every screen is closed at teardown. No tmux is a failure: CI installs it."""
    missing = tmux_missing()
    if missing:
        pytest.fail(missing, pytrace=False)
    opened: list[PiScreen] = []

    def start() -> PiScreen:
        opened.append(PiScreen(sandbox))
        return opened[-1]

    try:
        yield start
    finally:
        for screen in opened:
            screen.close()


@pytest.fixture
def fake_git(sandbox: Sandbox) -> Iterator[FakeGit]:
    """A fake ``git`` (unarmed) in its own directory, to put first on the daemon's PATH."""
    bin_dir = sandbox.root / "fakebin"
    bin_dir.mkdir()
    fake = FakeGit(bin_dir)
    try:
        yield fake
    finally:
        fake.disarm()
        fake.kill_sleepers()


@pytest.fixture
def pi(daemon: Daemon, start_pi: Callable[[], PiRpc]) -> Iterator[PiRpc]:
    """A started pi with the shim loaded, talking to the session's daemon."""
    yield start_pi()
