"""Keeps the test suite out of the user's real HOME, pi agent dir, XDG dirs and /tmp/longhaul-<uid>.

``make test`` once appended fallback records to the user's real record log. Every test process now runs with
HOME, ``PI_CODING_AGENT_DIR`` and the XDG variables pointed into one scratch directory (inherited by every
subprocess, so by every daemon, pi and node a test starts), and two checks fail the run if a test reaches the
real places anyway:

- in the pytest processes an audit hook sees every open, mkdir, rename, remove, chmod and socket path; a test
  that touches a real place, even only to read it, fails at its teardown, named;
- for programs the hook cannot see (pi, node, git, systemctl), the real places are compared before and
  after the run. The user may be using pi while the suite runs (pi may be what runs it), so inside pi's agent
  dir only what a test would leave counts: sessions of a working directory under the temp dir, record-log
  lines of such a session, a change to the ``packages``/``extensions`` pi loads, or any other new or changed
  file but ``auth.json`` (pi refreshes logins there).
"""

from __future__ import annotations

import atexit
import json
import os
import pwd
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["GUARD", "SCRATCH_ENV", "Guard", "install_guard"]

SCRATCH_ENV = "LONGHAUL_TEST_SCRATCH"
"""Set for every process of a guarded run: the scratch root. A process that finds it set is a worker or a
subprocess of the run; it keeps the environment and leaves the before/after comparison to the run's first
process."""

_REDIRECTED = ("HOME", "PI_CODING_AGENT_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
_MORE_XDG = ("XDG_CACHE_HOME", "XDG_RUNTIME_DIR")
_DROPPED = ("LONGHAUL_SOCKET", "PI_COMPACT_STATE_DEBUG", "PI_COMPACTOR", "LONGHAUL_SHIM_DEADLINE_MS")
_AUDITED = frozenset(
    {
        "open", "os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.chmod", "os.chown", "os.symlink",
        "os.link", "os.truncate", "os.utime", "os.listdir", "os.scandir", "shutil.rmtree", "socket.bind",
        "socket.connect",
    }
)  # fmt: skip
_LOG_NAME = "compaction-state.jsonl"
_TEMP_SLUG = "--" + tempfile.gettempdir().strip("/").replace("/", "-") + "-"  # pi's session dir slug prefix


@dataclass(frozen=True)
class RealPlaces:
    """Where the user's own files are: pi's agent dirs, the Longhaul-owned paths, the homes, the prefixes."""

    agent_dirs: tuple[Path, ...]
    owned: tuple[Path, ...]  # any change below one of these counts
    homes: tuple[Path, ...]  # only a new or removed top-level entry counts
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


def _walk(root: Path) -> Iterator[Path]:
    """``root`` and everything below it, links not followed; nothing when it does not exist."""
    if not os.path.lexists(root):
        return
    yield root
    if root.is_dir() and not root.is_symlink():
        for parent, dirs, files in os.walk(root):
            for name in (*dirs, *files):
                yield Path(parent) / name


def _stamp(path: Path) -> str:
    try:
        info = path.lstat()
    except OSError:
        return "gone"
    if stat.S_ISDIR(info.st_mode):
        return "directory"  # its mtime moves with any entry; the entries themselves are compared
    return f"{info.st_mode:o}:{info.st_size}:{info.st_mtime_ns}"


def _temp_records(path: Path) -> int:
    """Record-log lines whose session worked under the temp dir: a test's, never the user's real work."""
    count = 0
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return 0
    for line in lines:
        try:
            cwd = json.loads(line).get("session", {}).get("cwd", "")
        except (ValueError, AttributeError):
            continue
        if isinstance(cwd, str) and cwd.startswith(tempfile.gettempdir() + "/"):
            count += 1
    return count


def _loaded_packages(path: Path) -> str:
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        settings = {}
    except (OSError, ValueError):
        return "unreadable"
    if not isinstance(settings, dict):
        return "not-an-object"
    return json.dumps([settings.get("packages"), settings.get("extensions")])


def _agent_entries(agent: Path) -> Iterator[tuple[str, str]]:
    # Judged by content, present or not, so the user's pi creating them is no change.
    for log in (agent / "logs" / _LOG_NAME, agent / "logs" / f"{_LOG_NAME}.1"):
        yield str(log), f"{_temp_records(log)} record(s) of a session under the temp dir"
    yield str(agent / "settings.json"), f"packages and extensions {_loaded_packages(agent / 'settings.json')}"
    for path in _walk(agent):
        parts = path.relative_to(agent).parts
        if parts[:1] in {("auth.json",), ("settings.json",)} or str(path).startswith(
            str(agent / "logs" / _LOG_NAME)
        ):
            continue
        if parts[:1] == ("sessions",) and len(parts) > 1 and not parts[1].startswith(_TEMP_SLUG):
            continue
        if not (len(parts) == 1 and parts[0] in {"logs", "sessions"}):
            yield str(path), _stamp(path)  # those two change with pi's own use: judged by what is in them


def snapshot(places: RealPlaces) -> dict[str, str]:
    """What the comparison looks at, path by path."""
    seen: dict[str, str] = {}
    for root in places.owned:
        shared = root.name in {"bin", "user"}  # ~/.local/bin, systemd/user: only our entries count there
        for path in _walk(root):
            if not shared or "longhaul" in str(path.relative_to(root)):
                seen[str(path)] = _stamp(path)
    for agent in places.agent_dirs:
        seen.update(_agent_entries(agent))
    for home in places.homes:
        try:
            seen[f"{home}/ (entries)"] = " ".join(sorted(os.listdir(home)))
        except OSError:
            seen[f"{home}/ (entries)"] = "unreadable"
    return seen


def compare(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """One line per difference."""
    lines = [f"created {p}" for p in sorted(after.keys() - before.keys())]
    lines += [f"removed {p}" for p in sorted(before.keys() - after.keys())]
    lines += [
        f"changed {p}: {before[p]} -> {after[p]}"
        for p in sorted(before)
        if p in after and before[p] != after[p]
    ]
    return lines


class Guard:
    """One process's guard: the scratch environment, the audit hook and (first process only) the snapshot."""

    def __init__(self, places: RealPlaces, scratch: Path, *, first: bool) -> None:
        self.places = places
        self.scratch = scratch
        self.first = first
        self.touched: list[str] = []
        self._scanning = False
        self.before = self._scan() if first else {}
        sys.addaudithook(self._audit)

    def _scan(self) -> dict[str, str]:
        self._scanning = True  # the guard's own look at the real places is not a test touching them
        try:
            return snapshot(self.places)
        finally:
            self._scanning = False

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _AUDITED or self._scanning:
            return
        for arg in args[:2]:
            if isinstance(arg, (str, bytes, os.PathLike)):
                try:
                    path = os.path.abspath(os.fsdecode(arg))
                except (TypeError, ValueError):
                    continue
                if any(path == p or path.startswith(p + "/") for p in self.places.prefixes):
                    self._report(f"{event} {path}")

    def _report(self, what: str) -> None:
        self.touched.append(what)
        self._scanning = True
        try:
            with open(self.scratch / "touched.log", "a", encoding="utf-8") as log:
                log.write(what + "\n")
        finally:
            self._scanning = False

    def problems(self) -> list[str]:
        """At the end of the run (first process): every touch the workers logged, and the comparison."""
        try:
            touched = (self.scratch / "touched.log").read_text(encoding="utf-8").splitlines()
        except OSError:
            touched = []
        lines = [f"touched by a test: {what}" for what in dict.fromkeys(touched)]
        return lines + compare(self.before, self._scan())

    def remove_scratch(self) -> None:
        if self.first:
            shutil.rmtree(self.scratch, ignore_errors=True)


def install_guard(environ: os._Environ[str] | dict[str, str] = os.environ) -> Guard:
    """Point this process (and so its children) at the scratch dirs, and start watching the real places.

    An xdist worker gets its own HOME and runtime dir under the run's scratch dir, so two workers never share
    a default socket path, a record log or a session dir."""
    inherited = environ.get(SCRATCH_ENV, "")
    if inherited and Path(inherited).is_dir():
        worker = environ.get("PYTEST_XDIST_WORKER", "")
        if worker:
            _point_at(environ, Path(inherited) / worker)
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
    return Guard(places, scratch, first=True)


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


# ---- the pytest plugin (tests/conftest.py lists this module in pytest_plugins) ----------------------------

GUARD = install_guard()  # at import: the conftest imports this module before anything reads HOME
_problems: list[str] = []


@pytest.fixture(autouse=True)
def _stays_out_of_the_real_home() -> Iterator[None]:
    """Fail the test that touched the real HOME, agent dir or XDG dirs (the audit hook saw it)."""
    seen = len(GUARD.touched)
    yield
    touched = GUARD.touched[seen:]
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
