"""Values a short command printed, the user's or the agent's own, kept by code whatever the model names.

A weak model often names no value at all, and a value someone went to look up (``grep -n port settings.ini``
printing ``3:port = 8431``) is exactly one the agent will need after a compaction. Ours: a *lookup* is a
command in the context that finished with exit status 0, was neither cancelled nor cut, and printed at most
:data:`LOOKUP_LINES` non-blank lines of at most :data:`LOOKUP_CHARS` characters in all: a user ``!command``
(a ``bashExecution`` not excluded from the context), or a ``bash`` call of the agent with its result (exit
status as the ledger reads it, LEDGER-2; a result pi truncated is not one, nor a line its command spells out
itself, as ``echo done`` does, nor a status word such as ``ok``). Each such line, trimmed, is a
value named by the command (``name`` for its first line, ``name (line 2)`` for the next), credited to the
turn the command ran in, and checked like any value, against the output it came from (VALUE-2..VALUE-4,
:func:`find_value`), so it stands in the State exactly as printed and its turn holds it; no second walk over
the span is needed. Longer output is a listing or a log, not an answer. Nothing is kept from a command whose
text or output names a secret (:data:`_SECRET_WORDS`): printing a token to check it is no reason to copy it
into every later summary.

The newest :data:`MAX_LOOKUPS` lookups are kept, the user's first: the agent's fill what room is left, at most
:data:`MAX_AGENT_LOOKUPS`, since an agent runs many short commands and the user looks up what matters to
them. A command run again later replaces its older value by name (VALUE-8). One pass over the span; pure,
nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longhaul_daemon.passes.answers.quotes import normalize_newlines
from longhaul_daemon.passes.answers.values import ValueCandidate, find_value, learn_values
from longhaul_daemon.passes.ledger import tool_exit
from longhaul_daemon.state.sanitize import sanitize
from longhaul_daemon.transcript.entries import Message
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["LOOKUP_CHARS", "LOOKUP_LINES", "MAX_AGENT_LOOKUPS", "MAX_LOOKUPS", "NAME_CHARS", "lookup_values"]

LOOKUP_LINES = 3
LOOKUP_CHARS = 200
MAX_LOOKUPS = 8
MAX_AGENT_LOOKUPS = 4  # the agent runs many short commands (git status, ls): the user's own come first
_AGENT_LINE_CHARS = 6  # shorter, with no value token: a status word ("ok", "done"), not a value
NAME_CHARS = 60  # a command's name in the State: enough to tell lookups apart, never a whole script
_SECRET_WORDS = re.compile(
    r"passw|passphrase|secret|token|api[_-]?key|apikey|private[_-]?key|credential|authoriz|bearer|cookie",
    re.IGNORECASE,
)


def _output_lines(output: str) -> list[str] | None:
    """The trimmed non-blank lines of a lookup's output, each checked against it; None when it is too long."""
    output = normalize_newlines(output)
    if not output.strip() or len(output.strip()) > LOOKUP_CHARS:
        return None
    lines = [line.strip() for line in output.split("\n") if line.strip()]
    if len(lines) > LOOKUP_LINES:
        return None
    return [line for line in lines if find_value(output, line).kept]  # VALUE-2, VALUE-4


def _user_lines(item: SpanMessage) -> list[str] | None:
    """The output lines of a user ``!command`` that is a lookup, else None."""
    message = item.parsed
    if message.role != "bashExecution" or message.excludeFromContext:
        return None
    if message.exitCode != 0 or message.cancelled or message.truncated or not message.command:
        return None
    return _output_lines(message.output or "")


def _agent_lines(result: Message) -> list[str] | None:
    """The output lines of the agent's ``bash`` call whose result this is, when it is a lookup, else None."""
    if result.toolName not in (None, "bash") or result.isError or tool_exit(result) != 0:
        return None
    details = result.details
    if isinstance(details, dict) and (details.get("truncation") or details.get("fullOutputPath")):
        return None  # pi cut the output: what was printed is not all there was
    return _output_lines(result.text)


def _looked_up(line: str, command: str) -> bool:
    """Whether an agent's output line tells something: not spelled out by its command (``echo done``), and
    a value token (VALUE-7) or at least :data:`_AGENT_LINE_CHARS` long, not a bare ``ok``."""
    if line in command:
        return False
    return len(line) >= _AGENT_LINE_CHARS or bool(learn_values(line))


def _name(command: str) -> str:
    name = sanitize(command)
    return name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1] + "…"


def lookup_values(span: Sequence[SpanMessage]) -> tuple[ValueCandidate, ...]:
    """The values short commands in ``span`` printed, the user's and the agent's, oldest first (the module's
    rule).

    A command before the span's first user message has no turn here (VALUE-3) and gives nothing."""
    found: dict[
        str, tuple[int, bool, ValueCandidate]
    ] = {}  # by name, the newest run wins: (at, agent's, value)
    calls: dict[str, str] = {}  # the agent's bash calls waiting for their result, by call id
    turn: str | None = None
    for at, item in enumerate(span):
        message = item.parsed
        if item.role == "user" and item.user_id is not None:
            turn = item.user_id
            continue
        if message.role == "assistant":
            for call in message.tool_calls:
                command = call.arguments.get("command")
                if call.name == "bash" and call.id is not None and isinstance(command, str):
                    calls[call.id] = command
            continue
        agent = message.role == "toolResult"
        if agent:
            command = calls.pop(message.toolCallId or "", "")
            lines = _agent_lines(message) if command else None
            lines = [line for line in lines if _looked_up(line, command)] if lines else lines
        else:
            command = message.command or ""
            lines = _user_lines(item)
        if turn is None or lines is None or any(_SECRET_WORDS.search(t) for t in (command, *lines)):
            continue
        base = _name(command)
        if not base:
            continue
        for number, line in enumerate(lines, start=1):
            name = base if number == 1 else f"{base} (line {number})"
            found.pop(name, None)
            found[name] = (at, agent, ValueCandidate(name, line, turn))
    users = [v for v in found.values() if not v[1]][-MAX_LOOKUPS:]
    room = min(MAX_AGENT_LOOKUPS, MAX_LOOKUPS - len(users))
    agents = [v for v in found.values() if v[1]][-room:] if room > 0 else []
    return tuple(value for _, _, value in sorted(users + agents, key=lambda v: v[0]))
