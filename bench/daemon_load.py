"""Many concurrent small passes on a real daemon, so the cost of serving them shows as wall time and latency.

``python bench/daemon_load.py`` starts a private daemon (see :mod:`private_daemon`) with the per-provider
concurrency limit set (``serve --concurrency``), writes one ~170 KB pi session file per pass, and after one
warm-up pass sends ``--passes`` concurrent ``compact`` requests (a connection each, naming the session file
as the shim does; ``--inline`` sends the branch as the shim does without one) while a poller times
``status``. It prints wall time, passes/s, daemon CPU, ``status`` p50/p99, how the passes closed and the
most model calls in flight. ``--profile FILE`` records the daemon with py-spy (``pip install py-spy``).
Numbers to compare between changes; no test asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from private_daemon import (
    ModelProcess,
    Scratch,
    StatusPoller,
    call,
    compact_params,
    cpu_seconds,
    frame,
    percentile,
    stop,
    wait_serving,
)

from longhaul_daemon.evaluation.synthetic import write_session

__all__ = ["LoadResult", "run_load"]


@dataclass
class LoadResult:
    """What one measured burst saw."""

    passes: int
    wall_s: float
    cpu_s: float
    outcomes: dict[str, int]
    status_s: list[float]
    session_kb: int
    frame_kb: int
    model_calls: int
    most_in_flight: int

    def status_ms(self, share: float) -> float:
        return percentile(self.status_s, share) * 1000 if self.status_s else float("nan")


def _outcome(reply: dict[str, Any]) -> str:
    result = reply.get("result")
    if not isinstance(result, dict):
        return f"error {reply.get('error', {}).get('code')}"
    fallback = result.get("fallback")
    return f"fallback {fallback}" if fallback else str(result["after"]["spanRecord"]["closedAs"])


async def _burst(scratch: Scratch, daemon: subprocess.Popen[bytes], args: argparse.Namespace) -> LoadResult:
    with ModelProcess(delay_s=args.delay) as model:
        await wait_serving(scratch.socket, daemon)
        size, cwd = args.session_kb * 1024, str(scratch.cwd)
        paths = [scratch.sessions / f"s{n}.jsonl" for n in range(args.passes + args.warmup)]
        sessions = [write_session(p, total_bytes=size, seed=n, cwd=cwd) for n, p in enumerate(paths)]
        where = {
            "cwd": scratch.cwd,
            "agent": scratch.agent,
            "base_url": model.base_url,
            "inline": args.inline,
        }
        frames = [frame("compact", compact_params(s, **where), n) for n, s in enumerate(sessions, start=1)]
        for warm in frames[args.passes :]:
            await call(scratch.socket, warm)
        profiler = _start_profiler(args, daemon.pid) if args.profile else None
        with StatusPoller(scratch.socket, every_s=0.02) as poller:
            cpu_before = cpu_seconds(daemon.pid)
            started = time.perf_counter()
            replies = await asyncio.gather(*(call(scratch.socket, f) for f in frames[: args.passes]))
            wall, cpu = time.perf_counter() - started, cpu_seconds(daemon.pid) - cpu_before
        if profiler is not None:
            stop(profiler, signal.SIGINT)
    return LoadResult(
        passes=args.passes,
        wall_s=wall,
        cpu_s=cpu,
        outcomes=dict(Counter(_outcome(r) for r in replies)),
        status_s=poller.latencies,
        session_kb=sessions[0].bytes // 1024,
        frame_kb=len(frames[0]) // 1024,
        model_calls=model.calls - args.warmup,
        most_in_flight=model.most_in_flight,
    )


def _start_profiler(args: argparse.Namespace, pid: int) -> subprocess.Popen[bytes]:
    """py-spy on the daemon, sampling without pausing it."""
    command = ["py-spy", "record", "--pid", str(pid), "--rate", "500", "--nonblocking", "--gil"]
    profiler = subprocess.Popen(
        [*command, "--format", args.profile_format, "--output", args.profile],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # py-spy attaches before the burst starts
    return profiler


def run_load(args: argparse.Namespace) -> LoadResult:
    """One burst in a fresh scratch world; the scratch is removed unless ``args.keep``."""
    scratch = Scratch.at(Path(tempfile.mkdtemp(prefix="lh-bench-")))
    try:
        scratch.prepare({})
        daemon = scratch.start_daemon("--concurrency", f"default={args.limit}")
        try:
            return asyncio.run(_burst(scratch, daemon, args))
        finally:
            stop(daemon)
    finally:
        if args.keep:
            print(f"scratch: {scratch.root}")  # noqa: T201
        else:
            shutil.rmtree(scratch.root, ignore_errors=True)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--passes", type=int, default=64, help="concurrent compact requests (default 64)")
    p.add_argument("--limit", type=int, default=64, help="per-provider concurrency (serve --concurrency)")
    p.add_argument("--delay", type=float, default=1.0, help="seconds the model waits before answering")
    p.add_argument("--session-kb", type=int, default=170, help="size of each session file (default 170)")
    p.add_argument("--inline", action="store_true", help="send the branch inline (no session file)")
    p.add_argument("--warmup", type=int, default=1, help="passes run before the measured burst")
    p.add_argument("--profile", metavar="FILE", help="record the daemon with py-spy into FILE")
    p.add_argument("--profile-format", default="raw", help="py-spy's --format (raw, flamegraph, …)")
    p.add_argument("--keep", action="store_true", help="keep the scratch directory (daemon.log)")
    return p


def main() -> None:
    args = parser().parse_args()
    result = run_load(args)
    lines = [
        f"sessions: {result.session_kb} KB each, frame {result.frame_kb} KB"
        f" ({'inline' if args.inline else 'session file'})",
        f"model: {result.model_calls} calls, at most {result.most_in_flight} in flight",
        f"passes: {result.passes} concurrent, limit {args.limit}, model delay {args.delay:g} s",
        f"wall: {result.wall_s:.2f} s   passes/s: {result.passes / result.wall_s:.1f}"
        f"   daemon CPU: {result.cpu_s:.2f} s",
        f"status: p50 {result.status_ms(0.5):.1f} ms   p99 {result.status_ms(0.99):.1f} ms"
        f"   ({len(result.status_s)} calls)",
        f"closed: {result.outcomes}",
    ]
    print("\n".join(lines))  # noqa: T201


if __name__ == "__main__":
    main()
