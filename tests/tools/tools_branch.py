"""Session branches with Longhaul compactions, span records and thinking blocks, for the tools tests."""

from __future__ import annotations

from typing import Any

from longhaul_daemon.state.model import State

T0 = 1_780_000_000_000  # epoch ms, as in pi's message timestamps


class Branch:
    """One root-to-leaf path of pi session entries; ids are e0001, e0002, … in order."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def _add(self, entry: dict[str, Any]) -> dict[str, Any]:
        n = len(self.entries) + 1
        full = {"id": f"e{n:04d}", "parentId": self.entries[-1]["id"] if self.entries else None}
        full.update(entry)
        self.entries.append(full)
        return full

    def user(self, text: str) -> dict[str, Any]:
        msg = {
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "timestamp": T0 + len(self.entries),
        }
        return self._add({"type": "message", "message": msg})

    def assistant(self, text: str, *, thinking: tuple[str, ...] = ()) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": t} for t in thinking]
        content.append({"type": "text", "text": text})
        msg = {
            "role": "assistant",
            "content": content,
            "provider": "fake",
            "timestamp": T0 + len(self.entries),
        }
        return self._add({"type": "message", "message": msg})

    def compaction(self, details: dict[str, Any] | None, *, first_kept: str | None = None) -> dict[str, Any]:
        return self._add(
            {
                "type": "compaction",
                "summary": f"summary {len(self.entries)}",
                "firstKeptEntryId": first_kept or self.entries[-1]["id"],
                "tokensBefore": 100,
                "details": details,
            }
        )

    def longhaul(self, state: State, *, first_kept: str | None = None) -> dict[str, Any]:
        details = {
            "stateFormat": 1,
            "compactor": "longhaul",
            "passId": f"p{state.span}",
            "span": state.span,
            "state": state.model_dump(mode="json"),
        }
        return self.compaction(details, first_kept=first_kept)

    def custom(self, custom_type: str, data: Any) -> dict[str, Any]:
        return self._add({"type": "custom", "customType": custom_type, "data": data})

    def span_record(self, compaction: dict[str, Any], *, v: Any = 1, **fields: Any) -> dict[str, Any]:
        data: dict[str, Any] = {
            "v": v,
            "span": compaction["details"]["span"],
            "passId": compaction["details"]["passId"],
            "compactionId": compaction["id"],
            "closedAs": "whole",
            "reason": None,
            "messages": [],
            "events": [],
            "commands": [],
            "errors": [],
            "narrative": "narrative",
            "now": None,
            "world": {"status": "no-repository"},
            "excused": [],
        }
        data.update(fields)
        return self.custom("compaction-state.span", data)

    def messages_from(self, entry_id: str) -> list[dict[str, Any]]:
        """The messages from ``entry_id`` up to the next compaction, as pi copies them into a context."""
        ids = [e["id"] for e in self.entries]
        out: list[dict[str, Any]] = []
        for entry in self.entries[ids.index(entry_id) :]:
            if entry["type"] == "compaction":
                break
            if entry["type"] == "message":
                out.append(entry["message"])
        return out
