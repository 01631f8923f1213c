"""The daemon's JSON-RPC methods and the :class:`Services` they share, built per daemon (no module globals).

``compact`` is the one that matters: it refuses a second pass for a busy session (PASS-21), stands down when
the session chose another compactor (CONFIG-1..4), and otherwise runs the pass under its time budget, turning
a timeout or a crash into a fallback reply so the shim lets pi compact instead. Everything logged here is
codes, ids and counts, never message text; ids and codes a client sent are logged in their real shapes only
(:mod:`longhaul_daemon.log.fields`), and a pass runs with its credentials bound for redaction, so its reply,
records and log lines never carry them (:mod:`longhaul_daemon.secrets.redaction`).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog

from longhaul_daemon import __version__
from longhaul_daemon.config import DEFAULT_PASS_BUDGET_S, choose_compactor
from longhaul_daemon.errors import Busy
from longhaul_daemon.log.fields import error_class_field, pass_id_field, reason_field
from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.models.structured import StructuredMemory
from longhaul_daemon.ops.status_view import RouteHealthBook, SeenSessions, known_log_files
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
    PassCounts,
    PassDiagnostics,
    ReportParams,
    ReportResult,
    RouteParams,
    RouteResult,
    SessionFacts,
    StatusParams,
    StatusResult,
)
from longhaul_daemon.rpc.recording import Recorder, report_for_session
from longhaul_daemon.rpc.registry import RpcMethod, rpc
from longhaul_daemon.rpc.tool_methods import build_tool_methods
from longhaul_daemon.secrets.redaction import Redactor, redactor_for_pass
from longhaul_daemon.secrets.redaction import bound as bound_redactor
from longhaul_daemon.secrets.redaction import current as current_redactor
from longhaul_daemon.sessionfile.files import BranchRead, SessionFileRefused, SessionFiles, SessionWarmer
from longhaul_daemon.settings import load_settings
from longhaul_daemon.settings_notices import ConfigWatch
from longhaul_daemon.transcript.messages import span_refs

__all__ = ["RunPass", "Services", "build_methods", "new_pass_id", "redacted_result"]

_log = structlog.get_logger("longhaul.methods")

RunPass = Callable[..., Awaitable[CompactResult]]
"""``async def run_pass(params, *, pass_id, branch, branch_stats, access, pass_budget_s, progress)``."""

_SAFETY_MARGIN_S = 5.0  # the outer -32001 net sits this far behind the pass budget's own fallback


async def _default_run_pass(params: CompactParams, **context: Any) -> CompactResult:
    """The real pass, imported on first use so the RPC layer loads even where the pass is absent or broken."""
    from longhaul_daemon.passes.run import run_pass

    return await run_pass(params, **context)


def new_pass_id() -> str:
    """Twelve hex characters: unique enough per user, short enough for log lines and summaries."""
    return uuid.uuid4().hex[:12]


@dataclass
class Services:
    """What the methods share for the daemon's life: identity, counters, the busy set, and the pass seam."""

    socket_path: str
    socket_activated: bool = False
    pass_budget_s: float = DEFAULT_PASS_BUDGET_S
    run_pass: RunPass = _default_run_pass
    started_at: float = field(default_factory=time.monotonic)
    pass_counts: PassCounts = field(default_factory=PassCounts)
    busy_sessions: set[str] = field(default_factory=set)
    sessions_seen: SeenSessions = field(default_factory=SeenSessions)  # bounded, holds digests only
    passes_in_flight: int = 0
    recorder: Recorder = field(default_factory=Recorder)  # the record log (LOG-16..LOG-24)
    route_health: RouteHealthBook = field(default_factory=RouteHealthBook)  # model calls, for status
    via_pi_apis: frozenset[str] = frozenset()  # apis whose calls go through the shim (serve --via-pi)
    provider_limits: ProviderLimits = field(default_factory=ProviderLimits)  # per-provider concurrency
    structured_memory: StructuredMemory = field(default_factory=StructuredMemory)  # routes refusing a schema
    session_files: SessionFiles = field(default_factory=SessionFiles)  # indexes of pi's session files
    warmer: SessionWarmer = field(init=False)  # indexes a session's file after its hello
    http_client: HttpClient | None = None  # the daemon's one client, opened and closed by the lifecycle
    config_watch: ConfigWatch = field(default_factory=ConfigWatch)  # longhaul.json and route problems

    def __post_init__(self) -> None:
        self.warmer = SessionWarmer(self.session_files)

    async def read_branch(
        self, session: SessionFacts, leaf_id: str, span_ids: Sequence[str] = (), *, whole: bool = True
    ) -> BranchRead:
        """The branch from pi's session file, read in a worker thread; raises ``SessionFileRefused``."""
        path = session.sessionFile
        if path is None:
            raise SessionFileRefused("missing")
        try:
            return await anyio.to_thread.run_sync(
                lambda: self.session_files.read_branch(
                    path, session_id=session.sessionId, leaf_id=leaf_id, span_ids=span_ids, whole=whole
                )
            )
        except SessionFileRefused as refused:
            _log.info("session_file_refused", session_id=session.sessionId, reason=refused.reason)
            raise

    def model_access(self) -> ModelAccess:
        """What a pass needs to call models; shared limits, health and client, so status sees every pass's
        calls and no pass pays for a connection pool and SSL context of its own."""
        return ModelAccess(
            limits=self.provider_limits,
            health=self.route_health,
            structured=self.structured_memory,
            via_pi_apis=self.via_pi_apis,
            client=self.http_client,
        )

    def apply_settings(self, params: CompactParams) -> list[str]:
        """Read this pass's ``longhaul.json`` for its daemon-wide part, the per-provider concurrency, and
        return its problems as ``source:code`` (CONFIG-9: never the file's path or content)."""
        settings = load_settings(params.session.agentDir, params.session.cwd)
        self.provider_limits.configure(dict(settings.concurrency))
        return [f"{problem.source}:{problem.code}" for problem in settings.problems]

    def status(self) -> StatusResult:
        return StatusResult(
            version=__version__,
            protocolVersion=PROTOCOL_VERSION,
            pid=os.getpid(),
            uptimeS=round(time.monotonic() - self.started_at, 3),
            socket=self.socket_path,
            socketActivated=self.socket_activated,
            passes=self.pass_counts.model_copy(),
            inFlight=self.passes_in_flight,
            sessionsSeen=len(self.sessions_seen),
            sessionFiles=len(self.session_files),
            sessionFilesWarmed=self.warmer.warmed,
            routes=self.route_health.snapshot(),
            logFiles=known_log_files(),
            config=self.config_watch.status(),
        )

    def count_result(self, result: CompactResult) -> None:
        """Count a finished pass by its close (whole, narrative-less, chunk missing, empty) or fallback."""
        closed_as = result.after.spanRecord.get("closedAs") if result.after is not None else None
        if result.fallback is not None or result.compaction is None:
            self.pass_counts.fallback += 1
        elif closed_as == "narrative-less":
            self.pass_counts.narrativeLess += 1
        elif closed_as == "chunk-missing":
            self.pass_counts.chunkMissing += 1
        elif closed_as == "empty":
            self.pass_counts.empty += 1
        else:
            self.pass_counts.whole += 1


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


async def _run_compact(services: Services, params: CompactParams) -> CompactResult:
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
    # Issue 12 item 4: from here on, every log line, record and model call of this pass (its tasks and
    # worker threads inherit the context) redacts the credentials it received; they leave with the pass.
    try:
        with bound_redactor(redactor_for_pass(params)):
            return await _run_busy_compact(services, params, pass_id, log)
    finally:
        services.busy_sessions.discard(session_id)


async def _run_busy_compact(
    services: Services, params: CompactParams, pass_id: str, log: structlog.typing.FilteringBoundLogger
) -> CompactResult:
    """The pass itself, its session marked busy: read the branch, run, count, record."""
    started = time.monotonic()
    if params.branchEntries is not None:
        branch: Sequence[dict[str, Any]] | None = None
        branch_stats: dict[str, Any] = {"source": "inline", "refused": params.sessionFileRefused}
    else:
        assert params.leafId is not None  # CompactParams checks that a branch source is given
        read = await services.read_branch(params.session, params.leafId, span_refs(params.preparation))
        branch, branch_stats = read.entries, read.stats()
    services.passes_in_flight += 1
    log.info("pass_started", reason=params.reason, branch_entries=len(branch or params.branchEntries or []))
    left_s = max(0.0, services.pass_budget_s - (time.monotonic() - started))  # reading the file counts too
    progress = PassProgress()  # PASS-16: a pass cut off after its Fold falls back under its span number
    try:
        problems = services.apply_settings(params)
        if problems:
            log.info("settings_problems", problems=problems)
        with anyio.move_on_after(left_s):
            result = await services.run_pass(
                params,
                pass_id=pass_id,
                branch=branch,
                branch_stats=branch_stats,
                access=services.model_access(),
                pass_budget_s=left_s,
                progress=progress,
            )
            result = services.config_watch.after_pass(params, result, log)  # CONFIG-6..9: no silent problem
            result = redacted_result(result, current_redactor())  # before it is counted, recorded or sent
            services.count_result(result)
            log.info("pass_finished", span=result.span, fallback=result.fallback)
            services.recorder.pass_finished(params, result, round((time.monotonic() - started) * 1000))
            return result
        services.pass_counts.fallback += 1
        log.warning("pass_timeout", budget_s=services.pass_budget_s)
        services.recorder.pass_fallback(params, pass_id, "timeout", None, span=progress.span)
        return CompactResult(passId=pass_id, span=progress.span or 0, fallback="timeout")
    except anyio.get_cancelled_exc_class():
        services.pass_counts.aborted += 1
        log.info("pass_aborted")
        raise
    except Exception as exc:
        services.pass_counts.fallback += 1
        log.error("pass_error", error_class=type(exc).__name__)
        services.recorder.pass_fallback(params, pass_id, "pass-error", exc, span=progress.span)
        return CompactResult(passId=pass_id, span=progress.span or 0, fallback="pass-error")
    finally:
        services.passes_in_flight -= 1


def build_methods(services: Services) -> dict[str, RpcMethod]:
    """The method table for one daemon; handlers close over ``services``."""

    @rpc("hello", HelloParams)
    async def hello(params: HelloParams) -> HelloResult:
        services.sessions_seen.add(params.session.sessionId)
        compactor = choose_compactor(params.session.env.PI_COMPACTOR)
        services.recorder.hello(params)
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

    @rpc("compact", CompactParams, deadline_s=services.pass_budget_s + _SAFETY_MARGIN_S)
    async def compact(params: CompactParams) -> CompactResult:
        return await _run_compact(services, params)

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
        services.recorder.compacted(params)
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
        services.recorder.compact_failed(params)
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
        services.recorder.incident(params)
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
