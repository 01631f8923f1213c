"""What the RPC methods share for the daemon's life: the :class:`Services` one daemon builds at start.

Counters, the busy set, the record log, route health, the session-file indexes and their warmer, the shared
HTTP client, and the pass the daemon runs (:class:`RunPass`: the real one unless the daemon was built with
another). The methods (:mod:`.methods` and :mod:`.tool_methods`) close over one instance; nothing here is a
module global.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import structlog

from longhaul_daemon import __version__
from longhaul_daemon.defaults import DEFAULT_PASS_BUDGET_S
from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.models.route_health import RouteHealthBook
from longhaul_daemon.models.route_table import DirectRefusals
from longhaul_daemon.models.structured import StructuredMemory
from longhaul_daemon.models.via_pi import PiPeer
from longhaul_daemon.passes.narrative_choice import NarrativeChoices
from longhaul_daemon.passes.progress import PassProgress
from longhaul_daemon.protocol import (
    PROTOCOL_VERSION,
    CompactParams,
    CompactResult,
    LogFileStatus,
    PassCounts,
    SessionFacts,
    StatusResult,
)
from longhaul_daemon.rpc.recording import Recorder
from longhaul_daemon.secrets.redaction import Redactor
from longhaul_daemon.sessionfile.files import BranchRead, SessionFileRefused, SessionFiles, SessionWarmer
from longhaul_daemon.settings_notices import SettingsNotices
from longhaul_daemon.tools.strip import WindowMemory
from longhaul_daemon.user_settings import Settings

__all__ = ["MAX_SESSIONS_COUNTED", "RunPass", "SeenSessions", "Services", "real_pass"]

_log = structlog.get_logger("longhaul.methods")

_MAX_REASONS = 64  # distinct reason codes status counts; the daemon's own codes are far fewer

MAX_SESSIONS_COUNTED = 65_536
"""Distinct sessions ``sessionsSeen`` counts up to; past it the count stays there."""


class RunPass(Protocol):
    """The pass as ``compact`` runs it (:func:`longhaul_daemon.passes.run.run_pass`), every argument named.

    ``branch``: the branch read from the session file, None when the request carried it inline;
    ``branch_stats``: where it came from and what reading it cost; ``access``: the daemon's shared model
    access; ``pass_budget_s``: what is left of the budget once the file was read; ``turn_budget_s``: one
    turns-mode turn's budget (``serve --turn-budget``), None for two fifths of ``pass_budget_s``;
    ``progress``: learns the span number once the Fold ran; ``users``: the ``u<n>`` ids the session file's
    index counted; ``settings``: the pass's ``longhaul.json``, read once by the method; ``peer``: the shim of
    the connection the request came on (calls through pi), None without one; ``redactor``: the pass's
    credentials; ``narrative_choices``: which stage ``"narrativeMode": "auto"`` runs per route, for the
    daemon's life.
    """

    async def __call__(
        self,
        params: CompactParams,
        /,
        *,
        pass_id: str,
        branch: Sequence[dict[str, Any]] | None,
        branch_stats: Mapping[str, Any] | None,
        access: ModelAccess | None,
        pass_budget_s: float,
        turn_budget_s: float | None,
        progress: PassProgress | None,
        users: Mapping[str, str] | None,
        settings: Settings | None,
        peer: PiPeer | None,
        redactor: Redactor | None,
        narrative_choices: NarrativeChoices | None,
    ) -> CompactResult: ...


async def real_pass(
    params: CompactParams,
    *,
    pass_id: str,
    branch: Sequence[dict[str, Any]] | None,
    branch_stats: Mapping[str, Any] | None,
    access: ModelAccess | None,
    pass_budget_s: float,
    turn_budget_s: float | None,
    progress: PassProgress | None,
    users: Mapping[str, str] | None,
    settings: Settings | None,
    peer: PiPeer | None,
    redactor: Redactor | None,
    narrative_choices: NarrativeChoices | None,
) -> CompactResult:
    """The real pass, imported on first use so the RPC layer loads even where the pass is absent or broken."""
    from longhaul_daemon.passes.run import run_pass

    return await run_pass(
        params,
        pass_id=pass_id,
        branch=branch,
        branch_stats=branch_stats,
        access=access,
        pass_budget_s=pass_budget_s,
        turn_budget_s=turn_budget_s,
        progress=progress,
        users=users,
        settings=settings,
        peer=peer,
        redactor=redactor,
        narrative_choices=narrative_choices,
    )


class SeenSessions:
    """How many distinct pi sessions talked to the daemon, for ``status``: a count, not a list of ids.

    A session id is whatever the client sends (up to 4 KiB), so only an 8-byte digest of each is kept, and
    at most :data:`MAX_SESSIONS_COUNTED` of them, so the set stays bounded.
    """

    def __init__(self, limit: int = MAX_SESSIONS_COUNTED) -> None:
        self._digests: set[int] = set()
        self._limit = limit

    @staticmethod
    def _digest(session_id: str) -> int:
        raw = session_id.encode("utf-8", "surrogatepass")
        return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "big")

    def add(self, session_id: str) -> None:
        """Count ``session_id`` (once, by digest) until the cap is reached."""
        if len(self._digests) < self._limit:
            self._digests.add(self._digest(session_id))

    def __contains__(self, session_id: object) -> bool:
        return isinstance(session_id, str) and self._digest(session_id) in self._digests

    def __len__(self) -> int:
        return len(self._digests)


@dataclass
class Services:
    """What the methods share for the daemon's life: identity, counters, the busy set, and the pass seam."""

    socket_path: str
    socket_activated: bool = False
    pass_budget_s: float = DEFAULT_PASS_BUDGET_S
    turn_budget_s: float | None = None  # serve --turn-budget; None: two fifths of what the pass has left
    run_pass: RunPass = real_pass
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
    tools_memory: StructuredMemory = field(default_factory=StructuredMemory)  # routes refusing tool calls
    direct_refusals: DirectRefusals = field(default_factory=DirectRefusals)  # direct routes refused: via pi
    session_files: SessionFiles = field(default_factory=SessionFiles)  # indexes of pi's session files
    warmer: SessionWarmer = field(init=False)  # indexes a session's file after its hello
    http_client: HttpClient | None = None  # the daemon's one client, opened and closed by the lifecycle
    settings_notices: SettingsNotices = field(
        default_factory=SettingsNotices
    )  # what longhaul.json or the route got wrong
    kept_windows: WindowMemory = field(default_factory=WindowMemory)  # kept windows already logged (TOOLS-10)
    narrative_choices: NarrativeChoices = field(default_factory=NarrativeChoices)  # "auto": Diff or turns

    def __post_init__(self) -> None:
        self.warmer = SessionWarmer(self.session_files)

    async def read_branch(
        self, session: SessionFacts, leaf_id: str, span_ids: Sequence[str] = (), *, whole: bool = True
    ) -> BranchRead:
        """The branch from pi's session file, read in a worker thread (PASS-21), however small: a read takes
        the file's index lock, which the warmer's thread holds while it indexes; a caller that goes away does
        not wait for it. Raises ``SessionFileRefused``."""
        path = session.sessionFile
        if path is None:
            raise SessionFileRefused("missing")

        def read() -> BranchRead:
            return self.session_files.read_branch(
                path, session_id=session.sessionId, leaf_id=leaf_id, span_ids=span_ids, whole=whole
            )

        try:
            return await anyio.to_thread.run_sync(read, abandon_on_cancel=True)
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
            tools_refused=self.tools_memory,
            via_pi_apis=self.via_pi_apis,
            refusals=self.direct_refusals,
            client=self.http_client,
        )

    @staticmethod
    def settings_problems(settings: Settings) -> list[str]:
        """The problems of a pass's ``longhaul.json`` as ``source:code`` (CONFIG-9: never the file's path or
        content). Nothing in it changes the daemon: the provider limits are set when it starts."""
        return [f"{problem.source}:{problem.code}" for problem in settings.problems]

    def status(self) -> StatusResult:
        """The ``status`` answer as of now."""
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
            logFiles=[LogFileStatus.model_validate(f) for f in self.recorder.log_files()],
            config=self.settings_notices.status(),
            narrative=self.narrative_choices.snapshot(),
        )

    def count_reason(self, reason: object) -> None:
        """One more pass that did less than close whole for ``reason`` (a code the daemon wrote)."""
        reasons = self.pass_counts.reasons
        if isinstance(reason, str) and (reason in reasons or len(reasons) < _MAX_REASONS):
            reasons[reason] = reasons.get(reason, 0) + 1

    def count_result(self, result: CompactResult) -> None:
        """Count a finished pass by its close (whole, partial, narrative-less, chunk missing, empty) or
        fallback, and the reason of a close that was not whole."""
        record = result.after.spanRecord if result.after is not None else {}
        closed_as = record.get("closedAs")
        if result.fallback is not None or result.compaction is None:
            self.pass_counts.fallback += 1
            self.count_reason(result.fallback)
        elif closed_as == "partial":
            self.pass_counts.partial += 1
            self.count_reason(record.get("reason"))
        elif closed_as == "narrative-less":
            self.pass_counts.narrativeLess += 1
            self.count_reason(record.get("reason"))
        elif closed_as == "chunk-missing":
            self.pass_counts.chunkMissing += 1
            self.count_reason(record.get("reason"))
        elif closed_as == "empty":
            self.pass_counts.empty += 1
        else:
            self.pass_counts.whole += 1
