"""Build pi session branches (root to leaf) as the entry dicts pi's JSONL holds, for the fold tests."""

from __future__ import annotations

import hashlib
from typing import Any

from longhaul_daemon.state.model import State

_T0 = 1_780_000_000_000  # epoch ms, as in pi's message timestamps


class Branch:
    """One root-to-leaf path; every entry is a child of the one before, as pi appends them."""

    def __init__(self, seed: str = "s") -> None:
        self.entries: list[dict[str, Any]] = []
        self._seed = seed

    def _add(self, entry: dict[str, Any]) -> dict[str, Any]:
        n = len(self.entries)
        entry_id = hashlib.sha256(f"{self._seed}:{n}".encode()).hexdigest()[:8]
        parent = self.entries[-1]["id"] if self.entries else None
        full = {
            "id": entry_id,
            "parentId": parent,
            "timestamp": f"2026-12-02T14:{n // 60:02d}:{n % 60:02d}.000Z",
        }
        full.update(entry)
        self.entries.append(full)
        return full

    def user(self, text: str) -> dict[str, Any]:
        content = [{"type": "text", "text": text}]
        msg = {"role": "user", "content": content, "timestamp": _T0 + len(self.entries)}
        return self._add({"type": "message", "message": msg})

    def assistant(self, text: str) -> dict[str, Any]:
        msg = {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "openai-completions",
            "provider": "fake",
            "model": "fake-1",
            "stopReason": "stop",
            "timestamp": _T0 + len(self.entries),
        }
        return self._add({"type": "message", "message": msg})

    def compaction(
        self, details: dict[str, Any] | None, *, summary: str | None = None, from_hook: bool = True
    ) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "type": "compaction",
            "summary": summary or f"summary {len(self.entries)}",
            "firstKeptEntryId": self.entries[-1]["id"] if self.entries else "00000000",
            "tokensBefore": 1234,
            "fromHook": from_hook,
        }
        if details is not None:
            entry["details"] = details
        return self._add(entry)

    def longhaul(self, state: State, *, pass_id: str | None = None, fmt: Any = 1) -> dict[str, Any]:
        details = {
            "stateFormat": fmt,
            "compactor": "longhaul",
            "passId": pass_id or f"p{state.span}",
            "span": state.span,
            "state": state.model_dump(mode="json"),
        }
        return self.compaction(details)

    def foreign(self) -> dict[str, Any]:
        return self.compaction({"readFiles": [], "modifiedFiles": []}, from_hook=False)

    def custom(self, custom_type: str, data: Any) -> dict[str, Any]:
        return self._add({"type": "custom", "customType": custom_type, "data": data})

    def event(self, kind: str, seq: int | None = None, *, fmt: Any = 1, **fields: Any) -> dict[str, Any]:
        data: dict[str, Any] = {"stateFormat": fmt, "kind": kind, **fields}
        if seq is not None:
            data["seq"] = seq
        return self.custom("compaction-state.event", data)

    def span_record(self, compaction: dict[str, Any], *, v: Any = 1, **fields: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "v": v,
            "span": compaction.get("details", {}).get("span"),
            "passId": compaction.get("details", {}).get("passId"),
            "compactionId": compaction["id"],
            "closedAs": "narrative-less",
            "reason": "no-model-call",
            "messages": [],
            "events": [],
            "commands": [],
            "errors": [],
            "narrative": None,
            "now": None,
            "world": {"status": "no-repository"},
            "excused": [],
        }
        data.update(fields)
        return self.custom("compaction-state.span", data)

    def line(self, span: int) -> dict[str, Any]:
        return self.custom("compaction-state.line", {"v": 1, "span": span, "calls": 0, "tokens": 0, "ms": 42})
