"""pi's session JSONL, line by line: the one parser of its lines and the one walk from a leaf to the root.

pi writes one JSON object per line: a ``{"type": "session"}`` header, then entries linked into a tree by
``parentId`` (pi-api.md §3). Lines are split on ``b"\\n"`` only, since a JSON string may hold U+2028. Both the
inspector (which reads a whole file) and the daemon's session-file index (which reads only what a file grew
by) use these functions, so the two can never disagree about what a line or a branch is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from longhaul_daemon import jsoncodec

__all__ = ["HEADER_TYPE", "BranchWalk", "is_session_header", "parse_line", "walk_branch"]

HEADER_TYPE = "session"


def parse_line(raw: bytes) -> tuple[object, str | None]:
    """The line's JSON value, or ``(None, why)`` when it is not UTF-8 or not JSON.

    Non-finite numbers (``NaN``, ``Infinity``) are refused: they are not JSON, and pi never writes them. The
    bytes are decoded first, so a line that is not UTF-8 says so rather than being read with replacements.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8"
    try:
        return jsoncodec.loads(text), None
    except (ValueError, RecursionError):
        return None, "not valid JSON"


def is_session_header(value: object) -> TypeGuard[dict[str, Any]]:
    """Whether a parsed first line is pi's session header."""
    return isinstance(value, dict) and value.get("type") == HEADER_TYPE


@dataclass(frozen=True)
class BranchWalk:
    """The positions from the root to the leaf, and where and why the walk stopped early, if it did."""

    positions: list[int]
    broken_at: int | None = None  # the position whose parent could not be followed
    problem: str | None = None  # missing-parent or parent-cycle


def walk_branch(leaf: int, parent_of: Callable[[int], object], position_of: Mapping[str, int]) -> BranchWalk:
    """Follow ``parentId`` links from the entry at position ``leaf`` to the root; root first.

    ``parent_of(position)`` is that entry's raw ``parentId``: None at the root, and a value that is not a
    string names no entry. ``position_of`` maps an entry id to its position (the later of two entries with
    one id wins, as a walk over the file reaches it). A parent that is not there, or a loop, ends the branch
    where it breaks (INSPECT-11).
    """
    path = [leaf]
    seen = {leaf}
    current = leaf
    while True:
        parent = parent_of(current)
        if parent is None:
            break
        found = position_of.get(parent) if isinstance(parent, str) else None
        if found is None:
            return BranchWalk(path[::-1], current, "missing-parent")
        if found in seen:
            return BranchWalk(path[::-1], current, "parent-cycle")
        seen.add(found)
        path.append(found)
        current = found
    return BranchWalk(path[::-1])
