"""The session-file index: its kept walk gives the branch a fresh walk gives, for any tree and any leaves, and
the user ids it keeps along that walk are the ones a count over the branch finds; the heavy entries a small
refresh keeps parsed for its read are the ones read again from the file."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.evaluation.synthetic import write_session
from longhaul_daemon.sessionfile import index as index_module
from longhaul_daemon.sessionfile.files import BranchRead, SessionFiles
from longhaul_daemon.sessionfile.index import Row, SessionIndex
from longhaul_daemon.transcript.jsonl import walk_branch
from longhaul_daemon.transcript.messages import user_ids


def _index(parents: list[int | None], roles: list[str] | None = None) -> SessionIndex:
    """Entries e0..eN where entry n's parent is e<parents[n]> (None: a root; -1: a missing parent), each a
    message of ``roles[n]`` (user when not given)."""
    index = SessionIndex()
    for n, parent in enumerate(parents):
        parent_id = None if parent is None else f"e{parent}" if parent >= 0 else "gone"
        role = roles[n] if roles is not None else "user"
        body = {"type": "message", "id": f"e{n}", "parentId": parent_id, "message": {"role": role}}
        index.rows.append(Row(n + 2, 0, 0, f"e{n}", parent_id, "message", role, None, body))
        index.position_of[f"e{n}"] = n
    return index


@st.composite
def _trees(draw: st.DrawFn) -> tuple[list[int | None], list[int]]:
    count = draw(st.integers(min_value=1, max_value=40))
    # A parent before the entry (a tree), none (another root), missing, or after it (so loops can form).
    choice = st.one_of(st.integers(0, count), st.just(None), st.just(-1))
    parents: list[int | None] = [None, *(draw(choice) for _ in range(1, count))]
    leaves = draw(st.lists(st.integers(0, count - 1), min_size=1, max_size=12))
    return parents, leaves


@settings(max_examples=200, deadline=None)
@given(_trees())
def test_inspect11_the_kept_walk_equals_a_fresh_walk_for_every_leaf(
    tree: tuple[list[int | None], list[int]],
) -> None:
    """INSPECT-11: appends, branch switches, missing parents and loops (a parent later in the file) alike."""
    parents, leaves = tree
    index = _index(parents)
    for leaf in leaves:
        fresh = walk_branch(leaf, lambda p: index.rows[p].parent_id, index.position_of).positions
        assert index.branch_positions(leaf) == fresh


@settings(max_examples=200, deadline=None)
@given(_trees(), st.lists(st.sampled_from(["user", "assistant", "toolResult"]), min_size=40, max_size=40))
def test_fold10_the_kept_user_ids_equal_a_count_over_the_branch_for_every_leaf(
    tree: tuple[list[int | None], list[int]], roles: list[str]
) -> None:
    """FOLD-10 (issue 10): counted along the kept walk, only new entries when it grew, yet equal to a cold
    count over the branch's entries after appends, branch switches, missing parents and loops."""
    parents, leaves = tree
    index = _index(parents, roles[: len(parents)])
    for leaf in leaves:
        branch = [index.rows[p].body or {} for p in index.branch_positions(leaf)]
        assert index.user_ids() == user_ids(branch)


@settings(max_examples=200, deadline=None)
@given(_trees(), st.lists(st.integers(0, 45), min_size=40, max_size=40))
def test_issue10_an_id_is_found_on_the_walk_where_a_search_from_the_root_finds_it(
    tree: tuple[list[int | None], list[int]], names: list[int]
) -> None:
    """Issue 10: the span's entries and the kept boundary are looked up, not searched for along the branch;
    the lookup gives what a search from the root gives, ids on two lines included (the later line is the
    one ``position_of`` names, the first on the walk is the one pi's search finds)."""
    parents, leaves = tree
    ids = [f"x{n}" for n in names[: len(parents)]]
    index = SessionIndex()
    for n, parent in enumerate(parents):
        parent_id = None if parent is None else ids[parent] if 0 <= parent < len(ids) else "gone"
        index.rows.append(Row(n + 2, 0, 0, ids[n], parent_id, "message", "user", None, None))
        index.repeated_ids = index.repeated_ids or ids[n] in index.position_of
        index.position_of[ids[n]] = n
    for leaf in leaves:
        walk = index.branch_positions(leaf)
        for entry_id in {*ids, "absent"}:
            expected = next((at for at, p in enumerate(walk) if index.rows[p].entry_id == entry_id), None)
            assert index.first_on_walk(entry_id) == expected


@contextmanager
def _opened(path: Path) -> Iterator[tuple[int, tuple[int, int], int]]:
    """The file open for reading (closed on leaving), with its identity and size as the daemon takes them."""
    fd = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(fd)
        yield fd, (info.st_dev, info.st_ino), info.st_size
    finally:
        os.close(fd)


def _entries(index: SessionIndex, fd: int) -> list[dict[str, Any] | None]:
    return [index.entry(fd, position) for position in range(len(index.rows))]


def test_heavy_entries_kept_parsed_by_a_small_refresh_equal_those_read_again(tmp_path: Path) -> None:
    """Issue 10: a small refresh's heavy entries, kept for the read, are the entries a cold read parses."""
    session = write_session(tmp_path / "s.jsonl", total_bytes=60 * 1024)
    with _opened(session.path) as (fd, identity, size):
        cold = SessionIndex()
        cold.refresh(fd, identity, size)
        kept = SessionIndex()
        kept.refresh(fd, identity, size, keep_parsed=True)
        assert kept._parsed  # heavy entries were kept
        assert _entries(kept, fd) == _entries(cold, fd)
        kept.drop_parsed()
        assert kept._parsed == {}
        assert _entries(kept, fd) == _entries(cold, fd)


def test_a_refresh_over_the_bound_keeps_nothing_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = write_session(tmp_path / "s.jsonl", total_bytes=60 * 1024)
    monkeypatch.setattr(index_module, "KEEP_PARSED_BYTES", 1024)
    with _opened(session.path) as (fd, identity, size):
        index = SessionIndex()
        index.refresh(fd, identity, size, keep_parsed=True)
        assert index._parsed == {}


def test_a_branch_read_equals_one_that_parses_again_and_holds_nothing_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = write_session(tmp_path / "s.jsonl", total_bytes=60 * 1024)

    def read(files: SessionFiles) -> BranchRead:
        path, leaf_id, span_ids = str(session.path), session.leaf_id, session.span_ids
        return files.read_branch(path, session_id=session.session_id, leaf_id=leaf_id, span_ids=span_ids)

    files = SessionFiles()
    kept = read(files)
    assert all(index._parsed == {} for index in files._indexes.values())
    monkeypatch.setattr(index_module, "KEEP_PARSED_BYTES", 0)
    assert kept == read(SessionFiles())  # every heavy entry read again from the file
