"""Try Longhaul offline, with no key and nothing of yours touched: ``make try``.

    python -m realmodel.offline_trial [--project DIR] [--work DIR] [--keep] [-- PI_ARGUMENTS...]

starts, all in one scratch directory (``--work``, else a new one under the temp dir):

- the real small model (SmolLM2-135M-Instruct on llama.cpp, ``make realmodel``) behind ``realmodel/server.py``
  on a free loopback port;
- a private ``longhaul-daemon serve`` on its own socket;
- pi from ``client_shim/node_modules`` (``make install``), interactive, with the shim loaded (``-e``), in a
  scratch agent dir (never ``~/.pi``) whose ``models.json`` names the local model, working in a scratch git
  project (``--project`` names a directory of yours instead).

When pi exits (Ctrl+D, or Ctrl+C twice), or this script gets SIGTERM or SIGHUP, the daemon and the model
server are stopped, a line says how many compactions ran and how many were Longhaul's, and the scratch
directory is removed unless ``--work`` or ``--keep`` asked to keep it. The model is weak (135M parameters):
the point is to see Longhaul compact, not to get good answers. It never calls tools, so commands go through
pi's ``!cmd``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO

from realmodel.build_model import CHECKOUT, Layout, default_dir, model_problem, runtime_problem
from realmodel.pi_agent import MODEL_ID, write_agent_config

PI_BIN = CHECKOUT / "client_shim" / "node_modules" / ".bin" / "pi"
SHIM = CHECKOUT / "client_shim"
START_TIMEOUT_S = 120.0  # the model loads in under a second on an idle machine; a loaded one is slower
STOP_TIMEOUT_S = 15.0  # the daemon's default grace (10 s) for a pass in flight, and some room
# The caller's settings that would change what pi, the shim or the daemon do; the trial sets its own.
DROPPED_PREFIXES = ("PI_", "LONGHAUL_")
README_TEXT = "# Longhaul trial\n\nA scratch project for `make try`. Anything here is removed on exit.\n"


class TrialError(RuntimeError):
    """A piece of the trial could not be started."""


def say(message: str) -> None:
    sys.stderr.write(f"longhaul try: {message}\n")
    sys.stderr.flush()


@dataclass(frozen=True)
class Places:
    """Where everything of one trial lives."""

    work: Path

    @property
    def agent_dir(self) -> Path:
        return self.work / "agent"

    @property
    def socket(self) -> Path:
        return self.work / "run" / "daemon.sock"

    @property
    def scratch_project(self) -> Path:
        return self.work / "project"

    @property
    def daemon_log(self) -> Path:
        return self.work / "daemon.log"

    @property
    def model_log(self) -> Path:
        return self.work / "model-requests.jsonl"

    @property
    def model_stderr(self) -> Path:
        return self.work / "model-server.log"


def trial_env(places: Places) -> dict[str, str]:
    """For the daemon and pi: the caller's environment less its pi and Longhaul settings, plus the trial's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(DROPPED_PREFIXES)}
    env.update(
        PI_CODING_AGENT_DIR=str(places.agent_dir),
        LONGHAUL_SOCKET=str(places.socket),
        PI_OFFLINE="1",
        PI_SKIP_VERSION_CHECK="1",
        PI_TELEMETRY="0",
    )
    return env


def scratch_project(path: Path, env: dict[str, str]) -> None:
    """A one-commit git repository for pi to work in (the daemon reads git for the state's World)."""
    path.mkdir()
    (path / "README.md").write_text(README_TEXT)
    git_env = env | {
        "GIT_AUTHOR_NAME": "Longhaul trial",
        "GIT_AUTHOR_EMAIL": "trial@longhaul.invalid",
        "GIT_COMMITTER_NAME": "Longhaul trial",
        "GIT_COMMITTER_EMAIL": "trial@longhaul.invalid",
    }
    steps = (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "Start the trial project"])
    for args in steps:
        subprocess.run(["git", *args], cwd=path, env=git_env, check=True, capture_output=True, timeout=30)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL to the process group after STOP_TIMEOUT_S; never raises."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def model_server(layout: Layout, places: Places) -> Iterator[str]:
    """``realmodel/server.py`` on a free loopback port; yields its base URL."""
    # One thread, the server's default: on a CPU that pi and the daemon share, two were far slower.
    argv = [
        str(layout.python), str(CHECKOUT / "realmodel" / "server.py"), "--model", str(layout.model),
        "--host", "127.0.0.1", "--port", "0", "--alias", MODEL_ID, "--threads", "1",
        "--log", str(places.model_log),
    ]  # fmt: skip
    with places.model_stderr.open("wb") as errors:
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors, start_new_session=True
        )
        try:
            assert proc.stdout is not None
            yield _ready_url(proc, proc.stdout, places)
        finally:
            _stop(proc)
            if proc.stdout is not None:
                proc.stdout.close()


def _ready_url(proc: subprocess.Popen[bytes], stdout: IO[bytes], places: Places) -> str:
    found: list[str] = []

    def read() -> None:  # reads to EOF, so the server never blocks on a full pipe
        for raw in iter(stdout.readline, b""):
            line = raw.decode(errors="replace").strip()
            if line.startswith("listening on ") and not found:
                found.append(line.split()[2])

    threading.Thread(target=read, daemon=True).start()
    deadline = time.monotonic() + START_TIMEOUT_S
    while not found:
        if proc.poll() is not None or time.monotonic() > deadline:
            tail = places.model_stderr.read_text(errors="replace")[-2000:]
            raise TrialError(f"the model server did not start (see {places.model_stderr}):\n{tail}")
        time.sleep(0.1)
    return found[0]


@contextlib.contextmanager
def daemon(places: Places, env: dict[str, str]) -> Iterator[None]:
    """``longhaul-daemon serve`` on the trial's socket, until the socket accepts a connection."""
    places.socket.parent.mkdir(mode=0o700)
    argv = [sys.executable, "-m", "longhaul_daemon", "serve", "--socket", str(places.socket)]
    with places.daemon_log.open("wb") as log:
        proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while not _accepts(places.socket):
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = places.daemon_log.read_text(errors="replace")[-2000:]
                    raise TrialError(f"the daemon did not start (see {places.daemon_log}):\n{tail}")
                time.sleep(0.1)
            yield
        finally:
            _stop(proc)


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


def run_pi(project: Path, env: dict[str, str], pi_args: Sequence[str]) -> int:
    """Interactive pi on this terminal. Ctrl+C belongs to pi meanwhile (the terminal sends it to pi itself);
    SIGTERM and SIGHUP are passed on to pi, and the trial ends when pi has."""
    proc = subprocess.Popen([str(PI_BIN), "-e", str(SHIM), *pi_args], cwd=project, env=env)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        return proc.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def compaction_count(agent_dir: Path) -> tuple[int, int]:
    """(compactions, Longhaul's) in every session pi wrote during the trial."""
    total = ours = 0
    for session in sorted((agent_dir / "sessions").rglob("*.jsonl")):
        for line in session.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(entry, dict) and entry.get("type") == "compaction":
                total += 1
                details = entry.get("details")
                ours += isinstance(details, dict) and details.get("compactor") == "longhaul"
    return total, ours


def check_prerequisites(layout: Layout) -> None:
    problems = [p for p in (runtime_problem(layout), model_problem(layout)) if p]
    if not PI_BIN.exists():
        problems.append(f"pi is not installed at {PI_BIN}")
    if problems:
        raise TrialError("; ".join(problems) + ". Run `make install` (or `make try`, which runs it) first.")


def trial(places: Places, project: Path | None, pi_args: Sequence[str]) -> int:
    layout = Layout(default_dir())
    check_prerequisites(layout)
    env = trial_env(places)
    if project is None:
        project = places.scratch_project
        scratch_project(project, env)
    with model_server(layout, places) as base_url, daemon(places, env):
        write_agent_config(places.agent_dir, base_url)
        say(f"the model answers at {base_url}, the daemon at {places.socket}; pi works in {project}")
        say("chat a few turns, then type /compact (pi also compacts by itself past about 6,000 tokens);")
        say("/longhaul-report shows Longhaul's log. Quit pi with Ctrl+D or Ctrl+C twice.")
        status = run_pi(project, env, pi_args)
    total, ours = compaction_count(places.agent_dir)
    say(f"stopped the daemon and the model server; {total} compaction(s), {ours} by Longhaul")
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="make try", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--project", type=Path, help="work in this directory, not a scratch git project")
    parser.add_argument("--work", type=Path, help="the scratch directory (made here, kept); default: new")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (sessions, logs)")
    parser.add_argument("pi_args", nargs="*", help="more arguments for pi, after --")
    args = parser.parse_args(argv)
    if args.work is not None:
        work = args.work.expanduser().resolve()
        try:
            work.mkdir(mode=0o700)  # a fresh directory: never one that holds something else
        except OSError as exc:
            say(f"cannot use {work} as the scratch directory: {exc.strerror} (name a new one)")
            return 2
    else:
        work = Path(tempfile.mkdtemp(prefix="longhaul-try-", dir="/tmp"))  # short: a socket path lives here
    keep = args.keep or args.work is not None
    project = args.project.expanduser().resolve() if args.project else None

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, stop)
    say(f"scratch directory {work} ({'kept' if keep else 'removed'} on exit)")
    try:
        return trial(Places(work), project, args.pi_args)
    except TrialError as exc:
        say(str(exc))
        return 1
    finally:
        if keep:
            say(f"kept {work} (sessions under agent/sessions, daemon.log, model-requests.jsonl)")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
