"""``longhaul-daemon state``: fold a pi transcript and print its state, spans or anomalies (INSPECT-1..12).

The command reads one session file and nothing else: no daemon, no model, no network, no git (INSPECT-7), and
the file is only ever opened for reading (INSPECT-12). Exit status: 0 printed; 1 no transcript could be read
(INSPECT-10); 2 a usage error, such as a ``--span`` that names no span on the branch (INSPECT-5).
"""

from __future__ import annotations

import argparse
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.inspector.compaction_rows import CompactionRow, compaction_rows
from longhaul_daemon.inspector.session_file import (
    Transcript,
    TranscriptError,
    agent_dir,
    newest_transcript,
    read_transcript,
    transcript_error_line,
)
from longhaul_daemon.inspector.views import (
    anomalies_text,
    anomaly_rows,
    header_text,
    json_text,
    rows_json,
    rows_text,
    state_text,
    terminal_safe,
)
from longhaul_daemon.passes.fold import FoldResult, fold
from longhaul_daemon.state.sanitize import sanitize

__all__ = ["EXIT_NO_TRANSCRIPT", "EXIT_OK", "EXIT_USAGE", "run_state"]

EXIT_OK = 0
EXIT_NO_TRANSCRIPT = (
    1  # INSPECT-10: missing, unreadable, empty, or not a pi session file; none in the agent dir
)
EXIT_USAGE = 2  # INSPECT-5: --span N names no span on the branch (argparse uses 2 for bad arguments too)


def _locate(file: str | None, env: Mapping[str, str]) -> Path:
    if file is not None:
        return Path(file)
    return newest_transcript(agent_dir(env))


def _json_document(
    transcript: Transcript, folded: FoldResult, args: argparse.Namespace, rows: list[CompactionRow]
) -> object:
    if not args.spans and not args.anomalies:
        return folded.state.model_dump(mode="json")  # INSPECT-6: the state itself, as details.state holds it
    document: dict[str, Any] = {"file": str(transcript.path), "leafId": transcript.leaf_id}
    if args.span is not None:
        document["shownSpan"] = args.span
    if args.spans:
        document["spans"] = rows_json(rows)
    if args.anomalies:
        document["anomalies"] = [
            {"line": a.line, "entryId": a.entry_id, "code": a.code, "detail": a.detail}
            for a in anomaly_rows(transcript, folded)
        ]
    return document


def _text_output(
    transcript: Transcript, folded: FoldResult, args: argparse.Namespace, rows: list[CompactionRow]
) -> str:
    anomalies = anomaly_rows(transcript, folded)
    parts = [header_text(transcript, folded, len(anomalies), shown_span=args.span)]
    if args.spans:
        parts.append(rows_text(rows))
    if args.anomalies:
        parts.append(anomalies_text(anomalies))
    if not args.spans and not args.anomalies:
        parts.append(state_text(folded, rows))
    return terminal_safe("\n".join(parts))


def _fail(err: TextIO, message: str, code: int) -> int:
    err.write(terminal_safe(f"longhaul-daemon state: {sanitize(message)}\n"))
    return code


def run_state(
    args: argparse.Namespace, *, out: TextIO, err: TextIO, env: Mapping[str, str] | None = None
) -> int:
    """Run ``state`` for parsed ``args``; writes to ``out`` and ``err`` and returns the exit status."""
    try:
        transcript = read_transcript(_locate(args.file, os.environ if env is None else env))
    except TranscriptError as exc:
        err.write(transcript_error_line("state", exc))
        return EXIT_NO_TRANSCRIPT
    try:
        folded = fold(transcript.branch, stop_after_span=args.span)
    except ValueError:
        count = len(fold(transcript.branch).spans)
        have = f"its Longhaul spans are 1..{count}" if count else "it has no Longhaul span"
        return _fail(err, f"{transcript.path}: span {args.span} is not on this branch; {have}", EXIT_USAGE)
    rows = compaction_rows(transcript.branch, folded.spans, through_span=args.span)
    if args.json:
        text = json_text(_json_document(transcript, folded, args, rows))
    else:
        text = _text_output(transcript, folded, args, rows)
    if isinstance(out, io.TextIOWrapper):
        out.reconfigure(errors="replace")  # a terminal that cannot show "…" gets "?", never a traceback
    out.write(text)  # `state | head`: the CLI's stdout drops what the gone reader would have got
    out.flush()
    return EXIT_OK
