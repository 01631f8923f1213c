"""How long ``longhaul-daemon`` takes to start, so a heavy import creeping into ``status`` shows as a number.

Run with ``python bench/cli_startup.py [--runs N] [--module]``. Each case runs N times in a fresh process
(after one untimed warm-up), timed from the parent from start to exit: ``status`` with no daemon on the socket
(it exits 3), ``--help``, and the bare interpreter as a yardstick. The command is the ``longhaul-daemon``
script beside this interpreter, as a user runs it, or ``python -m longhaul_daemon`` with ``--module`` (or when
there is no script). Prints min, median and max in milliseconds; exits 0. No test asserts any of these times.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

DEFAULT_RUNS = 20


def cli_command(*, module: bool = False) -> list[str]:
    """The ``longhaul-daemon`` script beside this interpreter, else (or with ``module``) ``python -m``."""
    script = Path(sys.executable).parent / "longhaul-daemon"
    if module or not script.is_file():
        return [sys.executable, "-m", "longhaul_daemon"]
    return [str(script)]


def time_runs(argv: Sequence[str], runs: int) -> list[float]:
    """Wall milliseconds of ``runs`` runs of ``argv``, each in a new process, after one untimed warm-up."""
    times: list[float] = []
    for n in range(runs + 1):
        start = time.perf_counter()
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        elapsed = (time.perf_counter() - start) * 1000
        if n:  # the first run fills the OS's file cache and Python's bytecode cache
            times.append(elapsed)
    return times


def startup_times(runs: int = DEFAULT_RUNS, *, module: bool = False) -> dict[str, list[float]]:
    """Per case, each run's wall milliseconds: ``status`` (no daemon), ``--help``, the bare interpreter."""
    command = cli_command(module=module)
    # A socket path in a fresh directory of our own, so no daemon can answer and nothing shared is touched.
    scratch = Path(tempfile.mkdtemp(prefix="lh-bench-"))
    try:
        cases = {
            "status (no daemon)": [*command, "status", "--socket", str(scratch / "none.sock")],
            "--help": [*command, "--help"],
            "python -c pass": [sys.executable, "-c", "pass"],
        }
        return {name: time_runs(argv, runs) for name, argv in cases.items()}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time longhaul-daemon start-up in fresh processes.")
    parser.add_argument(
        "--runs", type=int, default=DEFAULT_RUNS, help=f"timed runs per case ({DEFAULT_RUNS})"
    )
    parser.add_argument("--module", action="store_true", help="run python -m longhaul_daemon, not the script")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    command = " ".join(cli_command(module=args.module))
    print(f"{command}: wall ms over {args.runs} runs, each a new process")  # noqa: T201
    print(f"{'case':<20} {'min':>8} {'median':>8} {'max':>8}")  # noqa: T201
    for name, times in startup_times(args.runs, module=args.module).items():
        row = f"{name:<20} {min(times):>8.1f} {statistics.median(times):>8.1f} {max(times):>8.1f}"
        print(row)  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
