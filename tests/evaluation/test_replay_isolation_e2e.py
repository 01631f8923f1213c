"""A replay answers Longhaul's Diff itself, stays on this machine and leaves the user's files alone.

REPLAY-4: the fake model's fixed answer labels every offered message ``not a rule``, so the replayed Longhaul
compaction closes whole with the fixed narrative and Now and no rule, although the user stated one.
REPLAY-5: the whole ``longhaul-daemon replay`` runs under strace, which shows every program it started and
every address any of them bound, connected or sent to. pi and the daemon get an environment built from the
allowlist (a planted secret, API key, proxy or ``PI_*`` setting reaches no program the replay starts), pi runs
with its offline switches, the fake model binds loopback, and nothing reaches beyond loopback or looks up a
host name. A trap on loopback stands where the user's own provider and proxy point: nobody calls it.
REPLAY-7: the user's HOME, agent dir (settings, models, auth, sessions, record log) and XDG dirs keep every
byte and mtime, and the replay's temporary tree is gone afterwards, with no process left, also when pi
exits at once.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.answers import FIXED_NARRATIVE, FIXED_NOW
from longhaul_daemon.evaluation.harness.sandbox import find_tools
from longhaul_daemon.evaluation.replay import ReplayConfig, replay_transcript
from longhaul_daemon.state.model import State

from .branches import BranchBuilder, write_transcript
from .cli_run import private_env
from .syscalls import Exec, Trace, missing_strace, run_traced

pytestmark = pytest.mark.e2e

RULE = "Never run sudo in this repository. Run the tests, please."
SECRET = "sk-planted-secret-4f1c"
OLD = 1_600_000_000  # every file of the user's gets this mtime, so any write shows
PLANTED = ("SECRET_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NODE_OPTIONS", "PI_COMPACTOR", "GIT_DIR")
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
ALLOWED = {
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR",  # the allowlist
    "HOME", "PI_CODING_AGENT_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR", "LONGHAUL_SOCKET", "PYTHONPATH",  # the replay's private places
    "PI_OFFLINE", "PI_SKIP_VERSION_CHECK", "PI_TELEMETRY",  # pi offline
    "LONGHAUL_REPLAY_RESULTS", "LONGHAUL_REPLAY_TOOLS", "LONGHAUL_REPLAY_BASH", "LONGHAUL_REPLAY_BASH_STATE",
}  # fmt: skip
USER_DIRS = ("home", "agent", "config", "run", "state", "cache", "data")  # cli_run.private_env's places


def _recording(path: Path) -> Path:
    """A small session: a rule-like request, a tool call, a kept wrap-up, one compaction, one more turn."""
    b = BranchBuilder()
    b.user(RULE)
    b.tool("bash", {"command": "pytest -q"}, "3 passed")
    b.assistant("All three tests pass.")
    kept = b.user("wrap-up " + "x" * 400)
    b.assistant("ack")
    b.compaction(kept, "recorded summary", compactor="longhaul")
    b.user("next")
    b.assistant("done")
    return write_transcript(path, b)


@pytest.fixture
def trap() -> Iterator[int]:
    """A loopback port where the user's provider and proxy point: held, never listening, so a call there
    is refused at once (a replay that leaked never hangs on it) and strace shows who tried."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _user_world(tmp_path: Path, trap_url: str) -> tuple[dict[str, str], Path]:
    """The user's setup under ``tmp_path``, as ``private_env`` names it, in both places pi may look (the
    agent dir named by the environment, and ``~/.pi/agent``); returns the environment and a recorded
    session of the user's."""
    provider = {
        "baseUrl": f"{trap_url}/v1",
        "api": "openai-completions",
        "apiKey": SECRET,
        "models": [{"id": "own", "name": "own", "contextWindow": 1000, "maxTokens": 100}],
    }
    sessions: list[Path] = []
    for agent in (tmp_path / "agent", tmp_path / "home" / ".pi" / "agent"):
        _write(agent / "settings.json", json.dumps({"defaultProvider": "mine", "defaultModel": "own"}))
        _write(agent / "models.json", json.dumps({"providers": {"mine": provider}}))
        _write(agent / "auth.json", json.dumps({"mine": {"type": "api_key", "key": SECRET}}))
        _write(agent / "longhaul.json", json.dumps({"summarizer": "mine/own"}))
        _write(agent / "logs" / "compaction-state.jsonl", '{"event": "extension-loaded"}\n')
        session = agent / "sessions" / "--work--" / "2026-12-01T00-00-00-000Z_s-1.jsonl"
        session.parent.mkdir(parents=True)
        sessions.append(_recording(session))
    _write(tmp_path / "state" / "longhaul" / "daemon.log", "the user's daemon log\n")
    _write(tmp_path / "config" / "git" / "config", "[user]\n\tname = Me\n")
    for name in USER_DIRS:
        (tmp_path / name).mkdir(exist_ok=True)
    for name in USER_DIRS:
        for path in [tmp_path / name, *(tmp_path / name).rglob("*")]:
            os.utime(path, (OLD, OLD), follow_symlinks=False)
    planted = {name: SECRET for name in PLANTED} | {name: trap_url for name in PROXIES}
    planted |= {"NODE_OPTIONS": "--max-old-space-size=64", "PI_COMPACTOR": "pi"}
    planted["GIT_DIR"] = str(tmp_path / "home" / "repo" / ".git")
    return private_env(tmp_path, **planted), sessions[0]


def _snapshot(tmp_path: Path) -> dict[str, tuple[bool, bytes | None, int, int]]:
    """Every file and directory of the user's: kind, bytes, mtime (a directory's changes when an entry is
    added or removed, even one removed again) and mode."""
    found: dict[str, tuple[bool, bytes | None, int, int]] = {}
    for name in USER_DIRS:
        for path in [tmp_path / name, *(tmp_path / name).rglob("*")]:
            info = path.lstat()
            data = None if path.is_dir() else path.read_bytes()
            found[str(path.relative_to(tmp_path))] = (path.is_dir(), data, info.st_mtime_ns, info.st_mode)
    return found


def _processes_naming(text: str) -> list[int]:
    """Live processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if text.encode() in cmdline:
                found.append(int(entry.name))
    return found


@dataclass(frozen=True)
class _Started:
    pi: Exec
    daemon: Exec
    root: Path


def _started(trace: Trace) -> _Started:
    pi = next(e for e in trace.execs if "--mode" in e.argv and "rpc" in e.argv)
    daemon = next(e for e in trace.execs if "longhaul_daemon" in e.argv and "serve" in e.argv)
    return _Started(pi=pi, daemon=daemon, root=Path(pi.env["HOME"]).parent)


@pytest.fixture
def strace_available() -> None:
    """Fail (never skip) without strace: CI installs it (.ci/run)."""
    problem = missing_strace()
    if problem is not None:
        pytest.fail(problem, pytrace=False)


def test_replay4_replay5_replay7_a_replay_answers_itself_stays_local_and_leaves_the_user_alone(
    prerequisites: None, strace_available: None, tmp_path: Path, trap: int
) -> None:
    trap_url = f"http://127.0.0.1:{trap}"
    env, session = _user_world(tmp_path, trap_url)
    before = _snapshot(tmp_path)
    kept = tmp_path / "kept"
    command = ["replay", str(session), "--json", "--keep", str(kept), "--step-timeout", "60"]
    argv = [sys.executable, "-m", "longhaul_daemon", *command]
    trace = run_traced(argv, env=env, cwd=tmp_path, out_dir=tmp_path / "trace", timeout=120)
    assert trace.left_running == ()  # REPLAY-7: nothing the replay started outlives it
    assert trace.returncode == 0, trace.stdout + trace.stderr
    [outcome] = json.loads(trace.stdout)["transcripts"]
    assert (outcome["recordedCompactions"], outcome["compactions"], outcome["longhaul"]) == (1, 1, 1)
    assert (outcome["fallbacks"], outcome["handlerErrors"], outcome["divergences"]) == (0, 0, 0)

    # REPLAY-4: the Diff got the fixed answer, a valid one: closed whole, the fixed narrative and Now, and
    # the user's "never run sudo" labeled not a rule, which code's reading keeps in doubt (diff/doubts.py).
    [replayed] = kept.glob("*.jsonl")
    entries = [json.loads(line) for line in replayed.read_text().splitlines()]
    [compaction] = [e for e in entries if e["type"] == "compaction"]
    state = State.model_validate(compaction["details"]["state"])
    assert [(line.closedAs, line.text) for line in state.workLog] == [("whole", FIXED_NARRATIVE)]
    assert (state.now, state.decisions) == (FIXED_NOW, [])
    assert [(rule.words, rule.doubt) for rule in state.rules] == [(RULE, "model-read-one-off")]

    # REPLAY-5: what pi and the daemon were started with.
    started = _started(trace)
    for program in (started.pi, started.daemon):
        assert set(program.env) <= ALLOWED, set(program.env) - ALLOWED
        assert Path(program.env["HOME"]).parent == started.root
        assert Path(program.env["PI_CODING_AGENT_DIR"]).parent == started.root
    offline = {k: started.pi.env.get(k) for k in ("PI_OFFLINE", "PI_SKIP_VERSION_CHECK", "PI_TELEMETRY")}
    assert offline == {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
    replay_pid = trace.execs[0].pid
    for program in trace.execs:
        if program.pid == replay_pid:
            continue  # the replay command itself was started with the user's environment
        leaked = {k for k in program.env if k in PLANTED or k.lower().endswith("_proxy")}
        assert not leaked, (program.argv[:3], leaked)
        assert not any(SECRET in v or str(tmp_path / "home") in v for v in program.env.values())

    # REPLAY-5: the fake model listens on loopback, pi and the daemon both call it there, and no process
    # reaches past loopback, looks a name up, or comes near the trap.
    inet = [r for r in trace.reaches if r.inet]
    assert all(r.loopback for r in inet), [r for r in inet if not r.loopback]
    assert all(r.family in ("AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK") for r in trace.reaches)
    assert not [r for r in inet if r.port == 53]
    assert not [r for r in inet if r.port == trap]
    [fake_port] = {r.port for r in inet if r.call == "getsockname" and r.pid == replay_pid}
    callers = {r.pid for r in inet if r.call == "connect" and r.port == fake_port}
    assert {started.pi.pid, started.daemon.pid} <= callers

    # REPLAY-7: the user's files as they were; the replay's tree and processes gone.
    assert _snapshot(tmp_path) == before
    assert started.root.name.startswith("lh-replay-") and not started.root.exists()
    assert _processes_naming(str(started.root)) == []


_EXITS_AT_ONCE = """#!%(python)s
import json, os, sys
agent = os.environ["PI_CODING_AGENT_DIR"]
config = {}
for name in sorted(os.listdir(agent)):
    with open(os.path.join(agent, name), encoding="utf-8") as f:
        config[name] = json.load(f)
with open(%(notes)r, "w", encoding="utf-8") as notes:
    json.dump({"argv": sys.argv, "env": dict(os.environ), "agent": config}, notes)
sys.exit(7)
"""


def test_replay5_replay7_when_pi_exits_at_once_the_tree_and_the_daemon_are_gone_and_the_user_untouched(
    prerequisites: None, tmp_path: Path, trap: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library entry, in this process, with a pi that notes what it was given (its environment and the
    agent dir it was pointed at: the fake on loopback is the only provider, telemetry off) and exits 7."""
    trap_url = f"http://127.0.0.1:{trap}"
    env, session = _user_world(tmp_path, trap_url)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = _snapshot(tmp_path)
    notes = tmp_path / "pi-notes.json"
    pi = tmp_path / "bin" / "pi"
    _write(pi, _EXITS_AT_ONCE % {"python": sys.executable, "notes": str(notes)})
    pi.chmod(0o700)
    tools = find_tools(str(pi), None)
    assert not isinstance(tools, str), tools
    outcome = replay_transcript(session, ReplayConfig(pi_bin=tools.pi, shim=tools.shim, step_timeout=60))
    assert outcome.problem == "pi-failed" and outcome.compactions == 0

    given: dict[str, Any] = json.loads(notes.read_text())
    assert given["argv"][1:3] == ["--mode", "rpc"]
    assert set(given["env"]) <= ALLOWED, set(given["env"]) - ALLOWED
    agent = given["agent"]
    assert sorted(agent) == ["models.json", "settings.json"]  # no auth.json, no session, no longhaul.json
    [(provider, fake)] = agent["models.json"]["providers"].items()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", fake["baseUrl"])
    settings = agent["settings.json"]
    assert (settings["defaultProvider"], settings["enableInstallTelemetry"]) == (provider, False)
    root = Path(given["env"]["HOME"]).parent
    assert root.name.startswith("lh-replay-") and not root.exists()
    assert _processes_naming(str(root)) == []  # the daemon started for it was stopped
    assert _snapshot(tmp_path) == before
