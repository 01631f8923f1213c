"""What a turns-mode pass costs the daemon on big tool output, and how ``status`` fares meanwhile.

``python bench/turns_bench.py`` (``make bench`` runs it) writes two pi session files: one whose span holds a
430 KB tool output of 16,000 numbered lines (the model then reads that call with ``show`` sixteen times, four
calls in each of four turns), and one with four outputs of 48 KB. A private daemon (:mod:`private_daemon`)
with ``"narrativeMode": "turns"`` runs each pass several times against a scripted model that answers at once,
in a process of its own, so the pass's wall time is nearly all the daemon's own work: the Digest, the ``show``
results, the gates, the values learned from tool output, Close. ``status`` is polled every 5 ms from another
process throughout. Prints one Markdown table; numbers to compare between changes, never asserted."""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from private_daemon import (
    API_KEY,
    ModelProcess,
    Scratch,
    StatusPoller,
    call,
    frame,
    percentile,
    stop,
    wait_pass_loaded,
    wait_serving,
)


@dataclass(frozen=True)
class Span:
    """One session to measure: its tool outputs (lines each) and how many ``show`` calls the model makes."""

    name: str
    outputs: tuple[int, ...]
    shows: int
    passes: int  # on one daemon; a short pass is run more often, so status is asked often enough


SPANS = (
    Span("one 430 KB output, shown 16 times", (16_000,), 16, 5),
    Span("four 48 KB outputs", (1_800,) * 4, 0, 20),
)


def _output(lines: int) -> str:
    return "".join(f"{n:05d} GET /api/{n} 0.{n % 1000:03d}s\n" for n in range(1, lines + 1))


def _session(path: Path, span: Span) -> tuple[list[str], str]:
    """Write the session file; returns the span's entry ids and the leaf's id."""
    entries: list[dict[str, Any]] = []

    def add(message: dict[str, Any]) -> None:
        parent = entries[-1]["id"] if entries else None
        entries.append({"type": "message", "id": f"e{len(entries)}", "parentId": parent, "message": message})

    add({"role": "user", "content": [{"type": "text", "text": "Never add dependencies without asking."}]})
    for n, lines in enumerate(span.outputs, start=1):
        call = {
            "type": "toolCall",
            "id": f"call_{n}",
            "name": "bash",
            "arguments": {"command": f"cat {n}.log"},
        }
        add({"role": "assistant", "content": [call], "stopReason": "toolUse"})
        text = [{"type": "text", "text": _output(lines)}]
        add({"role": "toolResult", "toolCallId": f"call_{n}", "toolName": "bash", "content": text})
        add(
            {
                "role": "user",
                "content": [{"type": "text", "text": f"Line 01200 took 0.200s; check part {n}."}],
            }
        )
    add({"role": "assistant", "content": [{"type": "text", "text": "Line 01200 took 0.200s indeed."}]})
    add({"role": "user", "content": [{"type": "text", "text": "Keep going."}]})
    header = {"type": "session", "version": 3, "id": "turns-bench", "timestamp": "2026-12-05T10:00:00.000Z"}
    path.write_text("".join(json.dumps(e) + "\n" for e in [header, *entries]))
    return [e["id"] for e in entries[:-1]], entries[-1]["id"]


def _params(scratch: Scratch, path: Path, span_ids: list[str], leaf: str, base_url: str) -> dict[str, Any]:
    model: dict[str, Any] = {"provider": "bench", "id": "bench-model", "api": "openai-completions"}
    model["baseUrl"] = base_url
    model |= {"reasoning": False, "contextWindow": 128_000, "maxTokens": 16_384}
    session: dict[str, Any] = {
        "cwd": str(scratch.cwd),
        "sessionId": "turns-bench",
        "agentDir": str(scratch.agent),
    }
    session |= {
        "sessionFile": str(path),
        "piVersion": "0.73.1",
        "model": model,
        "thinkingLevel": "off",
        "env": {},
    }
    preparation = {
        "firstKeptEntryId": leaf,
        "messagesToSummarize": [{"entryRef": entry_id} for entry_id in span_ids],
        "tokensBefore": 200_000,
        "fileOps": {"read": [], "written": [], "edited": []},
    }
    return {
        "session": session,
        "reason": None,
        "preparation": preparation,
        "leafId": leaf,
        "credentials": {"apiKey": API_KEY, "headers": {}},
    }


@dataclass
class Row:
    span: Span
    pass_ms: list[float]
    closed: str
    shows: int
    status_s: list[float]
    idle_s: list[float]  # status on the same daemon before its passes: what the machine allows


async def _measure(scratch: Scratch, span: Span, passes: int) -> Row:
    path = scratch.sessions / "turns.jsonl"
    span_ids, leaf = _session(path, span)
    daemon = scratch.start_daemon()
    try:
        await wait_serving(scratch.socket, daemon)
        await wait_pass_loaded(scratch, 1)
        with StatusPoller(scratch.socket) as idle:
            await asyncio.sleep(2.0)
        times, closed, shows, latencies = [], "", 0, []
        for n in range(passes):
            with ModelProcess(delay_s=0, shows=span.shows) as model:
                params = _params(scratch, path, span_ids, leaf, model.base_url)
                with StatusPoller(scratch.socket) as poller:
                    started = time.perf_counter()
                    reply = await call(scratch.socket, frame("compact", params, n + 1))
                    times.append((time.perf_counter() - started) * 1000)
            latencies += poller.latencies
            result = reply["result"]
            narrative = result["diagnostics"]["narrative"]
            closed, shows = f"{narrative['closedAs']}", narrative.get("shows", 0)
        return Row(span, times, closed, shows, latencies, idle.latencies)
    finally:
        stop(daemon)


def _status(latencies: list[float]) -> str:
    if not latencies:
        return "–"
    p50, p99 = percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000
    return f"{p50:.1f} / {p99:.1f} / {max(latencies) * 1000:.1f}"


def _table(rows: list[Row]) -> str:
    lines = [
        "| span (turns mode) | pass, median (ms) | best (ms) | closed | shows "
        "| status p50 / p99 / max during (ms) | idle before (ms) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {row.span.name} | {statistics.median(row.pass_ms):.0f} | {min(row.pass_ms):.0f} "
        f"| {row.closed} | {row.shows} | {_status(row.status_s)} | {_status(row.idle_s)} |"
        for row in rows
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="a directory for the scratch daemons (default: a temp dir)")
    parser.add_argument(
        "--passes", type=int, help="passes per span (default: 5 of the big one, 20 of the other)"
    )
    args = parser.parse_args()
    work = (args.work or Path(tempfile.mkdtemp(prefix="lh-turns-bench-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for span in SPANS:
        scratch = Scratch.at(Path(tempfile.mkdtemp(prefix="lh-turns-", dir=work)))
        scratch.prepare({"narrativeMode": "turns"})
        rows.append(asyncio.run(_measure(scratch, span, args.passes or span.passes)))
    print(_table(rows))  # noqa: T201


if __name__ == "__main__":
    main()
