"""Shared pytest fixtures: the real-HOME guard, the anyio backend (asyncio only: jsonrpcserver needs it),
short socket dirs and the daemon's operational log captured in memory."""

from __future__ import annotations

import io
import logging
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from longhaul_daemon.server.lifecycle import configure_operational_log

# The real-HOME guard (tests/home_guard.py): imported with this file, before pytest sets up its temp dirs and
# before any test module is collected, it points HOME, pi's agent dir, the XDG dirs and TMPDIR at scratch dirs
# for the whole run and every program it starts, and fails the run if a test reaches the real ones.
pytest_plugins = ("home_guard",)


# The longest tests first: with two workers, a test of minutes that starts last keeps one worker busy alone at
# the end of the run. Started first, it runs while the other worker takes the many short ones.
_FIRST = ("tests/e2e/test_e2e_real_model.py", "tests/reliability/", "tests/e2e/")


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.replace("\\", "/")
    path = path if path.startswith("tests/") else "tests/" + path
    return next((at for at, prefix in enumerate(_FIRST) if path.startswith(prefix)), len(_FIRST))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the real-model tests, then the reliability and the other e2e tests, then the rest (stable)."""
    items.sort(key=_rank)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh directory with a short path: AF_UNIX paths must fit in 107 bytes, pytest's tmp_path may not."""
    path = Path(tempfile.mkdtemp(prefix="lh-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def operational_log_level() -> int:
    """The level :func:`operational_log` captures at; a test module overrides it to see more."""
    return logging.INFO


@pytest.fixture
def operational_log(operational_log_level: int) -> Iterator[io.StringIO]:
    """The daemon's operational log, written to a string for the test to read."""
    out = io.StringIO()
    configure_operational_log(out, level=operational_log_level)
    # No logger may stay bound to this stream after the test (other tests capture structlog output).
    structlog.configure(cache_logger_on_first_use=False)
    try:
        yield out
    finally:
        structlog.reset_defaults()
        logging.getLogger().handlers = []
