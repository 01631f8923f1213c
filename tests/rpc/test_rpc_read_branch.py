"""Where the compact method reads pi's session file: in a worker thread, however small the file.

A read takes the file's index lock, which the warmer's thread holds while it indexes a file after ``hello``;
on the loop, waiting for it would stall every other request. The branch read in the thread must be the one a
cold read gives, and a doubtful path is refused there.
"""

from __future__ import annotations

import os
import threading
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


async def test_every_file_is_read_in_a_worker_thread_as_a_cold_read_reads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for size in (40 * 1024, INLINE_BYTES + 64 * 1024):
        session = write_session(tmp_path / f"s{size}.jsonl", total_bytes=size)
        hops = _threads_counted(monkeypatch)
        read = await _read(session)
        assert hops == [1]
        assert read == _cold(session)


async def test_a_read_waiting_for_the_warmers_lock_leaves_the_loop_free(tmp_path: Path) -> None:
    """The warmer's thread holds a file's index lock while it indexes; a pass's read of the same file waits
    for it in its own thread, so everything else on the loop (status, other sessions) goes on."""
    session = write_session(tmp_path / "s.jsonl", total_bytes=40 * 1024)
    services = Services(socket_path="/s")
    assert services.session_files.warm(str(session.path), session_id=session.session_id)
    index = services.session_files._index_for(str(session.path))
    events: list[str] = []

    async def read() -> None:
        got = await services.read_branch(_facts(session), session.leaf_id, session.span_ids)
        events.append("read")
        assert got.entries == _cold(session).entries

    index.lock.acquire()  # as the warmer's thread does while it indexes; released from a thread of its own
    release = threading.Timer(0.3, index.lock.release)
    release.start()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(read)
            while "read" not in events:  # a read on the loop would hold it until the lock came free
                await anyio.sleep(0.01)
                events.append("tick")
    finally:
        release.join()
    assert events.index("read") > 0 and events[0] == "tick"


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
