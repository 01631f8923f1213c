"""The session-file index: its kept walk gives the branch a fresh walk gives, for any tree and any leaves."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.sessionfile.index import Row, SessionIndex
from longhaul_daemon.transcript.jsonl import walk_branch


def _index(parents: list[int | None]) -> SessionIndex:
    """Entries e0..eN where entry n's parent is e<parents[n]> (None: a root; -1: a missing parent)."""
    index = SessionIndex()
    for n, parent in enumerate(parents):
        parent_id = None if parent is None else f"e{parent}" if parent >= 0 else "gone"
        index.rows.append(Row(n + 2, 0, 0, f"e{n}", parent_id, "message", "user", None, {}))
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
