"""One transcript replayed through a real pi with the shim and a private daemon; only the model is fake.

The recording becomes a script (:mod:`~longhaul_daemon.evaluation.script`); pi gets the user's messages
over RPC, the fake model answers with the recorded assistant messages, stand-ins answer tool calls and user
commands with the recorded results, and pi compacts where the recording did (REPLAY-1..3). The replayed
session file is then read back to count what happened: compactions, which were Longhaul's, fallbacks with
their reason code, and extension handler errors (REPLAY-6, REPLAY-8). ``score`` runs the same replay with a
model switch around each compaction, so the summarizer is a real model while the turns stay recorded.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from longhaul_daemon.evaluation.common import key_path, path_hash
from longhaul_daemon.evaluation.harness.daemon_process import Daemon, DaemonError
from longhaul_daemon.evaluation.harness.model_server import DaemonAnswer, ModelServer, Speed, SummaryAnswer
from longhaul_daemon.evaluation.harness.pi_rpc import PiError, PiRpc
from longhaul_daemon.evaluation.harness.replies import Reply, ToolCall, http_error
from longhaul_daemon.evaluation.harness.sandbox import Sandbox, Tools, make_sandbox, write_agent_config
from longhaul_daemon.evaluation.recorded_compactions import compactor_of
from longhaul_daemon.evaluation.script import RecordedReply, ReplayScript, Step, build_script
from longhaul_daemon.evaluation.standins import install_standins
from longhaul_daemon.inspector.session_file import TranscriptError, read_transcript
from longhaul_daemon.state.own_entries import compaction_lines

__all__ = [
    "REPLAY_MODEL",
    "REPLAY_PROVIDER",
    "CompactionRun",
    "ModelSwitch",
    "ReplayConfig",
    "ReplayOutcome",
    "replay_transcript",
    "write_replay_config",
]

Who = Literal["longhaul", "pi"]
_REASON = re.compile(r"[a-z][a-z0-9-]{0,39}")
_QUICK_S = 30.0  # bound for RPC commands that answer at once (get_state, set_model, bash)
REPLAY_PROVIDER = "longhaul-replay"
REPLAY_MODEL = "replay"
# A large window, so pi never compacts on its own: compactions come only where the recording has them.
_MODEL: dict[str, Any] = {"id": REPLAY_MODEL, "name": "Longhaul replay", "input": ["text", "image"]}
_MODEL |= {"contextWindow": 1_000_000, "maxTokens": 16384}


@dataclass(frozen=True)
class ModelSwitch:
    """score: pi switches to this model for each compaction and back to the fake afterwards."""

    provider: str
    model_id: str


@dataclass
class ReplayConfig:
    """How to replay: the pi binary, the shim, which compactor runs, and how long a step may take."""

    pi_bin: Path
    shim: Path
    compactor: Who = "longhaul"
    step_timeout: float = 600.0
    keep_recent_tokens: int | None = None
    keep_dir: Path | None = None
    switch: ModelSwitch | None = None
    models: Mapping[str, Any] | None = None  # score: the user's models.json, pointed at the recording proxy
    auth: bytes | None = None  # score: the user's auth.json
    env_base: Mapping[str, str] | None = None  # score: the user's environment (API keys)
    pi_summary: SummaryAnswer | None = None
    longhaul: DaemonAnswer | None = None
    speed: Speed | None = None


@dataclass(frozen=True)
class CompactionRun:
    """One compaction as replayed: the RPC ``compact`` wall time and what pi wrote."""

    n: int
    ok: bool
    seconds: float


@dataclass
class ReplayOutcome:
    """What replaying one transcript gave: each compaction run, or the problem that stopped it."""

    name: str
    compactor: Who
    recorded: int = 0  # compactions the script asked for
    runs: list[CompactionRun] = field(default_factory=list)
    compactions: int = 0  # compaction entries in the replayed session
    longhaul: int = 0
    fallbacks: dict[str, int] = field(default_factory=dict)
    handler_errors: int = 0
    divergences: int = 0  # model requests the recording had no answer for, or answers left unused
    skipped: int = 0
    prompts: int = 0
    seconds: float = 0.0
    problem: str | None = None  # unreadable, no-session, pi-failed, daemon-failed
    summaries: list[str] = field(default_factory=list)  # in memory for score; never printed
    compactors: list[str] = field(default_factory=list)


def _fallback_reasons(branch: list[dict[str, Any]]) -> list[str | None]:
    """For each compaction, the fallback code its compaction line names (None when it names none)."""
    reasons: list[str | None] = []
    for line in compaction_lines(branch):
        code = line.get("fallback") if line is not None else None
        reasons.append((code if _REASON.fullmatch(code) else "other") if isinstance(code, str) else None)
    return reasons


def _read_back(outcome: ReplayOutcome, session: Path) -> None:
    branch = read_transcript(session).branch
    reasons = _fallback_reasons(branch)
    compactions = [e for e in branch if e.get("type") == "compaction"]
    outcome.compactions = len(compactions)
    for entry, reason in zip(compactions, reasons, strict=True):
        who = compactor_of(entry)
        outcome.compactors.append(who)
        summary = entry.get("summary")
        outcome.summaries.append(summary if isinstance(summary, str) else "")
        if who == "longhaul":
            outcome.longhaul += 1
        elif outcome.compactor == "longhaul":
            code = reason or "unknown"
            outcome.fallbacks[code] = outcome.fallbacks.get(code, 0) + 1


def write_replay_config(
    box: Sandbox,
    *,
    base_url: str,
    keep: int,
    shell: Path,
    models: Mapping[str, Any] | None = None,
    auth: bytes | None = None,
) -> None:
    """pi's configuration in a replay: the scripted model the only default, pi's own compaction off (the
    replay compacts where the recording did), ``keep`` recent tokens kept, ``shell`` as pi's shell; for
    score, the user's ``models`` and ``auth`` beside it."""
    write_agent_config(
        box,
        base_url=base_url,
        provider=REPLAY_PROVIDER,
        model=_MODEL,
        compaction={"enabled": False, "reserveTokens": 16384, "keepRecentTokens": keep},
        shell=shell,
        models=models,
        auth=auth,
    )


def _reply(recorded: RecordedReply) -> Reply:
    """A recorded assistant message as the scripted model streams it again."""
    if recorded.stop == "error":
        return http_error(500, message="recorded error")
    calls = tuple(ToolCall(c.name, dict(c.arguments), c.id) for c in recorded.calls)
    finish = "tool_calls" if calls else ("length" if recorded.stop == "length" else "stop")
    return Reply(content=recorded.text, reasoning=recorded.thinking, calls=calls, finish_reason=finish)


def _run_step(
    pi: PiRpc, model: ModelServer, step: Step, config: ReplayConfig, outcome: ReplayOutcome
) -> None:
    timeout = config.step_timeout
    if step.kind == "prompt":
        model.enqueue(*(_reply(r) for r in step.replies))
        pi.prompt(step.text, step.images, timeout=timeout)
        outcome.divergences += model.drop_pending()
    elif step.kind == "bash":
        pi.bash(step.text, timeout=timeout)
    else:
        switch = config.switch
        if switch is not None:
            pi.ok(
                {"type": "set_model", "provider": switch.provider, "modelId": switch.model_id},
                timeout=_QUICK_S,
            )
        started = time.monotonic()
        response = pi.compact(timeout=timeout)
        outcome.runs.append(
            CompactionRun(len(outcome.runs) + 1, bool(response.get("success")), time.monotonic() - started)
        )
        if switch is not None:
            pi.ok(
                {"type": "set_model", "provider": REPLAY_PROVIDER, "modelId": REPLAY_MODEL}, timeout=_QUICK_S
            )


def _drive(
    script: ReplayScript,
    box: Sandbox,
    model: ModelServer,
    config: ReplayConfig,
    outcome: ReplayOutcome,
    progress: Callable[[str], None] | None,
) -> Path | None:
    standins = install_standins(box.tools_dir, script)
    keep = config.keep_recent_tokens or script.keep_recent_tokens
    write_replay_config(
        box, base_url=model.base_url, keep=keep, shell=standins.shell, models=config.models, auth=config.auth
    )
    box.extra_pi_env.update(standins.env)
    if config.compactor == "pi":
        box.extra_pi_env["PI_COMPACTOR"] = "pi"
    daemon = Daemon(box.socket_path, box.root)
    try:
        if config.compactor == "longhaul":
            try:
                daemon.start(box.daemon_env())
            except DaemonError:
                outcome.problem = "daemon-failed"
                return None
        pi = PiRpc(box, extensions=[box.shim_dir, standins.extension], diagnose=False)
        try:
            pi.ok({"type": "set_auto_compaction", "enabled": False}, timeout=_QUICK_S)
            total = len(script.steps)
            for index, step in enumerate(script.steps, start=1):
                if progress is not None:
                    progress(f"step {index}/{total}")
                _run_step(pi, model, step, config, outcome)
            session = pi.get_state(timeout=_QUICK_S).get("sessionFile")
        finally:
            outcome.handler_errors = pi.count("extension_error")
            pi.close()
        return Path(session) if isinstance(session, str) else None
    finally:
        daemon.sweep()


def replay_transcript(
    path: Path, config: ReplayConfig, *, progress: Callable[[str], None] | None = None
) -> ReplayOutcome:
    """Replay one transcript in a fresh private world and count what happened (never raises on its input)."""
    outcome = ReplayOutcome(name=path_hash(path), compactor=config.compactor)
    started = time.monotonic()
    try:
        transcript = read_transcript(path)
    except TranscriptError:
        outcome.problem = "unreadable"
        return outcome
    script = build_script(transcript.branch)
    outcome.recorded = script.compactions
    outcome.skipped = script.skipped
    outcome.prompts = script.prompts
    box = make_sandbox(Tools(config.pi_bin, config.shim), prefix="lh-replay-", inherit=config.env_base)
    answers = ModelServer(
        model_id=REPLAY_MODEL,
        pi_summary=config.pi_summary,
        longhaul=config.longhaul,
        speed=config.speed,
        keep_requests=False,  # a long replay's requests would hold the transcript many times over
    )
    try:
        with answers as model:
            try:
                session = _drive(script, box, model, config, outcome, progress)
            except PiError:
                outcome.problem = "pi-failed"
                session = None
            outcome.divergences += model.unscripted
        if session is not None and session.is_file():
            try:
                _read_back(outcome, session)
            except TranscriptError:
                outcome.problem = outcome.problem or "no-session"
            if config.keep_dir is not None:
                _keep(path, session, config.keep_dir, outcome)
        elif outcome.problem is None:
            outcome.problem = "no-session"
    finally:
        box.cleanup()
        outcome.seconds = time.monotonic() - started
    return outcome


def _keep(original: Path, session: Path, keep_dir: Path, outcome: ReplayOutcome) -> None:
    """--keep: the replayed session as ``<hash>-<compactor>.jsonl``, with the original's key beside it."""
    keep_dir.mkdir(parents=True, exist_ok=True)
    target = keep_dir / f"{outcome.name}-{outcome.compactor}.jsonl"
    shutil.copyfile(session, target)
    key = key_path(original)
    if key.is_file():
        shutil.copyfile(key, key_path(target))
