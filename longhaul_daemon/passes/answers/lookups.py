"""Values the user looked up with a short command of their own, kept by code whatever the model names.

A weak model often names no value at all, and a value the user went to look at (``!grep -n port settings.ini``
printing ``3:port = 8431``) is exactly one the agent will need after a compaction. Ours: a *lookup* is a user
``!command`` in the context (a ``bashExecution`` not excluded from it) that finished with exit status 0, was
neither cancelled nor truncated, and printed at most :data:`LOOKUP_LINES` non-blank lines of at most
:data:`LOOKUP_CHARS` characters in all. Each such line, trimmed, is a value named by the command (``name`` for
its first line, ``name (line 2)`` for the next), credited to the turn the command ran in, and checked like any
value, against the output it came from (VALUE-2..VALUE-4, :func:`find_value`), so it stands in the State
exactly as printed and its turn holds it; no second walk over the span is needed. Longer output is a listing
or a log, not an answer. Nothing is kept from a command whose text or output names a secret
(:data:`_SECRET_WORDS`): a user who prints a token to check it does not want it copied into every later
summary.

The newest :data:`MAX_LOOKUPS` lookups are kept; a command run again later replaces its older value by name
(VALUE-8). One pass over the span; pure, nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longhaul_daemon.passes.answers.quotes import normalize_newlines
from longhaul_daemon.passes.answers.values import ValueCandidate, find_value
from longhaul_daemon.state.sanitize import sanitize
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["LOOKUP_CHARS", "LOOKUP_LINES", "MAX_LOOKUPS", "NAME_CHARS", "lookup_values"]

LOOKUP_LINES = 3
LOOKUP_CHARS = 200
MAX_LOOKUPS = 8
NAME_CHARS = 60  # a command's name in the State: enough to tell lookups apart, never a whole script
_SECRET_WORDS = re.compile(
    r"passw|passphrase|secret|token|api[_-]?key|apikey|private[_-]?key|credential|authoriz|bearer|cookie",
    re.IGNORECASE,
)


def _lines(item: SpanMessage) -> list[str] | None:
    """The trimmed non-blank output lines of a user command that is a lookup, else None."""
    message = item.parsed
    if message.role != "bashExecution" or message.excludeFromContext:
        return None
    if message.exitCode != 0 or message.cancelled or message.truncated or not message.command:
        return None
    output = normalize_newlines(message.output or "")
    if not output.strip() or len(output.strip()) > LOOKUP_CHARS:
        return None
    lines = [line.strip() for line in output.split("\n") if line.strip()]
    if len(lines) > LOOKUP_LINES:
        return None
    return [line for line in lines if find_value(output, line).kept]  # VALUE-2, VALUE-4


def _name(command: str) -> str:
    name = sanitize(command)
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def lookup_values(span: Sequence[SpanMessage]) -> tuple[ValueCandidate, ...]:
    """The values the user's own short commands in ``span`` printed, oldest first (the module's rule).

    A command before the span's first user message has no turn here (VALUE-3) and gives nothing."""
    found: dict[str, ValueCandidate] = {}  # by name: the newest run of a command wins
    turn: str | None = None
    for item in span:
        if item.role == "user" and item.user_id is not None:
            turn = item.user_id
            continue
        if turn is None:
            continue
        lines = _lines(item)
        command = item.parsed.command or ""
        if lines is None or any(_SECRET_WORDS.search(text) for text in (command, *lines)):
            continue
        base = _name(command)
        if not base:
            continue
        for number, line in enumerate(lines, start=1):
            name = base if number == 1 else f"{base} (line {number})"
            found.pop(name, None)
            found[name] = ValueCandidate(name, line, turn)
    return tuple(found.values())[-MAX_LOOKUPS:]
