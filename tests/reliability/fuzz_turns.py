"""Turns mode against a hostile model: a real daemon process, real session files, one conversation per case.

Run by ``tests/reliability/test_fuzz_turns.py`` (bounded: one conversation of each kind) and by ``make
fuzz-turns`` (this file as a script: ``--rounds``, ``--seed``, ``--budget``, ``--case``). The cases, a span
and a part the model plays in it, are in :mod:`turns_cases`. What must hold for every case, counted as
violations in the :class:`TurnsReport`:

* the reply is a result with a compaction or a fallback, never an error, and comes within the pass budget
  plus one second (the budget check);
* ``status``, asked every 20 ms from another process all through the pass, always answers (the probe;
  its latencies are figures for docs/reliability.md, never judged);
* no request the model received, on either route, holds 8 characters in a row of either route's key;
* the record log holds the pass's record (compaction or fallback);
* the span closes as the case expects (``whole``, or narrative-less with the case's reason).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, for turns_cases as a script

from daemon_under_test import DaemonUnderTest
from status_probe import StatusProbe
from turns_cases import CASES, SESSION_KEY, SUMMARIZER_KEY, Case, span_of
from turns_model import TurnsModel, turns_model

__all__ = ["CASES", "TurnsConfig", "TurnsReport", "run_turns_fuzz"]

SLACK_S = 1.0  # a pass may answer this long after its budget, whatever step runs
PROBE_EVERY_S = 0.02


@dataclass(frozen=True)
class TurnsConfig:
    rounds: int = 1  # every case this many times
    seed: int = 20261205
    budget_s: float = 8.0  # the daemon's --pass-budget
    cases: tuple[str, ...] = ()  # names to run; empty: all


@dataclass
class TurnsReport:
    seed: int
    conversations: int = 0
    closes: Counter[str] = field(default_factory=Counter)  # "<close>:<reason>" per case run
    model_requests: int = 0
    seconds_over_budget: list[float] = field(default_factory=list)  # answer time minus the budget, per run
    status_probes: int = 0
    status_unanswered: int = 0
    status_ms: list[float] = field(default_factory=list)
    status_max_ms: dict[str, float] = field(default_factory=dict)  # the slowest probe, per case
    violations: list[str] = field(default_factory=list)
    crashed: bool = False
    seconds: float = 0.0

    def as_json(self) -> str:
        fields = {k: dict(v) if isinstance(v, Counter) else v for k, v in vars(self).items()}
        fields["status_ms"] = _percentiles(self.status_ms)
        return json.dumps(fields, sort_keys=True)


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def at(share: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))], 2)

    return {
        "p50": at(0.5),
        "p99": at(0.99),
        "max": round(ordered[-1], 2),
        "mean": round(statistics.mean(ordered), 2),
    }


def leaked(text: str) -> list[str]:
    return [
        k[i : i + 8] for k in (SESSION_KEY, SUMMARIZER_KEY) for i in range(len(k) - 7) if k[i : i + 8] in text
    ]


def _compact(socket_path: Path, params: dict[str, Any], wait_s: float) -> dict[str, Any]:
    request = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "compact", "params": params}).encode() + b"\n"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(wait_s)
        sock.connect(str(socket_path))
        sock.sendall(request)
        buffer = b""
        while True:
            while b"\n" not in buffer:
                chunk = sock.recv(1 << 20)
                if not chunk:
                    raise ValueError("the daemon closed the connection without a reply")
                buffer += chunk
            line, buffer = buffer.split(b"\n", 1)
            reply: dict[str, Any] = json.loads(line)
            if "method" not in reply:
                return reply
            if "id" in reply:  # a call the daemon makes through pi: answered as a shim that cannot make one
                error = {"code": -32601, "message": "method not found"}
                answer = {"jsonrpc": "2.0", "id": reply["id"], "error": error}
                sock.sendall(json.dumps(answer).encode() + b"\n")


def _params(work: Path, case: Case, model: TurnsModel, number: int) -> dict[str, Any]:
    root = work / "sessions" / f"{number:04d}-{case.name}"
    root.mkdir(parents=True)
    span = span_of(root, case.shape)
    path = span.write(root / "session.jsonl", session_id=f"s{number}")
    params = span.file_params(len(span.entries) - 1, path).model_dump(mode="json")
    agent = work / "agent"
    settings: dict[str, Any] = {"narrativeMode": "turns"}
    if case.summarizer:
        settings["summarizer"] = f"cheap/s-{case.name}"
    (agent / "longhaul.json").write_text(json.dumps(settings))
    # a model id per case: what the daemon remembers about a model (a route that refused the schema or the
    # tools after an `errors` conversation) stays with that case's model
    facts = {
        "provider": "fake",
        "id": f"m-{case.name}",
        "api": "openai-completions",
        "baseUrl": model.base_url,
    }
    params["session"] |= {
        "agentDir": str(agent),
        "sessionId": f"s{number}",
        "model": {**facts, "maxTokens": 16_384},
    }
    params["credentials"] = {"apiKey": SESSION_KEY, "headers": {}}
    if case.summarizer:
        params["summarizer"] = {
            "spec": f"cheap/s-{case.name}",
            "model": {**facts, "provider": "cheap", "id": f"s-{case.name}", "maxTokens": 16_384},
            "credentials": {"apiKey": SUMMARIZER_KEY, "headers": {}},
        }
    return params


def _records(work: Path) -> list[dict[str, Any]]:
    path = work / "agent" / "logs" / "compaction-state.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _one(
    daemon: DaemonUnderTest,
    model: TurnsModel,
    work: Path,
    case: Case,
    config: TurnsConfig,
    number: int,
    report: TurnsReport,
) -> None:
    params = _params(work, case, model, number)
    model.play(case.behaviour, config.seed + number)

    def fail(text: str) -> None:
        report.violations.append(f"{case.name} #{number}: {text}")

    with StatusProbe(daemon.socket_path, PROBE_EVERY_S) as prober:
        started = time.monotonic()
        try:
            reply = _compact(daemon.socket_path, params, config.budget_s + 30)
        except (OSError, ValueError) as exc:
            fail(f"no reply ({type(exc).__name__})")
            return
        elapsed = time.monotonic() - started
    report.conversations += 1
    report.model_requests += len(model.kept)
    report.status_probes += len(prober.latencies_ms) + prober.unanswered
    report.status_unanswered += prober.unanswered
    report.status_ms += prober.latencies_ms
    slowest = max(prober.latencies_ms, default=0.0)
    report.status_max_ms[case.name] = round(max(slowest, report.status_max_ms.get(case.name, 0.0)), 1)
    report.seconds_over_budget.append(round(elapsed - config.budget_s, 3))
    if prober.unanswered:
        fail(f"{prober.unanswered} status probes went unanswered")
    if elapsed > config.budget_s + SLACK_S:
        fail(f"answered {elapsed:.2f} s after it began, past its budget of {config.budget_s:g} s")
    for kept in model.kept:
        if leaked(kept.body):
            fail(f"a request sent with one route's key holds pieces of a key: {leaked(kept.body)[:3]}")
            break
    result = reply.get("result")
    if not isinstance(result, dict):
        fail(f"an error reply: {json.dumps(reply)[:200]}")
        return
    record = result.get("after", {}) or {}
    span = record.get("spanRecord") or {}
    closed = (
        f"{span.get('closedAs')}:{span.get('reason')}"
        if result.get("compaction")
        else f"fallback:{result.get('fallback')}"
    )
    report.closes[f"{case.name} {closed}"] += 1
    expected = case.closes
    if expected is not None and (span.get("closedAs"), span.get("reason")) not in {
        (expected[0], reason) for reason in expected[1]
    }:
        fail(f"closed {closed}, expected {expected[0]}:{'/'.join(map(str, expected[1]))}")
    if not any(
        r.get("passId") == result.get("passId") and r["event"] in ("compaction", "fallback")
        for r in _records(work)
    ):
        fail("no record of the pass in the record log")
    if leaked(json.dumps(result)):
        fail("the reply holds pieces of a key")


def run_turns_fuzz(work: Path, config: TurnsConfig) -> TurnsReport:
    """Every chosen case ``config.rounds`` times against one daemon; the report says what held."""
    report = TurnsReport(seed=config.seed)
    (work / "agent").mkdir(parents=True, exist_ok=True)
    cases = [c for c in CASES if not config.cases or c.name in config.cases]
    started = time.monotonic()
    (work / "daemon").mkdir()
    daemon = DaemonUnderTest(work / "daemon", "--pass-budget", str(config.budget_s))
    daemon.start()
    try:
        with turns_model() as model:
            for round_ in range(config.rounds):
                for index, case in enumerate(cases):
                    _one(daemon, model, work, case, config, round_ * len(cases) + index, report)
                    if not daemon.running():
                        report.crashed = True
                        report.violations.append(
                            f"the daemon exited during {case.name}:\n{daemon.log_tail()}"
                        )
                        return report
    finally:
        daemon.stop()
        report.seconds = round(time.monotonic() - started, 1)
    return report


def summary(report: TurnsReport) -> str:
    over = report.seconds_over_budget
    return "\n".join(
        [
            f"turns fuzz, seed {report.seed}: {report.conversations} conversations, "
            f"{report.model_requests} model requests, {report.seconds} s",
            f"status: {report.status_probes} probes, {report.status_unanswered} unanswered, "
            f"latency ms {_percentiles(report.status_ms)}",
            f"answered at most {max(over) if over else 0:+.2f} s past the budget",
            f"slowest status probe per case, ms: {report.status_max_ms}",
            *(f"  {name}: {count}" for name, count in sorted(report.closes.items())),
            f"violations: {len(report.violations)}",
            *(f"  {text}" for text in report.violations[:20]),
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description="turns mode against a hostile model, through a real daemon")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=TurnsConfig.seed)
    parser.add_argument(
        "--budget", type=float, default=TurnsConfig.budget_s, help="the daemon's --pass-budget"
    )
    parser.add_argument("--case", action="append", default=[], help="run only this case; repeatable")
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args()
    config = TurnsConfig(rounds=args.rounds, seed=args.seed, budget_s=args.budget, cases=tuple(args.case))
    with tempfile.TemporaryDirectory(prefix="lh-turns-") as scratch:
        report = run_turns_fuzz(Path(scratch), config)
    print(summary(report))
    if args.json is not None:
        args.json.write_text(report.as_json())
    return 1 if report.violations or report.crashed else 0


if __name__ == "__main__":
    sys.exit(main())
