"""The long-haul table: what a pass costs on sessions of 1 to 200 MB, through a real daemon on a real socket.

``python bench/daemon_bench.py`` (``make bench`` runs it) writes pi session files of each size (as pi writes
them, cached in ``--work`` between runs), starts a private daemon per scenario and sends
``compact`` the way the shim does: the session file and its leaf named, the span as entry references. Each
scenario runs the pass twice on one daemon, once it has loaded the pass (its ``pass_loaded`` log line; a
daemon is up for a while before a session's first compaction): the first reads the session file from its
first byte (cold: the first pass of a daemon that never got the session's ``hello``, e.g. restarted
mid-session), the second finds its index (warm: every later pass of a session). A second daemon then gets
the session's ``hello`` first, as pi sends it when a session is resumed, indexes the file in the background,
and runs the session's first pass.
It prints one Markdown table:

- pass overhead: wall time of the ``compact`` call less the time the scripted model took to answer;
- peak RSS of the daemon during the scenario (VmHWM: the daemon's baseline is in it);
- ``status`` p50/p99 on an idle daemon and while a 50 MB pass runs;
- 64 concurrent passes of 170 KB sessions with a 1 s model and a limit of 64 (:mod:`daemon_load`);
- CLI start-up (:mod:`cli_startup`).

Numbers to compare between changes; no test asserts any of them.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cli_startup
import daemon_load
from private_daemon import (
    ModelProcess,
    Scratch,
    StatusPoller,
    call,
    compact_params,
    frame,
    peak_rss_mb,
    percentile,
    stop,
    wait_pass_loaded,
    wait_serving,
)

from longhaul_daemon.evaluation.synthetic import SyntheticSession, write_session

MB = 1_000_000


@dataclass(frozen=True)
class Shape:
    """One session to measure: its size, and the size of its current span behind earlier compactions."""

    name: str
    total_mb: int
    span_mb: int | None = None  # None: the whole session is one span
    compactions: int = 0


@dataclass
class PassTimes:
    shape: Shape
    cold_ms: float
    warm_ms: float
    hello_ms: float  # the first pass of a daemon that got the session's hello first (the usual resume)
    peak_mb: float
    closed: str
    branch: dict[str, Any]


def _session(work: Path, shape: Shape) -> SyntheticSession:
    """The session file of ``shape``, written once per work directory."""
    path = work / "sessions" / f"{shape.name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    span = shape.span_mb * MB if shape.span_mb is not None else None
    return write_session(
        path, total_bytes=shape.total_mb * MB, span_bytes=span, compactions=shape.compactions
    )


def _overhead_ms(reply: dict[str, Any], wall_s: float) -> tuple[float, str, dict[str, Any]]:
    result = reply.get("result")
    if not isinstance(result, dict):
        raise SystemExit(f"the daemon answered {str(reply)[:300]}")
    if result.get("fallback"):
        return wall_s * 1000, f"fallback {result['fallback']}", {}
    diagnostics = result.get("diagnostics") or {}
    model_ms = (diagnostics.get("narrative") or {}).get("timings", {}).get("callsMs", 0)
    return (
        wall_s * 1000 - model_ms,
        str(result["after"]["spanRecord"]["closedAs"]),
        diagnostics.get("branch", {}),
    )


async def _timed(socket: Path, request: bytes) -> tuple[float, str, dict[str, Any]]:
    started = time.perf_counter()
    reply = await call(socket, request)
    return _overhead_ms(reply, time.perf_counter() - started)


async def _passes(scratch: Scratch, daemon: subprocess.Popen[bytes], session: SyntheticSession) -> PassTimes:
    with ModelProcess(delay_s=0) as model:
        await wait_serving(scratch.socket, daemon)
        await wait_pass_loaded(scratch, 1)
        params = compact_params(session, cwd=scratch.cwd, agent=scratch.agent, base_url=model.base_url)
        cold, closed, _ = await _timed(scratch.socket, frame("compact", params, 1))
        warm, _, branch = await _timed(scratch.socket, frame("compact", params, 2))
    return PassTimes(Shape("", 0), cold, warm, 0.0, peak_rss_mb(daemon.pid), closed, branch)


async def _after_hello(scratch: Scratch, daemon: subprocess.Popen[bytes], session: SyntheticSession) -> float:
    """A fresh daemon: the session's ``hello`` (pi sends it when the session is resumed), the background
    index of its file, then the first pass."""
    with ModelProcess(delay_s=0) as model:
        await wait_serving(scratch.socket, daemon)
        await wait_pass_loaded(scratch, 2)  # the scenario's second daemon
        params = compact_params(session, cwd=scratch.cwd, agent=scratch.agent, base_url=model.base_url)
        await call(scratch.socket, frame("hello", {"session": params["session"], "reason": "resume"}, 1))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status = await call(scratch.socket, frame("status", {}, 2))
            if status["result"]["sessionFilesWarmed"] >= 1:
                break
            await asyncio.sleep(0.05)
        first, _, _ = await _timed(scratch.socket, frame("compact", params, 3))
    return first


def _scenario(work: Path, shape: Shape) -> PassTimes:
    session = _session(work, shape)
    scratch = Scratch.at(Path(tempfile.mkdtemp(prefix="lh-bench-", dir=work)))
    scratch.prepare({})
    daemon = scratch.start_daemon()
    try:
        times = asyncio.run(_passes(scratch, daemon, session))
    finally:
        stop(daemon)
    daemon = scratch.start_daemon()
    try:
        times.hello_ms = asyncio.run(_after_hello(scratch, daemon, session))
    finally:
        stop(daemon)
    times.shape = shape
    return times


async def _status_during(
    scratch: Scratch, daemon: subprocess.Popen[bytes], session: SyntheticSession
) -> tuple[list[float], list[float]]:
    """``status`` latencies on an idle daemon, then while a pass over ``session`` runs."""
    with ModelProcess(delay_s=0) as model:
        await wait_serving(scratch.socket, daemon)
        with StatusPoller(scratch.socket) as idle:
            await asyncio.sleep(1.0)
        params = compact_params(session, cwd=scratch.cwd, agent=scratch.agent, base_url=model.base_url)
        with StatusPoller(scratch.socket) as busy:
            await call(scratch.socket, frame("compact", params, 1))
    return idle.latencies, busy.latencies


def _status(work: Path) -> tuple[list[float], list[float]]:
    session = _session(work, Shape("one-span-50mb", 50))
    scratch = Scratch.at(Path(tempfile.mkdtemp(prefix="lh-bench-", dir=work)))
    scratch.prepare({})
    daemon = scratch.start_daemon()
    try:
        return asyncio.run(_status_during(scratch, daemon, session))
    finally:
        stop(daemon)


def _ms(values: list[float], share: float) -> str:
    return f"{percentile(values, share) * 1000:.1f}" if values else "–"


SHAPES = (
    Shape("one-span-1mb", 1),
    Shape("one-span-10mb", 10),
    Shape("one-span-20mb", 20),
    Shape("one-span-50mb", 50),
    Shape("one-span-200mb", 200),
    Shape("behind-20-compactions-200mb", 200, span_mb=1, compactions=20),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="where session files are cached (default: a temp dir)")
    parser.add_argument("--quick", action="store_true", help="only the sessions up to 20 MB")
    args = parser.parse_args()
    # absolute: the daemon runs in its scratch dir, where a relative socket path would point elsewhere
    work = (args.work or Path(tempfile.mkdtemp(prefix="lh-bench-work-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    shapes = [s for s in SHAPES if not args.quick or s.total_mb <= 20]
    # first, while this process is small: after the 200 MB scenarios its own heap slows the 64 clients
    load = daemon_load.run_load(daemon_load.parser().parse_args([]))
    lines = [
        "| session | span | pass overhead: first pass, no hello | first pass after hello | later passes"
        " | peak RSS | closed | read |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for shape in shapes:
        t = _scenario(work, shape)
        span = (
            f"{shape.span_mb} MB behind {shape.compactions} compactions"
            if shape.span_mb
            else "the whole session"
        )
        read = f"{t.branch.get('whole', '?')} entries read whole, {t.branch.get('leftOut', '?')} left out"
        lines.append(
            f"| {shape.total_mb} MB | {span} | {t.cold_ms:.0f} ms | {t.hello_ms:.0f} ms | {t.warm_ms:.0f} ms"
            f" | {t.peak_mb:.0f} MB"
            f" | {t.closed} | {read} |"
        )
        print(lines[-1], flush=True)  # noqa: T201
    if not args.quick:
        idle, busy = _status(work)
        lines.append("")
        lines.append(
            f"status: p50 {_ms(idle, 0.5)} ms, p99 {_ms(idle, 0.99)} ms idle ({len(idle)} calls); "
            f"p50 {_ms(busy, 0.5)} ms, p99 {_ms(busy, 0.99)} ms during a 50 MB pass ({len(busy)} calls)"
        )
    lines.append(
        f"64 concurrent passes (170 KB sessions, 1 s model, limit 64): {load.wall_s:.2f} s wall, "
        f"daemon CPU {load.cpu_s:.2f} s, status p99 {load.status_ms(0.99):.1f} ms, closed {load.outcomes}"
    )
    startup = cli_startup.startup_times(10)
    cli = ", ".join(f"{case} {statistics.median(ms):.0f} ms" for case, ms in startup.items())
    lines.append(f"CLI start-up (median of 10): {cli}")
    print("\n".join(lines))  # noqa: T201


if __name__ == "__main__":
    main()
