"""Values code learns from tool output, the only values turns mode keeps (VALUE-7, TAKEOVER-28).

In turns mode the model names no values, so one a later turn may need (a port, a timing) is kept only when
code finds it. Ours, on FACTS-3's value tokens (:func:`~longhaul_daemon.passes.answers.values.value_tokens`):
a token is learned when it first appears in a tool's output in the span (a tool result or a user
``!command``'s output) and a later user or assistant message uses it again, unflanked (VALUE-4): a repeated
value mattered, one only printed did not. It is named by up to :data:`NAME_WORDS` words before it on its line
(within :data:`NAME_WINDOW` characters), else by its command or tool, and credited to the turn that printed
it, so it verifies (VALUE-2, VALUE-3). The newest :data:`MAX_LEARNED` are kept; a summary is not tool output.

Each message is read once, and tool output only for tokens the user or assistant wrote, so the cost grows
with the span's length, not with tokens times output length. Pure; nothing raises.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.answers.quotes import normalize_newlines
from longhaul_daemon.passes.answers.values import ValueCandidate, value_tokens
from longhaul_daemon.state.sanitize import sanitize
from longhaul_daemon.transcript.entries import TextBlock
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["MAX_LEARNED", "NAME_WINDOW", "NAME_WORDS", "learned_values"]

MAX_LEARNED = 8
NAME_WORDS = 5
NAME_WINDOW = 400  # characters before a token its name is read from: five words, with room to spare
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


@dataclass(frozen=True, slots=True)
class _Printed:
    """Where a token first stood in tool output: the output (CRLF-normalized), the offset, who printed it,
    and the turn it is credited to. Its name is read only for the few tokens used again."""

    text: str
    at: int
    source: str
    turn: str

    def candidate(self, token: str) -> ValueCandidate:
        """The value, named by the words before it on its line (at most :data:`NAME_WINDOW` characters
        back), else by its source."""
        text, at = self.text, self.at
        start = max(text.rfind("\n", max(0, at - NAME_WINDOW), at) + 1, at - NAME_WINDOW, 0)
        before = text[start:at]
        if start > 0 and text[start - 1] != "\n":  # the window begins inside the line, maybe in a word
            before = before.partition(" ")[2]
        words = _WORD.findall(before)[-NAME_WORDS:]
        name = sanitize(" ".join(words)).strip(" :=-")
        return ValueCandidate((name or self.source)[:_NAME_CHARS], token, self.turn)


def learned_values(span: Sequence[SpanMessage]) -> tuple[ValueCandidate, ...]:
    """VALUE-7: the values ``span`` taught by tool output (the module docstring's rule), oldest first."""
    # Only a token the user or the assistant wrote can be used again, so only those are looked for in tool
    # output: a 16,000-line log holds tens of thousands of tokens, and almost none of them matter.
    said = frozenset(
        token
        for item in span
        if item.parsed.role in ("user", "assistant")
        for token, _ in value_tokens(normalize_newlines(item.parsed.text))
    )
    seen: set[str] = set()  # every token of ``said`` already met in the span, wherever
    printed: dict[str, _Printed] = {}  # token first met in tool output -> where
    used: dict[str, None] = {}  # printed tokens used again, in the order they were used
    turn: str | None = None
    for item in span:
        message = item.parsed
        if message.role == "user" and item.user_id is not None:
            turn = item.user_id
        output = _outputs(item)
        if output is not None:
            text = normalize_newlines(output[0])
            for token, at in value_tokens(text, said):
                if token not in seen and turn is not None:
                    printed[token] = _Printed(text, at, output[1], turn)
                seen.add(token)
            continue
        if message.role not in ("user", "assistant"):
            continue
        for token, _ in value_tokens(normalize_newlines(message.text)):  # each stands unflanked (VALUE-4)
            if token in printed:
                used.setdefault(token, None)
            seen.add(token)
    return tuple(printed[token].candidate(token) for token in list(used)[-MAX_LEARNED:])
