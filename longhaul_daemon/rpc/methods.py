"""The daemon's JSON-RPC methods, built per daemon over one :class:`~.services.Services` (no module globals).

``compact`` is the one that matters: it refuses a second pass for a busy session (PASS-21), stands down when
the session chose another compactor (CONFIG-1..4), and otherwise runs the pass under its time budget, turning
a timeout or a crash into a fallback reply so the shim lets pi compact instead. Everything logged here is
codes, ids and counts, never message text; ids and codes a client sent are logged in their real shapes only
(:mod:`longhaul_daemon.log.fields`). A pass's credentials make its redactor, handed to the pass, its records,
its log lines and its reply, so none of them carries one (:mod:`longhaul_daemon.secrets.redaction`); the
shim of the request's connection goes to the pass too, for model calls through pi.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import structlog

from longhaul_daemon import __version__
from longhaul_daemon.collector import PAUSE
from longhaul_daemon.errors import Busy
from longhaul_daemon.log.fields import error_class_field, pass_id_field, reason_field
from longhaul_daemon.models.via_pi import PiPeer
from longhaul_daemon.offload import Offload
from longhaul_daemon.passes.progress import PassProgress
from longhaul_daemon.protocol import (
    PROTOCOL_VERSION,
    CompactedParams,
    CompactFailedParams,
    CompactParams,
    CompactResult,
    HelloParams,
    HelloResult,
    IncidentParams,
    OkResult,
    PassDiagnostics,
    ReportParams,
    ReportResult,
    RouteParams,
    RouteResult,
    StatusParams,
    StatusResult,
)
from longhaul_daemon.rpc.recording import report_for_session
from longhaul_daemon.rpc.registry import RpcMethod, rpc, rpc_with_peer
from longhaul_daemon.rpc.services import RunPass, Services
from longhaul_daemon.rpc.tool_methods import build_tool_methods
from longhaul_daemon.secrets.redaction import Redactor, log_binding, redactor_for_pass
from longhaul_daemon.transcript.messages import span_refs
from longhaul_daemon.user_settings import choose_compactor, load_settings

__all__ = ["RunPass", "Services", "build_methods", "new_pass_id", "redacted_result"]

_log = structlog.get_logger("longhaul.methods")

_SAFETY_MARGIN_S = 5.0  # the outer -32001 net sits this far behind the pass budget's own fallback


def new_pass_id() -> str:
    """Twelve hex characters: unique enough per user, short enough for log lines and summaries."""
    return uuid.uuid4().hex[:12]


def redacted_result(result: CompactResult, redactor: Redactor) -> CompactResult:
    """``result`` with the pass's credentials taken out of everything it returns: summary, details, span
    record, line, notice and diagnostics. The same object when nothing held one (the usual case)."""
    if not redactor:
        return result
    update: dict[str, Any] = {}
    if result.compaction is not None:
        compaction = result.compaction
        summary, details = redactor.text(compaction.summary), redactor.value(compaction.details)
        if summary is not compaction.summary or details is not compaction.details:
            update["compaction"] = compaction.model_copy(update={"summary": summary, "details": details})
    if result.after is not None:
        after = result.after
        record, line = redactor.value(after.spanRecord), redactor.value(after.line)
        if record is not after.spanRecord or line is not after.line:
            update["after"] = after.model_copy(update={"spanRecord": record, "line": line})
    for name in ("notice", "fallback"):
        text = getattr(result, name)
        if text is not None and redactor.finds(text):
            update[name] = redactor.text(text)
    diagnostics = result.diagnostics
    dumped = diagnostics.model_dump(mode="json")
    quotes = [(msg, redactor.text(words)) for msg, words in diagnostics.rejected_quotes]
    if redactor.value(dumped) is not dumped or quotes != diagnostics.rejected_quotes:
        redacted = PassDiagnostics.model_validate(redactor.value(dumped))
        update["diagnostics"] = redacted.model_copy(update={"rejected_quotes": quotes})
    return result.model_copy(update=update) if update else result


@dataclass(frozen=True)
class _PassCall:
    """One ``compact`` past its busy check: its pass id, the shim of its connection, its credentials'
    redactor and the logger bound with both ids and the redactor."""

    pass_id: str
    peer: PiPeer | None
    redactor: Redactor
    log: structlog.typing.FilteringBoundLogger


async def _run_compact(services: Services, params: CompactParams, peer: PiPeer | None) -> CompactResult:
    session_id = params.session.sessionId
    services.sessions_seen.add(session_id)
    if session_id in services.busy_sessions:
        _log.info("compact_busy", session_id=session_id)
        raise Busy("A pass for this session is already running")
    pass_id = new_pass_id()
    log = _log.bind(session_id=session_id, pass_id=pass_id)
    if choose_compactor(params.session.env.PI_COMPACTOR) == "pi":
        log.info("compact_stand_down")
        return CompactResult(passId=pass_id, span=0, fallback="stand-down")
    services.busy_sessions.add(session_id)
    # From here on every log line, record and model call of this pass takes out the credentials it received;
    # they leave with the pass.
    redactor = redactor_for_pass(params)
    log = log.bind(**log_binding(redactor))
    try:
        with PAUSE.held():
            return await _run_busy_compact(services, params, _PassCall(pass_id, peer, redactor, log))
    finally:
        services.busy_sessions.discard(session_id)


async def _run_busy_compact(services: Services, params: CompactParams, call: _PassCall) -> CompactResult:
    """The pass itself, its session marked busy: read the branch, run, count, record.

    However it ends (closed, timed out, failed, cancelled), the pass leaves its record in the record log. The
    budget ends it on time whatever step runs: the pure steps run in threads a cancelled pass does not wait
    for, so the reply below is sent within moments of the deadline.
    """
    pass_id, redactor, log = call.pass_id, call.redactor, call.log
    started = time.monotonic()
    progress = PassProgress()  # PASS-16: a pass cut off after its Fold falls back under its span number
    try:
        if params.branchEntries is not None:
            branch: Sequence[dict[str, Any]] | None = None
            branch_stats: dict[str, Any] = {"source": "inline", "refused": params.sessionFileRefused}
            users = None
        else:
            assert params.leafId is not None  # CompactParams checks that a branch source is given
            read = await services.read_branch(params.session, params.leafId, span_refs(params.preparation))
            branch, branch_stats, users = read.entries, read.stats(), read.user_ids
    except anyio.get_cancelled_exc_class():
        await _record_cancelled(services, params, call, progress, started)
        raise
    services.passes_in_flight += 1
    log.info("pass_started", reason=params.reason, branch_entries=len(branch or params.branchEntries or []))
    left_s = max(0.0, services.pass_budget_s - (time.monotonic() - started))  # reading the file counts too
    try:
        # CONFIG-5: read once per pass and handed on to the pass and to the problems it reports afterwards
        settings = load_settings(params.session.agentDir, params.session.cwd)
        problems = services.settings_problems(settings)
        if problems:
            log.info("settings_problems", problems=problems)
        result: CompactResult | None = None
        with anyio.move_on_after(left_s):
            ran = await services.run_pass(
                params,
                pass_id=pass_id,
                branch=branch,
                branch_stats=branch_stats,
                access=services.model_access(),
                pass_budget_s=left_s,
                turn_budget_s=services.turn_budget_s,
                progress=progress,
                users=users,
                settings=settings,
                peer=call.peer,
                redactor=redactor,
                narrative_choices=services.narrative_choices,
            )
            # CONFIG-6..9: no silent problem
            ran = services.settings_notices.after_pass(params, ran, log, settings, redactor)
            # before it is counted, recorded or sent; a big pass's state is big, so off the loop like its CPU
            offload = Offload.for_read(branch_stats)
            result = await offload.run(partial(redacted_result, ran, redactor))
        if result is None:
            services.pass_counts.fallback += 1
            services.count_reason("timeout")
            log.warning("pass_timeout", budget_s=services.pass_budget_s)
            await services.recorder.pass_fallback(
                params, pass_id, "timeout", None, span=progress.span, redactor=redactor
            )
            return CompactResult(passId=pass_id, span=progress.span or 0, fallback="timeout")
        services.count_result(result)
        log.info("pass_finished", span=result.span, fallback=result.fallback)
        duration_ms = round((time.monotonic() - started) * 1000)
        await services.recorder.pass_finished(params, result, duration_ms, redactor=redactor)
        return result
    except anyio.get_cancelled_exc_class():
        await _record_cancelled(services, params, call, progress, started)
        raise
    except Exception as exc:
        services.pass_counts.fallback += 1
        services.count_reason("pass-error")
        log.error("pass_error", error_class=type(exc).__name__)
        await services.recorder.pass_fallback(
            params, pass_id, "pass-error", exc, span=progress.span, redactor=redactor
        )
        return CompactResult(passId=pass_id, span=progress.span or 0, fallback="pass-error")
    finally:
        services.passes_in_flight -= 1


async def _record_cancelled(
    services: Services, params: CompactParams, call: _PassCall, progress: PassProgress, started: float
) -> None:
    """A pass cancelled before it answered: counted, logged and recorded, shielded from the cancellation.

    Past its budget (the method's own deadline net cut it off) it is a ``timeout`` fallback, as the
    pass's own budget would have made it; otherwise its client went away or the daemon is stopping.
    """
    pass_id, redactor, log = call.pass_id, call.redactor, call.log
    with anyio.CancelScope(shield=True):
        if time.monotonic() - started >= services.pass_budget_s:
            services.pass_counts.fallback += 1
            services.count_reason("timeout")
            log.warning("pass_timeout", budget_s=services.pass_budget_s)
            await services.recorder.pass_fallback(
                params, pass_id, "timeout", None, span=progress.span, redactor=redactor
            )
            return
        services.pass_counts.aborted += 1
        services.count_reason("cancelled")
        log.info("pass_aborted")
        await services.recorder.pass_aborted(params, pass_id, span=progress.span, redactor=redactor)


def build_methods(services: Services) -> dict[str, RpcMethod]:
    """The method table for one daemon; handlers close over ``services``."""

    @rpc("hello", HelloParams)
    async def hello(params: HelloParams) -> HelloResult:
        services.sessions_seen.add(params.session.sessionId)
        compactor = choose_compactor(params.session.env.PI_COMPACTOR)
        await services.recorder.hello(params)
        if compactor == "longhaul" and params.session.sessionFile is not None:
            # a resumed session's first pass then finds its file indexed, however long the file is
            services.warmer.submit(params.session.sessionFile, params.session.sessionId)
        _log.info(
            "hello",
            session_id=params.session.sessionId,
            compactor=compactor,
            reason=reason_field(params.reason),
        )
        return HelloResult(
            daemonVersion=__version__,
            protocolVersion=PROTOCOL_VERSION,
            compactor=compactor,
            deadlineMs=round(services.pass_budget_s * 1000),
            summarizer=load_settings(params.session.agentDir, params.session.cwd).summarizer,  # CONFIG-8
        )

    deadline_s = services.pass_budget_s + _SAFETY_MARGIN_S

    @rpc_with_peer("compact", CompactParams, deadline_s=deadline_s, encode_in_thread=True)
    async def compact(params: CompactParams, peer: PiPeer | None) -> CompactResult:
        return await _run_compact(services, params, peer)

    @rpc("compacted", CompactedParams)
    async def compacted(params: CompactedParams) -> OkResult:
        services.sessions_seen.add(params.session.sessionId)
        _log.info(
            "compacted",
            session_id=params.session.sessionId,
            pass_id=pass_id_field(params.passId),
            span=params.span,
            from_extension=params.fromExtension,
            reason=reason_field(params.reason),
            summary_chars=params.summaryChars,
            tokens_before=params.tokensBefore,
        )
        await services.recorder.compacted(params)
        return OkResult()

    @rpc("compact_failed", CompactFailedParams)
    async def compact_failed(params: CompactFailedParams) -> OkResult:
        services.sessions_seen.add(params.session.sessionId)
        _log.info(
            "compact_failed",
            session_id=params.session.sessionId,
            pass_id=pass_id_field(params.passId),
            span=params.span,
            reason=reason_field(params.reason),
        )
        await services.recorder.compact_failed(params)
        return OkResult()

    @rpc("incident", IncidentParams)
    async def incident(params: IncidentParams) -> OkResult:
        services.sessions_seen.add(params.session.sessionId)
        details: dict[str, Any] = {
            "session_id": params.session.sessionId,
            "kind": params.kind,
            "pass_id": pass_id_field(params.passId),
            "span": params.span,
            "reason": reason_field(params.reason),
            "error_class": error_class_field(params.errorClass),
            "error_chars": None if params.error is None else len(params.error),
        }
        _log.warning("incident", **details)
        await services.recorder.incident(params)
        return OkResult()

    @rpc("report", ReportParams)
    async def report(params: ReportParams) -> ReportResult:
        return await report_for_session(params.session)  # REPORT-1, REPORT-5: reads the log, no model call

    @rpc("route", RouteParams)
    async def route(params: RouteParams) -> RouteResult:
        # CONFIG-5/8: read again for every pass, so the shim resolves the spec that this pass will plan with.
        settings = load_settings(params.session.agentDir, params.session.cwd)
        return RouteResult(summarizer=settings.summarizer)

    @rpc("status", StatusParams)
    async def status(params: StatusParams) -> StatusResult:
        return services.status()

    table = (hello, compact, compacted, compact_failed, incident, report, route, status)
    return {**{method.name: method for method in table}, **build_tool_methods(services)}
