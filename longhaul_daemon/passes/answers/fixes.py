"""An open error closed by a later successful command: the model names the command, code checks the claim.

LEDGER-8 closes an error only when the very same command text later exits 0, so ``pytest tests/test_x.py -q``
failing and then ``pytest -q`` passing leaves it open. The answer may claim ``fixed: [{"error": "E3", "by":
"C9"}]``; :func:`check_fixes` accepts it (our rule) when the error is open and came from a command, the
naming command ran later and exited 0, and it runs the same thing or more (:func:`covers`):

- both are one simple command (no pipeline, list, redirection or substitution: the exit code would not be
  the program's alone); ``NAME=value`` words, the program's directory and a launcher (``python -m``,
  ``uv run``, ``npx`` …) are set aside;
- a test runner is the same runner and does not narrow the run: it adds only output options, keeps every
  option of the failing run but selecting ones (``-k``, ``--lf`` …), and its paths cover the failing run's;
- any other program has the same words (``npm run build`` never fixes ``npm run lint``).

A refused claim is dropped and counted, never retried; an accepted one closes the error at Close.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.answers.schema import BOUNDS, ParsedAnswer
from longhaul_daemon.state.model import Command, ErrorEntry

__all__ = ["Fix", "check_fixes", "claimed_fixes", "covers"]

_OPERATOR_CHARS = frozenset("();<>|&")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_LAUNCHERS = {("uv", "run"), ("poetry", "run"), ("pipenv", "run"), ("pdm", "run"), ("hatch", "run")}
_PYTHONS = frozenset({"python", "python3", "py"})
_RUNNERS = frozenset(
    {"pytest", "py.test", "unittest", "nose2", "jest", "mocha", "ava", "tap", "rspec", "phpunit", "ctest"}
    | {"tox", "nox", "karma"}
)
_RUNNER_COMMANDS = frozenset(
    {"go", "cargo", "npm", "pnpm", "yarn", "bun", "deno", "dotnet", "mvn", "gradle", "gradlew", "make"}
)
_SUBCOMMAND_RUNNERS = {"vitest": "run", "playwright": "test"}
# options whose value is the next word when not attached; enough to keep a value from reading as a path
_VALUED = frozenset(
    {"-k", "-m", "-n", "-p", "-r", "-c", "-W", "-t", "-g", "-E", "-run", "-count", "-timeout", "-tags"}
    | {"--tb", "--maxfail", "--deselect", "--ignore", "--rootdir", "--numprocesses", "--color", "--timeout"}
    | {"--testNamePattern", "--testPathPattern", "--filter", "--grep", "--package", "--test", "--features"}
)
_OUTPUT = frozenset(
    {"-q", "-qq", "-v", "-vv", "-vvv", "--quiet", "--verbose", "-s", "--capture", "-x", "--exitfirst", "-r"}
    | {"--tb", "-n", "--numprocesses", "--color", "--no-header", "--maxfail", "--ci", "--silent", "-count"}
    | {"--runInBand", "-i", "--no-cov"}
)
_SELECTING = frozenset(
    {"-k", "-m", "--lf", "--last-failed", "--deselect", "--ignore", "--ignore-glob", "-t", "-run", "--run"}
    | {"--testNamePattern", "--testPathPattern", "--filter", "--grep", "-g", "--only"}
)
_NEUTRAL_PLUGINS = frozenset({"no:cacheprovider"})  # pytest -p: only the cache, never what runs


@dataclass(frozen=True)
class Fix:
    """An accepted claim: open error ``error`` was fixed by the later successful command ``by``."""

    error: str
    by: str


@dataclass(frozen=True)
class _Run:
    """One simple command read for comparison: what runs it, its options and its positional words."""

    key: tuple[str, ...]
    options: frozenset[tuple[str, str | None]]
    paths: tuple[str, ...]
    runner: bool
    words: tuple[str, ...]  # the whole command from the program on, for programs that are not runners


def _words(text: str) -> list[str] | None:
    """The shell words of one simple command, or None for anything else (or unreadable quoting)."""
    if "`" in text or "$(" in text:
        return None
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    if not words or any(w and set(w) <= _OPERATOR_CHARS for w in words):
        return None
    return words


def _program(words: list[str]) -> list[str]:
    """``words`` from the program on: assignments, the program's directory and a launcher set aside."""
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    while words:
        head = words[0].rsplit("/", 1)[-1]
        if head in _PYTHONS and len(words) > 2 and words[1] == "-m":
            words = words[2:]
        elif head == "npx" and len(words) > 1:
            words = words[1:]
        elif len(words) > 2 and (head, words[1]) in _LAUNCHERS:
            words = words[2:]
        else:
            return [head, *words[1:]]
    return words


def _option(word: str, *, attached: bool) -> tuple[str, str | None]:
    """An option's name and value; ``attached``: a short option may carry its value (``-nauto``, ``-rA``),
    which Go's single-dash long options (``-run``, ``-race``) never do."""
    if "=" in word:
        name, value = word.split("=", 1)
        return name, value
    if (
        attached
        and word not in _VALUED
        and not word.startswith("--")
        and len(word) > 2
        and word[:2] in _VALUED
    ):
        return word[:2], word[2:]
    return word, None


def _read(text: str) -> _Run | None:
    words = _words(text)
    if words is None:
        return None
    words = _program(words)
    if not words:
        return None
    program, rest = words[0], [w for w in words[1:] if w != "--"]
    if program in ("npm", "pnpm", "yarn", "bun") and rest[:2] == ["run", "test"]:
        rest = rest[1:]  # `npm run test` is `npm test`
    key: tuple[str, ...] = (program,)
    runner = program in _RUNNERS or program in _SUBCOMMAND_RUNNERS
    sub = rest[0] if rest else None
    if (program in _RUNNER_COMMANDS and sub == "test") or (sub and _SUBCOMMAND_RUNNERS.get(program) == sub):
        key, rest, runner = (program, sub), rest[1:], True
    options: set[tuple[str, str | None]] = set()
    paths: list[str] = []
    at = 0
    while at < len(rest):
        word = rest[at]
        if word.startswith("-") and word != "-":
            name, value = _option(word, attached=program != "go")
            if value is None and name in _VALUED and at + 1 < len(rest):
                at += 1
                value = rest[at]
            options.add((name, value))
        else:
            paths.append(word)
        at += 1
    return _Run(key, frozenset(options), tuple(paths), runner, tuple(words))


def _under(path: str, top: str) -> bool:
    """Whether test path ``path`` lies within ``top`` (the same, a file in its directory, a test in it)."""
    top = top.rstrip("/") or "/"
    return path == top or path.startswith((top + "/", top + "::"))


def _neutral(option: tuple[str, str | None]) -> bool:
    name, value = option
    return name in _OUTPUT or (name == "-p" and value in _NEUTRAL_PLUGINS)


def covers(failing: str, fixing: str) -> bool:
    """Whether ``fixing`` runs what ``failing`` ran, or more (the rule in the module docstring)."""
    before, after = _read(failing), _read(fixing)
    if before is None or after is None or before.key != after.key:
        return False
    if not before.runner:
        return before.words == after.words
    if any(not _neutral(o) and o not in before.options for o in after.options):
        return False  # an option the failing run lacked that is not an output option: may narrow
    if any(o not in after.options and not _neutral(o) and o[0] not in _SELECTING for o in before.options):
        return False  # an option of the failing run dropped that neither selects nor formats
    if not after.paths:
        return True
    return bool(before.paths) and all(any(_under(p, top) for top in after.paths) for p in before.paths)


def check_fixes(
    claims: Sequence[tuple[str, str]], commands: Sequence[Command], errors: Sequence[ErrorEntry]
) -> tuple[tuple[Fix, ...], int]:
    """The accepted ``(error, by)`` claims, one per error, and how many were refused."""
    order = {command.id: at for at, command in enumerate(commands)}
    by_id = {command.id: command for command in commands}
    error_by_id = {error.id: error for error in errors}
    accepted: dict[str, Fix] = {}
    refused = 0
    for error_id, command_id in claims:
        error = error_by_id.get(error_id)
        if error is not None and not error.open:
            continue  # already closed: nothing to do, nothing wrong
        if error_id in accepted:
            continue
        failing = by_id.get(error.command) if error is not None and error.command else None
        fixing = by_id.get(command_id)
        if (
            failing is None
            or fixing is None
            or fixing.exit != 0
            or order[fixing.id] <= order[failing.id]
            or not covers(failing.text, fixing.text)
        ):
            refused += 1
            continue
        accepted[error_id] = Fix(error_id, command_id)
    return tuple(accepted.values()), refused


def claimed_fixes(
    parsed: ParsedAnswer, commands: Sequence[Command], errors: Sequence[ErrorEntry], *, final: bool
) -> tuple[tuple[Fix, ...], int]:
    """:func:`check_fixes` over an answer's ``fixed`` list; a final answer's list is cut to its DIFF-6 bound
    (the claims past it are counted as dropped by ``cut_to_bounds``, not here)."""
    bound = BOUNDS["fixed"] if final else None
    return check_fixes([(f.error, f.by) for f in parsed.answer.fixed[:bound]], commands, errors)
