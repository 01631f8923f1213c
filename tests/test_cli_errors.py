"""Bad input and a closed output, through the real ``longhaul-daemon`` process: what the user reads, the exit.

``facts``, ``replay`` and ``score`` once named neither the bad file nor why (a hash and "(unreadable)"), and
``score`` asked for ``--yes`` before complaining about the model; ``state`` did it well, and now every
command prints the same line (``transcript_error_line``). ``corpus`` printed tracebacks, ``status | head``
printed a ``BrokenPipeError``, ``status --json`` printed nothing with no daemon, a bare ``longhaul-daemon``
did not list the commands, and counts read "1 transcripts".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from evaluation.branches import BranchBuilder, write_transcript
from server.in_process_daemon import spawn_daemon, stop_process, wait_until_serving

from longhaul_daemon.evaluation.common import path_hash

STEP_S = 120.0
SESSION_HEADER = '{"type": "session"}'


def _env(root: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "LONGHAUL_"))}
    env.update(HOME=str(root / "home"), PI_CODING_AGENT_DIR=str(root / "agent"), XDG_RUNTIME_DIR=str(root))
    return env


def cli(root: Path, *args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "longhaul_daemon", *args],
        env=_env(root),
        cwd=root,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=STEP_S,
        check=False,
    )


def cli_into_a_closed_pipe(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run with stdout a pipe whose reader is already gone, as ``… | head -3`` is once head has its lines."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return cli(root, *args, stdout=writer)
    finally:
        os.close(writer)


def _session(path: Path) -> Path:
    b = BranchBuilder()
    kept = b.user("hello")
    b.compaction(kept, "summary")
    return write_transcript(path, b)


@pytest.fixture
def bad_files(short_tmp: Path) -> dict[str, tuple[Path, str]]:
    """Each kind of bad input, and the reason the error line must give for it."""
    (short_tmp / "folder.jsonl").mkdir()
    (short_tmp / "notes.jsonl").write_text('{"hello": 1}\n', encoding="utf-8")
    return {
        "missing": (short_tmp / "missing.jsonl", "no such file"),
        "folder": (short_tmp / "folder.jsonl", "is a directory, not a pi session file"),
        "not a session": (
            short_tmp / "notes.jsonl",
            f"not a pi session file (the first line is not a {SESSION_HEADER} header)",
        ),
    }


@pytest.mark.parametrize("kind", ["missing", "folder", "not a session"])
@pytest.mark.parametrize(
    "command",
    [
        ["state"],
        ["facts"],
        ["replay"],
        ["score", "--model", "anthropic/claude-sonnet-4-5"],
        ["score", "--model", "anthropic/claude-sonnet-4-5", "--yes"],
    ],
    ids=lambda c: " ".join(c[:1] + c[3:]),
)
def test_a_bad_file_is_named_with_why_and_exits_1(
    short_tmp: Path, bad_files: dict[str, tuple[Path, str]], kind: str, command: list[str]
) -> None:
    path, why = bad_files[kind]
    done = cli(short_tmp, command[0], str(path), *command[1:])
    assert done.returncode == 1, done.stdout + done.stderr
    line = f"longhaul-daemon {command[0]}: {path}: {why}"
    if command[0] == "facts":
        reason = {"missing": "missing", "folder": "directory", "not a session": "not-a-session"}[kind]
        assert done.stderr == f"{line} (listed as {path_hash(path)})\n"
        assert (
            f"{path_hash(path)}  -           ({reason})" in done.stdout
        )  # the report: a hash, never the path
        assert str(path) not in done.stdout
    else:
        assert done.stderr == line + "\n"
        assert done.stdout == ""  # score stops before its plan, the --yes question and the model lookup


def test_replay_and_score_check_every_file_before_they_start_anything(
    short_tmp: Path, bad_files: dict[str, tuple[Path, str]]
) -> None:
    good = _session(short_tmp / "good.jsonl")
    named = [str(good), *(str(path) for path, _ in bad_files.values())]
    for command in (["replay"], ["score", "--model", "a/b", "--yes"]):
        done = cli(short_tmp, command[0], *named, *command[1:])
        assert done.returncode == 1
        assert done.stdout == ""
        assert [line.split(": ")[1] for line in done.stderr.splitlines()] == named[1:]


def test_counts_are_pluralised(short_tmp: Path) -> None:
    one = _session(short_tmp / "one.jsonl")
    done = cli(short_tmp, "facts", str(one))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("facts: 1 transcript, 1 compaction (no model was called)\n")
    made = cli(short_tmp, "corpus", str(short_tmp / "c"), "--sessions", "1", "--max-compactions", "1")
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("corpus: 1 session, 1 compaction, ")


def test_corpus_into_a_file_a_full_folder_or_an_uncreatable_place_says_so(short_tmp: Path) -> None:
    existing = short_tmp / "existing"
    existing.write_text("mine\n", encoding="utf-8")
    done = cli(short_tmp, "corpus", str(existing))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"longhaul-daemon corpus: {existing} exists and is not a directory; name a new or empty one\n"
    )
    assert existing.read_text(encoding="utf-8") == "mine\n"  # nothing of the user's is lost

    under_a_file = existing / "corpus"
    done = cli(short_tmp, "corpus", str(under_a_file))
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == f"longhaul-daemon corpus: cannot write {under_a_file}: Not a directory\n"

    full = short_tmp / "full"
    assert cli(short_tmp, "corpus", str(full), "--sessions", "1").returncode == 0
    done = cli(short_tmp, "corpus", str(full), "--sessions", "1")
    assert done.returncode == 2
    assert (
        done.stderr
        == f"longhaul-daemon corpus: {full} already holds session files; name a new or empty one\n"
    )


def test_status_json_with_no_daemon_prints_an_object_saying_so(short_tmp: Path) -> None:
    missing = short_tmp / "none" / "d.sock"
    done = cli(short_tmp, "status", "--json", "--socket", str(missing))
    assert done.returncode == 3
    document = json.loads(done.stdout)
    assert (document["running"], document["socket"], document["problem"]) == (
        False,
        str(missing),
        "not-running",
    )
    assert document["message"] == f"no daemon is running on {missing}"
    assert any(line.endswith(f"serve --socket {missing}") for line in document["hint"])


def test_a_bare_command_lists_every_command(short_tmp: Path) -> None:
    done = cli(short_tmp)
    assert done.returncode == 2 and done.stdout == ""
    for command in ("serve", "status", "state", "report", "install", "uninstall", "facts", "replay", "score"):
        assert f"\n    {command}" in done.stderr
    assert done.stderr.endswith("longhaul-daemon: name a command (see the list above)\n")


@pytest.fixture
def daemon_socket(short_tmp: Path) -> Iterator[Path]:
    path = short_tmp / "run" / "d.sock"
    path.parent.mkdir(mode=0o700)
    process = spawn_daemon(path, env=_env(short_tmp))
    try:
        wait_until_serving(path, process)
        yield path
    finally:
        stop_process(process)


def test_status_into_a_closed_pipe_ends_quietly(short_tmp: Path, daemon_socket: Path) -> None:
    for args in (["status"], ["status", "--json"]):
        done = cli_into_a_closed_pipe(short_tmp, *args, "--socket", str(daemon_socket))
        assert (done.returncode, done.stderr) == (0, "")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--help"], 0),
        (["status", "--json", "--socket", "{root}/none/d.sock"], 3),
        (["state", "{session}"], 0),
        (["state", "{session}", "--spans", "--json"], 0),
        (["facts", "{session}"], 0),
        (["report", "--agent-dir", "{root}"], 0),
        (["corpus", "{root}/c", "--sessions", "1"], 0),
        (["install", "--dry-run"], 0),
        (["uninstall", "--dry-run"], 0),
        (["score", "{session}", "--model", "a/b", "--pi", "{session}"], 2),  # prints its plan, then refuses
    ],
    ids=lambda a: " ".join(a[:2]) if isinstance(a, list) else str(a),
)
def test_every_command_that_prints_ends_quietly_into_a_closed_pipe(
    short_tmp: Path, args: list[str], code: int
) -> None:
    session = _session(short_tmp / "s.jsonl")
    filled = [a.format(root=short_tmp, session=session) for a in args]
    done = cli_into_a_closed_pipe(short_tmp, *filled)
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    assert done.returncode == code, done.stderr
