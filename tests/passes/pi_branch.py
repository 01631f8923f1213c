"""A pi session's active branch, built entry by entry as pi writes it, for tests that run real passes."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from longhaul_daemon.protocol import CompactParams, CompactResult, FileOps, Preparation, SessionFacts

__all__ = ["Session"]


class Session:
    """A pi session's active branch and the compaction hook's inputs, built as pi builds them."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.entries: list[dict[str, Any]] = []
        self.first_kept = 0  # index of the previous compaction's firstKeptEntryId
        self._call = 0

    def _add(self, entry: dict[str, Any]) -> dict[str, Any]:
        n = len(self.entries)
        entry = {
            "id": hashlib.sha256(f"e{n}".encode()).hexdigest()[:8],
            "parentId": self.entries[-1]["id"] if self.entries else None,
            "timestamp": f"2026-12-02T14:{n // 60:02d}:{n % 60:02d}.000Z",
            **entry,
        }
        self.entries.append(entry)
        return entry

    def _message(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._add(
            {"type": "message", "message": {**message, "timestamp": 1_780_000_000_000 + len(self.entries)}}
        )

    def user(self, text: str) -> dict[str, Any]:
        return self._message({"role": "user", "content": [{"type": "text", "text": text}]})

    def bash(self, command: str, output: str = "ok", *, code: int = 0) -> None:
        self._call += 1
        call_id = f"call_{self._call}"
        self._message(
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}
                ],
                "api": "openai-completions",
                "provider": "fake",
                "model": "fake-1",
                "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
                "stopReason": "toolUse",
            }
        )
        text = output if code == 0 else f"{output}\n\nCommand exited with code {code}"
        self._message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": "bash",
                "content": [{"type": "text", "text": text}],
                "isError": code != 0,
            }
        )

    def user_bash(self, command: str, code: int = 0, output: str = "out\n") -> None:
        self._message(
            {
                "role": "bashExecution",
                "command": command,
                "output": output,
                "exitCode": code,
                "cancelled": False,
                "truncated": False,
            }
        )

    def remember(self, text: str) -> None:
        self._add(
            {
                "type": "custom",
                "customType": "compaction-state.event",
                "data": {"stateFormat": 1, "kind": "remember", "text": text},
            }
        )

    def params(self, keep_from: int, *, ops: FileOps | None = None, extra: int = 0) -> CompactParams:
        """The hook's input: summarize from the previous cut up to ``keep_from`` (plus ``extra`` earlier)."""
        start = max(self.first_kept - extra, 0)
        messages = [
            copy.deepcopy(e["message"]) for e in self.entries[start:keep_from] if e["type"] == "message"
        ]
        prep = Preparation(
            firstKeptEntryId=self.entries[keep_from]["id"],
            messagesToSummarize=messages,
            tokensBefore=4000 + len(self.entries),
            fileOps=ops or FileOps(),
        )
        session = SessionFacts(cwd=str(self.cwd), sessionId="s1", agentDir="/nonexistent", piVersion="0.73.1")
        return CompactParams(
            session=session, reason="threshold", preparation=prep, branchEntries=self.entries
        )

    def write(self, path: Path, session_id: str = "s1") -> Path:
        """The session file pi would have written for this branch: its header, then one entry per line."""
        header = {"type": "session", "version": 3, "id": session_id, "timestamp": "2026-12-02T14:00:00.000Z"}
        lines = [header, *self.entries]
        path.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in lines), encoding="utf-8")
        return path

    def file_params(self, keep_from: int, path: Path, *, extra: int = 0) -> CompactParams:
        """The hook's input as the shim sends it with a session file: span messages by reference, the leaf."""
        inline = self.params(keep_from, extra=extra)
        start = max(self.first_kept - extra, 0)
        refs = [{"entryRef": e["id"]} for e in self.entries[start:keep_from] if e["type"] == "message"]
        prep = inline.preparation.model_copy(update={"messagesToSummarize": refs})
        session = inline.session.model_copy(update={"sessionFile": str(path)})
        return CompactParams(
            session=session,
            reason="threshold",
            preparation=prep,
            leafId=self.entries[-1]["id"],
        )

    def foreign_compaction(
        self, keep_from: int, summary: str = "## Goal\nShip the export."
    ) -> dict[str, Any]:
        """A compaction pi wrote itself (no hook answered): a foreign one for Longhaul (TAKEOVER-2)."""
        entry = self._add(
            {
                "type": "compaction",
                "summary": summary,
                "firstKeptEntryId": self.entries[keep_from]["id"],
                "tokensBefore": 5000,
                "fromHook": False,
            }
        )
        self.first_kept = keep_from
        return entry

    def store(self, result: CompactResult, keep_from: int) -> dict[str, Any]:
        """What pi and the shim write after the hook returns: compaction entry, span record, line."""
        assert result.compaction is not None and result.after is not None
        c = result.compaction
        entry = self._add(
            {
                "type": "compaction",
                "summary": c.summary,
                "firstKeptEntryId": c.firstKeptEntryId,
                "tokensBefore": c.tokensBefore,
                "details": json.loads(json.dumps(c.details)),
                "fromHook": True,
            }
        )
        record = {**result.after.spanRecord, "compactionId": entry["id"]}
        self._add(
            {"type": "custom", "customType": "compaction-state.span", "data": json.loads(json.dumps(record))}
        )
        self._add(
            {"type": "custom", "customType": "compaction-state.line", "data": {**result.after.line, "ms": 9}}
        )
        self.first_kept = keep_from
        return entry
