"""The real-HOME guard catches a test that reaches the user's own files, and never blames the user.

Each case runs a small pytest session in a subprocess whose "real" HOME is a directory made here, so the
guard can be made to fire without going near the user's actual HOME. ``make test`` once failed a green run
with 1,500 lines of "the real HOME was touched" because the user had used pi in a project under /tmp
meanwhile: the last case does exactly that, from outside the inner run, while it runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from home_guard import SCRATCH_ENV, leftovers, real_places, session_slug

TESTS_DIR = Path(__file__).resolve().parent
WAIT_S = 120.0

_INNER_CONFTEST = 'pytest_plugins = ("home_guard",)\n'
_INNER_TESTS = """
import json
import os
import subprocess
import time
from pathlib import Path

REAL = Path(os.environ["LONGHAUL_TEST_REAL_HOME"])
HANDSHAKE = Path(os.environ.get("GUARD_HANDSHAKE", "/nonexistent"))


def test_reads_the_real_agent_dir():
    with open(REAL / ".pi" / "agent" / "settings.json", encoding="utf-8") as settings:
        settings.read()


def test_installs_a_unit_through_a_subprocess():
    units = REAL / ".config" / "systemd" / "user"
    subprocess.run(["sh", "-c", f'mkdir -p "{units}" && : > "{units}/longhaul-daemon.socket"'], check=True)


def test_starts_a_program_with_the_real_home():
    subprocess.run(["true"], env={**os.environ, "HOME": str(REAL)}, check=True)


def test_starts_a_program_with_no_home():
    subprocess.run(["true"], env={"PATH": os.environ["PATH"]}, check=True)


def test_a_program_leaves_a_session_and_a_record_of_a_test_dir(tmp_path):
    # The real agent dir reaches the program through a file, so only the final check can see what it did.
    (tmp_path / "where").write_text(str(REAL / ".pi" / "agent"), encoding="utf-8")
    record = json.dumps({"event": "fallback", "session": {"cwd": str(tmp_path / "proj")}})
    slug = "--" + str(tmp_path / "proj").lstrip("/").replace("/", "-") + "--"
    script = (
        'agent=$(cat "$1"); mkdir -p "$agent/sessions/$2" "$agent/logs"; '
        'printf "%s\\\\n" "$3" >> "$agent/logs/compaction-state.jsonl"'
    )
    subprocess.run(["sh", "-c", script, "sh", str(tmp_path / "where"), slug, record], check=True)


def test_stays_in_the_scratch_dirs(tmp_path):
    assert os.environ["HOME"] != str(REAL)
    assert str(tmp_path).startswith(os.environ["LONGHAUL_TEST_SCRATCH"] + "/")
    agent = Path(os.environ["PI_CODING_AGENT_DIR"])
    (agent / "logs").mkdir()
    (agent / "logs" / "compaction-state.jsonl").write_text("{}\\n", encoding="utf-8")
    subprocess.run(["sh", "-c", 'mkdir -p "$HOME/.pi/agent/sessions/--tmp-x--"'], check=True)


def test_waits_while_the_user_works():
    (HANDSHAKE / "inner-started").touch()
    deadline = time.monotonic() + 120
    while not (HANDSHAKE / "user-done").exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
"""


def _inner_env(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    real = tmp_path / "real-home"
    (real / ".pi" / "agent").mkdir(parents=True)
    (real / ".pi" / "agent" / "settings.json").write_text('{"packages": []}', encoding="utf-8")
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(_INNER_CONFTEST, encoding="utf-8")
    (suite / "test_inner.py").write_text(_INNER_TESTS, encoding="utf-8")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "LONGHAUL_TEST_", "PYTEST_XDIST_"))
    }
    env.pop(SCRATCH_ENV, None)
    env.pop("PI_CODING_AGENT_DIR", None)
    env.update(HOME=str(real), PYTHONPATH=os.pathsep.join([str(TESTS_DIR), env.get("PYTHONPATH", "")]))
    return env, real, suite


def _pytest(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]


def _inner_run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    env, real, suite = _inner_env(tmp_path)
    done = subprocess.run(
        _pytest(*args), cwd=suite, env=env, capture_output=True, text=True, timeout=WAIT_S, check=False
    )
    return done, real


def test_a_test_reaching_the_real_home_fails_named_whether_in_process_or_through_a_program(
    tmp_path: Path,
) -> None:
    done, real = _inner_run(tmp_path, "-k", "not waits")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "6 passed, 1 deselected, 4 errors" in out  # the four that reach out fail at their teardown, named
    agent = real / ".pi" / "agent"
    assert f"touched the real HOME (tests must use the scratch dirs): open {agent}/settings.json" in out
    assert f'started sh -c mkdir -p "{real}/.config/systemd/user"' in out
    assert f"started true with the real HOME {real}" in out
    assert "started true with no HOME" in out
    assert "the real HOME was touched" in out
    (session,) = os.listdir(agent / "sessions")
    assert f"left by a test: a pi session of a test's working directory: {agent}/sessions/{session}" in out
    assert f"left by a test: 1 record(s) of a test's session in {agent}/logs/compaction-state.jsonl" in out
    assert "--tmp-x--" not in os.listdir(
        agent / "sessions"
    )  # the scratch HOME took the staying test's session


def test_a_run_that_stays_in_the_scratch_dirs_passes_and_leaves_no_scratch(tmp_path: Path) -> None:
    before = set(Path(tempfile.gettempdir()).glob("lh-tests-*"))
    done, real = _inner_run(tmp_path, "-k", "stays_in")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "real HOME" not in done.stdout
    assert sorted(p.name for p in real.rglob("*")) == [".pi", "agent", "settings.json"]
    assert set(Path(tempfile.gettempdir()).glob("lh-tests-*")) <= before


def test_the_users_own_work_in_the_real_home_during_a_run_is_never_blamed(tmp_path: Path) -> None:
    """The user works in pi in a project under the temp dir, installs Longhaul and edits their settings
    while the suite runs: the run still passes."""
    env, real, suite = _inner_env(tmp_path)
    handshake = tmp_path / "handshake"
    handshake.mkdir()
    env["GUARD_HANDSHAKE"] = str(handshake)
    inner = subprocess.Popen(
        _pytest("-k", "waits"),
        cwd=suite,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + WAIT_S
        while not (handshake / "inner-started").exists():
            assert inner.poll() is None and time.monotonic() < deadline, inner.communicate()[0]
            time.sleep(0.05)
        agent = real / ".pi" / "agent"
        user_project = (
            f"{tempfile.gettempdir()}/my-scratch-project"  # pi in a project under /tmp: the old trap
        )
        (agent / "sessions" / session_slug(user_project)).mkdir(parents=True)
        (agent / "sessions" / session_slug(user_project) / "s.jsonl").write_text("{}\n", encoding="utf-8")
        (agent / "logs").mkdir()
        record = {"event": "fallback", "session": {"cwd": user_project}}
        (agent / "logs" / "compaction-state.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
        (agent / "settings.json").write_text('{"packages": ["../../src/longhaul"]}', encoding="utf-8")
        (agent / "auth.json").write_text("{}", encoding="utf-8")
        units = real / ".config" / "systemd" / "user"
        units.mkdir(parents=True)
        (units / "longhaul-daemon.socket").write_text("[Socket]\n", encoding="utf-8")
        (real / ".local" / "bin").mkdir(parents=True)
        (real / ".local" / "bin" / "longhaul-daemon").symlink_to("/opt/longhaul/bin/longhaul-daemon")
        (real / "notes.txt").write_text("a new file in HOME\n", encoding="utf-8")
        (handshake / "user-done").touch()
        out, _ = inner.communicate(timeout=WAIT_S)
    finally:
        if inner.poll() is None:
            inner.kill()
            inner.communicate()
    assert inner.returncode == 0, out
    assert "1 passed" in out and "real HOME" not in out


def test_only_entries_naming_a_test_dir_are_leftovers(tmp_path: Path) -> None:
    home = tmp_path / "home"
    agent = home / ".pi" / "agent"
    (agent / "logs").mkdir(parents=True)
    places = real_places({"HOME": str(home)}, os.getuid(), passwd_home=str(home))
    test_dir = "/tmp/lh-e2e-k3j2h1"
    users = f"{test_dir}0/users-own"  # shares the test dir's name as a prefix: still not the test's
    for cwd in (users, "/tmp/proj", "/home/me/proj"):
        (agent / "sessions" / session_slug(cwd)).mkdir(parents=True)
    log = agent / "logs" / "compaction-state.jsonl"
    log.write_text(json.dumps({"session": {"cwd": users}}) + "\n", encoding="utf-8")
    (agent / "settings.json").write_text('{"packages": ["/srv/x"]}', encoding="utf-8")
    assert leftovers(places, [test_dir]) == []

    (agent / "sessions" / session_slug(f"{test_dir}/proj")).mkdir()
    with log.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"session": {"cwd": f"{test_dir}/proj"}}) + "\n")
    (agent / "settings.json").write_text(json.dumps({"packages": [f"{test_dir}/shim"]}), encoding="utf-8")
    units = home / ".config" / "systemd" / "user"
    units.mkdir(parents=True)
    (units / "longhaul-daemon.service").write_text(f"ExecStart={test_dir}/venv/bin/longhaul-daemon serve\n")
    (units / "other.service").write_text(f"ExecStart={test_dir}/x\n")  # not Longhaul's: not looked at
    assert leftovers(places, [test_dir]) == [
        f"a pi session of a test's working directory: {agent}/sessions/--tmp-lh-e2e-k3j2h1-proj--",
        f"1 record(s) of a test's session in {log}",
        f"pi's settings name a test's directory: {agent}/settings.json",
        f"{units}/longhaul-daemon.service names the test directory {test_dir}",
    ]


def test_this_run_is_in_the_scratch_dirs_and_each_xdist_worker_has_its_own(tmp_path: Path) -> None:
    scratch = Path(os.environ[SCRATCH_ENV])
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = scratch / worker if worker else scratch
    assert os.environ["HOME"] == str(root / "home")
    assert os.environ["PI_CODING_AGENT_DIR"] == str(root / "home" / ".pi" / "agent")
    assert os.environ["XDG_RUNTIME_DIR"] == str(root / "run")
    assert Path(os.environ["PI_CODING_AGENT_DIR"]).is_dir()
    assert os.environ["TMPDIR"] == tempfile.gettempdir() == str(scratch)
    assert tmp_path.is_relative_to(scratch)


@pytest.mark.parametrize("cwd", ["/tmp/lh-e2e-x/proj", "/home/me/a:b"])
def test_session_slug_is_pis(cwd: str) -> None:
    assert (
        session_slug(cwd)
        == {"/tmp/lh-e2e-x/proj": "--tmp-lh-e2e-x-proj--", "/home/me/a:b": "--home-me-a-b--"}[cwd]
    )
