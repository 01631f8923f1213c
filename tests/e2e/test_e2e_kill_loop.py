"""SIGKILL the daemon mid-pass again and again through a real pi (issue 12): fallback, restart, state carried.

The normal run does :data:`ITERATIONS` rounds; ``make soak`` sets ``LONGHAUL_SOAK_ITERATIONS=100`` and prints
the figures docs/reliability.md quotes (``-s``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .fake_git import FakeGit
from .kill_loop import kill_loop

pytestmark = pytest.mark.e2e

ITERATIONS = 3
SOAK_ENV = "LONGHAUL_SOAK_ITERATIONS"


def test_the_daemon_killed_mid_pass_again_and_again_loses_nothing(
    sandbox: Sandbox,
    model_server: ModelServer,
    daemon_process: Daemon,
    fake_git: FakeGit,
    start_pi: Callable[[], PiRpc],
) -> None:
    iterations = int(os.environ.get(SOAK_ENV) or ITERATIONS)
    pi = start_pi()
    report = kill_loop(
        iterations,
        sandbox=sandbox,
        model_server=model_server,
        daemon=daemon_process,
        fake_git=fake_git,
        pi=pi,
    )
    print("\n" + report.summary())
    assert report.killed_mid_pass == report.fallbacks == report.longhaul_after_restart == iterations
    assert len(report.restart_s) == iterations
    assert report.commands_carried == 1 + 2 * iterations  # "echo start", then two per iteration
    assert pi.close() == 0, pi.diagnostics()
