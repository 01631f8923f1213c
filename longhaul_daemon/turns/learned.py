"""Values code learns from tool output, the only values turns mode keeps (VALUE-7, TAKEOVER-28).

In turns mode the model names no values, so a value a later turn may need (a port, a timing, a total) is
kept only when code finds it. Our rule, built on the value definition of FACTS-3
(:func:`~longhaul_daemon.diff.values.learn_values`): a token is learned when it first appears in the span in
a tool's output (a tool result, or what a user ``!command`` printed) and the conversation then uses it again,
in a later user or assistant message of the span, not flanked by a letter or digit (VALUE-4). A value the
agent or the user repeated mattered to the work; one only printed did not. The value is named by the words
just before it on its output line (up to :data:`NAME_WORDS`), else by the command or tool that printed it,
and credited to the turn that printed it (VALUE-3), so it still verifies against that turn (VALUE-2). The
newest :data:`MAX_LEARNED` of a span are kept. A value that only an earlier summary held is never learned:
a summary is not tool output. Pure; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from longhaul_daemon.diff.values import ValueCandidate, find_value, learn_values
from longhaul_daemon.state.sanitize import sanitize
from longhaul_daemon.transcript.entries import TextBlock
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["MAX_LEARNED", "NAME_WORDS", "learned_values"]

MAX_LEARNED = 8
NAME_WORDS = 5
_NAME_CHARS = 60
_WORD = re.compile(r"[^\W\d_][\w./-]*")


def _outputs(item: SpanMessage) -> tuple[str, str] | None:
    """The output text of a tool result or user command, with what printed it; None for other messages."""
    message = item.parsed
    if message.role == "toolResult":
        text = "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock))
        return text, f"{message.toolName or 'tool'} output"
    if message.role == "bashExecution" and not message.excludeFromContext:
        return message.output or "", "command output"
    return None


def _name(text: str, token: str, source: str) -> str:
    """The words before the token on its line, else the source."""
    at = find_value(text, token).start
    line_start = text.rfind("\n", 0, max(at, 0)) + 1
    before = text[line_start:at] if at >= 0 else ""
    words = _WORD.findall(before)[-NAME_WORDS:]
    name = sanitize(" ".join(words)).strip(" :=-")
    return (name or source)[:_NAME_CHARS]


def learned_values(span: Sequence[SpanMessage]) -> tuple[ValueCandidate, ...]:
    """VALUE-7: the values ``span`` taught by tool output (the module docstring's rule), oldest first."""
    seen: set[str] = set()  # every token already met in the span, wherever
    printed: dict[str, ValueCandidate] = {}  # token first met in tool output -> its candidate
    used: list[str] = []  # printed tokens used again, in the order they were used
    turn: str | None = None
    for item in span:
        message = item.parsed
        if message.role == "user" and item.user_id is not None:
            turn = item.user_id
        output = _outputs(item)
        if output is not None:
            text, source = output
            for token in learn_values(text):
                if token not in seen and turn is not None:
                    printed[token] = ValueCandidate(_name(text, token, source), token, turn)
                seen.add(token)
            continue
        if message.role not in ("user", "assistant"):
            continue
        for token in learn_values(message.text):
            if token in printed and token not in used and find_value(message.text, token).kept:
                used.append(token)
            seen.add(token)
    return tuple(printed[token] for token in used[-MAX_LEARNED:])
