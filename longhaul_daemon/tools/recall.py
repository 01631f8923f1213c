"""Answer ``longhaul_recall`` from the branch's span records: read-only, no model call, bounded (TOOLS-5..7).

A ref (``span:<n>``, ``C<n>``, ``E<n>``, ``R<n>``, ``u<n>``) picks the spans that hold it; a query keeps the
detail lines that contain it (case-insensitive); both together narrow each other, and neither lists every span
in one line each. A span whose record is missing or not ``v: 1`` is reported as unavailable, never guessed
(TOOLS-6, FORMAT-5). Every field is sanitized and cut, and the whole answer stays within 8,000 code points.
A ``u<n>`` ref also shows that message's own words, read from the branch: the summary shows a carried
message only up to a cut and points here for the rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.passes.fold import FoldResult, SpanInfo, fold
from longhaul_daemon.state.model import Command, ErrorEntry, Rule, State
from longhaul_daemon.state.own_entries import Refusal, read_details_state
from longhaul_daemon.state.sanitize import ELLIPSIS, sanitize_block, sanitize_line
from longhaul_daemon.transcript.messages import user_ids, user_text

__all__ = ["MAX_RECALL_CHARS", "RecallOutcome", "recall", "unavailable"]

MAX_RECALL_CHARS = 8000  # TOOLS-7
_FIELD = 300
_LONG_FIELD = 600
_WORDS_LINE = 1000  # a long line of a message is shown in pieces, so the answer's cut drops whole pieces
_REF = re.compile(r"^\s*(?:span:\s*(\d+)|([RrCcEe])(\d+)|[uU](\d+))\s*$")
_TOOL = "longhaul_recall"


@dataclass(frozen=True)
class RecallOutcome:
    """A ``longhaul_recall`` answer: whether it found what was asked, its text and the spans it shows."""

    ok: bool
    text: str
    spans: list[int]


@dataclass(frozen=True)
class _Span:
    info: SpanInfo
    record: Mapping[str, Any] | None  # the v1 span record, None when the detail is unavailable
    state: State | None  # the state stored with the span's compaction


def unavailable(number: int) -> str:
    """TOOLS-6, in the words the tool uses."""
    return f"Span {number}: the detail of span {number} is not available (no v1 span record on this branch)."


def _line(value: object, limit: int = _FIELD) -> str:
    return sanitize_line(value, limit) if isinstance(value, str) else ""


def _list(record: Mapping[str, Any], key: str) -> list[Any]:
    """A list field of an untrusted record; anything else reads as empty."""
    value = record.get(key)
    return value if isinstance(value, list) else []


def _state_of(entry: Mapping[str, Any] | None) -> State | None:
    if entry is None:
        return None
    state = read_details_state(entry)
    return None if isinstance(state, Refusal) else state


def _spans(entries: list[dict[str, Any]], folded: FoldResult) -> list[_Span]:
    # An id is whatever the client sent: only a string can name a compaction (a list is not even hashable).
    by_id = {e["id"]: e for e in entries if e.get("type") == "compaction" and isinstance(e.get("id"), str)}
    return [_Span(info, info.record, _state_of(by_id.get(info.compaction_id))) for info in folded.spans]


def _labels(span: _Span) -> list[str]:
    """The label each of the span's messages got, as far as the stored state says (LABEL-1 words)."""
    messages = _list(span.record, "messages") if span.record is not None else []
    rules = span.state.rules if span.state is not None else []
    judged = span.info.closed_as in ("whole", "partial")
    held = set(_list(span.record, "held")) if span.record is not None else set()  # partial: carried
    out: list[str] = []
    for uid in (m for m in messages if isinstance(m, str)):
        whole = judged and uid not in held
        made = [r.id for r in rules if r.message == uid and r.span == span.info.span]
        lifted = [r.id for r in rules if r.liftedBy == uid]
        parts = [f"rule {', '.join(made)}"] if made else []
        parts += [f"lifts {', '.join(lifted)}"] if lifted else []
        label = " and ".join(parts) or ("not a rule" if whole else "no label recorded (carried)")
        out.append(f"{_line(uid, 16)}: {label}")
    return out


def _world(world: object) -> str:
    if not isinstance(world, Mapping):
        return ""
    if world.get("status") != "repository":
        return f"World: {_line(world.get('status'), 40)}"
    raw_head = world.get("head")
    head: Mapping[str, Any] = raw_head if isinstance(raw_head, Mapping) else {}
    subject = f' "{_line(head.get("subject"), 120)}"' if head.get("subject") else ""
    dirty = world.get("dirtyCount")
    text = f"World: branch {_line(world.get('branch'), 80)}, HEAD {_line(head.get('hash'), 12)}{subject}"
    return text + (f", {dirty} dirty paths" if isinstance(dirty, int) else "")


def _detail(span: _Span) -> list[str]:
    """Every line recall can say about one span."""
    n, record = span.info.span, span.record
    if record is None:
        return [unavailable(n)]
    events = {e for e in _list(record, "events") if type(e) is int}
    head = f"Span {n}: closed {_line(record.get('closedAs'), 32) or 'unknown'}"
    lines = [head + (f" ({_line(record.get('reason'), 64)})" if record.get("reason") else "")]
    for key, label in (("narrative", "Narrative"), ("now", "Now")):
        if record.get(key):
            lines.append(f"{label}: {_line(record.get(key), _LONG_FIELD)}")
    labels = _labels(span)
    if labels:
        lines.append("Messages and their labels: " + "; ".join(labels))
    commands = [c for c in _list(record, "commands") if isinstance(c, Mapping)]
    if commands:
        lines.append("Commands:")
        lines += [
            f"- {_line(c.get('id'), 16)} `{_line(c.get('text'))}` exit {_line(str(c.get('exit')), 16)}"
            for c in commands
        ]
    errors = [e for e in _list(record, "errors") if isinstance(e, Mapping)]
    if errors:
        lines.append("Errors:")
        for e in errors:
            origin = f" from {_line(e.get('command'), 16)}" if e.get("command") else ""
            lines.append(
                f"- {_line(e.get('id'), 16)} ({_line(e.get('tool'), 40)}{origin}): {_line(e.get('text'))}"
            )
    state = span.state
    if state is not None:
        groups = (("Decisions", state.decisions), ("Dead ends", state.deadEnds))
        for title, items in groups:
            mine = [i for i in items if i.seq in events]
            if mine:
                lines.append(f"{title}:")
                lines += [
                    f"- {_line(i.text)}" + (f" [{_line(', '.join(i.evidence), 120)}]" if i.evidence else "")
                    for i in mine
                ]
        values = [v for v in state.values if v.seq in events]
        lines += [f"Value: {_line(v.what, 120)} = {_line(v.value)} ({_line(v.turn, 16)})" for v in values]
        notes = [note for note in state.notes if note.seq in events]
        lines += [f"Agent's note (not the user's words): {_line(note.text, _LONG_FIELD)}" for note in notes]
    world = _world(record.get("world"))
    return [*lines, world] if world else lines


def _words(entries: list[dict[str, Any]], uid: str, needle: str) -> list[str]:
    """The user's words in message ``uid``, line by line, or nothing when the branch lacks it."""
    by_entry = user_ids(entries)
    message = next(
        (
            e.get("message")
            for e in entries
            if e.get("type") == "message" and isinstance(e.get("id"), str) and by_entry.get(e["id"]) == uid
        ),
        None,
    )
    text = user_text(message) if isinstance(message, dict) else ""
    block = sanitize_block(text, max_lines=MAX_RECALL_CHARS, max_chars=MAX_RECALL_CHARS)
    if not block:
        return []
    pieces = [
        f"  {line[at : at + _WORDS_LINE]}".rstrip()
        for line in block.split("\n")
        for at in range(0, max(len(line), 1), _WORDS_LINE)
    ]
    if needle:
        pieces = [p for p in pieces if needle in p.casefold()]
    return [f"{uid}, the user's own words:", *pieces, ""] if pieces else []


def _holding(spans: list[_Span], folded: FoldResult, ref: str) -> list[int] | str:
    """The numbers of the spans a ref points at, or the error text when it points at none."""
    match = _REF.match(ref)
    if match is None:
        return f'ref must look like "span:3", "C12", "E2", "R1" or "u7", not {_line(ref, 40)!r}.'
    span_no, letter, number, user = match.groups()
    if span_no is not None:
        n = int(span_no)
        if 1 <= n <= len(spans):
            return [n]
        return f"there is no span {n} on this branch ({len(spans)} Longhaul spans)."
    if user is not None:
        uid = f"u{int(user)}"
        found = [s.info.span for s in spans if s.record is not None and uid in _list(s.record, "messages")]
        return (
            found
            or f"{uid} is in no span record on this branch (not summarized yet, or its detail unavailable)."
        )
    ident = f"{letter.upper()}{int(number)}"
    found = []
    for s in spans:
        key = "commands" if ident[0] == "C" else "errors"
        rows = _list(s.record, key) if s.record is not None and ident[0] != "R" else []
        if any(isinstance(r, Mapping) and r.get("id") == ident for r in rows):
            found.append(s.info.span)
    if not found:  # the carried ledger and rules name the span each id was made in
        state = folded.state
        pool: list[Command] | list[ErrorEntry] | list[Rule] = (
            state.commands if ident[0] == "C" else state.errors if ident[0] == "E" else state.rules
        )
        found = sorted({item.span for item in pool if item.id == ident and item.span <= len(spans)})
    return found or f"{ident} is not in the state or any span record of this branch."


def _overview(spans: list[_Span]) -> list[str]:
    lines = [f'{len(spans)} Longhaul spans on this branch. Ask with ref "span:<n>" for one span\'s detail.']
    for s in spans:
        if s.record is None:
            lines.append(unavailable(s.info.span))
            continue
        counts = [f"{len(_list(s.record, k))} {k}" for k in ("commands", "errors")]
        narrative = _line(s.record.get("narrative"), 160)
        lines.append(
            f"Span {s.info.span}: closed {_line(s.record.get('closedAs'), 32)}, {', '.join(counts)}"
            + (f"; {narrative}" if narrative else "")
        )
    return lines


def _bounded(lines: list[str]) -> str:
    """Whole lines up to TOOLS-7's limit, then a line saying the rest was cut."""
    tail = f"{ELLIPSIS} (cut at {MAX_RECALL_CHARS} characters: ask for one span, or narrow with a query)"
    text = "\n".join(lines)
    if len(text) <= MAX_RECALL_CHARS:
        return text
    kept: list[str] = []
    used = len(tail)
    for line in lines:
        if used + len(line) + 1 > MAX_RECALL_CHARS:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join([*kept, tail])


def recall(
    branch: list[dict[str, Any]], *, ref: str | None = None, query: str | None = None
) -> RecallOutcome:
    """One ``longhaul_recall`` answer for ``branch`` (root to leaf); never raises for transcript content."""
    entries = [e for e in branch if isinstance(e, dict)]
    folded = fold(entries)
    spans = _spans(entries, folded)
    if not spans:
        return RecallOutcome(
            True, "No Longhaul compaction on this branch yet: there is no earlier span to recall.", []
        )
    wanted = [s.info.span for s in spans]
    if ref is not None and ref.strip():
        holding = _holding(spans, folded, ref)
        if isinstance(holding, str):
            return RecallOutcome(False, f"{_TOOL}: {holding}", [])
        wanted = holding
    needle = query.strip().casefold() if query is not None else ""
    if not needle and (ref is None or not ref.strip()):
        return RecallOutcome(True, _bounded(_overview(spans)), [])
    match = _REF.match(ref or "")
    lines = _words(entries, f"u{int(match.group(4))}", needle) if match and match.group(4) else []
    words = len(lines)
    for n in wanted:
        detail = _detail(spans[n - 1])
        if needle:
            hits = [line for line in detail[1:] if needle in line.casefold()]
            if not hits:
                continue
            detail = [detail[0], *hits]
        lines += [*detail, ""]
    if not lines:
        shown = sanitize_line(query or "", 80)
        return RecallOutcome(True, f"No span detail on this branch mentions {shown!r}.", [])
    found = [n for n in wanted if not needle or any(line.startswith(f"Span {n}:") for line in lines[words:])]
    return RecallOutcome(True, _bounded(lines[:-1]), found)
