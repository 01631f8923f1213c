"""longhaul_recall never raises, whatever type any field of any entry holds (issue 12, item 6).

A fuzzer got ``-32603`` from ``recall`` by sending a compaction entry whose ``id`` was a list. The branch is
the client's, so the reader must take any JSON value in any place: here every field of a real branch with
two Longhaul spans is replaced, one at a time and at random, by hostile values, and each ref and query is
asked.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_tools_recall import two_spans

from longhaul_daemon.tools.recall import MAX_RECALL_CHARS, recall

HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5e308,
    "",
    "\u202e\x00\x1b[2J",
    "x" * 10_000,
    [],
    ["x"],
    [[[]]],
    {},
    {"id": ["x"]},
    {"v": 1, "compactionId": {"a": 1}},
]
REFS = [None, "span:1", "span:2", "C1", "E1", "R1", "u1", "u2"]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value`` a field can be swapped: dict keys and list indexes, nested."""
    found: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, member in value.items():
            found += [(*prefix, key), *paths(member, (*prefix, key))]
    elif isinstance(value, list):
        for index, member in enumerate(value):
            found += [(*prefix, index), *paths(member, (*prefix, index))]
    return found


def swapped(branch: list[dict[str, Any]], path: tuple[Any, ...], hostile: Any) -> list[dict[str, Any]]:
    out = copy.deepcopy(branch)
    target: Any = out
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = hostile
    return out


BRANCH = two_spans().entries
PATHS = paths(BRANCH)


def test_the_reported_crash_a_compaction_id_that_is_a_list() -> None:
    branch = copy.deepcopy(BRANCH)
    for entry in branch:
        if entry["type"] == "compaction":
            entry["id"] = ["x"]
    for ref in REFS:
        outcome = recall(branch, ref=ref)
        assert len(outcome.text) <= MAX_RECALL_CHARS


@pytest.mark.parametrize("hostile", HOSTILE, ids=[f"h{n}" for n in range(len(HOSTILE))])
def test_every_entry_replaced_whole_by_a_hostile_value(hostile: Any) -> None:
    for index in range(len(BRANCH)):
        branch = [copy.deepcopy(e) for e in BRANCH]
        branch[index] = hostile
        for ref in REFS:
            recall(branch, ref=ref, query="e")


@settings(max_examples=300, deadline=None)
@given(
    path=st.sampled_from(PATHS),
    hostile=st.sampled_from(HOSTILE),
    ref=st.sampled_from(REFS),
    query=st.sampled_from([None, "echo", "x"]),
)
def test_any_field_replaced_by_any_hostile_value(
    path: tuple[Any, ...], hostile: Any, ref: str | None, query: str | None
) -> None:
    outcome = recall(swapped(BRANCH, path, hostile), ref=ref, query=query)
    assert len(outcome.text) <= MAX_RECALL_CHARS
