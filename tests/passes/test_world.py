"""The World snapshot (WORLD-1..8) against real git in temporary repositories, fake gits for failures."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import anyio
import pytest

from longhaul_daemon.passes import world as world_module
from longhaul_daemon.passes.world import take_world
from longhaul_daemon.state.model import World

pytestmark = pytest.mark.anyio
GIT = shutil.which("git") or "git"
ALL_FIELDS = ["branch", "head", "earlier", "dirtyCount", "dirty", "behind", "ahead"]
ID = ("-c", "user.name=Test", "-c", "user.email=test@example.invalid", "-c", "commit.gpgSign=false")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    done = subprocess.run([GIT, *ID, *args], cwd=repo, env=env, capture_output=True, check=True, text=True)
    return done.stdout


def commit(repo: Path, message: str) -> None:
    git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "tracked.txt").write_text("hello\n")
    git(path, "add", "tracked.txt")
    for i in range(1, 7):
        commit(path, f"commit {i}")
    return path


def fake_git(tmp_path: Path, body: str) -> str:
    """A shell script standing in for git; ``$REAL`` is the real git."""
    script = tmp_path / "fake-git"
    script.write_text(f"#!/bin/sh\nREAL={GIT}\nLOG={tmp_path}/calls.log\n{body}\n")
    script.chmod(0o755)
    return str(script)


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [line for line in lines if line != "--version"]


async def test_clean_repository(repo: Path) -> None:
    """WORLD-1, WORLD-7: branch, HEAD and four earlier commits, no dirty paths, no upstream."""
    world = await take_world(str(repo))
    assert world.status == "repository"
    assert world.branch == "main"
    assert world.head is not None and world.head.subject == "commit 6"
    assert world.head.hash == git(repo, "rev-parse", "--short", "HEAD").strip()
    assert [c.subject for c in world.earlier] == ["commit 5", "commit 4", "commit 3", "commit 2"]
    assert (world.dirtyCount, world.dirty) == (0, [])
    assert (world.behind, world.ahead) == (None, None)
    assert world.missing == []
    assert (world.commandsRun, world.commandsFailed) == (5, 0)
    assert world.durationMs >= 0


async def test_from_a_subdirectory(repo: Path) -> None:
    sub = repo / "deep" / "er"
    sub.mkdir(parents=True)
    (sub / "new.txt").write_text("x")
    world = await take_world(str(sub))
    assert world.status == "repository"
    assert [(d.status, d.path) for d in world.dirty] == [("??", "deep/")]


async def test_dirty_files_renames_and_bounds(repo: Path) -> None:
    """WORLD-7: dirtyCount counts every path, at most 20 are listed with their status letters."""
    (repo / "tracked.txt").write_text("changed\n")
    for i in range(25):
        (repo / f"untracked{i:02d}.txt").write_text("x")
    (repo / "old.txt").write_text("rename me\n" * 20)
    git(repo, "add", "old.txt")
    commit(repo, "x" * 300)
    git(repo, "mv", "old.txt", "new.txt")
    deep = repo / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    (deep / "f.txt").write_text("x")
    git(repo, "add", str(deep / "f.txt"))
    world = await take_world(str(repo))
    assert world.dirtyCount == 1 + 25 + 1 + 1
    assert len(world.dirty) == 20
    by_path = {d.path: d.status for d in world.dirty}
    assert by_path["tracked.txt"] == " M"
    assert by_path["new.txt"] == "R "
    assert "old.txt" not in by_path
    long_path = next(p for p in by_path if p.startswith("ddd"))
    assert len(long_path) == 300 and long_path.endswith("…")
    assert world.head is not None and len(world.head.subject) == 200 and world.head.subject.endswith("…")


async def test_control_characters_in_a_file_name_are_data(repo: Path) -> None:
    """WORLD-8: git output is untrusted; a name with ANSI escapes and newlines comes through intact."""
    evil = "evil\x1b[31mred\x1b[0m\nline\ttab\r.txt"
    (repo / evil).write_text("x")
    (repo / "plain.txt").write_text("x")
    world = await take_world(str(repo))
    assert world.dirtyCount == 2
    assert sorted(d.path for d in world.dirty) == sorted([evil, "plain.txt"])
    assert world.missing == []


async def test_detached_head(repo: Path) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    world = await take_world(str(repo))
    assert world.branch == "detached"
    assert world.head is not None and world.head.subject == "commit 5"
    assert (world.behind, world.ahead) == (None, None)
    assert world.missing == [] and world.commandsFailed == 0


async def test_upstream_ahead_and_behind(repo: Path) -> None:
    """WORLD-7: behind/ahead counts against the upstream."""
    git(repo, "branch", "base", "HEAD~1")
    git(repo, "checkout", "-q", "base")
    commit(repo, "upstream only")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-q", "--set-upstream-to=base")
    commit(repo, "local one")
    world = await take_world(str(repo))
    assert (world.behind, world.ahead) == (1, 2)
    assert world.missing == []


async def test_new_repository_without_commits(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    world = await take_world(str(tmp_path))
    assert world.status == "repository"
    assert world.branch == "trunk"
    assert world.head is None and world.earlier == []
    assert world.missing == [] and world.commandsFailed == 0


async def test_outside_a_repository_only_rev_parse_runs(tmp_path: Path) -> None:
    """WORLD-4: outside a repository the other four commands are not run."""
    outside = tmp_path / "plain"
    outside.mkdir()
    fake = fake_git(tmp_path, 'echo "$*" >> "$LOG"\nexec "$REAL" "$@"')
    world = await take_world(str(outside), git=fake)
    assert world.status == "no-repository"
    assert world.missing == []
    assert (world.commandsRun, world.commandsFailed) == (1, 0)
    (only,) = calls(tmp_path)
    assert only.endswith("rev-parse --show-toplevel")


async def test_exactly_five_commands_with_the_safety_options(repo: Path, tmp_path: Path) -> None:
    """WORLD-2, WORLD-3, WORLD-6: the five commands in order, each with the neutralising options and env."""
    body = (
        'echo "$*" >> "$LOG"\n'
        'env | grep -E "^(GIT_|SSH_ASKPASS|LC_ALL)" | sort > "$LOG.env"\n'
        'exec "$REAL" "$@"'
    )
    fake = fake_git(tmp_path, body)
    os.environ["GIT_DIR"] = str(tmp_path / "elsewhere")  # WORLD-6: the daemon's GIT_* must not leak
    try:
        world = await take_world(str(repo), git=fake)
    finally:
        del os.environ["GIT_DIR"]
    assert world.status == "repository" and world.missing == []
    lines = calls(tmp_path)
    subcommands = [line.split(" -c ")[-1].split(" ", 1)[1] for line in lines]
    assert subcommands == [
        "rev-parse --show-toplevel",
        "symbolic-ref --quiet --short HEAD",
        "log -n 5 --no-decorate --no-color --no-show-signature --no-ext-diff --no-textconv --format=%h%x09%s",
        "status --porcelain=v1 -z --untracked-files=normal --ignore-submodules=all",
        "rev-list --no-ext-diff --no-textconv --left-right --count @{upstream}...HEAD --",
    ]
    for line in lines:
        assert "--no-pager --no-optional-locks" in line
        for option in ("core.fsmonitor=false", "core.hooksPath=/dev/null", "log.showSignature=false"):
            assert f"-c {option}" in line
    env = (tmp_path / "calls.log.env").read_text().splitlines()
    assert "GIT_TERMINAL_PROMPT=0" in env and "GIT_ASKPASS=" in env and "SSH_ASKPASS=" in env
    assert "LC_ALL=C" in env
    assert not any(line.startswith("GIT_DIR=") for line in env)


async def test_missing_git_binary() -> None:
    """WORLD-5: no git at all is not fatal; the World is unavailable with every field missing."""
    world = await take_world("/", git="/nonexistent/git")
    assert world.status == "unavailable"
    assert world.missing == ALL_FIELDS
    assert (world.commandsRun, world.commandsFailed) == (1, 1)


async def test_hung_git_is_killed(tmp_path: Path) -> None:
    """WORLD-5: a git that outlives the timeout is killed and the World says what is missing."""
    fake = fake_git(tmp_path, 'case "$*" in *--version*) exec "$REAL" --version;; esac\nsleep 60\necho late')
    world = await take_world(str(tmp_path), git=fake, command_timeout=0.3, total_timeout=1.0)
    assert world.status == "unavailable"
    assert world.missing == ALL_FIELDS


async def test_one_hung_command_leaves_only_its_fields_missing(repo: Path, tmp_path: Path) -> None:
    fake = fake_git(tmp_path, 'case "$*" in *" status "*) sleep 60;; esac\nexec "$REAL" "$@"')
    world = await take_world(str(repo), git=fake, command_timeout=0.5, total_timeout=30.0)
    assert world.status == "repository"
    assert world.missing == ["dirtyCount", "dirty"]
    assert world.branch == "main" and world.head is not None
    assert (world.commandsRun, world.commandsFailed) == (5, 1)


async def test_total_budget_skips_the_remaining_commands(repo: Path, tmp_path: Path) -> None:
    fake = fake_git(tmp_path, 'case "$*" in *symbolic-ref*) sleep 60;; esac\nexec "$REAL" "$@"')
    world = await take_world(str(repo), git=fake, command_timeout=5.0, total_timeout=0.5)
    assert world.status == "repository"
    assert world.missing == ALL_FIELDS
    assert world.commandsRun == 2


async def test_refusal_is_not_fatal(tmp_path: Path) -> None:
    """WORLD-5: git refusing the repository (unsafe owner) leaves every field missing."""
    refuse = "echo \"fatal: detected dubious ownership in repository at '/x'\" >&2; exit 128"
    body = f'case "$*" in *rev-parse*) {refuse};; esac'
    world = await take_world(str(tmp_path), git=fake_git(tmp_path, body))
    assert world.status == "no-repository"
    assert world.missing == ALL_FIELDS
    assert (world.commandsRun, world.commandsFailed) == (1, 1)


async def test_unparsable_output_is_not_fatal(tmp_path: Path) -> None:
    """WORLD-5: garbage on stdout with exit 0 leaves those fields missing."""
    garbage = 'printf "\\033[2Jgarbage\\n"'
    body = f'case "$*" in *rev-parse*) echo /x;; *symbolic-ref*) echo main;; *) {garbage};; esac'
    world = await take_world(str(tmp_path), git=fake_git(tmp_path, body))
    assert world.status == "repository"
    assert world.branch == "main"
    assert world.missing == ["head", "earlier", "dirtyCount", "dirty", "behind", "ahead"]
    assert (world.commandsRun, world.commandsFailed) == (5, 3)


def trap(tmp_path: Path, name: str) -> str:
    """A script that leaves a marker file when anything runs it, and passes its input through."""
    script = tmp_path / "traps" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(f"#!/bin/sh\ntouch {tmp_path}/markers/{name}\ncat\nexit 0\n")
    script.chmod(0o755)
    return str(script)


def markers(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in (tmp_path / "markers").iterdir())


async def test_world_3_runs_nothing_the_repository_configures(repo: Path, tmp_path: Path) -> None:
    """WORLD-3: fsmonitor hook, clean filter, diff.external, textconv, hooks, gpg.program, pager: none run."""
    (tmp_path / "markers").mkdir()
    (repo / "data.bin").write_text("payload\n")
    git(repo, "add", "data.bin")
    commit(repo, "data")
    config = {
        "core.fsmonitor": trap(tmp_path, "fsmonitor"),
        "filter.trap.clean": trap(tmp_path, "clean"),
        "filter.trap.smudge": trap(tmp_path, "smudge"),
        "filter.trap.required": "true",
        "diff.external": trap(tmp_path, "diff-external"),
        "diff.tc.textconv": trap(tmp_path, "textconv"),
        "gpg.program": trap(tmp_path, "gpg"),
        "log.showSignature": "true",
        "core.pager": trap(tmp_path, "pager"),
        "include.path": str(tmp_path / "included.conf"),
    }
    for key, value in config.items():
        git(repo, "config", key, value)
    (tmp_path / "included.conf").write_text(
        f'[filter "hidden"]\n\tclean = {trap(tmp_path, "included-clean")}\n'
    )
    (repo / ".gitattributes").write_text("*.txt filter=trap diff=tc\n*.bin filter=hidden\n")
    for hook in (
        "pre-commit",
        "pre-push",
        "pre-rebase",
        "pre-auto-gc",
        "post-index-change",
        "reference-transaction",
    ):
        hook_path = repo / ".git" / "hooks" / hook
        hook_path.write_text(f"#!/bin/sh\ntouch {tmp_path}/markers/hook-{hook}\n")
        hook_path.chmod(0o755)

    def touch_tracked(stamp: int) -> None:
        for name in ("tracked.txt", "data.bin"):
            os.utime(repo / name, (stamp, stamp))

    # The traps are live: plain git status runs the fsmonitor hook and both clean filters of touched files.
    touch_tracked(2_000_000_000)
    git(repo, "status", "--porcelain")
    live = markers(tmp_path)
    assert {"fsmonitor", "clean", "included-clean"} <= set(live), live
    for marker in (tmp_path / "markers").iterdir():
        marker.unlink()

    touch_tracked(2_000_000_100)
    world = await take_world(str(repo))
    assert markers(tmp_path) == []
    assert world.status == "repository" and world.missing == []
    assert world.branch == "main"
    assert world.head is not None and world.head.subject == "data"
    assert world.dirtyCount == 1 and [(d.status, d.path) for d in world.dirty] == [("??", ".gitattributes")]


VERSION_2_45 = (
    'case "$1" in --version) echo "git version 2.45.1"; exit 0;; esac\n'
    'echo "$*" >> "$LOG"\n'
    'for a; do shift; case "$a" in --attr-source=*) ;; *) set -- "$@" "$a";; esac; done\n'
    'exec "$REAL" "$@"'
)


async def test_newer_git_gets_an_empty_attribute_source(repo: Path, tmp_path: Path) -> None:
    """WORLD-3: git >= 2.40 reads attributes from the empty tree (a fake 2.45 strips it for the real 2.39)."""
    world = await take_world(str(repo), git=fake_git(tmp_path, VERSION_2_45))
    assert world.status == "repository" and world.missing == []
    lines = calls(tmp_path)
    assert len(lines) == 5
    assert "--attr-source" not in lines[0]  # rev-parse runs before the object format is known
    assert all(
        line.startswith("--attr-source=4b825dc642cb6eb9a060e54bf8d69288fbee4904 ") for line in lines[1:]
    )


async def test_sha256_repository_gets_the_sha256_empty_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo256"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", "--object-format=sha256")
    commit(repo, "first")
    world = await take_world(str(repo), git=fake_git(tmp_path, VERSION_2_45))
    assert world.head is not None and world.head.subject == "first" and world.missing == []
    empty_tree = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"
    assert all(line.startswith(f"--attr-source={empty_tree} ") for line in calls(tmp_path)[1:])


async def test_git_dir_file_and_included_filter(tmp_path: Path) -> None:
    """WORLD-3: a worktree whose .git is a file still has its config (and its includes) scanned."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / "a.txt").write_text("a\n")
    git(main, "add", "a.txt")
    commit(main, "a")
    git(main, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "side")
    (tmp_path / "markers").mkdir()
    (tmp_path / "inc.conf").write_text(f'[filter "t"]\n\tclean = {trap(tmp_path, "clean")}\n')
    git(main, "config", "include.path", "../../inc.conf")
    (tmp_path / "wt" / ".gitattributes").write_text("*.txt filter=t\n")
    os.utime(tmp_path / "wt" / "a.txt", (2_000_000_000, 2_000_000_000))
    world = await take_world(str(tmp_path / "wt"))
    assert markers(tmp_path) == []
    assert world.branch == "side" and world.dirtyCount == 1 and world.missing == []


async def test_pass21_passes_at_once_in_one_directory_share_one_snapshot(repo: Path, tmp_path: Path) -> None:
    """Several sessions compacting at once in one project run git's commands once, and all get that World."""
    fake = fake_git(tmp_path, 'echo "$*" >> "$LOG"\nsleep 0.2\nexec "$REAL" "$@"')
    worlds: list[World] = []

    async def take() -> None:
        worlds.append(await take_world(str(repo), git=fake))

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(take)
    assert len(calls(tmp_path)) == 5  # one snapshot's five commands, not four snapshots'
    assert all(w == worlds[0] for w in worlds) and worlds[0].status == "repository"
    await take()  # once nothing is in flight, a pass takes its own
    assert len(calls(tmp_path)) == 10


async def test_pass21_a_waiter_whose_snapshot_was_cancelled_takes_its_own(repo: Path, tmp_path: Path) -> None:
    fake = fake_git(tmp_path, 'echo "$*" >> "$LOG"\nsleep 0.3\nexec "$REAL" "$@"')
    got: list[World] = []
    first = anyio.CancelScope()

    async def first_taker() -> None:
        with first:
            await take_world(str(repo), git=fake)

    async def waiter() -> None:
        await anyio.sleep(0.05)  # joins the snapshot the first taker started
        got.append(await take_world(str(repo), git=fake))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(first_taker)
            group.start_soon(waiter)
            await anyio.sleep(0.1)
            first.cancel()
    assert len(got) == 1 and got[0].status == "repository"


async def test_a_cancellation_while_git_is_spawned_still_kills_and_reaps_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The World's time budget may run out while a git child is being spawned; the child is still killed and
    waited for, never left running for the garbage collector to warn about."""
    real_open = anyio.open_process
    spawned: list[anyio.abc.Process] = []

    async def slow_open(*args: object, **kwargs: object) -> anyio.abc.Process:
        process = await real_open(*args, **kwargs)  # type: ignore[arg-type]
        spawned.append(process)
        await anyio.sleep(0.3)  # the caller's deadline passes here, after the child exists
        return process

    monkeypatch.setattr(anyio, "open_process", slow_open)
    with anyio.move_on_after(0.05):
        await world_module._run(["sleep", "30"], "/", dict(os.environ), 60.0)
    assert len(spawned) == 1 and spawned[0].returncode is not None
