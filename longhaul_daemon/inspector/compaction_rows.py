"""Every compaction on a branch, in branch order, with what Longhaul recorded about it (INSPECT-3, INSPECT-9).

The fold numbers Longhaul's compactions and keeps the span record it read for each; this module pairs each of
them with that record, the work-log line its own ``details`` state holds and the display-only
``compaction-state.line`` the shim wrote after it, each read as the fold reads it
(:mod:`~longhaul_daemon.state.own_entries`). A compaction Longhaul did not make is a foreign row. The values
come from the transcript: the views sanitize or JSON-encode them before printing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.passes.fold import SpanInfo
from longhaul_daemon.state.entry_kinds import is_longhaul_compaction
from longhaul_daemon.state.own_entries import Refusal, compaction_lines, read_details_state

__all__ = ["CompactionRow", "compaction_rows"]


@dataclass(frozen=True)
class CompactionRow:
    """One compaction entry on the branch; ``span`` is None for a foreign one."""

    index: int  # position on the branch, 0 = root
    compaction_id: str | None
    span: SpanInfo | None
    from_hook: object
    record: dict[str, Any] | None  # the v1 span record the fold used, when there is one
    work_log: dict[str, Any] | None  # this span's line of the work log its own details stored
    line: dict[str, Any] | None  # the first compaction-state.line after it, before the next compaction

    @property
    def foreign(self) -> bool:
        """True for a compaction Longhaul did not write (no span of ours)."""
        return self.span is None


def _work_log(entry: Mapping[str, Any], span: int) -> dict[str, Any] | None:
    """The span's line of the work log its own compaction stored, when the fold could read that state."""
    state = read_details_state(entry, span)
    if isinstance(state, Refusal):
        return None
    found = [line for line in state.workLog if line.span == span]
    return found[-1].model_dump(mode="json") if found else None


def compaction_rows(
    branch: Sequence[dict[str, Any]], spans: Sequence[SpanInfo], *, through_span: int | None = None
) -> list[CompactionRow]:
    """The branch's compactions in order; with ``through_span`` N, only those the fold reads up to span N."""
    rows: list[CompactionRow] = []
    numbered = iter(spans)
    lines = iter(compaction_lines(branch))
    for index, entry in enumerate(branch):
        if entry.get("type") != "compaction":
            continue
        line = next(lines)
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
                record=info.record if info else None,
                work_log=_work_log(entry, info.span) if info else None,
                line=line,
            )
        )
    return rows
