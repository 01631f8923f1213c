"""Reads pi's session JSONL as a user would inspect it: compaction entries and Longhaul's custom entries."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "LINE_TYPE",
    "SPAN_TYPE",
    "Entry",
    "compactions",
    "customs",
    "index_of",
    "is_longhaul",
    "read_entries",
    "wait_for_entries",
]

Entry = dict[str, Any]

SPAN_TYPE = "compaction-state.span"
LINE_TYPE = "compaction-state.line"


def read_entries(path: Path) -> list[Entry]:
    """Every complete JSON line of the session file (a partly written last line is left out)."""
    if not path.exists():
        return []
    entries: list[Entry] = []
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            entries.append(value)
    return entries


def compactions(entries: list[Entry]) -> list[Entry]:
    return [e for e in entries if e.get("type") == "compaction"]


def customs(entries: list[Entry], custom_type: str) -> list[Entry]:
    return [e for e in entries if e.get("type") == "custom" and e.get("customType") == custom_type]


def index_of(entries: list[Entry], entry_id: str) -> int:
    for i, e in enumerate(entries):
        if e.get("id") == entry_id:
            return i
    raise KeyError(entry_id)


def is_longhaul(entry: Entry) -> bool:
    details = entry.get("details")
    return (
        entry.get("type") == "compaction"
        and isinstance(details, dict)
        and details.get("compactor") == "longhaul"
        and details.get("stateFormat") == 1
    )


def wait_for_entries(
    path: Path,
    predicate: Callable[[list[Entry]], bool],
    *,
    timeout: float = 20.0,
    what: str = "session entries",
) -> list[Entry]:
    """Poll the session file until ``predicate(entries)`` holds (bounded); the shim appends asynchronously."""
    deadline = time.monotonic() + timeout
    entries = read_entries(path)
    while not predicate(entries):
        if time.monotonic() >= deadline:
            kinds = [(e.get("type"), e.get("customType")) for e in entries[-12:]]
            raise AssertionError(f"{what}: not in {path} after {timeout}s; last entries: {kinds}")
        time.sleep(0.1)
        entries = read_entries(path)
    return entries
