"""``longhaul-daemon score``: both compactors summarize the same spans with the same model, probes decide.

SCORE-1..3. Each transcript is replayed twice per run, once with Longhaul and once with ``PI_COMPACTOR=pi``;
the recorded turns come from the fake model, and for each compaction pi switches to the scored model, so
pi's own summarizer and Longhaul's Diff both call it with pi's credentials. The model is looked up in pi's
own registry (the ``models.json`` and ``auth.json`` of ``--agent-dir``, copied into each replay's private
agent dir) and its ``baseUrl`` is pointed at a recording proxy on loopback, which counts both compactors'
calls and tokens alike. Before any call, the plan says how many calls it takes; without ``--yes`` nothing
starts (SCORE-2). Probes are checked by code (:mod:`~longhaul_daemon.evaluation.probes`).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.evaluation.common import Progress, check_named_files, key_path, path_hash
from longhaul_daemon.evaluation.harness.pi_rpc import PiError, PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Tools, find_tools, make_sandbox
from longhaul_daemon.evaluation.key import AnswerKey, BadKey, load_key
from longhaul_daemon.evaluation.probes import Probe, check, probes_for
from longhaul_daemon.evaluation.proxy import RecordingProxy
from longhaul_daemon.evaluation.replay import (
    ModelSwitch,
    ReplayConfig,
    replay_transcript,
    write_replay_config,
)
from longhaul_daemon.evaluation.score_report import RunResult, report_json, report_text, summarize
from longhaul_daemon.inspector.session_file import TranscriptError, agent_dir, read_transcript
from longhaul_daemon.pi_json import loads_pi_json
from longhaul_daemon.plural import counted

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_REFUSED", "run_score"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_REFUSED = 2  # SCORE-2: no --model, or no --yes
_MAX_CALLS_PER_LONGHAUL_PASS = 16  # four chunks, each a first answer, a retry, a raised budget, a question
_COMPACTORS = ("longhaul", "pi")


@dataclass(frozen=True)
class _Plan:
    path: Path
    name: str
    probes: list[list[Probe]]
    key: bool


@dataclass(frozen=True)
class ModelInfo:
    """The model both compactors use: provider, model id and the URL its calls go to."""

    provider: str
    model_id: str
    base_url: str


def _plan(path: Path) -> _Plan | None:
    try:
        branch = read_transcript(path).branch
    except TranscriptError:
        return None
    key: AnswerKey | None
    try:
        key = load_key(key_path(path))
    except BadKey:
        key = None
    return _Plan(path, path_hash(path), probes_for(branch, key), key is not None)


def _lookup(tools: Tools, spec: str, models: dict[str, Any], auth: bytes | None) -> ModelInfo | str:
    """Ask a private pi with the user's model configuration what ``spec`` is: its api and base URL."""
    provider, _, model_id = spec.partition("/")
    box = make_sandbox(tools, prefix="lh-replay-", inherit=os.environ)
    try:
        write_replay_config(
            box,
            base_url="http://127.0.0.1:9/v1",
            keep=20_000,
            shell=Path("/bin/false"),
            models=models,
            auth=auth,
        )
        with PiRpc(box, extensions=(), diagnose=False) as pi:
            data = pi.ok({"type": "get_available_models"}, timeout=60).get("data")
    except PiError:
        return "pi could not list its models"
    finally:
        box.cleanup()
    found = data.get("models") if isinstance(data, dict) else None
    for model in found if isinstance(found, list) else []:
        if isinstance(model, dict) and model.get("provider") == provider and model.get("id") == model_id:
            base = model.get("baseUrl")
            if isinstance(base, str) and base.startswith(("http://", "https://")):
                return ModelInfo(provider, model_id, base)
            return "pi's registry gives the model no http(s) baseUrl"
    return "the model is not in pi's registry, or pi has no credentials for it"


def _through_proxy(models: dict[str, Any], info: ModelInfo, url: str) -> dict[str, Any]:
    """The user's models.json with the scored model's provider (and the model itself) sent to the proxy."""
    document = copy.deepcopy(models)
    provider = document.setdefault("providers", {}).setdefault(info.provider, {})
    provider["baseUrl"] = url
    for model in provider.get("models") or []:
        if isinstance(model, dict) and model.get("id") == info.model_id and "baseUrl" in model:
            model["baseUrl"] = url
    return document


def _plan_text(plans: list[_Plan], spec: str, runs: int) -> str:
    compactions = sum(len(p.probes) for p in plans) * runs
    probes = sum(len(ps) for p in plans for ps in p.probes)
    keyed = sum(1 for p in plans if p.key)
    return (
        f"score: {counted(len(plans), 'transcript')} ({keyed} with an answer key), "
        f"{counted(compactions // max(runs, 1), 'recorded compaction')}, {counted(runs, 'run')}, "
        f"{counted(probes, 'probe')} per compactor and run, model {spec}\n"
        f"model calls: at least {2 * compactions} — pi's own compaction {compactions} to {2 * compactions} "
        f"(two on a split turn), Longhaul {compactions} to {_MAX_CALLS_PER_LONGHAUL_PASS * compactions} "
        "(one per chunk, plus a retry or a question round when an answer needs one)\n"
    )


def _score_one(
    plan: _Plan, compactor: str, run: int, config: ReplayConfig, proxy: RecordingProxy, tag: str
) -> RunResult:
    outcome = replay_transcript(plan.path, config)
    result = RunResult(plan.name, compactor, run, problem=outcome.problem)
    for n, probes in enumerate(plan.probes, start=1):
        summary = outcome.summaries[n - 1] if n <= len(outcome.summaries) else ""
        for probe in probes:
            result.checked[probe.kind] = result.checked.get(probe.kind, 0) + 1
            if summary and check(probe, summary):
                result.passed[probe.kind] = result.passed.get(probe.kind, 0) + 1
    calls = proxy.calls(tag)
    result.calls = len(calls)
    result.input_tokens = sum(c.input_tokens for c in calls)
    result.output_tokens = sum(c.output_tokens for c in calls)
    result.model_seconds = sum(c.seconds for c in calls)
    result.compaction_seconds = [r.seconds for r in outcome.runs]
    result.summary_chars = [len(s) for s in outcome.summaries]
    result.compactions, result.longhaul = outcome.compactions, outcome.longhaul
    return result


def run_score(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """The ``score`` command: replay and probe each transcript with both compactors and report."""
    if not args.model:
        err.write("longhaul-daemon score: name the model both compactors use with --model PROVIDER/ID\n")
        return EXIT_REFUSED
    if not check_named_files(args.files, "score", err):
        return EXIT_FAILED
    tools = find_tools(args.pi, args.shim)
    if isinstance(tools, str):
        err.write(f"longhaul-daemon score: {tools}\n")
        return EXIT_FAILED
    plans = [plan for plan in (_plan(Path(f)) for f in args.files) if plan is not None]
    unreadable = len(args.files) - len(plans)
    out.write(_plan_text(plans, args.model, args.runs))
    out.flush()
    if not args.yes:
        err.write("longhaul-daemon score: these calls cost money; run again with --yes to make them\n")
        return EXIT_REFUSED
    source = Path(args.agent_dir) if args.agent_dir else agent_dir(os.environ)
    try:
        models = loads_pi_json((source / "models.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        models = {}
    except (OSError, ValueError):
        err.write("longhaul-daemon score: pi's models.json could not be read\n")
        return EXIT_FAILED
    auth = (source / "auth.json").read_bytes() if (source / "auth.json").is_file() else None
    info = _lookup(tools, args.model, models, auth)
    if isinstance(info, str):
        err.write(f"longhaul-daemon score: {info}\n")
        return EXIT_FAILED
    tasks = [(i, p, c, r) for r in range(1, args.runs + 1) for i, p in enumerate(plans) for c in _COMPACTORS]
    results: list[RunResult] = []
    with RecordingProxy(info.base_url) as proxy, Progress("score", len(tasks), err) as progress:

        def config(compactor: str, tag: str) -> ReplayConfig:
            return ReplayConfig(
                pi_bin=tools.pi,
                shim=tools.shim,
                compactor="pi" if compactor == "pi" else "longhaul",
                step_timeout=args.step_timeout,
                switch=ModelSwitch(info.provider, info.model_id),
                models=_through_proxy(models, info, proxy.base_url(tag)),
                auth=auth,
                env_base=os.environ,
                keep_dir=Path(args.keep) if args.keep else None,
            )

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = {
                pool.submit(_score_one, p, c, r, config(c, f"{i}-{c}-{r}"), proxy, f"{i}-{c}-{r}"): (p, c, r)
                for i, p, c, r in tasks
            }
            for future in as_completed(futures):
                plan, compactor, run = futures[future]
                results.append(future.result())
                progress.advance(f"{plan.name} {compactor} run {run}")
    reports = [summarize(results, c, args.runs) for c in _COMPACTORS]
    problems = sum(1 for r in results if r.problem is not None) + unreadable
    if args.json:
        document = {
            "model": args.model,
            "runs": args.runs,
            "transcripts": len(plans),
            "problems": problems,
            "compactors": report_json(reports),
        }
        out.write(json.dumps(document, ensure_ascii=True, indent=2) + "\n")
    else:
        header = f"score with {args.model}, {counted(args.runs, 'run')}, {counted(problems, 'problem')}"
        out.write(report_text(reports, header))
    return EXIT_FAILED if problems else EXIT_OK
