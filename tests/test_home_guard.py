"""The real-HOME guard fails a run that reaches the user's own files, and lets a run that stays out pass.

Each case runs a small pytest session in a subprocess whose "real" HOME is a directory made here, so the
check can be made to fire without going near the user's actual HOME.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from home_guard import SCRATCH_ENV, compare, real_places, snapshot

TESTS_DIR = Path(__file__).resolve().parent

_INNER_CONFTEST = 'pytest_plugins = ("home_guard",)\n'
_INNER_TESTS = """
import os
import subprocess
from pathlib import Path

REAL = Path(os.environ["LONGHAUL_TEST_REAL_HOME"])


def test_reads_the_real_agent_dir():
    with open(REAL / ".pi" / "agent" / "settings.json", encoding="utf-8") as settings:
        settings.read()


def test_installs_a_unit_through_a_subprocess():
    units = REAL / ".config" / "systemd" / "user"
    subprocess.run(["sh", "-c", f'mkdir -p "{units}" && : > "{units}/longhaul-daemon.socket"'], check=True)


def test_stays_in_the_scratch_dirs():
    assert os.environ["HOME"] != str(REAL)
    agent = Path(os.environ["PI_CODING_AGENT_DIR"])
    (agent / "logs").mkdir()
    (agent / "logs" / "compaction-state.jsonl").write_text("{}\\n", encoding="utf-8")
"""


def _inner_run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
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
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done, real


def test_a_run_that_touches_the_real_home_fails_and_names_what_it_touched(tmp_path: Path) -> None:
    done, real = _inner_run(tmp_path)
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "3 passed, 1 error" in out  # the reading test passes, then fails at its teardown
    assert (
        f"touched the real HOME (tests must use the scratch dirs): open {real}/.pi/agent/settings.json" in out
    )
    assert "the real HOME was touched" in out
    assert f"created {real}/.config/systemd/user/longhaul-daemon.socket" in out
    assert not (real / ".pi" / "agent" / "logs").exists()  # the scratch agent dir took the record log


def test_a_run_that_stays_in_the_scratch_dirs_passes_and_leaves_no_scratch(tmp_path: Path) -> None:
    before = set(Path(tempfile.gettempdir()).glob("lh-tests-*"))
    done, real = _inner_run(tmp_path, "-k", "stays_in")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "real HOME" not in done.stdout
    assert sorted(p.name for p in real.rglob("*")) == [".pi", "agent", "settings.json"]
    assert set(Path(tempfile.gettempdir()).glob("lh-tests-*")) <= before


def _agent(root: Path) -> Path:
    agent = root / "home" / ".pi" / "agent"
    (agent / "logs").mkdir(parents=True)
    (agent / "sessions" / "--home-me-proj--").mkdir(parents=True)
    return agent


def test_inside_the_agent_dir_only_what_a_test_would_leave_counts(tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    places = real_places({"HOME": str(tmp_path / "home")}, os.getuid(), passwd_home=str(tmp_path / "home"))
    log = agent / "logs" / "compaction-state.jsonl"
    before = snapshot(places)
    # The user's own pi at work: its session, its records, a login refreshed, a model picked.
    (agent / "sessions" / "--home-me-proj--" / "s.jsonl").write_text("{}\n", encoding="utf-8")
    log.write_text(json.dumps({"event": "compaction", "session": {"cwd": "/home/me/proj"}}) + "\n")
    (agent / "auth.json").write_text("{}", encoding="utf-8")
    (agent / "settings.json").write_text('{"defaultModel": "x"}', encoding="utf-8")
    assert compare(before, snapshot(places)) == []
    # What a test run would leave: a record of a session under the temp dir, a package pi now loads.
    test_cwd = f"{tempfile.gettempdir()}/proj"
    with log.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"event": "fallback", "session": {"cwd": test_cwd}}) + "\n")
    (agent / "settings.json").write_text('{"packages": ["../x"]}', encoding="utf-8")
    changes = compare(before, snapshot(places))
    assert [line.split(": ")[0] for line in changes] == [f"changed {log}", f"changed {agent}/settings.json"]


@pytest.mark.parametrize("slug_under_temp", [True, False])
def test_a_session_counts_only_for_a_working_directory_under_the_temp_dir(
    tmp_path: Path, slug_under_temp: bool
) -> None:
    agent = _agent(tmp_path)
    places = real_places({"HOME": str(tmp_path / "home")}, os.getuid(), passwd_home=str(tmp_path / "home"))
    before = snapshot(places)
    slug = "--" + tempfile.gettempdir().strip("/") + "-lh-e2e-x-proj--" if slug_under_temp else "--srv-app--"
    (agent / "sessions" / slug).mkdir()
    assert bool(compare(before, snapshot(places))) is slug_under_temp


def test_this_run_is_in_the_scratch_dirs_and_each_xdist_worker_has_its_own() -> None:
    scratch = Path(os.environ[SCRATCH_ENV])
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    root = scratch / worker if worker else scratch
    assert os.environ["HOME"] == str(root / "home")
    assert os.environ["PI_CODING_AGENT_DIR"] == str(root / "home" / ".pi" / "agent")
    assert os.environ["XDG_RUNTIME_DIR"] == str(root / "run")
    assert Path(os.environ["PI_CODING_AGENT_DIR"]).is_dir()
