"""``show(ref)``, the model's only tool in turns mode: read one item of the span whole, never change anything.

TURNS-7: a ref is a user message's ``u<n>`` (any message the conversation offers: the span's, carried ones
and, taking over, the earlier ones), a command's ``C<n>``, an error's ``E<n>`` or a tool call's id from the
Digest. TURNS-8, our decisions (the proposals): at most :data:`SHOW_CAP` calls a turn; each result at most
:data:`RESULT_CHARS` characters, a longer one keeping its head and tail with the cut marked; a result is
also cut to the room the conversation has left, and when too little is left the call is refused. An
unknown ref, a call over the cap, arguments that are not ``{"ref": "..."}``, or a call of another tool
name get an error result saying so (never repeating the made-up tool's name), and the turn goes on.
Transcript text in a result is cleaned as the Digest's is; nothing from a result ever reaches the State.
Pure; nothing raises on model output.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from longhaul_daemon.models.structured import strict_schema
from longhaul_daemon.models.tool_calls import ToolCall, ToolResult, ToolSpec
from longhaul_daemon.passes.prompting.message_text import clean
from longhaul_daemon.passes.turns.span_view import SpanView, ToolUse
from longhaul_daemon.state.model import Command, ErrorEntry

__all__ = ["MAX_REF", "MIN_ROOM", "RESULT_CHARS", "SHOW_CAP", "SHOW_TOOL", "ShowIndex", "run_show"]

SHOW_CAP = 4  # TURNS-8: calls per turn
RESULT_CHARS = 4000  # TURNS-8: characters per result
MIN_ROOM = 200  # below this many characters of room left, a call is refused rather than cut to nothing
MAX_REF = 40  # characters of a ref the tool reads; a longer one is unknown

SHOW_TOOL = ToolSpec(
    name="show",
    description=(
        "Show one item of this span whole, read-only: a user message (u12), a command (C4), an error (E2) "
        f"or a tool call by the id the digest gives it. At most {SHOW_CAP} calls in a turn."
    ),
    parameters=strict_schema(
        {
            "type": "object",
            "properties": {"ref": {"type": "string", "description": "u<n>, C<n>, E<n> or a tool-call id"}},
            "required": ["ref"],
        }
    ),
)


@dataclass(frozen=True)
class ShowIndex:
    """What ``show`` can return: offered messages by ``u<n>``, the ledger, and the span's tool uses."""

    messages: Mapping[str, str]
    commands: Mapping[str, Command]
    errors: Mapping[str, ErrorEntry]
    view: SpanView

    @classmethod
    def build(
        cls,
        messages: Mapping[str, str],
        commands: Sequence[Command],
        errors: Sequence[ErrorEntry],
        view: SpanView,
    ) -> ShowIndex:
        """Index the offered messages, commands and errors by id."""
        return cls(dict(messages), {c.id: c for c in commands}, {e.id: e for e in errors}, view)

    def lookup(self, ref: str) -> str | None:
        """The item ``ref`` names, as text, or None when nothing has that id."""
        if ref in self.messages:
            text = self.messages[ref]
            return f"{ref}, a user message ({len(text)} characters):\n{text}"
        if ref in self.commands:
            command = self.commands[ref]
            head = f"{ref}, a command (exit {command.exit}, span {command.span}):\n{command.text}"
            return head + _use_tail(self.view.by_ledger.get(ref))
        if ref in self.errors:
            error = self.errors[ref]
            state = "open" if error.open else "closed"
            source = f", from {error.command}" if error.command else ""
            head = f"{ref}, an error of {error.tool}{source} ({state}):\n{error.text}"
            return head + _use_tail(self.view.by_ledger.get(ref))
        use = self.view.by_call.get(ref)
        if use is not None:
            ids = f" ({', '.join(use.ledger)})" if use.ledger else ""
            return f"{ref}, a tool call{ids}:\n{use.name}({use.arguments})" + _use_tail(use)
        return None


def _use_tail(use: ToolUse | None) -> str:
    if use is None:
        return ""
    if use.result is None:
        return "\nResult: none in this span."
    return f"\nResult ({use.status}):\n{use.result}"


def _cut(text: str, limit: int) -> str:
    """Whole up to ``limit`` characters, else its head and tail with the cut marked."""
    if len(text) <= limit:
        return text
    marker = f"\n[… {len(text)} characters in all, cut …]\n"
    keep = max(0, limit - len(marker))
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


_CLEAN_WHOLE = 4  # an item up to this many times the limit is cleaned whole before it is cut


def _shown(text: str, limit: int) -> str:
    """``text`` cleaned and cut to ``limit``; a long one (a big log) is cleaned at its edges only, since
    cleaning never lengthens text, so showing it costs what its edges cost, not what the whole costs."""
    if len(text) <= _CLEAN_WHOLE * limit:
        return _cut(clean(text), limit)
    marker = f"\n[… {len(text)} characters in all, cut …]\n"
    keep = max(0, limit - len(marker))
    head, tail = clean(text[: keep // 2]), clean(text[len(text) - (keep - keep // 2) :])
    return head + marker + tail


def _error(call: ToolCall, text: str) -> ToolResult:
    return ToolResult(call.id, call.name, text, is_error=True)


def run_show(call: ToolCall, index: ShowIndex, *, used: int, room_chars: int) -> ToolResult:
    """The result of one call; ``used`` is how many calls this turn already made, ``room_chars`` how many
    characters the conversation can still take."""
    if call.name != SHOW_TOOL.name:
        # a made-up name is not echoed: the model wrote it, and it may carry anything
        return _error(call, "there is no such tool; the only tool is show(ref)")
    if used >= SHOW_CAP:
        return _error(call, f"show is limited to {SHOW_CAP} calls a turn; answer with what you have")
    ref = call.arguments.get("ref")
    if not isinstance(ref, str) or not ref.strip():
        return _error(call, 'show takes {"ref": "<id>"}: a u<n>, C<n>, E<n> or tool-call id')
    ref = ref.strip()
    found = index.lookup(ref) if len(ref) <= MAX_REF else None
    if found is None:
        shown = clean(ref[:MAX_REF])
        return _error(call, f"unknown ref {shown!r}: give a u<n>, C<n>, E<n> or tool-call id from the digest")
    if room_chars < MIN_ROOM:
        return _error(call, "no room is left in this conversation for more results; answer now")
    return ToolResult(call.id, call.name, _shown(found, min(RESULT_CHARS, room_chars)))
