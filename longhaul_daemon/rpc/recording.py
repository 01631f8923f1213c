"""Turn what the RPC methods see into record-log records (LOG-16..LOG-24): codes, ids, counts, never text.

Ids and reason codes the shim sends are written in their real shapes only (:mod:`longhaul_daemon.log.fields`):
a pass id that is not 12 hex digits, or a reason that is not ASCII ``[a-z0-9-]``, is written as its length.

The methods call one function per event; each builds its fields from the request and the reply and hands them
to :func:`~longhaul_daemon.log.records.write_record`, which never raises. The ``compaction`` record is
computed from the pass's ``CompactParams`` and ``CompactResult`` alone, so the pass knows nothing about
logging. A fallback the daemon decided (timeout, pass error) is recorded here with its error class; the shim
then sends a ``fallback`` incident for the same pass id, which is not written twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from typing import Any

import anyio.to_thread
import structlog

from longhaul_daemon.config import choose_compactor
from longhaul_daemon.log.fields import model_spec_field, pass_id_field, reason_field, token_field
from longhaul_daemon.log.records import error_fields, pi_version_verified, write_record
from longhaul_daemon.log.report import build_report
from longhaul_daemon.protocol import (
    CompactedParams,
    CompactFailedParams,
    CompactParams,
    CompactResult,
    HelloParams,
    IncidentParams,
    PassDiagnostics,
    ReportResult,
    SessionFacts,
)
from longhaul_daemon.state.render import (
    MAX_COMMANDS,
    MAX_DIRTY,
    MAX_FILES,
    MAX_ITEMS,
    MAX_OPEN_ERRORS,
    MAX_WORK_LOG,
)

__all__ = ["Recorder", "cap_fit", "compaction_fields", "report_for_session", "world_fields"]

_log = structlog.get_logger("longhaul.methods")

_REMEMBERED_PASSES = 256  # fallbacks the daemon recorded itself, so the shim's incident is not written twice
_WORLD_COUNTS = ("commandsRun", "commandsFailed", "dirtyCount", "durationMs")


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def world_fields(world: object) -> dict[str, object] | None:
    """WORLD-9: status and counts only, never a path, branch name or commit subject."""
    if not isinstance(world, Mapping):
        return None
    status = world.get("status")
    out: dict[str, object] = {
        "status": status if status in ("repository", "no-repository", "unavailable") else None,
        "repository": status == "repository",
    }
    for key in _WORLD_COUNTS:
        out[key] = _int(world.get(key))
    missing = world.get("missing")
    out["missing"] = len(missing) if isinstance(missing, list) else 0
    return out


def _over(items: object, cap: int) -> int:
    return max(0, len(items) - cap) if isinstance(items, list) else 0


def cap_fit(state: object) -> dict[str, object]:
    """LOG-18: did the rendered summary show every item, or how many did its caps leave to the details."""
    if not isinstance(state, Mapping):
        return {"fit": True, "cut": 0}
    cut = sum(_over(state.get(key), MAX_ITEMS) for key in ("decisions", "deadEnds", "values", "notes"))
    cut += _over(state.get("commands"), MAX_COMMANDS) + _over(state.get("workLog"), MAX_WORK_LOG)
    errors = state.get("errors")
    open_errors = (
        [e for e in errors if isinstance(e, Mapping) and e.get("open")] if isinstance(errors, list) else []
    )
    cut += _over(open_errors, MAX_OPEN_ERRORS)
    for key in ("readFiles", "modifiedFiles"):
        files = state.get(key)
        cut += _over(sorted({str(f) for f in files}), MAX_FILES) if isinstance(files, list) else 0
    world = state.get("world")
    if isinstance(world, Mapping):
        dirty, listed = _int(world.get("dirtyCount")) or 0, world.get("dirty")
        cut += max(0, dirty - min(len(listed) if isinstance(listed, list) else 0, MAX_DIRTY))
    return {"fit": cut == 0, "cut": cut}


def _narrative(
    span_record: Mapping[str, Any], line: Mapping[str, Any], diagnostics: PassDiagnostics | None
) -> dict[str, object]:
    """LOG-17's narrative block: how the span closed and what the model calls cost, as counts (FAIL-17).

    The pass reports its own numbers in ``diagnostics``; a pass that sent none (a test seam, an older pass)
    is described from its span record and line.
    """
    if diagnostics is not None and diagnostics.narrative:
        shaped = dict(diagnostics.narrative)
        reasoning = shaped.get("reasoning")  # the level asked, from pi's thinkingLevelMap: client text
        shaped["reasoning"] = token_field(reasoning) if isinstance(reasoning, str) else reasoning
        return shaped
    narrative = span_record.get("narrative")
    closed_as = span_record.get("closedAs")
    return {
        "kind": closed_as if isinstance(closed_as, str) else None,
        "reason": span_record.get("reason") if isinstance(span_record.get("reason"), str) else None,
        "calls": _int(line.get("calls")) or 0,
        "accepted": 1 if isinstance(narrative, str) and narrative else 0,
        "dropped": 0,
        "usage": {"tokens": _int(line.get("tokens")) or 0},
        "timings": {},
        "reasoning": None,
    }


def _route(params: CompactParams, diagnostics: PassDiagnostics | None) -> dict[str, object]:
    """LOG-17's route block: the configured summarizer spec, the model used and why the route was not; the
    specs are model ids a client named, so they are written in their real shape (issue 12, item 8)."""
    if diagnostics is not None:
        route = diagnostics.route
        return {
            "configured": model_spec_field(route.configured),
            "used": model_spec_field(route.used),
            "why": route.why,
        }
    model = params.session.model
    return {
        "configured": None,
        "used": model_spec_field(model.spec) if model is not None else None,
        "why": None,
    }


def compaction_fields(params: CompactParams, result: CompactResult, duration_ms: int) -> dict[str, object]:
    """LOG-17/LOG-18 fields of a pass that produced a compaction."""
    assert result.compaction is not None
    after = result.after
    span_record: Mapping[str, Any] = after.spanRecord if after is not None else {}
    line: Mapping[str, Any] = after.line if after is not None else {}
    state = result.compaction.details.get("state")
    carried = state.get("carried") if isinstance(state, Mapping) else None
    return {
        "passId": result.passId,
        "span": result.span,
        "tokensBefore": params.preparation.tokensBefore,
        "summaryChars": len(result.compaction.summary),
        "narrative": _narrative(span_record, line, result.diagnostics),
        "route": _route(params, result.diagnostics),
        "capFit": cap_fit(state),
        "world": world_fields(span_record.get("world")),
        "carried": len(carried) if isinstance(carried, list) else 0,
        # where the branch came from (session file or inline, and why the file was refused) and what it cost
        "branch": dict(result.diagnostics.branch) if result.diagnostics is not None else {},
        "durationMs": duration_ms,
    }


class Recorder:
    """Per-daemon glue between the methods and the record log."""

    def __init__(self) -> None:
        self._recorded_fallbacks: deque[str] = deque(maxlen=_REMEMBERED_PASSES)

    @staticmethod
    def _write(session: SessionFacts, event: str, fields: Mapping[str, object]) -> None:
        write_record(session, event, fields)

    def hello(self, params: HelloParams) -> None:
        """LOG-16, written in stand-down sessions too (LOG-24)."""
        version = params.session.piVersion
        self._write(
            params.session,
            "extension-loaded",
            {
                "reason": reason_field(params.reason),
                "piVersion": token_field(version),
                "piVersionVerified": pi_version_verified(version),
                "compactor": choose_compactor(params.session.env.PI_COMPACTOR),
            },
        )

    def pass_finished(self, params: CompactParams, result: CompactResult, duration_ms: int) -> None:
        """LOG-17 for a compaction; a fallback the pass itself returned becomes a ``fallback`` record."""
        if choose_compactor(params.session.env.PI_COMPACTOR) == "pi":
            return  # LOG-24: never a compaction record when Longhaul stands down
        if result.compaction is not None:
            self._write(params.session, "compaction", compaction_fields(params, result, duration_ms))
        elif result.fallback is not None:
            self.pass_fallback(params, result.passId, result.fallback, None)

    def pass_fallback(
        self, params: CompactParams, pass_id: str, reason: str, exc: BaseException | None
    ) -> None:
        """LOG-23/FAIL-13: the daemon answered with a fallback (timeout, pass error)."""
        fields: dict[str, object] = {"reason": reason, "passId": pass_id, "span": None}
        fields.update(error_fields(exc) if exc is not None else {"errorClass": None, "error": None})
        self._recorded_fallbacks.append(pass_id)
        self._write(params.session, "fallback", fields)

    def compacted(self, params: CompactedParams) -> None:
        """LOG-19 (and LOG-24: stand-down sessions too)."""
        self._write(
            params.session,
            "compacted",
            {
                "fromExtension": params.fromExtension,
                "reason": reason_field(params.reason),
                "passId": pass_id_field(params.passId),
                "span": params.span,
                "summaryChars": params.summaryChars,
                "tokensBefore": params.tokensBefore,
            },
        )

    def compact_failed(self, params: CompactFailedParams) -> None:
        """LOG-20."""
        self._write(
            params.session,
            "compact-failed",
            {
                "reason": reason_field(params.reason),
                "passId": pass_id_field(params.passId),
                "span": params.span,
            },
        )

    def incident(self, params: IncidentParams) -> None:
        """LOG-22/LOG-23 from the shim; a fallback the daemon already recorded is not written twice."""
        if (
            params.kind == "fallback"
            and params.passId is not None
            and params.passId in self._recorded_fallbacks
        ):
            return
        fields: dict[str, object] = {
            "reason": reason_field(params.reason),
            "passId": pass_id_field(params.passId),
        }
        if params.kind in ("span-record-failed", "aborted", "fallback"):
            fields["span"] = params.span
        fields.update(error_fields(error_class=params.errorClass, error=params.error))
        self._write(params.session, params.kind, fields)


async def report_for_session(session: SessionFacts) -> ReportResult:
    """The digest of ``session``'s log in effect, read in a worker thread (the file may be 10 MiB).

    A log that cannot be read (an I/O error, a path the system refuses) is said so in the digest: the
    command answers, and the operational log has the error class.
    """
    try:
        report = await anyio.to_thread.run_sync(
            build_report, session.agentDir, session.cwd, session.env.PI_COMPACT_STATE_DEBUG
        )
    except OSError as exc:
        _log.warning("report_unreadable", error_class=type(exc).__name__)
        return ReportResult(
            digest=f"Longhaul report: the log could not be read ({type(exc).__name__}).", records=0
        )
    return ReportResult(digest=report.digest, records=report.records)
