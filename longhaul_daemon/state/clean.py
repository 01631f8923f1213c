"""What "clean" means for each text field of a State, so every reader of ``details.state`` gets clean text.

The State is read by more than the renderer (the next pass, the Diff prompt, ``longhaul_recall``, the
inspector), so text is cleaned as it enters the State: the Diff's accepted answer (diff/apply.py, verify.py),
Close (passes/close.py) and the fold's reading of older transcripts (:mod:`.fold`). Three kinds of field:

- prose (Now, objective, decisions, dead ends, value names, notes, the work log, error lines, git's branch
  and subjects): :func:`~.sanitize.sanitize`, one line, spaces collapsed, as the summary shows it;
- exact one-line text (a value, a file path, a dirty path): :func:`clean_line`, spacing kept, since a value
  was verified verbatim and a path must stay a path;
- the user's words and commands (rule words, carried messages, command text): :func:`clean_text`, line breaks
  (as ``\\n``) and tabs kept, so a rule stays a verbatim quote.

Escapes, C0/C1 controls, DEL, zero-width and bidi characters and U+2028/2029 go everywhere. Ids the ledger and
the fold match on (entry ids, tool-call ids, ``u<n>`` lists) are kept as read, so matching never breaks.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from longhaul_daemon.state.model import Command, ErrorEntry, Item, State, World
from longhaul_daemon.state.sanitize import ESCAPE_SEQUENCES, LINE_BREAKS, is_plain, is_safe_char, sanitize

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "clean_command",
    "clean_error",
    "clean_item",
    "clean_line",
    "clean_span",
    "clean_state",
    "clean_text",
    "prose",
]


def _kept(text: str, *, one_line: bool) -> list[tuple[int, str]]:
    """What cleaning keeps of ``text``: (index in ``text``, character written) pairs, in order.

    Escape sequences go whole; a line break becomes ``\n`` (a space when ``one_line``), CRLF counting as one;
    a tab stays a tab (a space when ``one_line``), the unit separator becomes a space, and every other
    character that never prints is dropped. Being a filter over positions, it makes :func:`clean_span` exact.
    """
    kept: list[tuple[int, str]] = []
    pos = 0
    for cut in (*ESCAPE_SEQUENCES.finditer(text), None):
        stop = cut.start() if cut is not None else len(text)
        for at in range(pos, stop):
            ch = text[at]
            if ch in LINE_BREAKS:
                if ch == "\r" and text.startswith("\n", at + 1):
                    continue
                kept.append((at, " " if one_line else "\n"))
            elif ch == "\t":
                kept.append((at, " " if one_line else "\t"))
            elif ch == "\x1f":  # the unit separator jumps a column, as the sanitizer reads it
                kept.append((at, " "))
            elif is_safe_char(ch):
                kept.append((at, ch))
        if cut is not None:
            pos = cut.end()
    return kept


def clean_text(text: str) -> str:
    """Multi-line text for the State (rule words, a carried message, a command): as written, minus escape
    sequences and every control or format character but ``\n`` and ``\t``; any line break becomes ``\n``.
    Idempotent."""
    if is_plain(text):
        return text
    return "".join(ch for _, ch in _kept(text, one_line=False))


def clean_span(text: str, start: int, end: int) -> str:
    """The part of ``clean_text(text)`` that ``text[start:end]`` became, so it is always a substring of it.

    Rule words are cut from a message by position; cleaning the cut the same way the message is cleaned keeps
    the recorded words findable in the cleaned message even when an escape sequence straddles the cut.
    """
    return "".join(ch for at, ch in _kept(text, one_line=False) if start <= at < end)


def clean_line(text: str) -> str:
    """One-line text for the State where spacing matters (a path, a value): :func:`clean_text` with line
    breaks and tabs as spaces, nothing collapsed or trimmed. Idempotent."""
    if is_plain(text):
        return text
    return "".join(ch for _, ch in _kept(text, one_line=True))


def prose(text: str | None) -> str | None:
    """A prose field: one printable line, or None when nothing printable is left."""
    clean = sanitize(text or "")
    return clean or None


def clean_item(item: Item) -> Item:
    """A decision or dead end with its text, reason and evidence ids cleaned."""
    evidence = [e for e in (sanitize(e) for e in item.evidence) if e]
    return _cleaned(item, text=sanitize(item.text), why=prose(item.why), evidence=evidence)


def _world(world: World) -> World:
    new = world.model_copy(deep=True)
    new.branch = prose(world.branch) if world.branch is not None else None
    for commit in [*([new.head] if new.head is not None else []), *new.earlier]:
        commit.hash = sanitize(commit.hash)
        commit.subject = sanitize(commit.subject)
    for dirty in new.dirty:
        dirty.status = sanitize(dirty.status)
        dirty.path = clean_line(dirty.path)
    new.missing = [sanitize(m) for m in world.missing]
    return new


def _cleaned(model: M, **fields: object) -> M:
    """``model`` itself when cleaning changed none of ``fields``, else a copy with the cleaned values: a clean
    State is shared, not copied, so cleaning a long ledger costs a scan, not a copy."""
    if all(getattr(model, name) == value for name, value in fields.items()):
        return model
    return model.model_copy(update=fields)


def clean_command(command: Command) -> Command:
    """A ledger command with its text cleaned (the ids the ledger matches on kept as read)."""
    return _cleaned(command, text=clean_text(command.text))


def clean_error(error: ErrorEntry) -> ErrorEntry:
    """A ledger error with its tool and line cleaned."""
    return _cleaned(error, tool=sanitize(error.tool), text=sanitize(error.text))


def clean_state(state: State) -> State:
    """A State like ``state`` whose text fields hold no escape sequence, control or format character.

    Idempotent, so cleaning a clean State changes nothing. File lists are cleaned, deduplicated and kept
    disjoint (LEDGER-11), since two paths may differ only in a character that never prints. ``state`` and the
    models in it are never changed: a model whose text changes is replaced by a cleaned copy.
    """
    modified = {p for p in (clean_line(p) for p in state.modifiedFiles) if p}
    return state.model_copy(
        update={
            "objective": prose(state.objective),
            "now": prose(state.now),
            "rules": [_cleaned(r, words=clean_text(r.words)) for r in state.rules],
            "decisions": [clean_item(i) for i in state.decisions],
            "deadEnds": [clean_item(i) for i in state.deadEnds],
            "values": [
                _cleaned(v, value=clean_line(v.value), what=sanitize(v.what), turn=sanitize(v.turn))
                for v in state.values
            ],
            "notes": [_cleaned(n, text=sanitize(n.text)) for n in state.notes],
            "commands": [clean_command(c) for c in state.commands],
            "errors": [clean_error(e) for e in state.errors],
            "modifiedFiles": sorted(modified),
            "readFiles": sorted({p for p in (clean_line(p) for p in state.readFiles) if p} - modified),
            "world": _world(state.world) if state.world is not None else None,
            "workLog": [_cleaned(line, text=sanitize(line.text)) for line in state.workLog],
            "carriedMessages": [_cleaned(m, text=clean_text(m.text)) for m in state.carriedMessages],
        }
    )
