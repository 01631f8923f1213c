"""The wire contract between the pi shim and the daemon: pydantic models of every method's params and results.

Params models forbid unknown top-level fields (a typo in the shim is an error, not a silent default); the pi
objects they carry (messages, branch entries) are kept as plain JSON and parsed leniently by ``transcript``,
because transcript bytes are untrusted and pi may add fields at any release.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

__all__ = [
    "PROTOCOL_VERSION",
    "SPAN_REF",
    "AfterEntries",
    "CompactFailedParams",
    "CompactParams",
    "CompactResult",
    "CompactedParams",
    "Compaction",
    "ConfigStatus",
    "FileOps",
    "HelloParams",
    "HelloResult",
    "IncidentParams",
    "LogFileStatus",
    "ModelCredentials",
    "ModelFacts",
    "OkResult",
    "PassCounts",
    "PassDiagnostics",
    "Preparation",
    "RecallParams",
    "RecallResult",
    "RememberParams",
    "RememberResult",
    "ReportParams",
    "ReportResult",
    "RouteChoice",
    "RouteHealth",
    "RouteParams",
    "RouteResult",
    "SessionFacts",
    "ShimEnv",
    "StatusParams",
    "StatusResult",
    "StripParams",
    "StripResult",
    "SummarizerRoute",
]

PROTOCOL_VERSION = 2

_SHORT = 4096  # ids, paths, versions: generous but bounded
_TEXT = 200_000  # custom instructions, previous summary


class _Params(BaseModel):
    # hide_input_in_errors: a ValidationError's text must not quote what the client sent (credentials ride
    # in CompactParams, and a nested model's own setting does not apply under a parent that lacks it).
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ShimEnv(_Params):
    """The environment variables that matter, as the pi process sees them (CONFIG-10)."""

    PI_COMPACTOR: str | None = Field(default=None, max_length=_SHORT)
    PI_COMPACT_STATE_DEBUG: str | None = Field(default=None, max_length=_SHORT)
    PI_COMPACT_STATE_DEBUG_EXCERPTS: str | None = Field(default=None, max_length=_SHORT)
    PI_COMPACT_STATE_DEBUG_STACK: str | None = Field(default=None, max_length=_SHORT)


class ModelFacts(BaseModel):
    """A pi model as the shim resolved it. Unknown fields are ignored so newer pi versions keep working."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    provider: str = Field(max_length=_SHORT)
    id: str = Field(max_length=_SHORT)
    api: str | None = Field(default=None, max_length=_SHORT)
    baseUrl: str | None = Field(default=None, max_length=_SHORT)
    reasoning: bool | None = None
    contextWindow: int | None = Field(default=None, ge=0)
    maxTokens: int | None = Field(default=None, ge=0)

    # pi's per-model capability flags (``maxTokensField``, ``supportsReasoningEffort``, ...) as pi holds them.
    compat: dict[str, Any] | None = None
    # pi's map from its thinking levels to the model's own values; ``null`` marks a level the model lacks.
    thinkingLevelMap: dict[str, str | None] | None = None

    @property
    def spec(self) -> str:
        """The model as ``provider/id``."""
        return f"{self.provider}/{self.id}"


class ModelCredentials(BaseModel):
    """What pi's registry resolved to authenticate one model for one pass (PASS-22).

    Secret by construction: every value is a ``SecretStr``, so a repr, a validation error or a log line shows
    ``**********`` and never the key. The daemon keeps these only for the pass that received them.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, hide_input_in_errors=True)

    apiKey: SecretStr | None = None
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    # True when pi's auth storage holds an OAuth login (``/login``) for the provider: such a credential is
    # only ever used through pi's own provider code.
    oauth: bool = False


class SummarizerRoute(BaseModel):
    """The ``summarizer`` route the shim was asked to resolve (CONFIG-8), and what pi's registry made of it.

    ``problem`` is set when the route cannot be used: ``unknown-model`` (not in the registry),
    ``no-credentials`` (no usable auth) or ``resolve-error`` (the registry threw); ``model`` and
    ``credentials`` are then absent.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    spec: str = Field(max_length=_SHORT)
    model: ModelFacts | None = None
    credentials: ModelCredentials | None = None
    problem: Literal["unknown-model", "no-credentials", "resolve-error"] | None = None


class SessionFacts(_Params):
    """Who is asking: one pi process and its session."""

    cwd: str = Field(min_length=1, max_length=_SHORT)
    sessionId: str = Field(min_length=1, max_length=_SHORT)
    sessionFile: str | None = Field(default=None, max_length=_SHORT)
    agentDir: str = Field(min_length=1, max_length=_SHORT)
    piVersion: str = Field(min_length=1, max_length=256)
    model: ModelFacts | None = None
    thinkingLevel: str | None = Field(default=None, max_length=64)
    env: ShimEnv = ShimEnv()


class HelloParams(_Params):
    """``hello``, sent at pi's ``session_start``; ``reason`` is pi's session-start reason, for the log."""

    session: SessionFacts
    reason: str | None = Field(default=None, max_length=64)


class HelloResult(_Result):
    """Who compacts this session, the daemon's version and pass deadline, and the summarizer to resolve."""

    daemonVersion: str
    protocolVersion: int
    compactor: Literal["longhaul", "pi"]
    deadlineMs: int
    summarizer: str | None = None


class FileOps(_Params):
    """The files pi saw the span read, write and edit, as arrays."""

    read: list[str] = Field(default_factory=list)
    written: list[str] = Field(default_factory=list)
    edited: list[str] = Field(default_factory=list)


SPAN_REF = "entryRef"
"""A span message the branch holds is sent as ``{"entryRef": "<entry id>"}`` instead of its content."""


class Preparation(BaseModel):
    """pi's ``CompactionPreparation`` with the fileOps Sets already turned into arrays by the shim.

    Each of ``messagesToSummarize`` and ``turnPrefixMessages`` is a message as pi built it, or, for a message
    a branch entry holds, ``{"entryRef": id}``: the daemon takes its content from the branch, so the request
    carries each message once (protocol 2).
    """

    model_config = ConfigDict(extra="ignore", frozen=True)

    firstKeptEntryId: str = Field(max_length=_SHORT)
    messagesToSummarize: list[dict[str, Any]] = Field(default_factory=list)
    turnPrefixMessages: list[dict[str, Any]] = Field(default_factory=list)
    isSplitTurn: bool = False
    tokensBefore: int = Field(ge=0)
    previousSummary: str | None = Field(default=None, max_length=_TEXT)
    fileOps: FileOps = FileOps()


_CODE = r"^[a-z][a-z0-9-]{0,63}$"


class CompactParams(_Params):
    """The pass. The branch comes from pi's session file (``session.sessionFile`` read from ``leafId`` back to
    the root) or, when pi has none or the daemon refused it, inline as ``branchEntries``."""

    session: SessionFacts
    reason: Literal["manual", "threshold", "overflow"] | None = None
    customInstructions: str | None = Field(default=None, max_length=_TEXT)
    preparation: Preparation
    leafId: str | None = Field(default=None, max_length=_SHORT)
    branchEntries: list[dict[str, Any]] | None = None
    # The reason code of the daemon's refusal of the session file, when these entries replace it.
    sessionFileRefused: str | None = Field(default=None, pattern=_CODE)
    # PASS-22: the session model's credentials and the routed summarizer, resolved by the shim for this pass.
    credentials: ModelCredentials | None = None
    summarizer: SummarizerRoute | None = None

    @model_validator(mode="after")
    def _has_a_branch(self) -> CompactParams:
        if self.branchEntries is None and (self.leafId is None or self.session.sessionFile is None):
            raise ValueError("give branchEntries, or leafId with session.sessionFile")
        return self


class Compaction(_Result):
    """What the shim hands back to pi as ``{compaction: …}``."""

    summary: str
    firstKeptEntryId: str
    tokensBefore: int
    details: dict[str, Any]


class AfterEntries(_Result):
    """Custom entries for the shim to append after pi wrote the compaction entry.

    ``spanRecord`` lacks ``compactionId`` and ``line`` lacks ``ms``: only the shim knows the entry id and the
    time pi took, so it fills both in (PASS-11, PASS-13).
    """

    spanRecord: dict[str, Any]
    line: dict[str, Any]


class RouteChoice(_Result):
    """LOG-17 ``route``: the configured summarizer spec, the model the Diff used, why the route was not."""

    configured: str | None = None
    used: str | None = None
    why: str | None = None


class PassDiagnostics(_Result):
    """Counts about a pass for the record log (LOG-17, FAIL-17); never text. The shim ignores it."""

    narrative: dict[str, Any] = Field(default_factory=dict)
    route: RouteChoice = RouteChoice()
    branch: dict[str, Any] = Field(default_factory=dict)  # where the branch came from, what reading it cost
    carried: int = 0  # LOG-18: carried and taken-over messages this pass offered the model
    # LOG-14, QUOTE-17: the rule words verification refused, as (msg, words). The user's own text, so never
    # sent: the record log writes them only when the session asked for excerpts.
    rejected_quotes: list[tuple[str, str]] = Field(default_factory=list, exclude=True)


class CompactResult(_Result):
    """Either a compaction (with its after-entries) or a fallback reason; never both."""

    passId: str
    span: int
    compaction: Compaction | None = None
    after: AfterEntries | None = None
    notice: str | None = None
    fallback: str | None = None
    diagnostics: PassDiagnostics = Field(default_factory=PassDiagnostics)


class CompactedParams(_Params):
    """pi wrote a compaction entry (the `session_compact` event)."""

    session: SessionFacts
    compactionEntryId: str = Field(max_length=_SHORT)
    fromExtension: bool
    passId: str | None = Field(default=None, max_length=256)
    span: int | None = None
    reason: str | None = Field(default=None, max_length=64)
    summaryChars: int = Field(ge=0)
    tokensBefore: int = Field(ge=0)


class CompactFailedParams(_Params):
    """``compact_failed``: a compaction failed on pi's side; accepted for pi versions that will send it."""

    session: SessionFacts
    reason: str = Field(max_length=256)
    passId: str | None = Field(default=None, max_length=256)
    span: int | None = None


class IncidentParams(_Params):
    """Something went wrong on the shim's side that the daemon should record."""

    session: SessionFacts
    kind: Literal["span-record-failed", "compaction-line-failed", "aborted", "fallback"]
    reason: str | None = Field(default=None, max_length=256)
    span: int | None = None
    passId: str | None = Field(default=None, max_length=256)
    errorClass: str | None = Field(default=None, max_length=256)
    error: str | None = Field(default=None, max_length=2000)


class OkResult(_Result):
    """The answer to a notice-like method (``compacted``, ``compact_failed``, ``incident``)."""

    ok: bool = True


class ReportParams(_Params):
    """``/longhaul-report``: the digest of the log in effect for this session (REPORT-1)."""

    session: SessionFacts


class ReportResult(_Result):
    """The report digest, ready to paste, and how many records it covers."""

    digest: str
    records: int = Field(ge=0)


class RouteParams(_Params):
    """Which summarizer the shim should resolve before ``compact`` (CONFIG-8); asked anew for every pass."""

    session: SessionFacts


class RouteResult(_Result):
    """The ``summarizer`` spec from ``longhaul.json`` as it reads now, or None for the session's own model."""

    summarizer: str | None = None


class StatusParams(_Params):
    """``status`` takes no params."""

    pass


class PassCounts(_Result):
    """Passes since the daemon started, by how each ended: a close kind, a fallback or an abort."""

    whole: int = 0
    partial: int = 0
    narrativeLess: int = 0
    chunkMissing: int = 0
    empty: int = 0
    fallback: int = 0
    aborted: int = 0
    # why passes did less than close whole: the reason code of a narrative-less or chunk-missing close, of a
    # fallback, or of an abort (``cancelled``), with how many passes gave it
    reasons: dict[str, int] = Field(default_factory=dict)


class RouteHealth(_Result):
    """One model route's health since the daemon started (successful calls feed the percentiles)."""

    route: str
    lastErrorClass: str | None = None
    lastSuccess: str | None = None  # ISO 8601, UTC
    p50Ms: int | None = None
    p90Ms: int | None = None
    calls: int = 0
    via: str | None = None  # how the last call went: "daemon" (its own client) or "pi" (model.complete)
    viaWhy: str | None = None  # the route table's code for that (docs/models.md), or refused-<status>


class LogFileStatus(_Result):
    """One record-log file the daemon has written to: its size now and the lines it could not write."""

    path: str
    bytes: int
    dropped: int = 0


class ConfigStatus(_Result):
    """What ``status`` shows of the last pass's configuration (longhaul_daemon/settings_notices.py)."""

    summarizer: str | None = None  # configured in longhaul.json; None: the session's own model
    summarizerFile: str | None = None
    used: str | None = None  # the model the Diff called
    why: str | None = None  # why the configured summarizer was not used
    at: str | None = None  # when that pass finished (UTC, ISO 8601)
    problems: list[str] = Field(default_factory=list)  # each names the file and the key


class NarrativeChoiceStatus(_Result):
    """One route's stage under ``"narrativeMode": "auto"`` (passes/narrative_choice.py)."""

    route: str
    stage: Literal["diff", "turns"]
    diffFailuresInRow: int
    lastDiffFailure: str | None = None  # the reason code of the Diff's last answer failure
    turnsSince: str | None = None  # when the route moved to turns mode (ISO 8601, UTC)


class StatusResult(_Result):
    """What ``longhaul-daemon status`` shows: the daemon, its passes, routes, log files and config."""

    version: str
    protocolVersion: int
    pid: int
    uptimeS: float
    socket: str
    socketActivated: bool
    passes: PassCounts
    inFlight: int
    sessionsSeen: int
    sessionFiles: int = 0  # session files the daemon holds an index of (at most 32)
    sessionFilesWarmed: int = 0  # of them, indexed ahead of their first pass, after their hello
    routes: list[RouteHealth] = Field(default_factory=list)
    logFiles: list[LogFileStatus] = Field(default_factory=list)
    config: ConfigStatus | None = None  # None until a pass has run
    narrative: list[NarrativeChoiceStatus] = Field(default_factory=list)  # routes "auto" passes met


# ---- the agent's tools and the kept-window strip (longhaul_daemon/tools, rpc/tool_methods.py) -------------


class RememberParams(_Params):
    """``longhaul_remember`` as the agent called it; the daemon checks and bounds the note (TOOLS-1)."""

    session: SessionFacts
    text: str = Field(max_length=_TEXT)
    kind: str | None = Field(default=None, max_length=64)


class RememberResult(_Result):
    """The tool result text; when ``ok``, the custom entry the shim appends as is (TOOLS-2)."""

    ok: bool
    text: str
    customType: str | None = None
    data: dict[str, Any] | None = None


class RecallParams(_Params):
    """``longhaul_recall``: a ref and/or a query, and the branch to read span records from (TOOLS-5)."""

    session: SessionFacts
    ref: str | None = Field(default=None, max_length=256)
    query: str | None = Field(default=None, max_length=_SHORT)
    leafId: str | None = Field(default=None, max_length=_SHORT)
    branchEntries: list[dict[str, Any]] | None = None  # inline only when there is no session file to read

    @model_validator(mode="after")
    def _has_a_branch(self) -> RecallParams:
        if self.branchEntries is None and (self.leafId is None or self.session.sessionFile is None):
            raise ValueError("give branchEntries, or leafId with session.sessionFile")
        return self


class RecallResult(_Result):
    """Bounded, sanitized text for the tool result (TOOLS-7); ``ok`` false makes it an error result."""

    ok: bool
    text: str
    spans: list[int] = Field(default_factory=list)


class StripParams(_Params):
    """pi's ``context`` event messages and the branch, so the daemon can find the kept window (TOOLS-9)."""

    session: SessionFacts
    messages: list[dict[str, Any]] = Field(default_factory=list)
    branchEntries: list[dict[str, Any]] = Field(default_factory=list)


class StripResult(_Result):
    """Which messages lose their thinking blocks (indexes into ``messages``) and the LOG-21 counts."""

    cutoff: str | None = None
    strip: list[int] = Field(default_factory=list)
    strippedBlocks: int = 0
    strippedChars: int = 0
    contextMessages: int = 0
    logged: bool = False
