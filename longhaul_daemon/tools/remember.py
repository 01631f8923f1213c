"""Check and bound a ``longhaul_remember`` note and build the entry it becomes (TOOLS-1, TOOLS-2, TOOLS-4).

The daemon decides; the shim only appends what comes back. A note is sanitized to one printable line and must
hold 1..500 code points after that, or the call gets an error result and nothing is written. The entry is a
``compaction-state.event`` of kind ``remember``: the fold files it under notes, never under rules, and the
renderer shows it as the agent's own words, never the user's (TOOLS-4, QUOTE-8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longhaul_daemon.state.entry_kinds import EVENT_TYPE
from longhaul_daemon.state.model import NOTE_KINDS, STATE_FORMAT
from longhaul_daemon.state.sanitize import sanitize

__all__ = ["MAX_NOTE_CHARS", "NOTE_KINDS", "RememberOutcome", "remember"]

MAX_NOTE_CHARS = 500  # TOOLS-1: 1–500 characters, counted in code points after sanitizing
_TOOL = "longhaul_remember"


@dataclass(frozen=True)
class RememberOutcome:
    """The tool result text, and the entry to append when the note was accepted."""

    ok: bool
    text: str
    custom_type: str | None = None
    data: dict[str, Any] | None = None


def _refuse(why: str) -> RememberOutcome:
    return RememberOutcome(ok=False, text=f"{_TOOL}: {why} Nothing was remembered.")


def remember(text: str, kind: str | None = None) -> RememberOutcome:
    """Accept or refuse one note; never raises for what the agent sent."""
    note_kind = "note" if kind is None else kind.strip().lower()
    if note_kind not in NOTE_KINDS:
        return _refuse(f"kind must be one of {', '.join(NOTE_KINDS)}.")
    clean = sanitize(text)
    if not clean:
        return _refuse("the note is empty (after removing control characters and extra whitespace).")
    if len(clean) > MAX_NOTE_CHARS:
        return _refuse(
            f"the note has {len(clean)} characters; the limit is {MAX_NOTE_CHARS}. Shorten it and call again."
        )
    data: dict[str, Any] = {
        "stateFormat": STATE_FORMAT,  # FORMAT-1
        "kind": "remember",
        "text": clean,
        "noteKind": note_kind,  # a hint for the Diff: a note becomes a decision only through it (TOOLS-3)
    }
    label = "note" if note_kind == "note" else f"{note_kind} note"
    return RememberOutcome(
        ok=True,
        text=(
            f"Remembered as your {label} ({len(clean)} characters). The next compaction keeps it under "
            "notes, as your own note, never as the user's words."
        ),
        custom_type=EVENT_TYPE,
        data=data,
    )
