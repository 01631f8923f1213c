"""Synthetic pi session files of any size, for the long-session benchmarks and tests.

Each turn is what a coding agent does most: the user asks, the model runs one ``bash`` command, the tool
answers with a long output, and the model replies in a line. The file is what pi 0.73.1 writes (header version
3, 8-hex entry ids, ``parentId`` links, epoch-ms message timestamps), so a real pi resumes it with
``--session``. Earlier compactions can be placed in the history, pi's own (``fromHook: false``) or Longhaul's
(a minimal format-1 state), so the current span is only the turns after the last one. Writing streams line
by line, so a file of any size never sits in memory.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from longhaul_daemon.defaults import MAX_STATE_COMMANDS

__all__ = ["SessionWriter", "SyntheticSession", "write_session"]

Compactor = Literal["pi", "longhaul"]
_MODEL = {"api": "openai-completions", "provider": "fake", "model": "fake-model"}
_USAGE = {
    "input": 1000,
    "output": 50,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 1050,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


@dataclass
class SyntheticSession:
    """What was written: the file, its ids, and where the current span starts."""

    path: Path
    session_id: str
    leaf_id: str = ""
    entries: int = 0
    turns: int = 0
    bytes: int = 0
    compaction_ids: list[str] = field(default_factory=list)
    span_start_id: str | None = None  # the newest compaction's first kept entry, where the span starts
    # What pi's next compaction would summarize (its keepRecentTokens kept only the last turn): the message
    # entries from the span's start to the last turn, and that turn's user message, the first kept entry.
    span_ids: list[str] = field(default_factory=list)
    first_kept_id: str = ""


class SessionWriter:
    """Writes entries as pi 0.73.1 does: 8-hex ids, each the child of the last, ISO and epoch-ms stamps."""

    def __init__(self, out: Any, rng: random.Random, start_ms: int) -> None:
        self._out = out
        self._rng = rng
        self._ms = start_ms
        self.parent: str | None = None
        self.written = 0
        self.entries = 0
        self._ids: set[str] = set()
        self.since_kept: list[str] = []  # message entry ids from the newest kept boundary on
        self.commands: list[dict[str, Any]] = []  # the ledger so far, as Longhaul's state records it
        self.span = 0  # Longhaul compactions written so far

    def new_id(self) -> str:
        """A fresh random entry id, unique in this session."""
        while True:
            entry_id = f"{self._rng.getrandbits(32):08x}"
            if entry_id not in self._ids:
                self._ids.add(entry_id)
                return entry_id

    def stamp(self) -> tuple[str, int]:
        """The next timestamp, one second on, as ISO text and as milliseconds."""
        self._ms += 1000
        seconds, ms = divmod(self._ms, 1000)
        minutes, sec = divmod(seconds, 60)
        hours, minute = divmod(minutes, 60)
        iso = f"2026-11-{1 + (hours // 24) % 28:02d}T{hours % 24:02d}:{minute:02d}:{sec:02d}.{ms:03d}Z"
        return iso, self._ms

    def line(self, value: dict[str, Any]) -> None:
        """Write one JSON line and count its bytes."""
        data = json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"
        self._out.write(data)
        self.written += len(data.encode("utf-8"))

    def entry(self, kind: str, **fields: Any) -> str:
        """Write an entry chained to the previous one; returns its id."""
        entry_id = self.new_id()
        iso, _ = self.stamp()
        self.line({"type": kind, "id": entry_id, "parentId": self.parent, "timestamp": iso, **fields})
        self.parent = entry_id
        self.entries += 1
        return entry_id

    def message(self, message: dict[str, Any]) -> str:
        """Write a message entry and note it as not yet compacted; returns its id."""
        _, ms = self.stamp()
        entry_id = self.entry("message", message={**message, "timestamp": ms})
        self.since_kept.append(entry_id)
        return entry_id


def _output(rng: random.Random, n: int, size: int) -> str:
    """A pytest-like log of about ``size`` characters that ends in a verdict line."""
    lines: list[str] = []
    used = 0
    k = 0
    while used < size:
        k += 1
        line = (
            f"tests/test_mod{n % 97}.py::test_case_{k} PASSED [{min(99, k)}%] id={rng.getrandbits(40):010x}"
        )
        lines.append(line)
        used += len(line) + 1
    lines.append(f"===== {k} passed in {rng.randint(1, 99) / 10:.1f}s =====")
    return "\n".join(lines)


def _turn(w: SessionWriter, rng: random.Random, n: int, output_bytes: int) -> str:
    """One turn; returns the id of its user message."""
    user_id = w.message(
        {
            "role": "user",
            "content": [{"type": "text", "text": f"Step {n}: run the tests for module {n % 97}."}],
        }
    )
    call_id = f"call_{n}_{rng.getrandbits(24):06x}"
    command = f"pytest -q tests/test_mod{n % 97}.py"
    asked = w.message(
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}
            ],
            **_MODEL,
            "usage": _USAGE,
            "stopReason": "toolUse",
        }
    )
    w.commands.append(
        {"id": f"C{len(w.commands) + 1}", "text": command, "exit": 0, "span": w.span + 1}
        | {"entryId": asked, "toolCallId": call_id}
    )
    w.message(
        {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "bash",
            "content": [{"type": "text", "text": _output(rng, n, output_bytes)}],
            "isError": False,
        }
    )
    w.message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": f"Module {n % 97} passes."}],
            **_MODEL,
            "usage": _USAGE,
            "stopReason": "stop",
        }
    )
    return user_id


def _compaction(w: SessionWriter, compactor: Compactor, first_kept: str, span: int, tokens: int) -> str:
    if compactor == "pi":
        summary = f"## Goal\nKeep the tests green.\n\n## Progress\nRan {span} stretches of tests."
        return w.entry(
            "compaction", summary=summary, firstKeptEntryId=first_kept, tokensBefore=tokens, fromHook=False
        )
    pass_id = f"synth{span:07d}"
    w.span = span
    # The state such a compaction carries: the newest commands of the ledger, as Close bounds it.
    commands = w.commands[-MAX_STATE_COMMANDS:]
    state = {"stateFormat": 1, "span": span, "seq": 0, "workLog": [], "commands": commands}
    state["nextCommand"] = len(w.commands) + 1
    details = {"stateFormat": 1, "compactor": "longhaul", "passId": pass_id, "span": span, "state": state}
    summary = f"# Longhaul state after span {span} (pass {pass_id})\n"
    return w.entry(
        "compaction",
        summary=summary,
        firstKeptEntryId=first_kept,
        tokensBefore=tokens,
        details=details,
        fromHook=True,
    )


def _turn_bytes(output_bytes: int) -> int:
    return output_bytes + 1700  # the four entries around the output, measured on the format above


def write_session(
    path: Path,
    *,
    total_bytes: int,
    span_bytes: int | None = None,
    compactions: int = 0,
    compactor: Compactor = "longhaul",
    output_bytes: int = 10_000,
    cwd: str = "/tmp/project",
    seed: int = 1,
) -> SyntheticSession:
    """Write a session of about ``total_bytes`` and return what it holds.

    With ``compactions`` > 0, that many compactions by ``compactor`` are spread over the history and the last
    one leaves a current span of about ``span_bytes`` (default: an equal share) after it.
    """
    rng = random.Random(seed)
    parts = [f"0198{rng.getrandbits(16):04x}", f"{rng.getrandbits(16):04x}", f"7{rng.getrandbits(12):03x}"]
    parts += [f"8{rng.getrandbits(12):03x}", f"{rng.getrandbits(48):012x}"]
    session_id = "-".join(parts)  # shaped like pi's UUIDv7 ids
    info = SyntheticSession(path=path, session_id=session_id)
    per_turn = _turn_bytes(output_bytes)
    turns = max(1, total_bytes // per_turn)
    span_turns = max(1, (span_bytes // per_turn) if span_bytes is not None else turns // (compactions + 1))
    marks = _compaction_turns(turns, span_turns, compactions)
    with path.open("w", encoding="utf-8") as out:
        w = SessionWriter(out, rng, start_ms=1_790_000_000_000)
        w.line({"type": "session", "version": 3, "id": session_id, "timestamp": w.stamp()[0], "cwd": cwd})
        w.entry("model_change", provider="fake", modelId="fake-model")
        w.entry("thinking_level_change", thinkingLevel="off")
        last_user = ""
        for n in _numbers(turns):
            before = len(w.since_kept)
            last_user = _turn(w, rng, n, output_bytes)
            if n in marks:
                span = len(info.compaction_ids) + 1
                info.compaction_ids.append(_compaction(w, compactor, last_user, span, 1000 * n))
                info.span_start_id = last_user
                w.since_kept = w.since_kept[before:]  # the last turn is kept: the next span starts there
        kept_at = w.since_kept.index(last_user)
        info.span_ids, info.first_kept_id = w.since_kept[:kept_at], last_user
        info.leaf_id = w.parent or ""
        info.entries = w.entries
        info.turns = turns
        info.bytes = w.written
    return info


def _numbers(turns: int) -> Iterator[int]:
    yield from range(1, turns + 1)


def _compaction_turns(turns: int, span_turns: int, count: int) -> set[int]:
    """After which turns the compactions go: spread over the history, the last ``span_turns`` from the end."""
    if count <= 0 or turns <= span_turns:
        return set()
    last = turns - span_turns
    return {max(1, round(last * k / count)) for k in range(1, count + 1)}
