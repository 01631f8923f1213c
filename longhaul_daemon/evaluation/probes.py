"""The probes ``score`` checks against a summary, by code and never by a judge model (SCORE-3).

Five kinds, each a yes or no for one item of one compaction: ``rule`` (a standing rule appears in the user's
words, whitespace runs compared as one space, since a renderer may wrap), ``lifted`` (no line holds a
withdrawn rule's words unless it says it was withdrawn), ``command`` (a failing command and its exit code
on one line), ``value`` (a value used again later stands unflanked by a letter or digit, VALUE-4) and
``next`` (the word naming the task in progress, any case).

With an answer key the probes come from the key; without one, from the transcript: the span's failing
commands and the values ``facts`` counts as used again. Rules and the next step need a key, since only a
person knows which messages were rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from longhaul_daemon.evaluation.key import AnswerKey
from longhaul_daemon.evaluation.recorded_compactions import (
    find_compactions,
    message_of,
    message_pieces,
    text_of,
)
from longhaul_daemon.passes.answers.values import find_value, learn_values

__all__ = ["KINDS", "Probe", "ProbeKind", "check", "derived_probes", "key_probes", "probes_for"]

ProbeKind = Literal["rule", "lifted", "command", "value", "next"]
KINDS: tuple[ProbeKind, ...] = ("rule", "lifted", "command", "value", "next")
_WITHDRAWN = re.compile(
    r"\b(lifted|no longer|withdrawn|revoked|removed|dropped|rescinded|superseded|obsolete|"
    r"does(?: not|n't) apply|not in force|no more)\b",
    re.IGNORECASE,
)
_EXITED = re.compile(r"Command exited with code (-?\d{1,10})\s*\Z")
_COMMAND_KEY_CHARS = 80  # a long command is matched on its start, as a summary may cut it


@dataclass(frozen=True)
class Probe:
    """One question asked after a compaction, and what a right answer must contain."""

    kind: ProbeKind
    text: str  # the rule's words, the command, the value, or the task's name
    exit: int | None = None  # for a command


def _squash(text: str) -> str:
    return " ".join(text.split())


def check(probe: Probe, summary: str) -> bool:
    """Whether ``summary`` passes ``probe``."""
    if probe.kind == "rule":
        return _squash(probe.text) in _squash(summary)
    if probe.kind == "lifted":
        words = _squash(probe.text)
        lines = summary.splitlines()
        if any(words in _squash(line) and not _WITHDRAWN.search(line) for line in lines):
            return False
        # Words wrapped over several lines cannot be judged line by line: count them as shown active.
        return not (words in _squash(summary) and not any(words in _squash(line) for line in lines))
    if probe.kind == "command":
        key = _squash(probe.text)[:_COMMAND_KEY_CHARS]
        code = str(probe.exit)
        return any(key in _squash(line) and find_value(line, code).kept for line in summary.splitlines())
    if probe.kind == "value":
        return find_value(summary, probe.text).kept
    return probe.text.casefold() in summary.casefold()


def key_probes(key: AnswerKey, n: int) -> list[Probe]:
    """The probes of the ``n``-th compaction from the answer key (none when the key lacks one)."""
    k = key.at(n)
    if k is None:
        return []
    probes = [Probe("rule", r.words) for r in k.rules]
    probes += [Probe("lifted", r.words) for r in k.lifted]
    probes += [Probe("command", c.command, c.exit) for c in k.commands]
    probes += [Probe("value", v) for v in k.values]
    if k.next:
        probes.append(Probe("next", k.next))
    return probes


def _failed_command(message: Mapping[str, Any]) -> bool:
    """A user's ``!command`` that exited non-zero; a ``!!command`` is left out, the model never saw it."""
    code = message.get("exitCode")
    return type(code) is int and code != 0 and not message.get("excludeFromContext")


def _failing_commands(branch: Sequence[Mapping[str, Any]], start: int, end: int) -> list[Probe]:
    calls: dict[str, str] = {}
    found: list[Probe] = []
    for entry in branch[start:end]:
        message = message_of(entry)
        if message is None:
            continue
        role = message.get("role")
        if role == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                arguments = block.get("arguments") if isinstance(block, dict) else None
                if isinstance(arguments, dict) and isinstance(arguments.get("command"), str):
                    calls[str(block.get("id"))] = arguments["command"]
        elif role == "toolResult" and message.get("toolCallId") in calls:
            details = message.get("details")
            code = details.get("exitCode") if isinstance(details, dict) else None
            if type(code) is not int:
                match = _EXITED.search(text_of(message.get("content"))[-64:])
                code = int(match.group(1)) if match else None
            if code:
                found.append(Probe("command", calls[str(message["toolCallId"])], code))
        elif role == "bashExecution" and _failed_command(message):
            found.append(Probe("command", str(message.get("command")), message["exitCode"]))
    return found


def derived_probes(branch: Sequence[Mapping[str, Any]]) -> list[list[Probe]]:
    """Per compaction (in order), the probes code can find without a key: failing commands, values."""
    first: dict[str, tuple[int, bool]] = {}
    last: dict[str, int] = {}
    for position, entry in enumerate(branch):
        message = message_of(entry)
        for piece in message_pieces(message) if message is not None else []:
            for token in learn_values(piece.text):
                first.setdefault(token, (position, piece.tool_output))
                last[token] = position
    found: list[list[Probe]] = []
    for c in find_compactions(branch):
        values = [
            Probe("value", token)
            for token, (at, tool) in first.items()
            if tool and c.span_start <= at < c.span_end and last[token] > c.position
        ]
        found.append(_failing_commands(branch, c.span_start, c.span_end) + values)
    return found


def probes_for(branch: Sequence[Mapping[str, Any]], key: AnswerKey | None) -> list[list[Probe]]:
    """The probes of every recorded compaction: the key's when there is one, else the derived ones."""
    if key is None:
        return derived_probes(branch)
    return [key_probes(key, n) for n in range(1, len(find_compactions(branch)) + 1)]
