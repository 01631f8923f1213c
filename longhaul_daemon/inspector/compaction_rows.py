"""Every compaction on a branch, in branch order, with what Longhaul recorded about it (INSPECT-3, INSPECT-9).

The fold numbers Longhaul's compactions and says which ones have a usable span record; this module pairs each
of them with that record, the work-log line its own ``details`` state holds and the display-only
``compaction-state.line`` the shim wrote after it. A compaction Longhaul did not make is a foreign row. All
values are the raw JSON the transcript holds: the views sanitize or JSON-encode them before printing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.state.entry_kinds import LINE_TYPE, SPAN_TYPE, is_custom, is_longhaul_compaction
from longhaul_daemon.state.fold import SpanInfo

__all__ = ["CompactionRow", "compaction_rows"]

_CLOSED_AS = frozenset({"whole", "narrative-less", "chunk-missing", "empty"})


@dataclass(frozen=True)
class CompactionRow:
    """One compaction entry on the branch; ``span`` is None for a foreign one."""

    index: int  # position on the branch, 0 = root
    compaction_id: str | None
    span: SpanInfo | None
    from_hook: object
    record: dict[str, Any] | None  # the v1 span record the fold used, when there is one
    work_log: dict[str, Any] | None  # this span's line from its own details.state.workLog
    line: dict[str, Any] | None  # the first compaction-state.line after it, before the next compaction

    @property
    def foreign(self) -> bool:
        return self.span is None


def _usable_record(data: object, compaction_id: str) -> bool:
    """The fold's reading of a v1 span record (FORMAT-5, FORMAT-6), reduced to what picks the record."""
    if not isinstance(data, dict) or type(data.get("v")) is not int or data.get("v") != 1:
        return False
    closed_as = data.get("closedAs")
    span = data.get("span")
    pass_id = data.get("passId")
    return (
        data.get("compactionId") == compaction_id
        and (closed_as is None or closed_as in _CLOSED_AS)
        and (span is None or type(span) is int)
        and (pass_id is None or isinstance(pass_id, str))
    )


def _record(branch: Sequence[dict[str, Any]], compaction_id: str | None) -> dict[str, Any] | None:
    if compaction_id is None:
        return None
    for entry in branch:
        data = entry.get("data")
        if is_custom(entry, SPAN_TYPE) and _usable_record(data, compaction_id):
            assert isinstance(data, dict)
            return data
    return None


def _work_log(entry: Mapping[str, Any], span: int) -> dict[str, Any] | None:
    details = entry.get("details")
    state = details.get("state") if isinstance(details, dict) else None
    lines = state.get("workLog") if isinstance(state, dict) else None
    if not isinstance(lines, list):
        return None
    found = [line for line in lines if isinstance(line, dict) and line.get("span") == span]
    return found[-1] if found else None


def _line_after(branch: Sequence[dict[str, Any]], index: int) -> dict[str, Any] | None:
    for entry in branch[index + 1 :]:
        if entry.get("type") == "compaction":
            return None
        data = entry.get("data")
        if is_custom(entry, LINE_TYPE) and isinstance(data, dict):
            return data
    return None


def compaction_rows(
    branch: Sequence[dict[str, Any]], spans: Sequence[SpanInfo], *, through_span: int | None = None
) -> list[CompactionRow]:
    """The branch's compactions in order; with ``through_span`` N, only those the fold reads up to span N."""
    rows: list[CompactionRow] = []
    numbered = iter(spans)
    for index, entry in enumerate(branch):
        if entry.get("type") != "compaction":
            continue
        raw_id = entry.get("id")
        compaction_id = raw_id if isinstance(raw_id, str) else None
        info = next(numbered, None) if is_longhaul_compaction(entry) else None
        if through_span is not None and any(r.span is not None and r.span.span == through_span for r in rows):
            break  # FOLD-9: the fold stops at the first compaction after span N
        rows.append(
            CompactionRow(
                index=index,
                compaction_id=compaction_id,
                span=info,
                from_hook=entry.get("fromHook"),
                record=_record(branch, compaction_id) if info and info.detail_available else None,
                work_log=_work_log(entry, info.span) if info else None,
                line=_line_after(branch, index),
            )
        )
    return rows
