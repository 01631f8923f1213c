"""What a model call costs when pi makes it instead of the daemon: one pass, one model server, both ways.

``python bench/via_pi_bench.py`` (``make bench-via-pi``) plays the same short session through real pi 0.73.1
(``pi --mode rpc`` with the shim loaded) and a real daemon twice against one scripted OpenAI-compatible model
on loopback (the harness's ``model_server.py``, SSE streaming, answers at once): once with the daemon calling
the model itself (the route table's ``custom-openai-compatible`` route), once with every call going through pi
(``serve --via-pi openai-completions``: the shim's ``model.complete``, pi-ai's ``streamSimple``, the answer
streamed back as ``model.delta`` notes). Each way compacts ``--passes`` times after one unmeasured warm-up.

For each way it prints the model calls' own durations from the daemon's ``model_call`` traces (the time the
daemon waited for one call, attempts and the socket hop included) and the wall time of the RPC ``compact``.
With a model that answers at once, the difference between the two ways is what going through pi adds to one
call. With ``--trailing N`` the model writes N more characters after its answer, to show that both ways stop
reading at the answer (the calls' durations stay flat as N grows).

Nothing outside a scratch directory is read or written (the harness's ``sandbox.py``). Numbers to compare
between changes on one machine; no test asserts them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the e2e helpers (tests/e2e/)

from e2e.e2e_sandbox import build_sandbox  # noqa: E402
from e2e.scenario import wrap_up  # noqa: E402

from longhaul_daemon.evaluation.harness.answers import diff_answer  # noqa: E402
from longhaul_daemon.evaluation.harness.daemon_process import Daemon  # noqa: E402
from longhaul_daemon.evaluation.harness.model_server import ModelServer  # noqa: E402
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc  # noqa: E402
from longhaul_daemon.evaluation.harness.replies import Reply, text  # noqa: E402

WAYS = {"direct": (), "through pi": ("--via-pi", "openai-completions")}


@dataclass(frozen=True)
class Way:
    name: str
    call_ms: list[int]
    compact_ms: list[float]
    via: set[str]
    stopped_early: int


def _answer_with_trailing(trailing: int) -> Any:
    def hook(body: dict[str, Any]) -> Reply | None:
        prompt = "\n".join(str(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict))
        return text(diff_answer(prompt) + "\n\n" + "More words the model goes on with. " * (trailing // 35))

    return hook


def run_way(name: str, passes: int, trailing: int) -> Way:
    with ModelServer() as server:
        if trailing:
            server.on_daemon_call(_answer_with_trailing(trailing))
        sandbox = build_sandbox(server.base_url)
        daemon = Daemon(sandbox.socket_path, sandbox.root)
        try:
            daemon.start(sandbox.daemon_env(), extra_args=WAYS[name])
            with PiRpc(sandbox) as pi:
                compact_ms: list[float] = []
                for n in range(passes + 1):
                    pi.prompt(f"Stretch {n}: please look at the export module; keep the header as it is.")
                    wrap_up(pi, f"bench-{n}")
                    started = time.perf_counter()
                    response = pi.compact()
                    elapsed = (time.perf_counter() - started) * 1000
                    if response.get("success") is not True:
                        raise SystemExit(f"{name}: compact failed: {response}")
                    if n:  # the first pass warms up pi's and the daemon's code paths
                        compact_ms.append(elapsed)
            log = daemon.log_tail(50_000_000).splitlines()
            traces = [json.loads(line) for line in log if line.startswith("{")]
        finally:
            daemon.sweep()
            sandbox.cleanup()
    calls = [t for t in traces if t.get("event") == "model_call"]
    measured = calls[len(calls) - passes :] if len(calls) >= passes else calls
    return Way(
        name=name,
        call_ms=[int(t["durationMs"]) for t in measured],
        compact_ms=compact_ms,
        via={f"{t['via']}:{t.get('viaWhy')}" for t in measured},
        stopped_early=sum(1 for t in measured if t.get("stoppedEarly")),
    )


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passes", type=int, default=12, help="measured compactions per way (default 12)")
    parser.add_argument(
        "--trailing", type=int, default=0, help="characters the model writes after its answer"
    )
    args = parser.parse_args()
    ways = [run_way(name, args.passes, args.trailing) for name in WAYS]
    lines = [
        f"{args.passes} compactions per way, one Diff call each; trailing text {args.trailing} characters",
        "",
        "| way | route | call p50 ms | call p90 ms | compact p50 ms | compact p90 ms | stopped early |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {way.name} | {', '.join(sorted(way.via))} | {statistics.median(way.call_ms):.0f} "
        f"| {percentile(way.call_ms, 0.9):.0f} | {statistics.median(way.compact_ms):.0f} "
        f"| {percentile(way.compact_ms, 0.9):.0f} | {way.stopped_early}/{len(way.call_ms)} |"
        for way in ways
    ]
    direct, through = ways
    extra = statistics.median(through.call_ms) - statistics.median(direct.call_ms)
    lines += ["", f"going through pi adds {extra:.0f} ms to a call's median duration"]
    sys.stdout.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
