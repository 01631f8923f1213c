"""Problems with the user's settings made visible: logged each pass, shown once per session, in ``status``.

A broken ``longhaul.json`` or a summarizer pi has no credentials for never stops a pass: the defaults or the
session's own model take over (CONFIG-6..9, FAIL-9). So that nobody runs for weeks on the wrong model without
knowing, after every pass each problem goes to the operational log as a code (the file's role, never its
path), the user sees one pi notice per problem per session naming the file and the key (through the
``notice`` the shim already shows), and ``status`` lists the last pass's summarizer, the model it used, why,
and the problems.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

import structlog

from longhaul_daemon.log.fields import model_spec_field
from longhaul_daemon.protocol import CompactParams, CompactResult, ConfigStatus, RouteChoice
from longhaul_daemon.secrets.redaction import Redactor
from longhaul_daemon.user_settings import DEFAULT_RETRY_NOTE_CHARS, Settings, SettingsProblem

__all__ = ["SettingsIssue", "SettingsNotices", "route_issue", "settings_issues"]

_FILE_PROBLEMS: Final = {
    "unreadable": "could not be read",
    "not-json": "is not valid JSON",
    "not-object": "does not hold a JSON object",
    "too-large": "is larger than 1 MiB",
    "not-regular": "is not a regular file",
}
_KEY_PROBLEMS: Final = {
    "bad-summarizer": ("CONFIG-8", '"summarizer" in {path} is not "provider/modelId"', "the session's model"),
    "bad-narrativeMode": ("CONFIG-6", '"narrativeMode" in {path} is not "diff", "turns" or "auto"', '"diff"'),
    "bad-retryNoteChars": (
        "CONFIG-7",
        '"retryNoteChars" in {path} is not a positive whole number',
        str(DEFAULT_RETRY_NOTE_CHARS),
    ),
}
_DAEMON_WIDE: Final = {
    "daemon-wide-concurrency": (
        '"concurrency" in {path} no longer applies: provider limits are shared by every session, so they '
        "are set for the daemon (longhaul-daemon serve --concurrency KEY=N); remove the key"
    ),
}
_ROUTE_PROBLEMS: Final = {
    "no-credentials": "pi has no credentials for it (log in, or set its API key)",
    "unknown-model": "pi has no such model",
    "no-model": "pi names no API or base URL to call it at",
    "not-resolved": "the shim could not resolve it in pi",
    "resolve-error": "looking it up in pi's model registry failed",
}
_MAX_SESSIONS: Final = 1024  # sessions whose shown notices are remembered; older ones may see one again


@dataclass(frozen=True)
class SettingsIssue:
    """One problem: the requirement and code for the log, the sentence for the user."""

    requirement: str  # CONFIG-6 .. CONFIG-9
    source: str  # agent | project | route
    code: str
    text: str  # names the file and the key

    @property
    def identity(self) -> str:
        """What makes two problems the same notice, so a session is told each once."""
        return f"{self.source}:{self.code}:{self.text}"


def _issue(problem: SettingsProblem) -> SettingsIssue:
    path = problem.path or f"the {problem.source} longhaul.json"
    if problem.code == "unknown-key":
        guess = f' (did you mean "{problem.guess}"?)' if problem.guess else ""
        text = f"{problem.key} in {path} is not a Longhaul setting{guess}; it is ignored"
        return SettingsIssue("CONFIG-9", problem.source, problem.code, text)
    if problem.code in _DAEMON_WIDE:
        text = _DAEMON_WIDE[problem.code].format(path=path)
        return SettingsIssue("CONFIG-5", problem.source, problem.code, text)
    if problem.code in _KEY_PROBLEMS:
        requirement, what, instead = _KEY_PROBLEMS[problem.code]
        text = f"{what.format(path=path)}; {instead} applies until it is fixed"
        return SettingsIssue(requirement, problem.source, problem.code, text)
    what = _FILE_PROBLEMS.get(problem.code, f"has a problem ({problem.code})")
    text = f"{path} {what}; Longhaul's defaults apply until it is fixed"
    return SettingsIssue("CONFIG-9", problem.source, problem.code, text)


def settings_issues(settings: Settings) -> list[SettingsIssue]:
    """The problems of the two longhaul.json files, in reading order."""
    return [_issue(problem) for problem in settings.problems]


def route_issue(settings: Settings, route: RouteChoice | None) -> SettingsIssue | None:
    """The configured summarizer was not used (FAIL-9), or None."""
    if route is None or route.configured is None or route.why is None:
        return None
    where = f' ("summarizer" in {settings.summarizer_file})' if settings.summarizer_file else ""
    failed = route.why.removeprefix("failed:")
    reason = _ROUTE_PROBLEMS.get(
        route.why, f"calling it failed ({failed})" if failed != route.why else route.why
    )
    instead = (
        f"the session's model {route.used} wrote this summary"
        if route.used
        else "no model wrote this summary's narrative"
    )
    text = f"the summarizer {route.configured}{where} was not used: {reason}; {instead}"
    return SettingsIssue("CONFIG-8", "route", route.why, text)


class SettingsNotices:
    """Per daemon: which notices each session has seen, and the last pass's configuration for ``status``."""

    def __init__(self, max_sessions: int = _MAX_SESSIONS) -> None:
        self._shown: OrderedDict[str, set[str]] = OrderedDict()
        self._max_sessions = max_sessions
        self._last: ConfigStatus | None = None

    def after_pass(
        self,
        params: CompactParams,
        result: CompactResult,
        log: structlog.typing.FilteringBoundLogger,
        settings: Settings,
        redactor: Redactor,
    ) -> CompactResult:
        """Log this pass's problems (``settings``: the ``longhaul.json`` the pass ran with), remember them for
        status without the pass's credentials (``redactor``), and add the unseen ones to the notice."""
        try:
            return self._after_pass(params, result, log, settings, redactor)
        except Exception as exc:  # reporting a problem must never turn a good pass into a fallback
            log.error("config_report_failed", error_class=type(exc).__name__)
            return result

    def _after_pass(
        self,
        params: CompactParams,
        result: CompactResult,
        log: structlog.typing.FilteringBoundLogger,
        settings: Settings,
        redactor: Redactor,
    ) -> CompactResult:
        route = result.diagnostics.route
        issues = settings_issues(settings)
        routed = route_issue(settings, route)
        if routed is not None:
            issues.append(routed)
        for issue in issues:
            log.warning(
                "config_problem", requirement=issue.requirement, source=issue.source, problem=issue.code
            )
        last = ConfigStatus(
            summarizer=settings.summarizer,
            summarizerFile=settings.summarizer_file,
            used=None if route is None else model_spec_field(route.used),
            why=None if route is None else route.why,
            at=datetime.now(UTC).isoformat(timespec="seconds"),
            problems=[issue.text for issue in issues],
        )
        # status outlives the pass: what it keeps must not hold the pass's credentials
        self._last = ConfigStatus.model_validate(redactor.value(last.model_dump()))
        fresh = self._unseen(params.session.sessionId, issues)
        if not fresh:
            return result
        lines = [result.notice] if result.notice else []
        lines += [f"Longhaul: {issue.text}." for issue in fresh]
        return result.model_copy(update={"notice": "\n".join(lines)})

    def _unseen(self, session_id: str, issues: list[SettingsIssue]) -> list[SettingsIssue]:
        shown = self._shown.setdefault(session_id, set())
        self._shown.move_to_end(session_id)
        while len(self._shown) > self._max_sessions:
            self._shown.popitem(last=False)
        fresh = [issue for issue in issues if issue.identity not in shown]
        shown.update(issue.identity for issue in fresh)
        return fresh

    def status(self) -> ConfigStatus | None:
        """The last pass's configuration for ``status`` (a copy), or None before any pass."""
        return None if self._last is None else self._last.model_copy()
