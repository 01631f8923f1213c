"""What "clean" means for each text field of a State, so every reader of ``details.state`` gets clean text.

The renderer sanitizes what it prints, but the State is read by more than the renderer: the next pass, the
Diff prompt, ``longhaul_recall``, the inspector, any tool that opens the session file. So text is cleaned when
it enters the State (issue 12, item 5): the Diff's accepted answer in :mod:`longhaul_daemon.diff.apply` and
:mod:`longhaul_daemon.diff.verify`, everything at Close (:mod:`longhaul_daemon.passes.close`), and whatever
the fold reads from an older transcript (:mod:`longhaul_daemon.state.fold`). Three kinds of field:

- prose (Now, objective, decisions and dead ends with their reasons, value names, notes, the work log, error
  lines, git's branch and subjects): :func:`~longhaul_daemon.state.sanitize.sanitize`, one line, spaces
  collapsed, as the summary shows it;
- exact one-line text (a value, a file path, a dirty path):
  :func:`~longhaul_daemon.state.sanitize.clean_line`, which keeps the spacing, since a value was verified
  verbatim and a path must stay a path;
- the user's words and commands (rule words, carried messages, command text):
  :func:`~longhaul_daemon.state.sanitize.clean_text`, which keeps line breaks (as ``\\n``) and tabs. A rule
  stays a verbatim quote: its words are the message cleaned the same way, cut at the same place.

Escape sequences, C0 and C1 controls, DEL, zero-width and bidi characters, U+2028/2029 go everywhere; ``\\n``
and ``\\t`` are the only control characters a State holds, and only in the third kind. Ids that the ledger
and the fold match on (entry ids, tool-call ids, ``u<n>`` lists) are kept as read, so matching never breaks.
"""

from __future__ import annotations

from longhaul_daemon.state.model import Item, State, World
from longhaul_daemon.state.sanitize import clean_line, clean_text, sanitize

__all__ = ["clean_item", "clean_state", "prose"]


def prose(text: str | None) -> str | None:
    """A prose field: one printable line, or None when nothing printable is left."""
    clean = sanitize(text or "")
    return clean or None


def clean_item(item: Item) -> Item:
    """A decision or dead end with its text, reason and evidence ids cleaned."""
    return item.model_copy(
        update={
            "text": sanitize(item.text),
            "why": prose(item.why),
            "evidence": [e for e in (sanitize(e) for e in item.evidence) if e],
        }
    )


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


def clean_state(state: State) -> State:
    """A copy of ``state`` whose text fields hold no escape sequence, control or format character.

    Idempotent, so cleaning a clean State changes nothing. File lists are cleaned, deduplicated and kept
    disjoint (LEDGER-11), since two paths may differ only in a character that never prints.
    """
    new = state.model_copy(deep=True)
    new.objective = prose(state.objective)
    new.now = prose(state.now)
    for rule in new.rules:
        rule.words = clean_text(rule.words)
    new.decisions = [clean_item(i) for i in state.decisions]
    new.deadEnds = [clean_item(i) for i in state.deadEnds]
    for value in new.values:
        value.value = clean_line(value.value)
        value.what = sanitize(value.what)
        value.turn = sanitize(value.turn)
    for note in new.notes:
        note.text = sanitize(note.text)
    for command in new.commands:
        command.text = clean_text(command.text)
    for error in new.errors:
        error.tool = sanitize(error.tool)
        error.text = sanitize(error.text)
    modified = {p for p in (clean_line(p) for p in state.modifiedFiles) if p}
    new.modifiedFiles = sorted(modified)
    new.readFiles = sorted({p for p in (clean_line(p) for p in state.readFiles) if p} - modified)
    new.world = _world(state.world) if state.world is not None else None
    for line in new.workLog:
        line.text = sanitize(line.text)
    for message in new.carriedMessages:
        message.text = clean_text(message.text)
    return new
