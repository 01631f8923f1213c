"""Where the compact method reads pi's session file: on the loop when it is small, in a worker thread else.

A small file is read on the loop since its reading costs less than the thread hop (issue 10); the branch read
there must be the one a worker thread reads, and anything doubtful still goes to the thread, which refuses it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from longhaul_daemon.evaluation.synthetic import SyntheticSession, write_session
from longhaul_daemon.offload import INLINE_BYTES
from longhaul_daemon.protocol import SessionFacts
from longhaul_daemon.rpc.services import Services
from longhaul_daemon.sessionfile.files import BranchRead, SessionFileRefused, SessionFiles

pytestmark = pytest.mark.anyio


def _facts(session: SyntheticSession, path: str | None = None) -> SessionFacts:
    return SessionFacts.model_validate(
        {
            "cwd": "/w",
            "sessionId": session.session_id,
            "agentDir": "/a",
            "piVersion": "0.1",
            "sessionFile": path if path is not None else str(session.path),
        }
    )


def _threads_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    hops: list[int] = []
    real = anyio.to_thread.run_sync

    async def counted(work: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(1)
        return await real(work, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)  # the module services reads it from
    return hops


async def _read(session: SyntheticSession, path: str | None = None) -> BranchRead:
    services = Services(socket_path="/s")
    return await services.read_branch(_facts(session, path), session.leaf_id, session.span_ids)


def _cold(session: SyntheticSession) -> BranchRead:
    return SessionFiles().read_branch(
        str(session.path), session_id=session.session_id, leaf_id=session.leaf_id, span_ids=session.span_ids
    )


async def test_a_small_file_is_read_on_the_loop_as_a_thread_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = write_session(tmp_path / "s.jsonl", total_bytes=40 * 1024)
    assert session.path.stat().st_size < INLINE_BYTES
    hops = _threads_counted(monkeypatch)
    read = await _read(session)
    assert hops == []
    assert read == _cold(session)


async def test_a_big_file_is_read_in_a_worker_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = write_session(tmp_path / "s.jsonl", total_bytes=INLINE_BYTES + 64 * 1024)
    assert session.path.stat().st_size >= INLINE_BYTES
    hops = _threads_counted(monkeypatch)
    read = await _read(session)
    assert hops == [1]
    assert read == _cold(session)


async def test_a_doubtful_path_goes_to_the_thread_and_is_refused_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = write_session(tmp_path / "s.jsonl", total_bytes=40 * 1024)
    link = tmp_path / "link.jsonl"
    os.symlink(session.path, link)
    hops = _threads_counted(monkeypatch)
    for path, reason in ((str(link), "symlink"), (str(tmp_path / "gone.jsonl"), "missing")):
        with pytest.raises(SessionFileRefused) as refused:
            await _read(session, path)
        assert refused.value.reason == reason
    assert hops == [1, 1]
