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
from longhaul_daemon.evaluation.fake_model import Answerer, FakeModel, Speed
from longhaul_daemon.evaluation.isolation import (
    REPLAY_MODEL,
    REPLAY_PROVIDER,
    DaemonProcess,
    ReplayDirs,
    StartError,
    make_dirs,
    replay_env,
    write_agent_config,
)
from longhaul_daemon.evaluation.pi_rpc import PiFailed, PiRpc
from longhaul_daemon.evaluation.recorded_compactions import compactor_of
from longhaul_daemon.evaluation.script import ReplayScript, Step, build_script
from longhaul_daemon.evaluation.standins import install_standins
from longhaul_daemon.inspector.session_file import TranscriptError, read_transcript
from longhaul_daemon.state.own_entries import compaction_lines

__all__ = ["CompactionRun", "ModelSwitch", "ReplayConfig", "ReplayOutcome", "replay_transcript"]

Who = Literal["longhaul", "pi"]
_REASON = re.compile(r"[a-z][a-z0-9-]{0,39}")
_QUICK_S = 30.0  # bound for RPC commands that answer at once (get_state, set_model, bash)


@dataclass(frozen=True)
class ModelSwitch:
    """score: pi switches to this model for each compaction and back to the fake afterwards."""

    provider: str
    model_id: str


@dataclass
class ReplayConfig:
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
    pi_summary: Answerer | None = None
    longhaul: Answerer | None = None
    speed: Speed | None = None


@dataclass(frozen=True)
class CompactionRun:
    """One compaction as replayed: the RPC ``compact`` wall time and what pi wrote."""

    n: int
    ok: bool
    seconds: float


@dataclass
class ReplayOutcome:
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


def _run_step(pi: PiRpc, fake: FakeModel, step: Step, config: ReplayConfig, outcome: ReplayOutcome) -> None:
    timeout = config.step_timeout
    if step.kind == "prompt":
        fake.script(step.replies)
        pi.prompt(step.text, step.images, timeout=timeout)
        outcome.divergences += fake.leftover()
    elif step.kind == "bash":
        pi.ok({"type": "bash", "command": step.text}, timeout=timeout)
    else:
        switch = config.switch
        if switch is not None:
            pi.ok(
                {"type": "set_model", "provider": switch.provider, "modelId": switch.model_id},
                timeout=_QUICK_S,
            )
        started = time.monotonic()
        response = pi.request({"type": "compact"}, timeout=timeout)
        outcome.runs.append(
            CompactionRun(len(outcome.runs) + 1, bool(response.get("success")), time.monotonic() - started)
        )
        if switch is not None:
            pi.ok(
                {"type": "set_model", "provider": REPLAY_PROVIDER, "modelId": REPLAY_MODEL}, timeout=_QUICK_S
            )


def _drive(
    script: ReplayScript,
    dirs: ReplayDirs,
    fake: FakeModel,
    config: ReplayConfig,
    outcome: ReplayOutcome,
    progress: Callable[[str], None] | None,
) -> Path | None:
    standins = install_standins(dirs.tools, script)
    keep = config.keep_recent_tokens or script.keep_recent_tokens
    write_agent_config(
        dirs,
        base_url=fake.base_url,
        keep_recent_tokens=keep,
        shell=standins.shell,
        models=config.models,
        auth=config.auth,
    )
    extra = dict(standins.env)
    if config.compactor == "pi":
        extra["PI_COMPACTOR"] = "pi"
    env = replay_env(dirs, base=config.env_base, **extra)
    daemon = DaemonProcess(dirs)
    try:
        if config.compactor == "longhaul":
            try:
                daemon.start(env)
            except StartError:
                outcome.problem = "daemon-failed"
                return None
        pi = PiRpc(config.pi_bin, [config.shim, standins.extension], cwd=dirs.project, env=env)
        try:
            pi.ok({"type": "set_auto_compaction", "enabled": False}, timeout=_QUICK_S)
            total = len(script.steps)
            for index, step in enumerate(script.steps, start=1):
                if progress is not None:
                    progress(f"step {index}/{total}")
                _run_step(pi, fake, step, config, outcome)
            session = pi.session_file(timeout=_QUICK_S)
        finally:
            outcome.handler_errors = pi.count("extension_error")
            pi.close()
        return session
    finally:
        daemon.stop()


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
    dirs = make_dirs()
    try:
        with FakeModel(pi_summary=config.pi_summary, longhaul=config.longhaul, speed=config.speed) as fake:
            try:
                session = _drive(script, dirs, fake, config, outcome, progress)
            except PiFailed:
                outcome.problem = "pi-failed"
                session = None
            outcome.divergences += fake.divergences
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
        dirs.cleanup()
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
