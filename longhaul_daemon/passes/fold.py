"""Rebuild the carried State from a branch's entries alone (no I/O), so every pass starts from the transcript.

The base is the newest compaction Longhaul made (FOLD-2); ``compaction-state.event`` entries after it are
applied in sequence-number order (FOLD-3) and ``compaction-state.span`` records say how each span closed
(FOLD-5).
Transcript bytes are untrusted: anything the fold cannot use becomes an :class:`Anomaly` and the fold never
raises on content (FOLD-6), and what it reads is cleaned (:func:`~longhaul_daemon.state.clean.clean_state`),
so a state an older daemon stored with control characters reaches no reader with them. Each record is
read by :mod:`~longhaul_daemon.state.own_entries`, which every other reader of it shares.
``compaction-state.line`` entries are display only and never read (PASS-15).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longhaul_daemon.state.clean import clean_state
from longhaul_daemon.state.entry_kinds import (
    EVENT_TYPE,
    SPAN_TYPE,
    is_custom,
    is_longhaul_compaction,
)
from longhaul_daemon.state.model import NOTE_KINDS, ClosedAs, Item, Note, Rule, State, Value
from longhaul_daemon.state.own_entries import (
    Refusal,
    SpanRecord,
    format_refusal,
    read_details_state,
    read_span_record,
)
from longhaul_daemon.state.sanitize import sanitize

__all__ = [
    "EVENT_KINDS",
    "Anomaly",
    "FoldResult",
    "SpanInfo",
    "fold",
]

EVENT_KINDS = frozenset({"rule", "lift", "decision", "deadEnd", "value", "remember", "objective", "now"})
_TEXT = 4000


@dataclass(frozen=True)
class Anomaly:
    """An entry the fold could not use, by entry id and reason code (FOLD-6, INSPECT-4)."""

    entry_id: str | None
    # newer-format, bad-format, malformed, unknown-kind, duplicate-seq, unknown-rule, unknown-compaction,
    # duplicate-span-record
    code: str
    detail: str


@dataclass(frozen=True)
class SpanInfo:
    """One Longhaul compaction on the branch, numbered along it (PASS-16), and what its span record says."""

    span: int
    compaction_id: str | None
    pass_id: str | None
    closed_as: ClosedAs | None  # None when the record is missing or not v1 (FORMAT-5)
    detail_available: bool
    record: dict[str, Any] | None = None  # the v1 span record read for this span, as the transcript holds it


@dataclass(frozen=True)
class FoldResult:
    """What folding a branch gives: the State, its anomalies, the base it started from and the spans."""

    state: State
    anomalies: list[Anomaly] = field(default_factory=list)
    base_compaction_id: str | None = None
    base_refused: bool = False  # a base existed but its state could not be read (FORMAT-3, malformed)
    newest_compaction_foreign: bool = False  # the newest compaction on the branch is not Longhaul's (FOLD-11)
    foreign_compactions: list[str] = field(default_factory=list)  # ids, oldest first (INSPECT-9)
    spans: list[SpanInfo] = field(default_factory=list)
    remembered: list[Note] = field(default_factory=list)  # remember events since the base, not yet numbered

    @property
    def judged_up_to(self) -> str | None:
        """The compaction whose state judged the messages before its kept boundary: the base, unless it was
        refused (then nothing was judged that this daemon can read, and the takeover starts at the root)."""
        return None if self.base_refused else self.base_compaction_id


class _Payload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _RulePayload(_Payload):
    words: str = Field(min_length=1, max_length=_TEXT)
    message: str = Field(min_length=1, max_length=64)


class _LiftPayload(_Payload):
    target: str = Field(min_length=1, max_length=64)
    by: str | None = Field(default=None, max_length=64)


class _ItemPayload(_Payload):
    text: str = Field(min_length=1, max_length=_TEXT)
    evidence: list[str] = Field(default_factory=list, max_length=64)


class _ValuePayload(_Payload):
    value: str = Field(min_length=1, max_length=_TEXT)
    what: str = Field(min_length=1, max_length=_TEXT)
    turn: str = Field(min_length=1, max_length=64)


class _TextPayload(_Payload):
    text: str = Field(min_length=1, max_length=_TEXT)


_PAYLOADS: dict[str, type[_Payload]] = {
    "rule": _RulePayload,
    "lift": _LiftPayload,
    "decision": _ItemPayload,
    "deadEnd": _ItemPayload,
    "value": _ValuePayload,
    "objective": _TextPayload,
    "now": _TextPayload,
}


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _anomaly(entry_id: str | None, refusal: Refusal) -> Anomaly:
    return Anomaly(entry_id, refusal.code, refusal.detail)


@dataclass(frozen=True)
class _Event:
    seq: int
    entry_id: str | None
    kind: str
    payload: _Payload


def _read_event(entry: Mapping[str, Any], anomalies: list[Anomaly]) -> _Event | Note | None:
    entry_id = _str(entry.get("id"))
    data = entry.get("data")
    if not isinstance(data, dict):
        anomalies.append(Anomaly(entry_id, "malformed", f"{EVENT_TYPE} has no data object"))
        return None
    refused = format_refusal(data.get("stateFormat"), EVENT_TYPE)
    if refused is not None:
        anomalies.append(_anomaly(entry_id, refused))
        return None
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in EVENT_KINDS:
        shown = kind[:40] if isinstance(kind, str) else type(kind).__name__
        anomalies.append(Anomaly(entry_id, "unknown-kind", f"{EVENT_TYPE} of unknown kind {shown!r}"))
        return None
    if kind == "remember":
        # A note is numbered at the Close that takes it in (PASS-5), so any seq it carries is not read.
        try:
            text = sanitize(_TextPayload.model_validate(data).text)
        except ValidationError:
            text = ""
        if not text:
            anomalies.append(Anomaly(entry_id, "malformed", "remember event without a usable text"))
            return None
        hint = data.get("noteKind")
        kind = hint if isinstance(hint, str) and hint in NOTE_KINDS else None
        return Note(text=text, seq=0, entryId=entry_id, kind=kind)
    seq = data.get("seq")
    if type(seq) is not int or seq < 1:
        anomalies.append(Anomaly(entry_id, "malformed", f"{kind} event without a positive integer seq"))
        return None
    try:
        payload = _PAYLOADS[kind].model_validate(data)
    except ValidationError:
        anomalies.append(Anomaly(entry_id, "malformed", f"{kind} event with missing or invalid fields"))
        return None
    return _Event(seq, entry_id, kind, payload)


def _apply(state: State, event: _Event, anomalies: list[Anomaly]) -> None:
    span = state.span + 1  # events after the base belong to the span now open
    p = event.payload
    if isinstance(p, _RulePayload):
        state.rules.append(
            Rule(id=f"R{state.nextRule}", words=p.words, message=p.message, seq=event.seq, span=span)
        )
        state.nextRule += 1
    elif isinstance(p, _LiftPayload):
        rule = next((r for r in state.rules if r.id == p.target), None)
        if rule is None:
            anomalies.append(Anomaly(event.entry_id, "unknown-rule", "lift names no rule in the state"))
            return
        if not rule.lifted:  # a lift already applied is dropped silently (FAIL-18)
            rule.lifted = True
            rule.liftedBy = p.by
            rule.liftSeq = event.seq  # LIFT-9; replacedBy stays unset: a lift event names no replacing rule
    elif isinstance(p, _ItemPayload):
        item = Item(text=p.text, evidence=list(p.evidence), seq=event.seq, span=span)
        (state.decisions if event.kind == "decision" else state.deadEnds).append(item)
    elif isinstance(p, _ValuePayload):
        state.values.append(Value(value=p.value, what=p.what, turn=p.turn, seq=event.seq, span=span))
    elif isinstance(p, _TextPayload):
        if event.kind == "objective":
            state.objective = p.text
        else:
            state.now = p.text
    state.seq = max(state.seq, event.seq)


def _span_infos(
    entries: list[dict[str, Any]],
    compactions: list[int],
    longhaul: list[int],
    span_records: list[int],
    anomalies: list[Anomaly],
) -> list[SpanInfo]:
    """FOLD-5, FORMAT-5: each Longhaul compaction and the v1 record that names it, if any (the positions of
    compactions, Longhaul's among them, and span records are found by the fold's one scan of the branch)."""
    compaction_ids = {_str(entries[i].get("id")) for i in compactions} - {None}
    number_of = {_str(entries[i].get("id")): n for n, i in enumerate(longhaul, start=1)}
    records: dict[str, SpanRecord] = {}
    raw: dict[str, dict[str, Any]] = {}
    for entry in (entries[i] for i in span_records):
        entry_id = _str(entry.get("id"))
        record = read_span_record(entry)
        if record is None:
            continue  # another version: skipped without an anomaly, the span's detail is unavailable
        if isinstance(record, Refusal):
            anomalies.append(_anomaly(entry_id, record))
            continue
        if record.compactionId not in compaction_ids or record.compactionId not in number_of:
            what = (
                "a compaction not by Longhaul" if record.compactionId in compaction_ids else "no compaction"
            )
            anomalies.append(
                Anomaly(entry_id, "unknown-compaction", f"{SPAN_TYPE} names {what} on this branch")
            )
        elif record.compactionId in records:
            anomalies.append(
                Anomaly(entry_id, "duplicate-span-record", f"a second {SPAN_TYPE} for one compaction")
            )
        else:
            records[record.compactionId] = record
            raw[record.compactionId] = entry["data"]
    infos: list[SpanInfo] = []
    for number, index in enumerate(longhaul, start=1):
        entry_id = _str(entries[index].get("id"))
        found = records.get(entry_id) if entry_id is not None else None
        details_pass = _str(entries[index]["details"].get("passId"))
        infos.append(
            SpanInfo(
                span=number,
                compaction_id=entry_id,
                pass_id=found.passId if found is not None and found.passId else details_pass,
                closed_as=found.closedAs if found is not None else None,
                detail_available=found is not None,
                record=raw.get(entry_id) if entry_id is not None else None,
            )
        )
    return infos


_SHOWN_ID = re.compile(r"\b([CE])([1-9][0-9]{0,8})\b")


def _counters_past(summary: object) -> tuple[int, int]:
    """The next command and error numbers past every ``C<n>``/``E<n>`` a summary shows (FORMAT-3)."""
    highest = {"C": 0, "E": 0}
    if isinstance(summary, str):
        for letter, number in _SHOWN_ID.findall(summary):
            highest[letter] = max(highest[letter], int(number))
    return highest["C"] + 1, highest["E"] + 1


def fold(branch: list[dict[str, Any]], *, stop_after_span: int | None = None) -> FoldResult:
    """The state of ``branch`` (root to leaf, as pi's ``getBranch()``), or as it stood after span N (FOLD-9).

    Raises ``ValueError`` only when ``stop_after_span`` names no Longhaul span on the branch, a caller error.
    """
    entries = [e for e in branch if isinstance(e, dict)]
    anomalies: list[Anomaly] = []
    # One scan of the whole branch; everything after it looks only at the entries it found.
    compactions: list[int] = []
    span_records: list[int] = []
    for i, e in enumerate(entries):
        kind = e.get("type")
        if kind == "compaction":
            compactions.append(i)
        elif kind == "custom" and e.get("customType") == SPAN_TYPE:
            span_records.append(i)
    longhaul = [i for i in compactions if is_longhaul_compaction(entries[i])]
    longhaul_set = set(longhaul)
    foreign = [_str(entries[i].get("id")) or "" for i in compactions if i not in longhaul_set]

    if stop_after_span is None:
        base_number = len(longhaul)
        end = len(entries)
    elif 1 <= stop_after_span <= len(longhaul):
        base_number = stop_after_span
        later = [i for i in compactions if i > longhaul[base_number - 1]]
        end = later[0] if later else len(entries)
    else:
        raise ValueError(f"span {stop_after_span} is not on this branch ({len(longhaul)} Longhaul spans)")

    state: State | None = State()
    base_index = -1
    base_id: str | None = None
    if base_number > 0:
        base_index = longhaul[base_number - 1]
        base_id = _str(entries[base_index].get("id"))
        base = read_details_state(entries[base_index], base_number)
        if isinstance(base, Refusal):
            anomalies.append(_anomaly(base_id, base))
            state = None
        else:
            state = base
    refused = state is None
    if state is None:
        # FORMAT-3: nothing is read from it, but its number is spent so span numbers stay unique (PASS-16),
        # and its summary is a foreign summary the takeover reads; the ledger counts on past every id it
        # shows, so an id the agent saw never comes to mean another command (LEDGER-5).
        next_command, next_error = _counters_past(entries[base_index].get("summary"))
        state = State(span=base_number, nextCommand=next_command, nextError=next_error)

    events: list[tuple[_Event, int]] = []
    remembered: list[Note] = []
    for index in range(base_index + 1, end):
        if is_custom(entries[index], EVENT_TYPE):
            read = _read_event(entries[index], anomalies)
            if isinstance(read, Note):
                remembered.append(read)
            elif read is not None:
                events.append((read, index))
    seen: set[int] = set()
    for event, _ in sorted(events, key=lambda pair: (pair[0].seq, pair[1])):
        if event.seq <= state.seq or event.seq in seen:  # FOLD-3, FOLD-7: the first in branch order wins
            anomalies.append(
                Anomaly(event.entry_id, "duplicate-seq", f"sequence number {event.seq} already held")
            )
            continue
        seen.add(event.seq)
        _apply(state, event, anomalies)

    spans = _span_infos(entries, compactions, longhaul, span_records, anomalies)
    base_refused = refused and base_number > 0
    # FOLD-11, FORMAT-3: a refused base is taken over as another compactor's would be, from the root up
    newest_foreign = bool(compactions) and (
        compactions[-1] not in longhaul_set or (base_refused and compactions[-1] == base_index)
    )
    return FoldResult(
        state=clean_state(state),
        anomalies=anomalies,
        base_compaction_id=base_id,
        base_refused=base_refused,
        newest_compaction_foreign=newest_foreign,
        foreign_compactions=foreign,
        spans=spans,
        remembered=remembered,
    )
