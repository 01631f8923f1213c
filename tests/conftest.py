"""Shared pytest fixtures: the anyio backend (asyncio only: jsonrpcserver needs it) and short socket dirs."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


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
