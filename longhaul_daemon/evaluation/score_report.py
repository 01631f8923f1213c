"""What ``score`` prints: per compactor, the probe score with its spread over runs, calls, tokens and time.

Every replay (one transcript, one compactor, one run) yields a :class:`RunResult`: which probes passed,
what the model calls cost (from the recording proxy), how long each compaction took end to end, and how
long the summaries were after 1, 2, … compactions. This module folds them into per-compactor numbers: the
score of each run (probes passed over probes checked), their mean and range, and the cost per run.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from longhaul_daemon.evaluation.probes import KINDS

__all__ = ["CompactorReport", "RunResult", "report_json", "report_text", "summarize"]


@dataclass
class RunResult:
    """Probe results of one transcript, compactor and run."""

    transcript: str
    compactor: str
    run: int
    passed: dict[str, int] = field(default_factory=dict)  # probe kind -> passed
    checked: dict[str, int] = field(default_factory=dict)  # probe kind -> checked
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    model_seconds: float = 0.0
    compaction_seconds: list[float] = field(default_factory=list)
    summary_chars: list[int] = field(default_factory=list)  # after compaction 1, 2, ...
    compactions: int = 0
    longhaul: int = 0
    problem: str | None = None


@dataclass
class CompactorReport:
    """One compactor's scores over all transcripts: per run and per probe kind."""

    name: str
    run_scores: list[float] = field(default_factory=list)  # one per run, 0..1
    kind_scores: dict[str, float] = field(default_factory=dict)  # probes of a kind passed over all runs
    kind_checked: dict[str, int] = field(default_factory=dict)
    calls: float = 0.0  # means per run
    input_tokens: float = 0.0
    output_tokens: float = 0.0
    model_seconds: float = 0.0
    compaction_seconds: float = 0.0  # mean wall time of one compaction
    compactions: float = 0.0
    longhaul_share: float = 0.0  # of the compactions written, how many were Longhaul's
    summary_chars: dict[int, float] = field(default_factory=dict)  # after n compactions (mean)

    @property
    def score(self) -> float:
        """The mean of the run scores (0 when nothing ran)."""
        return statistics.fmean(self.run_scores) if self.run_scores else 0.0


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def summarize(results: Sequence[RunResult], compactor: str, runs: int) -> CompactorReport:
    """Fold the results of one compactor into its report."""
    mine = [r for r in results if r.compactor == compactor]
    report = CompactorReport(compactor)
    for run in range(1, runs + 1):
        of_run = [r for r in mine if r.run == run]
        passed = sum(sum(r.passed.values()) for r in of_run)
        checked = sum(sum(r.checked.values()) for r in of_run)
        if checked:
            report.run_scores.append(passed / checked)
    for kind in KINDS:
        checked = sum(r.checked.get(kind, 0) for r in mine)
        report.kind_checked[kind] = checked
        if checked:
            report.kind_scores[kind] = sum(r.passed.get(kind, 0) for r in mine) / checked
    per_run = max(runs, 1)
    report.calls = sum(r.calls for r in mine) / per_run
    report.input_tokens = sum(r.input_tokens for r in mine) / per_run
    report.output_tokens = sum(r.output_tokens for r in mine) / per_run
    report.model_seconds = sum(r.model_seconds for r in mine) / per_run
    report.compactions = sum(r.compactions for r in mine) / per_run
    report.compaction_seconds = _mean([s for r in mine for s in r.compaction_seconds])
    written = sum(r.compactions for r in mine)
    report.longhaul_share = sum(r.longhaul for r in mine) / written if written else 0.0
    longest = max((len(r.summary_chars) for r in mine), default=0)
    for n in range(1, longest + 1):
        report.summary_chars[n] = _mean([r.summary_chars[n - 1] for r in mine if len(r.summary_chars) >= n])
    return report


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _spread(report: CompactorReport) -> str:
    if len(report.run_scores) < 2:
        return "-"
    low, high = _pct(min(report.run_scores)), _pct(max(report.run_scores))
    return f"{low}-{high} (sd {100 * statistics.stdev(report.run_scores):.1f})"


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def report_text(reports: Sequence[CompactorReport], header: str) -> str:
    """The reports as a plain-text table under ``header``."""
    rows = [
        [
            "compactor",
            "score",
            "spread",
            *KINDS,
            "calls",
            "input tok",
            "output tok",
            "model s",
            "per compaction s",
        ]
    ]
    for r in reports:
        kinds = [_pct(r.kind_scores.get(k)) for k in KINDS]
        rows.append(
            [
                r.name,
                _pct(r.score),
                _spread(r),
                *kinds,
                f"{r.calls:.0f}",
                f"{r.input_tokens:.0f}",
                f"{r.output_tokens:.0f}",
                f"{r.model_seconds:.1f}",
                f"{r.compaction_seconds:.2f}",
            ]
        )
    checked = reports[0].kind_checked if reports else {}
    probes = ", ".join(f"{k} {checked.get(k, 0)}" for k in KINDS)
    lines = [header, "", *_table(rows), "", f"probes checked per compactor over all runs: {probes}"]
    lines.append(
        "calls, tokens and model seconds are per run; per compaction s is the mean end-to-end compaction"
    )
    return "\n".join(lines) + "\n"


def report_json(reports: Sequence[CompactorReport]) -> dict[str, Any]:
    """The reports as JSON, keyed by compactor."""
    return {
        r.name: {
            "score": round(r.score, 4),
            "runScores": [round(s, 4) for s in r.run_scores],
            "kinds": {k: round(v, 4) for k, v in r.kind_scores.items()},
            "checked": r.kind_checked,
            "calls": r.calls,
            "inputTokens": r.input_tokens,
            "outputTokens": r.output_tokens,
            "modelSeconds": round(r.model_seconds, 3),
            "compactionSeconds": round(r.compaction_seconds, 3),
            "compactions": r.compactions,
            "longhaulShare": round(r.longhaul_share, 4),
            "summaryChars": {str(n): round(c, 1) for n, c in r.summary_chars.items()},
        }
        for r in reports
    }
