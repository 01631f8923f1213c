"""The daemon reading pi's session file: refusals, the per-session index, and passes equal to inline ones.

A pass that reads the branch from the session file must produce exactly what the same pass produces from the
entries sent inline, with a warm index (after appends) and a cold one alike. Paths the daemon must not read
are refused with a reason code the shim turns into an inline resend.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.passes.fold import fold
from longhaul_daemon.passes.run import run_pass
from longhaul_daemon.protocol import CompactParams, CompactResult
from longhaul_daemon.sessionfile import files as files_module
from longhaul_daemon.sessionfile.files import SessionFileRefused, SessionFiles
from longhaul_daemon.transcript.messages import user_ids

from .pi_branch import Session


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _lines(entries: list[dict[str, Any]], session_id: str = "s1", version: int = 3) -> str:
    header = {
        "type": "session",
        "version": version,
        "id": session_id,
        "timestamp": "2026-12-02T14:00:00.000Z",
    }
    return "".join(json.dumps(e) + "\n" for e in [header, *entries])


def _work(s: Session, turns: int, tag: str) -> None:
    for n in range(turns):
        s.user(f"{tag} {n}: never push to main; keep tests under tests/.")
        s.bash(f"pytest -q -k {tag}{n}", "x" * 300 + f"\n{n} passed")
        s.bash(f"make build-{tag}{n}", "error: missing header", code=2)


async def _both(s: Session, keep: int, path: Path, warm: SessionFiles, pass_id: str) -> CompactResult:
    """The pass three ways (inline, warm index, cold index); all three must agree; returns the file one."""
    inline = await run_pass(s.params(keep), pass_id=pass_id)
    params = s.file_params(keep, path)
    results = []
    for files in (warm, SessionFiles()):
        read = files.read_branch(
            str(path), session_id="s1", leaf_id=str(params.leafId), span_ids=_refs(params)
        )
        assert read.user_ids == user_ids(read.entries)  # the index's count is the pass's own (issue 10)
        results.append(
            await run_pass(
                params, pass_id=pass_id, branch=read.entries, branch_stats=read.stats(), users=read.user_ids
            )
        )
    for result in results:
        assert result.compaction is not None and inline.compaction is not None
        assert result.compaction.summary == inline.compaction.summary
        assert _timeless(result.compaction.details) == _timeless(inline.compaction.details)
        assert result.after is not None and inline.after is not None
        assert _timeless(result.after.spanRecord) == _timeless(inline.after.spanRecord)
    return results[0]


def _timeless(value: Any) -> Any:
    """The value without the World's ``durationMs``: git's timing is all two passes may differ in."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k != "durationMs"}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def _all(s: Session) -> list[str]:
    """Every message as the span: the whole branch is read whole."""
    return [e["id"] for e in s.entries if e["type"] == "message"]


def _refs(params: CompactParams) -> list[str]:
    return [str(m["entryRef"]) for m in params.preparation.messagesToSummarize]


@pytest.mark.anyio
async def test_pass4_a_pass_over_the_session_file_equals_the_inline_pass_warm_or_cold(tmp_path: Path) -> None:
    """Appends, a fallback gap and a foreign compaction: file-read passes give the inline pass's state."""
    s = Session(tmp_path)
    path = tmp_path / "s.jsonl"
    warm = SessionFiles()
    _work(s, 3, "a")
    s.user("wrap up a")
    keep = len(s.entries) - 1
    s.write(path)
    first = await _both(s, keep, path, warm, "p1")
    s.store(first, keep)
    _work(s, 2, "b")
    s.remember("the flaky test is test_mod3")
    s.user("wrap up b")
    keep = len(s.entries) - 1
    s.write(path)  # rewritten whole by the test, so the index must notice the append-only prefix still holds
    second = await _both(s, keep, path, warm, "p2")
    assert second.diagnostics is not None and second.diagnostics.branch["cold"] is False
    s.store(second, keep)
    _work(s, 2, "c")  # this stretch falls back to pi: a foreign compaction, then Longhaul takes over
    s.user("wrap up c")
    s.foreign_compaction(len(s.entries) - 1)
    _work(s, 1, "d")
    s.user("wrap up d")
    keep = len(s.entries) - 1
    s.write(path)
    third = await _both(s, keep, path, warm, "p3")
    state = third.compaction.details["state"] if third.compaction else {}
    assert [c["text"] for c in state["commands"] if c["text"].startswith("make build-c")]  # recovered


def test_an_append_is_read_alone_and_a_half_written_line_waits(tmp_path: Path) -> None:
    s = Session(tmp_path)
    _work(s, 2, "a")
    path = s.write(tmp_path / "s.jsonl")
    files = SessionFiles()
    first = files.read_branch(str(path), session_id="s1", leaf_id=s.entries[-1]["id"])
    assert first.cold and first.read_bytes == path.stat().st_size
    size = path.stat().st_size
    s.user("later")
    line = json.dumps(s.entries[-1]) + "\n"
    with path.open("a") as out:
        out.write(line[:-10])  # pi is mid-write: no newline yet
    with pytest.raises(SessionFileRefused) as refused:
        files.read_branch(str(path), session_id="s1", leaf_id=s.entries[-1]["id"])
    assert refused.value.reason == "leaf-missing"
    with path.open("a") as out:
        out.write(line[-10:])
    later = files.read_branch(str(path), session_id="s1", leaf_id=s.entries[-1]["id"])
    assert not later.cold and later.read_bytes == path.stat().st_size - size
    assert later.entries[-1] == s.entries[-1]


@pytest.mark.parametrize("how", ["rewritten-in-place", "replaced", "truncated"])
def test_a_file_changed_other_than_by_appending_is_read_again_from_the_start(
    tmp_path: Path, how: str
) -> None:
    s = Session(tmp_path)
    _work(s, 2, "a")
    path = s.write(tmp_path / "s.jsonl")
    files = SessionFiles()
    files.read_branch(str(path), session_id="s1", leaf_id=s.entries[-1]["id"])
    other = Session(tmp_path)
    _work(other, 3 if how != "truncated" else 1, "z")
    if how == "replaced":
        other.write(tmp_path / "new.jsonl").rename(path)
    else:
        with path.open("r+") as out:  # same inode, as pi's own rewrite (writeFileSync) leaves it
            out.truncate(0)
            out.write(_lines(other.entries))
    read = files.read_branch(
        str(path), session_id="s1", leaf_id=other.entries[-1]["id"], span_ids=_all(other)
    )
    assert read.cold
    assert read.entries == other.entries


def test_a_branch_switch_reads_the_new_branch_and_the_old_leaf_still_reads_the_old(tmp_path: Path) -> None:
    """/tree moves the leaf; later entries hang off an earlier one: siblings share the file."""
    s = Session(tmp_path)
    s.user("u1")
    s.bash("ls", "a b")
    old_leaf = s.entries[-1]["id"]
    fork_point = s.entries[0]["id"]
    path = s.write(tmp_path / "s.jsonl")
    files = SessionFiles()
    files.read_branch(str(path), session_id="s1", leaf_id=old_leaf)
    sibling = {"type": "message", "id": "bbbb0001", "parentId": fork_point, "timestamp": "t"}
    sibling["message"] = {"role": "user", "content": "another way", "timestamp": 9}
    with path.open("a") as out:
        out.write(json.dumps({"type": "branch_summary", "id": "bbbb0000", "parentId": fork_point}) + "\n")
        out.write(json.dumps({**sibling, "parentId": "bbbb0000"}) + "\n")
    new = files.read_branch(str(path), session_id="s1", leaf_id="bbbb0001")
    assert [e["id"] for e in new.entries] == [fork_point, "bbbb0000", "bbbb0001"]
    again = files.read_branch(str(path), session_id="s1", leaf_id=old_leaf, span_ids=_all(s))
    assert again.entries == s.entries


def test_a_fork_is_another_file_and_both_stay_readable(tmp_path: Path) -> None:
    s = Session(tmp_path)
    _work(s, 1, "a")
    path = s.write(tmp_path / "s.jsonl")
    forked = s.write(tmp_path / "fork.jsonl", session_id="s2")
    files = SessionFiles()
    leaf = s.entries[-1]["id"]
    read = files.read_branch(str(path), session_id="s1", leaf_id=leaf, span_ids=_all(s))
    assert read.entries == s.entries
    read = files.read_branch(str(forked), session_id="s2", leaf_id=leaf, span_ids=_all(s))
    assert read.entries == s.entries
    assert len(files) == 2


def _refusal(files: SessionFiles, path: Path | str, **kw: str) -> str:
    with pytest.raises(SessionFileRefused) as refused:
        files.read_branch(str(path), session_id=kw.get("session_id", "s1"), leaf_id=kw.get("leaf_id", "x"))
    assert refused.value.code == -32004 and refused.value.data == {"reason": refused.value.reason}
    return refused.value.reason


def test_paths_the_daemon_must_not_read_are_refused_with_a_reason(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.user("hello")
    real = s.write(tmp_path / "s.jsonl")
    leaf = s.entries[-1]["id"]
    files = SessionFiles()
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert _refusal(files, link, leaf_id=leaf) == "symlink"
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    assert _refusal(files, fifo) == "not-regular"
    assert _refusal(files, tmp_path) == "not-regular"
    assert _refusal(files, "relative/s.jsonl") == "not-absolute"
    assert _refusal(files, tmp_path / "none.jsonl") == "missing"
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n{}\n")
    assert _refusal(files, notes) == "not-a-session"
    assert _refusal(files, real, session_id="s2", leaf_id=leaf) == "other-session"
    assert _refusal(files, real, leaf_id="nope") == "leaf-missing"
    newer = tmp_path / "v4.jsonl"
    newer.write_text(_lines(s.entries, version=4))
    assert _refusal(files, newer, leaf_id=leaf) == "unknown-version"
    assert files.read_branch(str(real), session_id="s1", leaf_id=leaf, span_ids=_all(s)).entries == s.entries


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.user("hello")
    path = s.write(tmp_path / "s.jsonl")
    os.chown(path, 65534, 65534)
    assert _refusal(SessionFiles(), path, leaf_id=s.entries[-1]["id"]) == "foreign-owner"


def test_heavy_entries_before_the_states_boundary_are_left_out(tmp_path: Path) -> None:
    """What the state already judged is not read again: of the entries before its boundary only the light
    ones (user messages, compactions, Longhaul's entries) come along; the pass reads nothing else there."""
    s = Session(tmp_path)
    _work(s, 2, "a")
    kept = len(s.entries)
    s.user("kept turn")
    compaction = {"stateFormat": 1, "compactor": "longhaul", "passId": "p1", "span": 1, "state": {"span": 1}}
    s.entries.append(
        {
            "type": "compaction",
            "id": "cccc0001",
            "parentId": s.entries[-1]["id"],
            "firstKeptEntryId": s.entries[kept]["id"],
            "details": compaction,
        }
    )
    s.bash("ls", "files")
    path = s.write(tmp_path / "s.jsonl")
    span_ids = [e["id"] for e in s.entries[kept:] if e["type"] == "message"]
    read = SessionFiles().read_branch(
        str(path), session_id="s1", leaf_id=s.entries[-1]["id"], span_ids=span_ids
    )
    users_before = [e for e in s.entries[:kept] if e["message"]["role"] == "user"]
    assert read.entries == users_before + s.entries[kept:]
    assert read.left_out == len(s.entries[:kept]) - len(users_before) > 0


@pytest.mark.parametrize(
    "details",
    [
        {"stateFormat": 1.0, "compactor": "longhaul", "state": {"span": 2}},
        {"stateFormat": 1, "compactor": "longhaul", "state": {"span": "two"}},
    ],
    ids=["format-as-float", "broken-state"],
)
def test_a_base_the_fold_refuses_leaves_nothing_judged(tmp_path: Path, details: dict[str, Any]) -> None:
    """FORMAT-3: the newest Longhaul compaction is the fold's base; when the fold refuses its state, the
    takeover reads from the root, so the file reader leaves out nothing before it (not even what an older,
    readable base judged)."""
    s = Session(tmp_path)
    _work(s, 2, "a")
    kept = len(s.entries)
    s.user("kept turn")
    good = {"stateFormat": 1, "compactor": "longhaul", "passId": "p1", "span": 1, "state": {"span": 1}}
    for n, compaction in enumerate((good, details), start=1):
        s.entries.append(
            {
                "type": "compaction",
                "id": f"cccc000{n}",
                "parentId": s.entries[-1]["id"],
                "firstKeptEntryId": s.entries[kept]["id"],
                "details": compaction,
            }
        )
        s.bash("ls", "files")
    s.user("now")
    path = s.write(tmp_path / "s.jsonl")
    read = SessionFiles().read_branch(
        str(path), session_id="s1", leaf_id=s.entries[-1]["id"], span_ids=[s.entries[-1]["id"]]
    )
    assert fold(read.entries).base_refused
    assert read.entries == s.entries and read.left_out == 0


def test_a_long_unseen_stretch_is_read_whole_for_its_newest_part_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(files_module, "UNSEEN_BYTES", 2000)
    s = Session(tmp_path)
    _work(s, 6, "a")  # no compaction at all: everything before the span is unseen
    span_start = len(s.entries)
    s.user("now")
    path = s.write(tmp_path / "s.jsonl")
    read = SessionFiles().read_branch(
        str(path), session_id="s1", leaf_id=s.entries[-1]["id"], span_ids=[s.entries[span_start]["id"]]
    )
    assert read.capped and read.left_out > 0
    assert read.entries[-1] == s.entries[-1]
    before = read.entries[:-1]
    heavy = [e for e in before if e["message"]["role"] != "user"]
    assert 0 < sum(len(json.dumps(e)) for e in heavy) <= 2000 + 200  # only the newest part of the stretch
    assert heavy == [e for e in s.entries if e in heavy]  # read whole, as written
    assert [e for e in before if e["message"]["role"] == "user"] == [
        e for e in s.entries[:span_start] if e["message"]["role"] == "user"
    ]


def test_the_cache_keeps_the_newest_sessions(tmp_path: Path) -> None:
    files = SessionFiles(max_sessions=2)
    for n in range(3):
        s = Session(tmp_path)
        s.user(f"session {n}")
        path = s.write(tmp_path / f"s{n}.jsonl", session_id=f"id{n}")
        files.read_branch(str(path), session_id=f"id{n}", leaf_id=s.entries[-1]["id"])
    assert len(files) == 2


def _wait_until(done: Callable[[], bool]) -> None:
    """Wait (up to 30 s) for the warmer's thread to get there; never a measure of its speed."""
    deadline = time.monotonic() + 30.0
    while not done():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_issue10_a_file_warmed_after_hello_gives_a_warm_first_pass(tmp_path: Path) -> None:
    """Issue 10: the first pass after the daemon started reads nothing more when the file was warmed."""
    s = Session(tmp_path)
    _work(s, 3, "w")
    path = s.write(tmp_path / "s.jsonl")
    files = SessionFiles()
    warmer = files_module.SessionWarmer(files)
    assert warmer.submit(str(path), "s1")
    _wait_until(lambda: warmer.warmed == 1)
    assert len(files) == 1
    first = files.read_branch(str(path), session_id="s1", leaf_id=s.entries[-1]["id"], span_ids=_all(s))
    assert not first.cold and first.read_bytes == 0
    cold = SessionFiles().read_branch(
        str(path), session_id="s1", leaf_id=s.entries[-1]["id"], span_ids=_all(s)
    )
    assert first.entries == cold.entries
    assert first.user_ids == cold.user_ids == user_ids(cold.entries)
    middle = s.entries[len(s.entries) // 2]["id"]  # a leaf the warming did not walk to
    assert (
        files.read_branch(str(path), session_id="s1", leaf_id=middle).entries
        == SessionFiles().read_branch(str(path), session_id="s1", leaf_id=middle).entries
    )
    warmer.stop()
    assert not warmer.submit(str(path), "s1")  # stopped: nothing more is queued


def test_issue10_warming_keeps_no_index_of_a_file_a_pass_would_refuse(tmp_path: Path) -> None:
    s = Session(tmp_path)
    s.user("hello")
    real = s.write(tmp_path / "s.jsonl")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    notes = tmp_path / "notes.txt"
    notes.write_text("just some notes\n")
    files = SessionFiles()
    for path, session_id in ((link, "s1"), (notes, "s1"), (real, "s2"), (tmp_path / "none.jsonl", "s1")):
        assert not files.warm(str(path), session_id=session_id)
    assert len(files) == 0


def test_issue10_the_warming_queue_is_bounded_and_holds_each_file_once(tmp_path: Path) -> None:
    files = SessionFiles()
    warmer = files_module.SessionWarmer(files)
    blocked = threading.Event()
    original = files.warm
    tried: list[str] = []

    def slow_warm(path: str, *, session_id: str) -> bool:
        blocked.wait(30.0)
        tried.append(path)
        return original(path, session_id=session_id)

    files.warm = slow_warm  # type: ignore[method-assign]  # hold the worker on its first file
    assert warmer.submit(str(tmp_path / "first.jsonl"), "s")
    queued = [
        warmer.submit(str(tmp_path / f"{n}.jsonl"), "s") for n in range(files_module.MAX_WAITING_WARMS + 5)
    ]
    assert not warmer.submit(str(tmp_path / "0.jsonl"), "s")  # already waiting
    blocked.set()
    _wait_until(lambda: len(tried) == 1 + queued.count(True))  # the first file, then every one queued
    assert queued.count(True) <= files_module.MAX_WAITING_WARMS and queued[-1] is False
    warmer.stop()
