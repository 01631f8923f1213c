"""What ``longhaul-daemon state`` prints: text views for a terminal and JSON documents (INSPECT-2..INSPECT-9).

Transcript bytes are untrusted (INSPECT-8). In text every value taken from the file goes through the
renderer's sanitizer, and the finished text passes :func:`terminal_safe` as a last guard, so no control or
format character other than the line breaks the views add reaches the terminal. JSON is written with
``ensure_ascii``, so every non-ASCII and control character is a ``\\u`` escape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.inspector.compaction_rows import CompactionRow
from longhaul_daemon.inspector.session_file import Transcript
from longhaul_daemon.passes.fold import FoldResult
from longhaul_daemon.plural import counted
from longhaul_daemon.state.model import Rule
from longhaul_daemon.state.render import render_summary
from longhaul_daemon.state.sanitize import is_safe_char, sanitize, sanitize_line

__all__ = [
    "AnomalyRow",
    "anomalies_text",
    "anomaly_rows",
    "header_text",
    "json_text",
    "rows_json",
    "rows_text",
    "state_text",
    "terminal_safe",
]

_ID = 40
_FIELD = 600
_COMMAND = 300
_SHORT = 200


@dataclass(frozen=True)
class AnomalyRow:
    """One thing the inspector or the fold could not use: where it is and why (INSPECT-4, INSPECT-10)."""

    line: int | None
    entry_id: str | None
    code: str
    detail: str


def terminal_safe(text: str) -> str:
    """The last guard before a terminal: only ``\\n`` and printable characters survive."""
    return "".join(ch for ch in text if ch == "\n" or is_safe_char(ch))


def json_text(document: object) -> str:
    """INSPECT-6, INSPECT-8: JSON with every non-ASCII and control character escaped."""
    return json.dumps(document, ensure_ascii=True, indent=2, sort_keys=False) + "\n"


def _id(value: object) -> str:
    return sanitize_line(value, _ID) or "(no id)" if isinstance(value, str) else "(no id)"


def _text(value: object, cap: int = _FIELD) -> str:
    return sanitize_line(value, cap) if isinstance(value, str) else ""


def anomaly_rows(transcript: Transcript, folded: FoldResult) -> list[AnomalyRow]:
    """Unreadable lines, broken links and the fold's anomalies, in file order (INSPECT-4, INSPECT-10)."""
    rows = [AnomalyRow(p.line, p.entry_id, p.code, p.detail) for p in transcript.problems]
    for anomaly in folded.anomalies:
        line = transcript.entry_lines.get(anomaly.entry_id) if anomaly.entry_id is not None else None
        rows.append(AnomalyRow(line, anomaly.entry_id, anomaly.code, anomaly.detail))
    return sorted(rows, key=lambda row: (row.line is None, row.line or 0))  # stable: fold order within a line


def header_text(transcript: Transcript, folded: FoldResult, anomalies: int, *, shown_span: int | None) -> str:
    """Two lines naming the file, the branch, the span count and what is shown."""
    spans = len(folded.spans)
    foreign = len(folded.foreign_compactions)
    leaf = f" ending at {_id(transcript.leaf_id)}" if transcript.leaf_id else ""
    shown = f"; showing span {shown_span}" if shown_span is not None else ""
    hint = " (--anomalies lists them)" if anomalies else ""
    return (
        f"Transcript {sanitize(str(transcript.path))}\n"
        f"Branch of {counted(len(transcript.branch), 'entry', 'entries')}{leaf}: "
        f"{counted(spans, 'Longhaul span')}, {counted(foreign, 'foreign compaction')}, "
        f"{counted(anomalies, 'anomaly', 'anomalies')}{hint}{shown}\n"
    )


def _who(row: CompactionRow) -> str:
    if row.from_hook is False:
        return "pi's own compaction"
    if row.from_hook is True:
        return "another extension's compaction"
    return "a compaction by another compactor"


def _lifted_line(rule: Rule) -> str:
    by = f", lifted by {_id(rule.liftedBy)}" if rule.liftedBy else ""
    replaced = f", replaced by {_id(rule.replacedBy)}" if rule.replacedBy else ""
    return f'- {_id(rule.id)} "{_text(rule.words, 1000)}" ({_id(rule.message)}){by}{replaced}'


def state_text(folded: FoldResult, rows: list[CompactionRow]) -> str:
    """INSPECT-2, INSPECT-9: foreign compactions by id, then the state rendered as in the summary."""
    lines: list[str] = [
        f"Foreign compaction {_id(row.compaction_id)}: {_who(row)}, not read as state"
        for row in rows
        if row.foreign
    ]
    state = folded.state
    if not folded.spans:
        lines.append("No Longhaul compaction on this branch: the state is empty.")
    if folded.base_refused:
        lines.append(
            f"The base compaction {_id(folded.base_compaction_id)} could not be read (--anomalies says why): "
            f"nothing was taken from it."
        )
    base = next((s for s in folded.spans if s.span == state.span), None)
    pass_id = base.pass_id if base is not None and base.pass_id else "none"
    text = ("\n".join(lines) + "\n\n" if lines else "") + render_summary(state, pass_id=pass_id)
    lifted = [_lifted_line(rule) for rule in state.rules if rule.lifted]
    if lifted:  # LABEL-14: the summary leaves lifted rules out; the inspector shows who lifted them
        text += "\nLifted rules:\n" + "\n".join(lifted) + "\n"
    if folded.remembered:
        notes = "\n".join(f"- {_text(n.text)}" for n in folded.remembered)
        text += f"\nNotes remembered since span {state.span}, for the next pass:\n{notes}\n"
    return text


def _exit(code: object) -> str:
    if isinstance(code, int) and not isinstance(code, bool):
        return f"exit {code}"
    return _text(code, 20) or "exit ?"


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _record_lines(record: dict[str, Any]) -> list[str]:
    messages = [_text(m, _ID) for m in _list(record.get("messages")) if isinstance(m, str)]
    events = [str(e) for e in _list(record.get("events")) if isinstance(e, int) and not isinstance(e, bool)]
    commands = [c for c in _list(record.get("commands")) if isinstance(c, dict)]
    errors = [e for e in _list(record.get("errors")) if isinstance(e, dict)]
    lines = [
        f"  messages: {', '.join(messages) or 'none'}",
        f"  events: {', '.join(events) or 'none'}",
        f"  commands: {len(commands)}",
    ]
    lines.extend(
        f"    {_id(c.get('id'))} {_exit(c.get('exit'))}: {_text(c.get('text'), _COMMAND)}" for c in commands
    )
    lines.append(f"  errors: {len(errors)}")
    for err in errors:
        origin = f" (from {_text(err.get('command'), _ID)})" if isinstance(err.get("command"), str) else ""
        label = f"{_id(err.get('id'))} {_text(err.get('tool'), _ID)}".rstrip()
        lines.append(f"    {label}: {_text(err.get('text'), _SHORT) or '(no text)'}{origin}")
    lines.append(f"  narrative: {_text(record.get('narrative')) or 'none'}")
    return lines


def _line_text(line: dict[str, Any] | None) -> list[str]:
    if line is None:
        return []
    ms = line.get("ms")
    took = f", {ms} ms" if isinstance(ms, int | float) and not isinstance(ms, bool) else ""
    if "fallback" in line:
        return [f"  line: fell back to pi ({_text(line.get('fallback'), _SHORT) or 'no reason'}){took}"]
    calls, tokens = line.get("calls"), line.get("tokens")
    shown = [f"{v} {w}" for v, w in ((calls, "model calls"), (tokens, "tokens")) if type(v) is int]
    return [f"  line: {', '.join(shown) or 'no counts'}{took}"]


def rows_text(rows: list[CompactionRow]) -> str:
    """INSPECT-3: every span with its compaction entry, events, commands, errors and narrative."""
    if not rows:
        return "No compaction on this branch.\n"
    lines: list[str] = []
    for row in rows:
        if row.span is None:
            lines.append(f"Foreign compaction {_id(row.compaction_id)}: {_who(row)}, not read as state")
            lines.extend(_line_text(row.line))
            continue
        info = row.span
        head = f"Span {info.span}: compaction {_id(row.compaction_id)}, pass {_id(info.pass_id)}"
        if row.record is None:
            lines.append(f"{head}, detail unavailable (no usable v1 span record names it)")
        else:
            reason = _text(row.record.get("reason"), _ID)
            closed = _text(row.record.get("closedAs"), _ID) or "unknown"
            lines.append(f"{head}, closed {closed}{f' ({reason})' if reason else ''}")
            lines.extend(_record_lines(row.record))
        if row.work_log is not None:
            lines.append(f"  work log: {_text(row.work_log.get('text')) or '(empty)'}")
        lines.extend(_line_text(row.line))
    return "\n".join(lines) + "\n"


def rows_json(rows: list[CompactionRow]) -> list[dict[str, Any]]:
    """INSPECT-3 as JSON: the raw record, work-log line and compaction line of every compaction."""
    out: list[dict[str, Any]] = []
    for row in rows:
        if row.span is None:
            item: dict[str, Any] = {"kind": "foreign", "compactionId": row.compaction_id}
            item["fromHook"] = row.from_hook if isinstance(row.from_hook, bool) else None
        else:
            item = {
                "kind": "longhaul",
                "span": row.span.span,
                "compactionId": row.compaction_id,
                "passId": row.span.pass_id,
                "closedAs": row.span.closed_as,
                "detailAvailable": row.record is not None,
                "record": row.record,
                "workLog": row.work_log,
            }
        item["line"] = row.line
        out.append(item)
    return out


def anomalies_text(rows: list[AnomalyRow]) -> str:
    """INSPECT-4: one line per anomaly, with where it is (line, entry id) and the reason code and detail."""
    if not rows:
        return "No anomalies: every line was read and the fold used every Longhaul entry on the branch.\n"
    lines = []
    for row in rows:
        where = [f"line {row.line}"] if row.line is not None else []
        where.append(f"entry {_id(row.entry_id)}" if row.entry_id is not None else "entry (no id)")
        lines.append(f"{', '.join(where)}: {_text(row.code, _ID)}: {_text(row.detail)}")
    return "\n".join(lines) + "\n"
