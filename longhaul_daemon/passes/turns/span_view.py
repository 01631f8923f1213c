"""The span as turns mode shows it: user messages, assistant text, each tool call paired with its result.

The Digest's condensed transcript (TURNS-6) and the ``show`` tool (TURNS-7) read the same view, so a line in
the Digest and what ``show`` returns for its id always describe the same call. A tool call is paired with its
result through ``toolCallId`` wherever the result stands in the span; a result whose call is not in the span
(the span began mid-turn) is a line of its own. Each call and each user ``!command`` carries the ledger ids
(``C<n>``, ``E<n>``) the Ledger step gave it. Text stays as the transcript has it; the Digest and ``show``
clean it (:func:`~longhaul_daemon.passes.prompting.message_text.clean`) when they render it. Pure; nothing
raises.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from longhaul_daemon.passes.prompting.message_text import LedgerIds, ledger_index
from longhaul_daemon.state.model import Command, ErrorEntry
from longhaul_daemon.transcript.entries import ImageBlock, Message, TextBlock
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["SpanView", "ToolUse", "ViewLine", "span_view"]


@dataclass(frozen=True)
class ToolUse:
    """One tool call with its result, or one user ``!command`` with its output.

    ``call_id`` is None for a user command; ``result`` is None when the span holds no result for the call.
    """

    call_id: str | None
    name: str
    arguments: str
    result: str | None
    is_error: bool
    ledger: tuple[str, ...]
    status: str  # "ok", "error", "exit 2", "cancelled", "no result"


@dataclass(frozen=True)
class ViewLine:
    """One line of the condensed transcript: a user message, assistant text, a tool use, or other text."""

    kind: Literal["user", "assistant", "tool", "other"]
    text: str = ""
    user_id: str | None = None
    tool: ToolUse | None = None
    label: str = ""  # for "other": the role or summary kind shown in the line's brackets


@dataclass(frozen=True)
class SpanView:
    """The span's lines in order, and each tool use by its call id and by each of its ledger ids."""

    lines: tuple[ViewLine, ...]
    by_call: dict[str, ToolUse]
    by_ledger: dict[str, ToolUse]


def _arguments(arguments: object) -> str:
    if not isinstance(arguments, dict):
        return ""
    return ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items())


def _result_text(message: Message) -> str:
    blocks = (b for b in message.blocks if isinstance(b, TextBlock | ImageBlock))
    return "\n".join(b.text if isinstance(b, TextBlock) else "[image]" for b in blocks)


def _ids(ledger: LedgerIds, kind: str, key: str | None) -> tuple[str, ...]:
    return tuple(ledger.get((kind, key), [])) if key else ()


def _results(span: Sequence[SpanMessage]) -> dict[str, Message]:
    found: dict[str, Message] = {}
    for item in span:
        message = item.parsed
        if message.role == "toolResult" and message.toolCallId:
            found.setdefault(message.toolCallId, message)
    return found


def span_view(
    span: Sequence[SpanMessage], commands: Sequence[Command], errors: Sequence[ErrorEntry]
) -> SpanView:
    """The view of ``span``, its ids taken from the ledger after this span's Ledger step."""
    ledger = ledger_index(commands, errors)
    results = _results(span)
    called: set[str] = set()
    lines: list[ViewLine] = []
    for item in span:
        message = item.parsed
        role = message.role
        if role == "user":
            lines.append(ViewLine("user", message.text, user_id=item.user_id))
        elif role == "assistant":
            if message.text.strip():
                lines.append(ViewLine("assistant", message.text))
            for call in message.tool_calls:
                result = results.get(call.id) if call.id else None
                if call.id:
                    called.add(call.id)
                status = "no result" if result is None else ("error" if result.isError else "ok")
                use = ToolUse(
                    call_id=call.id,
                    name=call.name or "unknown",
                    arguments=_arguments(call.arguments),
                    result=_result_text(result) if result is not None else None,
                    is_error=bool(result is not None and result.isError),
                    ledger=_ids(ledger, "call", call.id),
                    status=status,
                )
                lines.append(ViewLine("tool", tool=use))
            if message.stopReason == "error":
                ids = ", ".join(_ids(ledger, "entry", item.entry_id))
                label = f"Assistant error {ids}".strip()
                lines.append(ViewLine("other", message.errorMessage or "error", label=label))
        elif role == "toolResult":
            if message.toolCallId and message.toolCallId in called:
                continue  # shown on its call's line
            use = ToolUse(
                call_id=message.toolCallId,
                name=message.toolName or "unknown",
                arguments="",
                result=_result_text(message),
                is_error=bool(message.isError),
                ledger=_ids(ledger, "call", message.toolCallId),
                status="error" if message.isError else "ok",
            )
            lines.append(ViewLine("tool", tool=use))
        elif role == "bashExecution":
            if message.excludeFromContext:
                continue  # LEDGER-3: a !! command the agent never saw
            status = "cancelled" if message.cancelled else f"exit {message.exitCode}"
            use = ToolUse(
                call_id=None,
                name="!",
                arguments=message.command or "",
                result=message.output or "",
                is_error=bool(message.exitCode),
                ledger=_ids(ledger, "entry", item.entry_id),
                status=status,
            )
            lines.append(ViewLine("tool", tool=use))
        elif role in ("branchSummary", "compactionSummary"):
            lines.append(ViewLine("other", message.summary or message.text, label="Earlier summary"))
        elif message.text.strip():
            label = f"{role} {message.customType}" if message.customType else role
            lines.append(ViewLine("other", message.text, label=label))
    by_call: dict[str, ToolUse] = {}
    by_ledger: dict[str, ToolUse] = {}
    for line in lines:
        if line.tool is None:
            continue
        if line.tool.call_id:
            by_call.setdefault(line.tool.call_id, line.tool)
        for ledger_id in line.tool.ledger:
            by_ledger.setdefault(ledger_id, line.tool)
    return SpanView(tuple(lines), by_call, by_ledger)
