"""Small pi branches built by hand for the evaluation tests: messages, tool results and compactions."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

__all__ = ["BranchBuilder", "write_transcript"]


class BranchBuilder:
    """Appends pi 0.73.1 entries (8-hex ids, ``parentId`` links) and returns each entry's id."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._calls = itertools.count(1)

    def _add(self, kind: str, **fields: Any) -> str:
        entry_id = f"{next(self._ids):08x}"
        parent = self.entries[-1]["id"] if self.entries else None
        self.entries.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": parent,
                "timestamp": "2026-12-01T00:00:00.000Z",
                **fields,
            }
        )
        return entry_id

    def message(self, message: dict[str, Any]) -> str:
        return self._add("message", message={**message, "timestamp": 1})

    def user(self, text: str) -> str:
        return self.message({"role": "user", "content": [{"type": "text", "text": text}]})

    def assistant(self, text: str = "", *, stop: str = "stop") -> str:
        content = [{"type": "text", "text": text}] if text else []
        return self.message({"role": "assistant", "content": content, "stopReason": stop})

    def tool(self, name: str, arguments: dict[str, Any], output: str, *, error: bool = False) -> str:
        """An assistant tool call and its result; returns the result's entry id."""
        call_id = f"call_{next(self._calls)}"
        block = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
        self.message({"role": "assistant", "content": [block], "stopReason": "toolUse"})
        return self.message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": [{"type": "text", "text": output}],
                "isError": error,
            }
        )

    def user_bash(self, command: str, output: str, exit_code: int, *, excluded: bool = False) -> str:
        message = {"role": "bashExecution", "command": command, "output": output, "exitCode": exit_code}
        if excluded:
            message["excludeFromContext"] = True
        return self.message(message)

    def compaction(self, first_kept: str, summary: str, *, compactor: str = "pi") -> str:
        fields: dict[str, Any] = {"summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": 1000}
        if compactor == "longhaul":
            fields["details"] = {
                "stateFormat": 1,
                "compactor": "longhaul",
                "passId": "p",
                "span": 1,
                "state": {},
            }
            fields["fromHook"] = True
        elif compactor == "other":
            fields["details"] = {"other": True}
            fields["fromHook"] = True
        else:
            fields["fromHook"] = False
        return self._add("compaction", **fields)

    def custom(self, custom_type: str, data: dict[str, Any]) -> str:
        return self._add("custom", customType=custom_type, data=data)


def write_transcript(path: Path, builder: BranchBuilder) -> Path:
    header = {
        "type": "session",
        "version": 3,
        "id": "s-1",
        "timestamp": "2026-12-01T00:00:00.000Z",
        "cwd": "/p",
    }
    lines = [json.dumps(header)] + [json.dumps(e) for e in builder.entries]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
