"""The answer key of a corpus transcript: what each compaction's summary should hold, known by construction.

The corpus generator writes one key beside each session file (``FILE.key.json``); ``facts`` and ``score``
read it when it is there. For every compaction, in branch order, it lists the rules standing at that point
(with the words the user typed), the rules lifted by then, the span's failing commands with their exit codes,
the values the span's tool output showed once and a later message used again, and a word that names the task
in progress. ``traps`` counts the distractors the generator planted (rule-like text outside user messages,
permissions, injections), so a reader knows what the corpus tried. A key that cannot be read is ignored with
a reason, never trusted in part.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "KEY_VERSION",
    "AnswerKey",
    "BadKey",
    "KeyCommand",
    "KeyCompaction",
    "KeyRule",
    "dump_key",
    "load_key",
    "parse_key",
]

KEY_VERSION = 1
_MAX_KEY_BYTES = 16 * 1024 * 1024


class BadKey(ValueError):
    """An answer key that exists but cannot be used; the message names the problem, never the key's text."""


@dataclass(frozen=True)
class KeyRule:
    """A rule the user gave: an id local to the key, and the words as typed."""

    id: str
    words: str


@dataclass(frozen=True)
class KeyCommand:
    """A command of the span and the exit code it ended with."""

    command: str
    exit: int


@dataclass(frozen=True)
class KeyCompaction:
    """What the ``n``-th compaction's summary should hold."""

    n: int
    rules: tuple[KeyRule, ...] = ()
    lifted: tuple[KeyRule, ...] = ()
    commands: tuple[KeyCommand, ...] = ()
    values: tuple[str, ...] = ()
    next: str | None = None


@dataclass(frozen=True)
class AnswerKey:
    """What a synthetic session should keep: each compaction's expectations and the traps set in it."""

    compactions: tuple[KeyCompaction, ...]
    traps: Mapping[str, int] = field(default_factory=dict)
    version: int = KEY_VERSION

    def at(self, n: int) -> KeyCompaction | None:
        """The key of the ``n``-th compaction (1-based), if the key has one."""
        return self.compactions[n - 1] if 1 <= n <= len(self.compactions) else None


def _strings(raw: object, what: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise BadKey(f"{what} is not a list of strings")
    return tuple(raw)


def _rules(raw: object, what: str) -> tuple[KeyRule, ...]:
    if not isinstance(raw, list):
        raise BadKey(f"{what} is not a list")
    rules: list[KeyRule] = []
    for item in raw:
        if not (
            isinstance(item, dict) and isinstance(item.get("id"), str) and isinstance(item.get("words"), str)
        ):
            raise BadKey(f"{what} holds an item without a string id and words")
        rules.append(KeyRule(item["id"], item["words"]))
    return tuple(rules)


def _commands(raw: object, what: str) -> tuple[KeyCommand, ...]:
    if not isinstance(raw, list):
        raise BadKey(f"{what} is not a list")
    commands: list[KeyCommand] = []
    for item in raw:
        exit_code = item.get("exit") if isinstance(item, dict) else None
        if not (isinstance(item, dict) and isinstance(item.get("command"), str) and type(exit_code) is int):
            raise BadKey(f"{what} holds an item without a command and an integer exit")
        commands.append(KeyCommand(item["command"], exit_code))
    return tuple(commands)


def parse_key(document: object) -> AnswerKey:
    """An :class:`AnswerKey` from its JSON document; raises :class:`BadKey` on any shape it cannot use."""
    if not isinstance(document, dict):
        raise BadKey("the key is not a JSON object")
    if document.get("version") != KEY_VERSION:
        raise BadKey(f"the key's version is not {KEY_VERSION}")
    raw = document.get("compactions")
    if not isinstance(raw, list):
        raise BadKey("compactions is not a list")
    compactions: list[KeyCompaction] = []
    for n, item in enumerate(raw, start=1):
        if not isinstance(item, dict):
            raise BadKey(f"compaction {n} is not an object")
        nxt = item.get("next")
        if nxt is not None and not isinstance(nxt, str):
            raise BadKey(f"compaction {n}: next is not a string")
        compactions.append(
            KeyCompaction(
                n=n,
                rules=_rules(item.get("rules", []), f"compaction {n}: rules"),
                lifted=_rules(item.get("lifted", []), f"compaction {n}: lifted"),
                commands=_commands(item.get("commands", []), f"compaction {n}: commands"),
                values=_strings(item.get("values", []), f"compaction {n}: values"),
                next=nxt,
            )
        )
    traps = document.get("traps", {})
    if not isinstance(traps, dict) or not all(
        isinstance(k, str) and type(v) is int for k, v in traps.items()
    ):
        raise BadKey("traps is not an object of counts")
    return AnswerKey(compactions=tuple(compactions), traps=dict(traps))


def load_key(path: Path) -> AnswerKey | None:
    """The key at ``path``; None when there is none, :class:`BadKey` when it is there but unusable."""
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_KEY_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadKey(f"cannot read the key ({exc.strerror or type(exc).__name__})") from None
    if len(data) > _MAX_KEY_BYTES:
        raise BadKey("the key is larger than this reads")
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadKey("the key is not UTF-8 JSON") from None
    return parse_key(document)


def dump_key(key: AnswerKey) -> dict[str, Any]:
    """The JSON document of ``key`` (what :func:`parse_key` reads back)."""
    return {
        "version": key.version,
        "compactions": [
            {
                "n": c.n,
                "rules": [{"id": r.id, "words": r.words} for r in c.rules],
                "lifted": [{"id": r.id, "words": r.words} for r in c.lifted],
                "commands": [{"command": k.command, "exit": k.exit} for k in c.commands],
                "values": list(c.values),
                "next": c.next,
            }
            for c in key.compactions
        ],
        "traps": dict(key.traps),
    }
