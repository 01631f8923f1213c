"""Spans built message by message as pi records them, with the ledger the Ledger step gives them."""

from __future__ import annotations

from typing import Any

from longhaul_daemon.passes.ledger import LedgerResult, apply_ledger
from longhaul_daemon.state.model import State
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["SpanBuilder"]


class SpanBuilder:
    """Appends user turns, tool calls with results and user ``!commands``; :meth:`ledger` runs the Ledger."""

    def __init__(self) -> None:
        self.messages: list[SpanMessage] = []
        self._users = 0
        self._calls = 0

    def _add(self, message: dict[str, Any], user_id: str | None = None) -> None:
        entry = f"e{len(self.messages) + 1}"
        self.messages.append(SpanMessage(entry, message["role"], message, user_id))

    def user(self, text: str) -> str:
        self._users += 1
        uid = f"u{self._users}"
        self._add({"role": "user", "content": [{"type": "text", "text": text}]}, uid)
        return uid

    def assistant(self, text: str) -> None:
        self._add({"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"})

    def tool(self, name: str, arguments: dict[str, Any], output: str, *, error: bool = False) -> str:
        self._calls += 1
        call_id = f"call_{self._calls}"
        block = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
        self._add({"role": "assistant", "content": [block], "stopReason": "toolUse"})
        text = output if not error else f"{output}\n\nCommand exited with code 1"
        result = {"role": "toolResult", "toolCallId": call_id, "toolName": name, "isError": error}
        self._add({**result, "content": [{"type": "text", "text": text}]})
        return call_id

    def bash(self, command: str, output: str, *, error: bool = False) -> str:
        return self.tool("bash", {"command": command}, output, error=error)

    def user_ran(self, command: str, output: str, code: int = 0) -> None:
        self._add(
            {
                "role": "bashExecution",
                "command": command,
                "output": output,
                "exitCode": code,
                "cancelled": False,
                "truncated": False,
            }
        )

    def ledger(self, state: State | None = None) -> LedgerResult:
        return apply_ledger(state or State(), self.messages, (state.span if state else 0) + 1)
