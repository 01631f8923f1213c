"""``longhaul-daemon facts``: how many values a compaction's summary kept that the session went on to use.

No model, no network, no daemon (FACTS-1): the transcripts are read and counted. For every recorded
compaction (FACTS-2) a value is a FACTS-3 token (``learn_values``: a run of letters and digits, dots allowed
inside, of 3 or more characters holding a digit). It counts when its first appearance on the branch is in
tool output (a tool result, or what a user ``!command`` printed) inside that compaction's span, and it is
**used again** when the same token appears in any message after the compaction entry. **Kept** means the
summary shows it, not flanked by a letter or digit (VALUE-4). Totals are per compactor. Output holds counts
and hashed transcript names only (FACTS-4, REPLAY-6); text from a transcript is never printed.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.evaluation.common import input_transcripts, key_path, path_hash, share
from longhaul_daemon.evaluation.key import AnswerKey, BadKey, load_key
from longhaul_daemon.evaluation.recorded_compactions import (
    COMPACTORS,
    find_compactions,
    message_of,
    message_pieces,
)
from longhaul_daemon.inspector.session_file import TranscriptError, read_transcript, transcript_error_line
from longhaul_daemon.passes.answers.values import find_value, learn_values
from longhaul_daemon.plural import counted

__all__ = ["EXIT_OK", "EXIT_UNREADABLE", "CompactionFacts", "branch_facts", "run_facts"]

EXIT_OK = 0
EXIT_UNREADABLE = 1  # no transcript found, or one of them could not be read


@dataclass(frozen=True)
class CompactionFacts:
    """FACTS-2 for one compaction: values first seen in its span's tool output, used again, kept."""

    n: int
    compactor: str
    first_seen: int
    used_again: int
    kept: int
    key_values: int | None = None  # the answer key's values for this compaction, when there is a key
    key_kept: int | None = None


@dataclass
class _Totals:
    compactions: int = 0
    first_seen: int = 0
    used_again: int = 0
    kept: int = 0
    key_values: int = 0
    key_kept: int = 0

    def add(self, c: CompactionFacts) -> None:
        self.compactions += 1
        self.first_seen += c.first_seen
        self.used_again += c.used_again
        self.kept += c.kept
        self.key_values += c.key_values or 0
        self.key_kept += c.key_kept or 0


@dataclass
class _TranscriptReport:
    name: str
    compactions: list[CompactionFacts] = field(default_factory=list)
    problem: str | None = None  # why the transcript could not be read (TranscriptError.reason)
    key: str = "absent"  # absent, present, unusable


def _occurrences(branch: Sequence[Mapping[str, Any]]) -> tuple[dict[str, tuple[int, bool]], dict[str, int]]:
    """Each token's first appearance (branch position, whether in tool output) and its last position."""
    first: dict[str, tuple[int, bool]] = {}
    last: dict[str, int] = {}
    for position, entry in enumerate(branch):
        message = message_of(entry)
        if message is None:
            continue
        for piece in message_pieces(message):
            for token in learn_values(piece.text):
                first.setdefault(token, (position, piece.tool_output))
                last[token] = position
    return first, last


def branch_facts(branch: Sequence[Mapping[str, Any]], key: AnswerKey | None = None) -> list[CompactionFacts]:
    """FACTS-2 for every compaction on ``branch`` (root first); ``key`` adds the key's own values."""
    compactions = find_compactions(branch)
    if not compactions:
        return []
    first, last = _occurrences(branch)
    by_start: dict[int, list[str]] = {}
    for token, (position, in_tool_output) in first.items():
        if in_tool_output:
            by_start.setdefault(position, []).append(token)
    found: list[CompactionFacts] = []
    for c in compactions:
        candidates = [t for p in range(c.span_start, c.span_end) for t in by_start.get(p, ())]
        used = [t for t in candidates if last[t] > c.position]
        kept = sum(1 for t in used if find_value(c.summary, t).kept)
        planted = key.at(c.n) if key is not None else None
        key_values = len(planted.values) if planted is not None else None
        key_kept = (
            sum(1 for v in planted.values if find_value(c.summary, v).kept) if planted is not None else None
        )
        found.append(
            CompactionFacts(c.n, c.compactor, len(candidates), len(used), kept, key_values, key_kept)
        )
    return found


def _read(path: Path, err: TextIO) -> _TranscriptReport:
    report = _TranscriptReport(name=path_hash(path))
    try:
        transcript = read_transcript(path)
    except TranscriptError as exc:
        # The report carries only the reason's code; the path and the whole reason go to stderr.
        report.problem = exc.reason
        err.write(transcript_error_line("facts", exc, listed_as=report.name))
        return report
    key: AnswerKey | None = None
    try:
        key = load_key(key_path(path))
        report.key = "present" if key is not None else "absent"
    except BadKey:
        report.key = "unusable"
    report.compactions = branch_facts(transcript.branch, key)
    return report


def _totals(reports: Sequence[_TranscriptReport]) -> dict[str, _Totals]:
    totals: dict[str, _Totals] = {name: _Totals() for name in COMPACTORS}
    for report in reports:
        for c in report.compactions:
            totals[c.compactor].add(c)
    return totals


def _json_document(reports: Sequence[_TranscriptReport]) -> dict[str, Any]:
    with_key = any(r.key == "present" for r in reports)
    totals = {}
    for name, t in _totals(reports).items():
        row = asdict(t)
        if not with_key:
            del row["key_values"], row["key_kept"]
        totals[name] = row
    return {
        "transcripts": [
            {
                "name": r.name,
                "problem": r.problem,
                "key": r.key,
                "compactions": [asdict(c) for c in r.compactions],
            }
            for r in reports
        ],
        "totals": totals,
    }


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def _text(reports: Sequence[_TranscriptReport]) -> str:
    with_key = any(r.key == "present" for r in reports)
    count = sum(len(r.compactions) for r in reports)
    counts = f"{counted(len(reports), 'transcript')}, {counted(count, 'compaction')}"
    lines = [f"facts: {counts} (no model was called)", ""]
    head = ["transcript", "compaction", "compactor", "first seen", "used again", "kept"]
    rows = [head + (["key values", "key kept"] if with_key else [])]
    for r in reports:
        if r.problem is not None:
            rows.append([r.name, "-", f"({r.problem})", "", "", ""] + (["", ""] if with_key else []))
        for c in r.compactions:
            row = [r.name, str(c.n), c.compactor, str(c.first_seen), str(c.used_again), str(c.kept)]
            if with_key:
                row += ["-" if c.key_values is None else str(c.key_values)]
                row += ["-" if c.key_kept is None else str(c.key_kept)]
            rows.append(row)
    lines += _table(rows)
    lines.append("")
    head = ["compactor", "compactions", "used again", "kept", "kept %"]
    rows = [head + (["key values", "key kept", "key kept %"] if with_key else [])]
    for name, t in _totals(reports).items():
        row = [name, str(t.compactions), str(t.used_again), str(t.kept), share(t.kept, t.used_again)]
        if with_key:
            row += [str(t.key_values), str(t.key_kept), share(t.key_kept, t.key_values)]
        rows.append(row)
    lines += _table(rows)
    return "\n".join(lines) + "\n"


def run_facts(
    args: argparse.Namespace, *, out: TextIO, err: TextIO, env: Mapping[str, str] | None = None
) -> int:
    """The ``facts`` command: exit 0 when every transcript was read, 1 when none was found or one was not."""
    paths = input_transcripts(args.files, os.environ if env is None else env)
    if not paths:
        err.write(
            "longhaul-daemon facts: no pi transcript found in pi's agent dir "
            "($PI_CODING_AGENT_DIR, else ~/.pi/agent)\n"
        )
        return EXIT_UNREADABLE
    reports = [_read(path, err) for path in paths]
    if args.json:
        out.write(json.dumps(_json_document(reports), ensure_ascii=True, indent=2) + "\n")
    else:
        out.write(_text(reports))
    return EXIT_UNREADABLE if any(r.problem is not None for r in reports) else EXIT_OK
