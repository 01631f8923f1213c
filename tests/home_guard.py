"""Keeps the test suite out of the user's real HOME, pi agent dir, XDG dirs and /tmp/longhaul-<uid>.

``make test`` once appended fallback records to the user's real record log; later it failed a green run
because the user had worked in pi meanwhile. So the guard first makes the real places unreachable, then
blames only what a test could have done:

- Prevention. Before any test module is collected (``tests/conftest.py`` loads this plugin), HOME,
  ``PI_CODING_AGENT_DIR``, the XDG dirs and ``TMPDIR`` point into one scratch directory made for the run,
  inherited by every subprocess (every daemon, pi and node a test starts), and pytest's ``tmp_path`` dirs
  are made there too. Each xdist worker gets its own HOME and runtime dir there.
- The test processes' own acts. An audit hook sees every open, mkdir, rename, remove, chmod and socket path
  in the pytest processes, and every program they start: a program started with no HOME, or with HOME, pi's
  agent dir, an XDG dir or ``TMPDIR`` in a real place, or with a real place among its arguments, is a test
  reaching out. The test fails at its teardown, named.
- What programs left. The cross-process check at the end looks only at entries that name one of this run's
  own scratch dirs (the run's root, where ``TMPDIR`` points, and every ``tempfile.mkdtemp`` a test process
  made elsewhere): a pi session directory of a working directory there, a record-log line or pi settings
  mentioning one, a Longhaul unit, binary or shim file whose text or link names one. Those names are
  random and new, so the user's own pi, shell or installs, whatever they do during the run, are never
  counted.
"""

from __future__ import annotations

import atexit
import os
import pwd
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["GUARD", "SCRATCH_ENV", "Guard", "install_guard", "leftovers", "real_places", "session_slug"]

SCRATCH_ENV = "LONGHAUL_TEST_SCRATCH"
"""Set for every process of a guarded run: the scratch root. A process that finds it set is a worker or a
subprocess of the run; it keeps the environment and leaves the final check to the run's first process."""

_REDIRECTED = ("HOME", "PI_CODING_AGENT_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
_MORE_XDG = ("XDG_CACHE_HOME", "XDG_RUNTIME_DIR")
_PLACE_VARIABLES = (*_REDIRECTED, *_MORE_XDG, "TMPDIR", "LONGHAUL_SOCKET", "PI_COMPACT_STATE_DEBUG")
_DROPPED = ("LONGHAUL_SOCKET", "PI_COMPACT_STATE_DEBUG", "PI_COMPACTOR", "LONGHAUL_SHIM_DEADLINE_MS")
_AUDITED = frozenset(
    {
        "open", "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.chmod", "os.chown", "os.symlink",
        "os.link", "os.truncate", "os.utime", "os.listdir", "os.scandir", "shutil.rmtree", "socket.bind",
        "socket.connect",
    }
)  # fmt: skip
_LOG_NAME = "compaction-state.jsonl"
_MADE_LOG = "made-dirs.log"  # temp dirs test processes made outside the scratch root, one per line
_TOUCHED_LOG = "touched.log"
_MAX_READ = 1024 * 1024


@dataclass(frozen=True)
class RealPlaces:
    """Where the user's own files are: pi's agent dirs, the Longhaul-owned paths, the homes, the prefixes."""

    agent_dirs: tuple[Path, ...]
    owned: tuple[Path, ...]  # Longhaul's own places: a file there naming a test dir is a test's leftover
    homes: tuple[Path, ...]
    prefixes: tuple[str, ...]  # the audit hook's: any access below one of these counts


def real_places(env: Mapping[str, str], uid: int, *, passwd_home: str | None = None) -> RealPlaces:
    """The real places for this environment and user (the passwd home too, should code bypass $HOME)."""
    passwd_home = pwd.getpwuid(uid).pw_dir if passwd_home is None else passwd_home
    homes = tuple(dict.fromkeys(Path(h) for h in (env.get("HOME"), passwd_home) if h))
    agents: list[Path] = [Path(env["PI_CODING_AGENT_DIR"])] if env.get("PI_CODING_AGENT_DIR") else []
    owned: list[Path] = [Path(f"/tmp/longhaul-{uid}")]
    prefixes: list[Path] = [Path(f"/tmp/longhaul-{uid}")]
    for home in homes:
        config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
        data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
        state = Path(env.get("XDG_STATE_HOME") or home / ".local" / "state")
        agents.append(home / ".pi" / "agent")
        owned += [config / "systemd" / "user", data / "longhaul", state / "longhaul", home / ".local" / "bin"]
        owned += [
            data / "pipx" / "venvs" / "longhaul-daemon",
            home / ".local" / "pipx" / "venvs" / "longhaul-daemon",
        ]
        prefixes += [home / ".pi", config, data, state, home / ".local" / "bin", home / ".cache"]
    for name in _MORE_XDG:
        if env.get(name):
            prefixes.append(Path(env[name]))
    if env.get("XDG_RUNTIME_DIR"):
        owned.append(Path(env["XDG_RUNTIME_DIR"]) / "longhaul")
    prefixes += agents
    return RealPlaces(
        agent_dirs=tuple(dict.fromkeys(agents)),
        owned=tuple(dict.fromkeys(owned)),
        homes=homes,
        prefixes=tuple(dict.fromkeys(str(p) for p in prefixes)),
    )


def session_slug(cwd: str) -> str:
    """pi 0.73.1's session directory name for a working directory (``/tmp/x`` -> ``--tmp-x--``)."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def _walk(root: Path) -> Iterator[Path]:
    """``root`` and everything below it, links not followed; nothing when it does not exist."""
    if not os.path.lexists(root):
        return
    yield root
    if root.is_dir() and not root.is_symlink():
        for parent, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                yield Path(parent) / name


def _text(path: Path) -> str:
    """A symlink's target, or a small regular file's text; '' for anything else."""
    try:
        if path.is_symlink():
            return os.readlink(path)
        if path.is_file():
            with path.open("rb") as handle:
                return handle.read(_MAX_READ).decode("utf-8", "replace")
    except OSError:
        pass
    return ""


def leftovers(places: RealPlaces, test_dirs: Sequence[str]) -> list[str]:
    """What a test left in the real places: only entries naming one of ``test_dirs``, so nothing the user
    does during the run (in dirs that are never a test's) can count."""
    found: list[str] = []
    if not test_dirs:
        return found

    pattern = re.compile("(" + "|".join(re.escape(d) for d in test_dirs) + r")(?=$|[/\s\"'])", re.M)

    def names(text: str) -> str | None:
        match = pattern.search(text)
        return match.group(1) if match else None

    slugs = [session_slug(d)[:-1] for d in test_dirs]  # "--tmp-x-": the dir itself and anything below it
    for agent in places.agent_dirs:
        try:
            sessions = sorted(os.listdir(agent / "sessions"))
        except OSError:
            sessions = []
        found += [
            f"a pi session of a test's working directory: {agent / 'sessions' / name}"
            for name in sessions
            if any(name.startswith(slug) for slug in slugs)
        ]
        for log in (agent / "logs" / _LOG_NAME, agent / "logs" / f"{_LOG_NAME}.1"):
            lines = [line for line in _text(log).splitlines() if names(line)]
            if lines:
                found.append(f"{len(lines)} record(s) of a test's session in {log}")
        settings = agent / "settings.json"
        if names(_text(settings)):
            found.append(f"pi's settings name a test's directory: {settings}")
    for root in places.owned:
        shared = root.name in {"bin", "user"}  # ~/.local/bin, systemd/user: only our entries there
        for path in _walk(root):
            if shared and "longhaul" not in str(path.relative_to(root)):
                continue
            named = names(_text(path))
            if named:
                found.append(f"{path} names the test directory {named}")
    return found


class Guard:
    """One process's guard: the scratch environment, the audit hook, and (first process only) the verdict."""

    def __init__(self, places: RealPlaces, scratch: Path, *, first: bool) -> None:
        self.places = places
        self.scratch = scratch
        self.first = first
        self.touched: list[str] = []
        self._busy = False
        self._homes = {str(home) for home in places.homes}
        sys.addaudithook(self._audit)

    def _real(self, path: str) -> bool:
        return any(path == p or path.startswith(p + "/") for p in self.places.prefixes)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self._busy:
            return
        if event in _AUDITED:
            for arg in args[:2]:
                path = _as_path(arg)
                if path is not None and self._real(path):
                    self._report(f"{event} {path}")
        elif event == "subprocess.Popen":
            self._check_program(args[1], args[3])
        elif event == "os.system":
            self._check_program(["sh", "-c", args[0]], None)
        elif event == "tempfile.mkdtemp" and isinstance(args[0], str):
            made = os.path.abspath(args[0])
            if not made.startswith(str(self.scratch) + "/"):
                self._log(_MADE_LOG, made)

    def _check_program(self, argv: object, env: Mapping[Any, Any] | None) -> None:
        """A program a test starts must get a scratch HOME and no real place, in its environment or its
        arguments (its own path may be anywhere: running a program is not touching its directory)."""
        words: list[object] = (
            [argv]
            if isinstance(argv, (str, bytes, os.PathLike))
            else list(argv)
            if isinstance(argv, (list, tuple))
            else []
        )
        shown = " ".join(os.fsdecode(w) for w in words[:3] if isinstance(w, (str, bytes, os.PathLike)))
        given = {os.fsdecode(k): os.fsdecode(v) for k, v in (os.environ if env is None else env).items()}
        home = given.get("HOME", "")
        if not home or home in self._homes:
            self._report(f"started {shown} with {'no HOME' if not home else 'the real HOME ' + home}")
        for name in _PLACE_VARIABLES:
            value = given.get(name, "")
            if value and self._real(os.path.abspath(value)):
                self._report(f"started {shown} with {name}={value}")
        for word in words[1:]:
            if isinstance(word, (str, bytes, os.PathLike)):
                text = os.fsdecode(word)
                for prefix in self.places.prefixes:
                    if re.search(re.escape(prefix) + r"(?=$|[/\s\"'])", text):
                        self._report(f"started {shown} naming {prefix}")

    def _log(self, name: str, line: str) -> None:
        self._busy = True  # the guard's own bookkeeping is not a test touching anything
        try:
            with open(self.scratch / name, "a", encoding="utf-8") as log:
                log.write(line + "\n")
        finally:
            self._busy = False

    def _report(self, what: str) -> None:
        self.touched.append(what)
        self._log(_TOUCHED_LOG, what)

    def test_dirs(self) -> list[str]:
        """This run's own directories: the scratch root (it is TMPDIR) and the temp dirs test
        processes made elsewhere (``mkdtemp(dir="/tmp")`` for short socket paths)."""
        try:
            made = (self.scratch / _MADE_LOG).read_text(encoding="utf-8").splitlines()
        except OSError:
            made = []
        return list(dict.fromkeys([str(self.scratch), *made]))

    def problems(self) -> list[str]:
        """At the end of the run (first process): every touch the workers logged, and what programs left."""
        self._busy = True
        try:
            try:
                touched = (self.scratch / _TOUCHED_LOG).read_text(encoding="utf-8").splitlines()
            except OSError:
                touched = []
            lines = [f"touched by a test: {what}" for what in dict.fromkeys(touched)]
            return lines + [f"left by a test: {what}" for what in leftovers(self.places, self.test_dirs())]
        finally:
            self._busy = False

    def remove_scratch(self) -> None:
        if self.first:
            self._busy = True
            shutil.rmtree(self.scratch, ignore_errors=True)
            for made in self.test_dirs()[1:]:  # what a test forgot to remove
                shutil.rmtree(made, ignore_errors=True)


def _as_path(arg: object) -> str | None:
    if not isinstance(arg, (str, bytes, os.PathLike)):
        return None
    try:
        return os.path.abspath(os.fsdecode(arg))
    except (TypeError, ValueError):
        return None


def install_guard(environ: os._Environ[str] | dict[str, str] = os.environ) -> Guard:
    """Point this process (and so its children) at the scratch dirs, and start watching the real places."""
    inherited = environ.get(SCRATCH_ENV, "")
    if inherited and Path(inherited).is_dir():
        worker = environ.get("PYTEST_XDIST_WORKER", "")
        if worker:
            _point_at(environ, Path(inherited) / worker)
        _use_temp_dir(environ, Path(inherited))
        return Guard(real_places(_original(environ), os.getuid()), Path(inherited), first=False)
    places = real_places(environ, os.getuid())
    environ.update(
        {f"LONGHAUL_TEST_REAL_{name}": environ.get(name, "") for name in (*_REDIRECTED, *_MORE_XDG)}
    )
    scratch = Path(tempfile.mkdtemp(prefix="lh-tests-"))
    atexit.register(shutil.rmtree, scratch, True)  # also when the run stops before its session finishes
    for name in _DROPPED:
        environ.pop(name, None)
    environ[SCRATCH_ENV] = str(scratch)
    _point_at(environ, scratch)
    _use_temp_dir(environ, scratch)
    return Guard(places, scratch, first=True)


def _use_temp_dir(environ: os._Environ[str] | dict[str, str], temp: Path) -> None:
    """TMPDIR (and Python's cached temp dir) is the scratch root: temp dirs are made beside the homes."""
    environ["TMPDIR"] = str(temp)
    if environ is os.environ:
        tempfile.tempdir = str(temp)  # gettempdir() caches; anything that asked before must not keep /tmp


def _point_at(environ: os._Environ[str] | dict[str, str], root: Path) -> None:
    """HOME, pi's agent dir and the XDG dirs, all under ``root``; the agent dir exists, as after pi ran."""
    home = root / "home"
    for path in (home / ".pi" / "agent", root / "run"):
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    environ.update(
        {
            "HOME": str(home),
            "PI_CODING_AGENT_DIR": str(home / ".pi" / "agent"),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_RUNTIME_DIR": str(root / "run"),
        }
    )


def _original(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the run started with, as the first process recorded it."""
    return {
        name: environ.get(f"LONGHAUL_TEST_REAL_{name}", "")
        for name in (*_REDIRECTED, *_MORE_XDG)
        if environ.get(f"LONGHAUL_TEST_REAL_{name}")
    }


# ---- the pytest plugin (tests/conftest.py lists this module in pytest_plugins) ---------------------------

GUARD = install_guard()  # at import: before any test module, or anything it imports, reads HOME or TMPDIR
_problems: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """pytest's own temp dirs (``tmp_path``) in the scratch root too, on a path no longer than pytest's usual
    one (``/tmp/pytest-of-<user>/pytest-<n>/``), since a test's socket path must fit in 107 bytes. xdist
    hands each worker a directory below it."""
    if GUARD.first and config.option.basetemp is None:
        config.option.basetemp = str(GUARD.scratch / "t")


@pytest.fixture(autouse=True)
def _stays_out_of_the_real_home() -> Iterator[None]:
    """Fail the test that touched the real HOME, agent dir or XDG dirs (the audit hook saw it)."""
    seen = len(GUARD.touched)
    yield
    touched = list(dict.fromkeys(GUARD.touched[seen:]))
    if touched:
        pytest.fail("touched the real HOME (tests must use the scratch dirs): " + "; ".join(touched[:5]))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The run's verdict on the real places, in its first process (the workers leave it to that one)."""
    if not GUARD.first:
        return
    _problems.extend(GUARD.problems())
    GUARD.remove_scratch()
    if _problems:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _problems:
        terminalreporter.section("the real HOME was touched", red=True)
        for line in _problems:
            terminalreporter.line(line)
