"""Turn what the RPC methods see into record-log records (LOG-16..LOG-24): codes, ids, counts, never text.

Ids and reason codes the shim sends are written in their real shapes only (:mod:`longhaul_daemon.log.fields`):
a pass id that is not 12 hex digits, or a reason that is not ASCII ``[a-z0-9-]``, is written as its length.

The methods await one function per event; each builds its fields from the request and the reply and hands
them to the daemon's :class:`~longhaul_daemon.log.records.RecordLog`, which never raises, in a worker thread:
a record is a handful of syscalls (open the directory and the file, check them, write, close) that the event
loop, answering every other session, has no time for. The record is on disk before the method answers. The
``compaction`` record is computed from the pass's ``CompactParams`` and ``CompactResult`` alone, so the pass
knows nothing about logging. A fallback the daemon decided (timeout, pass error) is recorded here with its
error class, and so is a pass cancelled before it answered (``aborted``); the shim then sends a ``fallback``
or ``aborted`` incident for the same pass id, which is not written twice.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import anyio
import anyio.to_thread
import structlog

from longhaul_daemon.log.fields import model_spec_field, pass_id_field, reason_field, token_field
from longhaul_daemon.log.records import LogFile, RecordLog, error_fields, pi_version_verified
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
from longhaul_daemon.secrets.redaction import EMPTY, Redactor
from longhaul_daemon.state.render import (
    MAX_COMMANDS,
    MAX_DIRTY,
    MAX_ITEMS,
    MAX_OPEN_ERRORS,
    MAX_WORK_LOG,
    paths_left_out,
)
from longhaul_daemon.state.sanitize import sanitize_line
from longhaul_daemon.user_settings import choose_compactor, names_a_compactor

__all__ = [
    "EXCERPT_CHARS",
    "KEPT_WINDOW_STRIP",
    "MAX_EXCERPTS",
    "Recorder",
    "cap_fit",
    "compaction_fields",
    "excerpt_fields",
    "report_for_session",
    "world_fields",
]

_log = structlog.get_logger("longhaul.methods")

KEPT_WINDOW_STRIP = "kept-window-strip"  # LOG-21's event

MAX_EXCERPTS = 20  # LOG-14: rejected quotes and left-out paths written per record, each
EXCERPT_CHARS = 200  # ... each cut to this many characters
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


def _left_out_paths(state: Mapping[str, Any]) -> list[str]:
    """The paths the summary's file blocks did not list (over the cap, or refused); the details keep them."""
    left: list[str] = []
    for key in ("readFiles", "modifiedFiles"):
        files = state.get(key)
        if isinstance(files, list):
            left += paths_left_out([str(f) for f in files])
    return left


def excerpt_fields(diagnostics: PassDiagnostics, state: object) -> dict[str, object]:
    """LOG-14's ``excerpts``: the rule words verification refused (QUOTE-17) and the paths the summary left
    out, each cleaned to one line and cut, at most :data:`MAX_EXCERPTS` of each. Pieces of the user's
    messages and of tool calls: written only when the session set ``PI_COMPACT_STATE_DEBUG_EXCERPTS=1``."""
    quotes = [
        {"msg": token_field(msg), "words": sanitize_line(words, EXCERPT_CHARS)}
        for msg, words in diagnostics.rejected_quotes[:MAX_EXCERPTS]
    ]
    paths = _left_out_paths(state) if isinstance(state, Mapping) else []
    return {
        "rejectedQuotes": quotes,
        "prunedPaths": [sanitize_line(path, EXCERPT_CHARS) for path in paths[:MAX_EXCERPTS]],
        "prunedPathCount": len(paths),
    }


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
    cut += len(_left_out_paths(state))
    world = state.get("world")
    if isinstance(world, Mapping):
        dirty, listed = _int(world.get("dirtyCount")) or 0, world.get("dirty")
        cut += max(0, dirty - min(len(listed) if isinstance(listed, list) else 0, MAX_DIRTY))
    return {"fit": cut == 0, "cut": cut}


def _narrative(diagnostics: PassDiagnostics) -> dict[str, object]:
    """LOG-17's narrative block: how the span closed and what the model calls cost, as counts (FAIL-17)."""
    shaped = dict(diagnostics.narrative)
    reasoning = shaped.get("reasoning")  # the level asked, from pi's thinkingLevelMap: client text
    shaped["reasoning"] = token_field(reasoning) if isinstance(reasoning, str) else reasoning
    return shaped


def _route(diagnostics: PassDiagnostics) -> dict[str, object]:
    """LOG-17's route block: the configured summarizer spec, the model used and why the route was not; the
    specs are model ids a client named, so they are written in their real shape."""
    route = diagnostics.route
    return {
        "configured": model_spec_field(route.configured),
        "used": model_spec_field(route.used),
        "why": route.why,
    }


def compaction_fields(params: CompactParams, result: CompactResult, duration_ms: int) -> dict[str, object]:
    """LOG-17/LOG-18 fields of a pass that produced a compaction."""
    assert result.compaction is not None
    span_record: Mapping[str, Any] = result.after.spanRecord if result.after is not None else {}
    state = result.compaction.details.get("state")
    fields: dict[str, object] = {
        "passId": result.passId,
        "span": result.span,
        "tokensBefore": params.preparation.tokensBefore,
        "summaryChars": len(result.compaction.summary),
        "narrative": _narrative(result.diagnostics),
        "route": _route(result.diagnostics),
        "capFit": cap_fit(state),
        "world": world_fields(span_record.get("world")),
        "carried": result.diagnostics.carried,
        # where the branch came from (session file or inline, and why the file was refused) and what it cost
        "branch": dict(result.diagnostics.branch),
        "durationMs": duration_ms,
    }
    if params.session.env.PI_COMPACT_STATE_DEBUG_EXCERPTS == "1":  # LOG-14; build_record checks it again
        fields["excerpts"] = excerpt_fields(result.diagnostics, state)
    return fields


class Recorder:
    """Per-daemon glue between the methods and the daemon's record log (``log``: its files, for ``status``).

    A pass's records take its ``redactor``: whatever a field holds, that pass's credentials never reach the
    file.
    """

    def __init__(self, log: RecordLog | None = None) -> None:
        self._log = log if log is not None else RecordLog()
        self._recorded_fallbacks: deque[str] = deque(maxlen=_REMEMBERED_PASSES)

    async def _write(
        self,
        session: SessionFacts,
        event: str,
        fields: Callable[[], Mapping[str, object]],
        redactor: Redactor = EMPTY,
    ) -> None:
        """Build ``fields()`` and write the record in a worker thread; a cancelled caller does not wait."""

        def write() -> None:
            self._log.write(session, event, fields(), redactor=redactor)

        await anyio.to_thread.run_sync(write, abandon_on_cancel=True)

    def log_files(self) -> list[LogFile]:
        """The record-log files written since the daemon started; ``[]`` when listing them fails, since
        ``status`` must answer whatever the log does."""
        try:
            return self._log.files()
        except Exception:
            return []

    async def hello(self, params: HelloParams) -> None:
        """LOG-16, written in stand-down sessions too (LOG-24).

        CONFIG-3: a ``PI_COMPACTOR`` value that names neither Longhaul nor pi is the user's own text, so only
        its length is written (``compactorValueChars``), enough to tell a typo from an empty value.
        """
        version = params.session.piVersion
        value = params.session.env.PI_COMPACTOR
        fields: dict[str, object] = {
            "reason": reason_field(params.reason),
            "piVersion": token_field(version),
            "piVersionVerified": pi_version_verified(version),
            "compactor": choose_compactor(value),
        }
        if value is not None and not names_a_compactor(value):
            fields["compactorValueChars"] = len(value)
        await self._write(params.session, "extension-loaded", lambda: fields)

    async def pass_finished(
        self, params: CompactParams, result: CompactResult, duration_ms: int, *, redactor: Redactor
    ) -> None:
        """LOG-17 for a compaction; a fallback the pass itself returned becomes a ``fallback`` record."""
        if choose_compactor(params.session.env.PI_COMPACTOR) == "pi":
            return  # LOG-24: never a compaction record when Longhaul stands down
        if result.compaction is not None:
            fields = partial(compaction_fields, params, result, duration_ms)
            await self._write(params.session, "compaction", fields, redactor)
        elif result.fallback is not None:
            await self.pass_fallback(
                params, result.passId, result.fallback, None, span=result.span or None, redactor=redactor
            )

    async def pass_aborted(
        self, params: CompactParams, pass_id: str, *, span: int | None, redactor: Redactor
    ) -> None:
        """A pass cancelled before it answered (its client went, or the daemon stopped): LOG-22's
        ``aborted``, with ``reason: cancelled``, so the record log says how every pass ended."""
        fields: dict[str, object] = {"reason": "cancelled", "passId": pass_id, "span": span}
        self._recorded_fallbacks.append(pass_id)
        await self._write(params.session, "aborted", lambda: fields, redactor)

    async def pass_fallback(
        self,
        params: CompactParams,
        pass_id: str,
        reason: str,
        exc: BaseException | None,
        *,
        span: int | None = None,
        redactor: Redactor,
    ) -> None:
        """LOG-23/FAIL-13: the daemon answered with a fallback (timeout, pass error); ``span`` is the number
        the pass would have had (PASS-16), None when it fell back before its Fold."""
        fields: dict[str, object] = {"reason": reason, "passId": pass_id, "span": span}
        if exc is not None:
            fields.update(error_fields(exc, redactor=redactor))
        else:
            fields.update({"errorClass": None, "error": None})
        self._recorded_fallbacks.append(pass_id)
        await self._write(params.session, "fallback", lambda: fields, redactor)

    async def kept_window_strip(self, session: SessionFacts, counts: Mapping[str, object]) -> None:
        """LOG-21: a kept window that lost its reasoning, the first time it did."""
        await self._write(session, KEPT_WINDOW_STRIP, lambda: counts)

    async def compacted(self, params: CompactedParams) -> None:
        """LOG-19 (and LOG-24: stand-down sessions too)."""
        await self._write(
            params.session,
            "compacted",
            lambda: {
                "fromExtension": params.fromExtension,
                "reason": reason_field(params.reason),
                "passId": pass_id_field(params.passId),
                "span": params.span,
                "summaryChars": params.summaryChars,
                "tokensBefore": params.tokensBefore,
            },
        )

    async def compact_failed(self, params: CompactFailedParams) -> None:
        """LOG-20."""
        await self._write(
            params.session,
            "compact-failed",
            lambda: {
                "reason": reason_field(params.reason),
                "passId": pass_id_field(params.passId),
                "span": params.span,
            },
        )

    async def incident(self, params: IncidentParams) -> None:
        """LOG-22/LOG-23 from the shim; the daemon's own fallback or abort record is not written twice."""
        if (
            params.kind in ("fallback", "aborted")
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
        await self._write(params.session, params.kind, lambda: fields)


async def report_for_session(session: SessionFacts) -> ReportResult:
    """The digest of ``session``'s log in effect, read in a worker thread (log and backup: up to 10 MiB).

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
