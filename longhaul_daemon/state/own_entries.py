"""Longhaul's own records in a pi session file, each read by one function: the fold's reading, shared.

The fold, the inspector, ``longhaul_recall``, the session-file reader and ``replay`` all read the same
records: a Longhaul compaction's ``details``, the ``compaction-state.span`` record after it and the display
``compaction-state.line``. Each asks here, so where a record is usable for one it is usable for all.
Transcript bytes are untrusted: a reader returns a :class:`Refusal` or None, never raises on content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from longhaul_daemon.state.entry_kinds import LINE_TYPE, is_custom
from longhaul_daemon.state.model import STATE_FORMAT, ClosedAs, State

__all__ = [
    "DETAILS_KIND",
    "Refusal",
    "SpanRecord",
    "compaction_lines",
    "format_refusal",
    "read_details_state",
    "read_span_record",
]

DETAILS_KIND = "compaction details"
_SPAN_KIND = "compaction-state.span"


@dataclass(frozen=True)
class Refusal:
    """Why a record is not read: a reason code (``bad-format``, ``newer-format``, ``malformed``) and a detail
    that quotes nothing from the record."""

    code: str
    detail: str


def format_refusal(value: object, what: str) -> Refusal | None:
    """FORMAT-2, FORMAT-4: a Longhaul record is read only when it says ``stateFormat`` 1, as an integer."""
    if type(value) is not int or value < 1:
        return Refusal("bad-format", f"{what} has a missing or invalid stateFormat")
    if value > STATE_FORMAT:
        return Refusal("newer-format", f"{what} has stateFormat {value}; this daemon reads {STATE_FORMAT}")
    return None


def read_details_state(entry: Mapping[str, Any], span: int | None = None) -> State | Refusal:
    """The State a Longhaul compaction stored in its ``details`` (FORMAT-7), or why it cannot be read.

    ``span`` only names the compaction in the refusal's detail.
    """
    details = entry.get("details")
    if not isinstance(details, Mapping):
        return Refusal("malformed", f"{DETAILS_KIND} are not an object")
    refused = format_refusal(details.get("stateFormat"), DETAILS_KIND)
    if refused is not None:
        return refused
    raw = details.get("state")
    if isinstance(raw, dict):  # the state names its format too; an inner mismatch is refused the same way
        refused = format_refusal(raw.get("stateFormat", STATE_FORMAT), f"{DETAILS_KIND} state")
        if refused is not None:
            return refused
    of_span = f" of span {span}" if span is not None else ""
    if not isinstance(raw, dict):
        return Refusal("malformed", f"{DETAILS_KIND}{of_span}: state is not an object")
    try:
        return State.model_validate(raw)
    except (ValidationError, ValueError, TypeError):
        return Refusal("malformed", f"{DETAILS_KIND}{of_span}: state does not match format 1")


class SpanRecord(BaseModel):
    """The fields of a v1 span record that decide which compaction it describes and how its span closed.

    The rest of the record (messages, commands, errors, narrative, ...) is display data, read by its
    displayers from :attr:`data`.
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    v: Literal[1]
    span: int | None = None
    compactionId: str = Field(min_length=1)
    passId: str | None = None
    closedAs: ClosedAs | None = None


def read_span_record(entry: Mapping[str, Any]) -> SpanRecord | Refusal | None:
    """A ``compaction-state.span`` entry's record (FOLD-5): None for another version, which is skipped
    without a word (FORMAT-5), a :class:`Refusal` for a v1 record with missing or invalid fields."""
    data = entry.get("data")
    if not isinstance(data, dict) or type(data.get("v")) is not int or data.get("v") != 1:
        return None
    try:
        return SpanRecord.model_validate(data)
    except ValidationError:
        return Refusal("malformed", f"{_SPAN_KIND} v1 with missing or invalid fields")


def compaction_lines(branch: Sequence[Mapping[str, Any]]) -> list[dict[str, Any] | None]:
    """For each compaction on ``branch``, in order, its ``compaction-state.line`` data: the first line
    entry with an object after it and before the next compaction (None when there is none)."""
    lines: list[dict[str, Any] | None] = []
    taken = True
    for entry in branch:
        if entry.get("type") == "compaction":
            lines.append(None)
            taken = False
        elif not taken and is_custom(entry, LINE_TYPE):
            data = entry.get("data")
            if isinstance(data, dict):
                lines[-1] = data
                taken = True
    return lines
