"""``longhaul-daemon replay``: recorded transcripts through real pi and Longhaul, counted; REPLAY-8's exits.

Finding pi and the shim comes first (exit 1 with a sentence when either is missing), then each transcript
replays in its own private world while a progress bar runs on stderr (on a terminal only). The report holds
counts and hashed names only (REPLAY-6); the exit status is 3 when any extension handler raised, else 1 when
a transcript could not be replayed, else 0.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.evaluation.common import Progress, check_named_files, path_hash
from longhaul_daemon.evaluation.harness.sandbox import find_tools
from longhaul_daemon.evaluation.replay import ReplayConfig, ReplayOutcome, replay_transcript
from longhaul_daemon.plural import counted

__all__ = ["EXIT_HANDLER_ERROR", "EXIT_NOT_RUN", "EXIT_OK", "outcome_json", "run_replay"]

EXIT_OK = 0
EXIT_NOT_RUN = 1  # pi or the shim not found, or a transcript could not be replayed
EXIT_HANDLER_ERROR = 3  # REPLAY-8


def outcome_json(o: ReplayOutcome) -> dict[str, Any]:
    """One replay outcome as the JSON ``replay --json`` prints."""
    return {
        "name": o.name,
        "compactor": o.compactor,
        "problem": o.problem,
        "prompts": o.prompts,
        "recordedCompactions": o.recorded,
        "compactions": o.compactions,
        "longhaul": o.longhaul,
        "fallbacks": sum(o.fallbacks.values()),
        "fallbackReasons": dict(sorted(o.fallbacks.items())),
        "failedCompactions": sum(1 for r in o.runs if not r.ok),
        "handlerErrors": o.handler_errors,
        "divergences": o.divergences,
        "skipped": o.skipped,
        "compactionSeconds": [round(r.seconds, 3) for r in o.runs],
        "seconds": round(o.seconds, 3),
    }


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _counts(o: ReplayOutcome) -> list[str]:
    fallbacks = str(sum(o.fallbacks.values()))
    return [
        fallbacks,
        str(o.handler_errors),
        str(o.divergences),
        str(o.skipped),
        f"{o.seconds:.1f}",
        o.problem or "",
    ]


def _text(outcomes: Sequence[ReplayOutcome], compactor: str) -> str:
    who = "Longhaul" if compactor == "longhaul" else "pi's own compaction (PI_COMPACTOR=pi)"
    transcripts = counted(len(outcomes), "transcript")
    lines = [f"replay: {transcripts} through real pi with {who}; fake model on loopback", ""]
    head = ["transcript", "prompts", "recorded", "compactions", "longhaul", "fallbacks", "handler errors"]
    rows = [[*head, "divergences", "skipped", "seconds", "problem"]]
    rows += [
        [o.name, str(o.prompts), str(o.recorded), str(o.compactions), str(o.longhaul), *_counts(o)]
        for o in outcomes
    ]
    lines += _table(rows)
    reasons: dict[str, int] = {}
    for o in outcomes:
        for code, n in o.fallbacks.items():
            reasons[code] = reasons.get(code, 0) + n
    lines.append("")
    lines.append(
        f"total: {counted(sum(o.compactions for o in outcomes), 'compaction')} of "
        f"{sum(o.recorded for o in outcomes)} recorded, {sum(o.longhaul for o in outcomes)} by Longhaul, "
        f"{counted(sum(reasons.values()), 'fallback')}, "
        f"{counted(sum(o.handler_errors for o in outcomes), 'handler error')}"
    )
    if reasons:
        lines.append("fallback reasons: " + ", ".join(f"{c} {n}" for c, n in sorted(reasons.items())))
    return "\n".join(lines) + "\n"


def run_replay(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """The ``replay`` command: replay each named transcript through pi with the chosen compactor."""
    if not check_named_files(args.files, "replay", err):
        return EXIT_NOT_RUN
    tools = find_tools(args.pi, args.shim)
    if isinstance(tools, str):
        err.write(f"longhaul-daemon replay: {tools}\n")
        return EXIT_NOT_RUN
    config = ReplayConfig(
        pi_bin=tools.pi,
        shim=tools.shim,
        compactor=args.compactor,
        step_timeout=args.step_timeout,
        keep_recent_tokens=args.keep_recent_tokens,
        keep_dir=Path(args.keep) if args.keep else None,
    )
    outcomes: list[ReplayOutcome] = []
    with Progress("replay", len(args.files), err) as progress:
        for file in args.files:
            path = Path(file)
            label = path_hash(path)

            def step(detail: str, label: str = label) -> None:
                progress.update(detail=f"{label} {detail}")

            step("starting")
            outcomes.append(replay_transcript(path, config, progress=step))
            progress.advance(label)
    if args.json:
        document = {"compactor": args.compactor, "transcripts": [outcome_json(o) for o in outcomes]}
        out.write(json.dumps(document, ensure_ascii=True, indent=2) + "\n")
    else:
        out.write(_text(outcomes, args.compactor))
    if any(o.handler_errors for o in outcomes):
        return EXIT_HANDLER_ERROR
    return EXIT_NOT_RUN if any(o.problem is not None for o in outcomes) else EXIT_OK
