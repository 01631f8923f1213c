"""The World snapshot: five read-only git commands in the session's cwd, running nothing a repo configures.

``take_world`` runs ``rev-parse --show-toplevel``, ``symbolic-ref``, ``log -n 5``, ``status --porcelain=v1
-z`` and ``rev-list --left-right --count @{upstream}...HEAD`` (WORLD-1, WORLD-2), or only the first when it
fails (``no-repository``, WORLD-4); it never raises, a failed part is named in ``World.missing`` (WORLD-5).

WORLD-3 (nothing a repository configures runs, no optional lock is taken) is kept by ``--no-pager
--no-optional-locks`` and ``-c`` overrides of fsmonitor, untracked cache, signatures, hooks, external diff
and attributes file, plus ``--no-ext-diff --no-textconv`` where accepted; ``--attr-source=<empty tree>`` on
git ≥ 2.40; and, since older git has no attribute source, every ``filter``/``diff`` driver in the config
files git would read blanked through ``GIT_CONFIG_COUNT``. The environment drops ``GIT_*`` (WORLD-6) and
sets no prompts and ``LC_ALL=C``; each command runs in its own process group, killed whole on timeout.

git output is untrusted: kept raw (the renderer sanitizes) but bounded: subjects and branch names to 200
code points, paths to 300, at most 20 dirty paths.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from longhaul_daemon.state.model import Commit, DirtyPath, World

__all__ = ["EMPTY_TREE_SHA1", "EMPTY_TREE_SHA256", "GIT_CONFIG", "take_world"]

EMPTY_TREE_SHA1 = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
EMPTY_TREE_SHA256 = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
GIT_CONFIG = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "log.showSignature=false",
    "core.hooksPath=/dev/null",
    "diff.external=",
    "core.attributesFile=/dev/null",
)
_NO_DIFF_PROGRAMS = ("--no-ext-diff", "--no-textconv")
_FORMAT = "--format=%h%x09%s"
_STEPS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("symbolic-ref", ("symbolic-ref", "--quiet", "--short", "HEAD"), ("branch",)),
    (
        "log",
        ("log", "-n", "5", "--no-decorate", "--no-color", "--no-show-signature", *_NO_DIFF_PROGRAMS, _FORMAT),
        ("head", "earlier"),
    ),
    (
        "status",
        ("status", "--porcelain=v1", "-z", "--untracked-files=normal", "--ignore-submodules=all"),
        ("dirtyCount", "dirty"),
    ),
    (
        "rev-list",
        ("rev-list", *_NO_DIFF_PROGRAMS, "--left-right", "--count", "@{upstream}...HEAD", "--"),
        ("behind", "ahead"),
    ),
)
_ALL_FIELDS = tuple(name for _, _, fields in _STEPS for name in fields)
SUBJECT_CHARS = 200
PATH_CHARS = 300
DIRTY_SHOWN = 20
_OUT_CAP = 8 << 20
_ERR_CAP = 16 << 10
_CONFIG_FILE_CAP = 1 << 20
_MAX_CONFIG_FILES = 32
_MAX_DRIVERS = 64
_NO_UPSTREAM = ("no upstream", "does not point to a branch", "no such branch")
_HASH = re.compile(r"\A[0-9a-f]{4,64}\Z")
_VERSION = re.compile(rb"git version (\d+)\.(\d+)")
_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)\s*(?:"((?:[^"\\\n]|\\.)*)")?\s*\](.*)\Z')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?\Z")
_version_cache: dict[tuple[str, int], tuple[int, int] | None] = {}


@dataclass(frozen=True)
class _Outcome:
    """One git run; ``code`` is None when it could not start or timed out."""

    code: int | None
    out: bytes = b""
    err: bytes = b""
    truncated: bool = False


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _environment(overrides: list[tuple[str, str]]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", LC_ALL="C")
    if overrides:
        env["GIT_CONFIG_COUNT"] = str(len(overrides))
        for i, (key, value) in enumerate(overrides):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
    return env


async def _drain(
    stream: anyio.abc.ByteReceiveStream | None, sink: bytearray, cap: int, cut: list[bool]
) -> None:
    if stream is None:
        return
    async for chunk in stream:
        room = cap - len(sink)
        if room > 0:
            sink += chunk[:room]
        if len(chunk) > room:
            cut.append(True)


def _kill(process: anyio.abc.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()


async def _run(argv: list[str], cwd: str, env: dict[str, str], seconds: float) -> _Outcome:
    """Run one command with stdin closed, bounded output and a timeout that kills its process group."""
    try:
        # shielded: a cancellation landing while the child is being spawned would lose the process object,
        # and with it the wait that reaps the child (seen under load as "subprocess … is still running")
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                argv, stdin=subprocess.DEVNULL, cwd=cwd, env=env, start_new_session=True
            )
    except (OSError, ValueError):
        return _Outcome(code=None)
    out, err, cut = bytearray(), bytearray(), list[bool]()
    code: int | None = None
    try:
        with anyio.move_on_after(max(seconds, 0.0)):
            async with anyio.create_task_group() as group:
                group.start_soon(_drain, process.stdout, out, _OUT_CAP, cut)
                group.start_soon(_drain, process.stderr, err, _ERR_CAP, cut)
            code = await process.wait()
    finally:
        if process.returncode is None:
            _kill(process)
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return _Outcome(code=code, out=bytes(out), err=bytes(err), truncated=bool(cut))


def _binary_key(git: str) -> tuple[str, int] | None:
    resolved = shutil.which(git)
    if resolved is None:
        return None
    try:
        return (os.path.realpath(resolved), os.stat(resolved).st_mtime_ns)
    except (OSError, ValueError):
        return None


async def _git_version(git: str, env: dict[str, str], seconds: float) -> tuple[int, int] | None:
    """(major, minor) of the git binary, cached by resolved path and mtime; None when unknown."""
    key = _binary_key(git)
    if key is None:
        return None
    if key not in _version_cache:
        outcome = await _run([git, "--version"], "/", env, seconds)
        match = _VERSION.search(outcome.out) if outcome.code == 0 else None
        if match is None:
            return None
        _version_cache[key] = (int(match.group(1)), int(match.group(2)))
    return _version_cache[key]


def _read_text(path: Path) -> str | None:
    """A small regular file's text; None for anything else (a FIFO or device is never opened)."""
    try:
        if not path.is_file():
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            return handle.read(_CONFIG_FILE_CAP).decode("utf-8", "replace")
    except (OSError, ValueError):
        return None


def _config_value(raw: str) -> str:
    raw = raw.strip()
    if raw.startswith('"'):
        end = raw.find('"', 1)
        return raw[1:end] if end > 0 else raw[1:]
    return re.split(r"\s[#;]", raw, maxsplit=1)[0].strip()


def _repository_files(toplevel: str) -> list[Path]:
    dotgit = Path(toplevel) / ".git"
    gitdir = dotgit
    if not dotgit.is_dir():
        text = _read_text(dotgit) or ""
        if not text.startswith("gitdir:"):
            return []
        gitdir = (Path(toplevel) / text[len("gitdir:") :].strip()).resolve()
    common = gitdir
    pointer = _read_text(gitdir / "commondir")
    if pointer:
        common = (gitdir / pointer.strip()).resolve()
    return [common / "config", gitdir / "config.worktree"]


def _scan_config(toplevel: str) -> tuple[list[tuple[str, str]], str]:
    """Blanking overrides for every filter and diff driver in the config git reads, and the object format."""
    try:
        return _scan_config_files(toplevel)
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a path git would refuse too
        return [], "sha1"


def _scan_config_files(toplevel: str) -> tuple[list[tuple[str, str]], str]:
    home = Path(os.environ.get("HOME", "/nonexistent"))
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    queue = [Path("/etc/gitconfig"), Path(xdg) / "git" / "config", home / ".gitconfig"]
    queue += _repository_files(toplevel)
    drivers: dict[tuple[str, str], None] = {}
    object_format = "sha1"
    seen: set[Path] = set()
    while queue and len(seen) < _MAX_CONFIG_FILES:
        path = queue.pop(0)
        if path in seen:
            continue
        seen.add(path)
        section, sub = "", None
        for line in (_read_text(path) or "").splitlines():
            line = line.strip()
            header = _SECTION.match(line)
            if header:
                section, sub = header.group(1).lower(), header.group(2)
                if sub is None and "." in section:
                    section, sub = section.split(".", 1)
                sub = re.sub(r"\\(.)", r"\1", sub) if sub is not None else None
                line = header.group(3).strip()
            pair = _KEY.match(line)
            if pair is None:
                continue
            key, value = pair.group(1).lower(), _config_value(pair.group(2) or "")
            if section in ("filter", "diff") and sub is not None and len(drivers) < _MAX_DRIVERS:
                drivers[(section, sub)] = None
            elif section in ("include", "includeif") and key == "path" and value:
                queue.append(home / value[2:] if value.startswith("~/") else path.parent / value)
            elif section == "extensions" and key == "objectformat":
                object_format = value.lower()
    overrides: list[tuple[str, str]] = []
    for section, name in drivers:
        keys = ("clean", "smudge", "process") if section == "filter" else ("textconv", "command")
        overrides += [(f"{section}.{name}.{key}", "") for key in keys]
        if section == "filter":
            overrides.append((f"filter.{name}.required", "false"))
    return overrides, object_format


def _parse_log(out: str) -> tuple[Commit, list[Commit]] | None:
    commits: list[Commit] = []
    for line in out.split("\n"):
        short, tab, subject = line.partition("\t")
        if tab and _HASH.match(short):
            commits.append(Commit(hash=short, subject=_cut(subject, SUBJECT_CHARS)))
    return (commits[0], commits[1:5]) if commits else None


def _parse_status(out: str) -> tuple[int, list[DirtyPath]] | None:
    tokens = out.split("\0")
    if tokens and tokens[-1] == "":
        tokens.pop()
    count, dirty, i = 0, list[DirtyPath](), 0
    while i < len(tokens):
        token = tokens[i]
        if len(token) < 4 or token[2] != " ":
            return None
        count += 1
        if len(dirty) < DIRTY_SHOWN:
            dirty.append(DirtyPath(status=token[:2], path=_cut(token[3:], PATH_CHARS)))
        i += 2 if ("R" in token[:2] or "C" in token[:2]) else 1
    return count, dirty


def _parse_counts(out: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"(\d{1,9})\t(\d{1,9})\n?", out)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _apply(name: str, outcome: _Outcome, fields: dict[str, Any]) -> bool:
    """Fill the fields one step reads; True when the step's outcome was usable (normal failures included)."""
    out = outcome.out.decode("utf-8", "replace")
    err = outcome.err.decode("utf-8", "replace")
    if name == "symbolic-ref":
        if outcome.code == 0 or (outcome.code == 1 and not err.strip()):
            fields["branch"] = _cut(out.strip(), SUBJECT_CHARS) or "detached"
            return True
    elif name == "log":
        if outcome.code == 128 and "does not have any commits" in err:
            return True
        parsed_log = _parse_log(out) if outcome.code == 0 else None
        if parsed_log is not None:
            fields["head"], fields["earlier"] = parsed_log
            return True
    elif name == "status":
        parsed_status = _parse_status(out) if outcome.code == 0 else None
        if parsed_status is not None:
            fields["dirty"] = parsed_status[1]
            if not outcome.truncated:
                fields["dirtyCount"] = parsed_status[0]
            return not outcome.truncated
    elif outcome.code == 128 and any(normal in err for normal in _NO_UPSTREAM):
        return True
    else:
        counts = _parse_counts(out) if outcome.code == 0 else None
        if counts is not None:
            fields["behind"], fields["ahead"] = counts
            return True
    return False


class _Taking:
    """One snapshot being taken; passes that ask for the same directory meanwhile wait for it."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.world: World | None = None


_taking: dict[tuple[str, str], _Taking] = {}  # (cwd, git) → the snapshot in flight; per daemon process


async def take_world(
    cwd: str, *, git: str = "git", command_timeout: float = 5.0, total_timeout: float = 10.0
) -> World:
    """The span's World (WORLD-1..7); never raises except on cancellation of the caller.

    Passes of several sessions in one directory at once share one snapshot instead of each running git's
    five commands: a snapshot taken while the pass started is as current as one the pass would take itself.
    A waiter whose snapshot was cancelled takes its own.
    """
    key = (cwd, git)
    running = _taking.get(key)
    if running is not None:
        await running.done.wait()
        if running.world is not None:
            return running.world
    mine = _taking[key] = _Taking()
    try:
        mine.world = await _snapshot(cwd, git, command_timeout, total_timeout)
        return mine.world
    finally:
        if _taking.get(key) is mine:
            del _taking[key]
        mine.done.set()


async def _snapshot(cwd: str, git: str, command_timeout: float, total_timeout: float) -> World:
    started = time.monotonic()
    deadline = started + total_timeout

    def budget() -> float:
        return min(command_timeout, deadline - time.monotonic())

    def world(status: str, fields: dict[str, Any], missing: list[str], run: int, failed: int) -> World:
        elapsed = int((time.monotonic() - started) * 1000)
        shown = [name for name in _ALL_FIELDS if name in missing]
        return World.model_validate(
            {**fields, "status": status, "missing": shown, "commandsRun": run, "commandsFailed": failed}
            | {"durationMs": elapsed}
        )

    base = [git, "--no-pager", "--no-optional-locks"] + [arg for pair in GIT_CONFIG for arg in ("-c", pair)]
    env = _environment([])
    first = await _run([*base, "rev-parse", "--show-toplevel"], cwd, env, budget())
    if first.code is None:
        return world("unavailable", {}, list(_ALL_FIELDS), 1, 1)
    if first.code != 0:
        refused = "not a git repository" not in first.err.decode("utf-8", "replace")
        return world("no-repository", {}, list(_ALL_FIELDS) if refused else [], 1, int(refused))
    toplevel = first.out.decode("utf-8", "replace").rstrip("\n")
    overrides: list[tuple[str, str]] = []
    object_format = "sha1"
    with anyio.move_on_after(max(budget(), 0.0)):
        overrides, object_format = await anyio.to_thread.run_sync(
            _scan_config, toplevel, abandon_on_cancel=True
        )
    env = _environment(overrides)
    version = await _git_version(git, env, budget())
    if version is not None and version >= (2, 40):
        tree = EMPTY_TREE_SHA256 if object_format == "sha256" else EMPTY_TREE_SHA1
        base.insert(1, f"--attr-source={tree}")
    fields: dict[str, Any] = {}
    missing: list[str] = []
    run, failed = 1, 0
    for name, args, names in _STEPS:
        if budget() <= 0:
            missing += names
            continue
        run += 1
        if not _apply(name, await _run([*base, *args], cwd, env, budget()), fields):
            failed += 1
            missing += [field for field in names if field not in fields]
    return world("repository", fields, missing, run, failed)
