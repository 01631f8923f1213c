"""The subjects coding rules are most often about, each in the many words people use for it, so a withdrawal
that names a rule's subject in other words can still be tied to it.

A user who said "every new function gets type hints" later writes "the annotation rule was slowing us down,
forget it": no word of the one is a word of the other, yet both are about typing. Code cannot read meaning,
but the subjects of standing rules in a coding session are few and their vocabularies are well known, so a
short table of families covers most of them: a rule and a later sentence that both name one family are about
the same thing.

Only the loose tie of :func:`.reversals.closest_rules` reads this table, for a sentence that states a lasting
withdrawal (:attr:`.reversal_cues.Cues.states_withdrawal`) and that no rule's stems tie; its flags are shown
with the user's own sentence and never lift anything (LIFT-6). The families were written from general
knowledge of what coding agents are told, not from any bench bank. Pure; nothing raises.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["TOPIC_FAMILIES", "topic_families"]

# family -> the words and phrases that name it; a phrase's words are matched in order, any spacing between
TOPIC_FAMILIES: Final[dict[str, tuple[str, ...]]] = {
    "dependencies": (
        "dependency",
        "dependencies",
        "deps",
        "package",
        "packages",
        "library",
        "libraries",
        "third-party",
        "pip",
        "npm",
        "stdlib",
        "standard library",
        "requirements.txt",
    ),
    "typing": (
        "type hint",
        "type hints",
        "typed",
        "untyped",
        "typing",
        "annotation",
        "annotations",
        "annotate",
        "mypy",
        "pyright",
        "type checker",
        "type",
        "types",
        "type checking",
        "static typing",
    ),
    "documentation": (
        "docstring",
        "docstrings",
        "doc",
        "docs",
        "documentation",
        "document",
        "documented",
        "undocumented",
        "doc comment",
        "doc comments",
        "readme",
    ),
    "changelog": (
        "changelog",
        "change log",
        "changelog.md",
        "changes.md",
        "release notes",
        "news file",
    ),
    "formatting": (
        "format",
        "formatting",
        "formatter",
        "reformat",
        "reformatting",
        "black",
        "prettier",
        "indent",
        "indentation",
        "tabs",
        "spaces",
        "whitespace",
        "code style",
        "layout",
        "line length",
    ),
    "output": (
        "print",
        "prints",
        "print()",
        "stdout",
        "stderr",
        "console",
        "terminal",
        "logger",
        "logging",
    ),
    "commits": (
        "commit",
        "commits",
        "committing",
        "check in",
        "check them in",
        "staged",
        "unstaged",
        "version control",
        "commit message",
        "commit messages",
    ),
    "branches": (
        "branch",
        "branches",
        "branching",
        "main",
        "master",
        "trunk",
        "default branch",
        "pull request",
        "pull requests",
        "push",
        "force-push",
    ),
    "tests": (
        "test",
        "tests",
        "testing",
        "pytest",
        "test suite",
        "unit tests",
        "unittest",
        "coverage",
        "green",
        "suite",
        "qa",
        "verify",
        "verifying",
        "verification",
    ),
    "migrations": (
        "migration",
        "migrations",
        "schema",
        "alembic",
        "database",
        "db",
    ),
    "compatibility": (
        "compatible",
        "compatibility",
        "backwards compatible",
        "interpreter",
        "interpreters",
        "python version",
        "older python",
        "old python",
        "legacy",
        "compat",
        "backwards compat",
        "backward compat",
        "backward compatible",
        "public api",
        "api",
        "signature",
        "signatures",
        "exported",
        "deprecated",
        "walrus",
        "match statement",
        "match statements",
        "modern syntax",
    ),
    "linting": (
        "lint",
        "linter",
        "linting",
        "flake8",
        "ruff",
        "pylint",
        "eslint",
    ),
    "secrets": (
        "secret",
        "secrets",
        "credential",
        "credentials",
        "token",
        "tokens",
        "password",
        "passwords",
        "api key",
        "api keys",
        ".env",
    ),
    "freeze": (
        "freeze",
        "frozen",
        "unfreeze",
        "unfroze",
        "unfrozen",
        "code freeze",
        "lockdown",
        "hands off",
        "hands-off",
        "off-limits",
        "off limits",
        "read-only",
    ),
    "replies": (
        "reply",
        "replies",
        "response",
        "responses",
        "answer",
        "answers",
        "explanation",
        "explanations",
        "verbose",
        "verbosity",
        "terse",
        "brief",
        "concise",
        "wordy",
    ),
    "naming": (
        "name",
        "names",
        "naming",
        "identifier",
        "identifiers",
        "abbreviation",
        "abbreviations",
        "abbreviate",
        "abbreviated",
        "spell out",
        "spelled out",
    ),
    "database": (
        "orm",
        "orms",
        "sqlalchemy",
        "sql",
        "raw sql",
        "query",
        "queries",
        "cursor",
    ),
    "generated": (
        "generated",
        "autogenerated",
        "codegen",
        "vendor",
        "vendored",
        "vendor/",
    ),
}


def _pattern(phrase: str) -> str:
    return r"\s+".join(re.escape(word) for word in phrase.split())


_FAMILY_PATTERNS: Final = {
    family: re.compile(
        r"(?<!\w)(?:" + "|".join(_pattern(p) for p in sorted(words, key=len, reverse=True)) + r")(?!\w)",
        re.IGNORECASE,
    )
    for family, words in TOPIC_FAMILIES.items()
}


def topic_families(text: str) -> frozenset[str]:
    """The families of :data:`TOPIC_FAMILIES` that ``text`` names."""
    return frozenset(family for family, pattern in _FAMILY_PATTERNS.items() if pattern.search(text))
