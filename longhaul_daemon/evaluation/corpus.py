"""``longhaul-daemon corpus``: realistic pi sessions whose right answers are known (score, facts, the bench).

Each session is a chain of 1 to N stretches of work, each ending in a long wrap-up turn and a compaction
entry whose kept window is exactly that turn (so a replay cuts where the recording did). A stretch asks for a
task, reads a file, runs commands (some fail), shows a value once in tool output, gives or withdraws a rule or
grants a one-off permission, and names the next task; the next stretch uses the values again. Traps are mixed
in: rules worded without a rule word, an assistant's promises, a CONTRIBUTING file of house rules, and a
prompt injection in tool output that claims a rule was withdrawn. The answer key (FILE.key.json) records, per
compaction, what a faithful summary holds. Files are what pi 0.73.1 writes, so a real pi replays them.
"""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from longhaul_daemon.evaluation.common import key_path
from longhaul_daemon.evaluation.corpus_text import (
    ASSISTANT_PROMISES,
    RULES,
    TASKS,
    WRAP_UP,
    WRAP_UP_REPLY,
    RuleText,
    Task,
    failure,
    injection,
    noise_output,
    planted_value,
    repo_file,
)
from longhaul_daemon.evaluation.key import AnswerKey, KeyCommand, KeyCompaction, KeyRule, dump_key
from longhaul_daemon.evaluation.synthetic import SessionWriter
from longhaul_daemon.plural import counted

__all__ = [
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CorpusSummary",
    "run_corpus",
    "write_corpus",
    "write_corpus_session",
]

EXIT_OK = 0
EXIT_FAILED = 1  # OUT_DIR or a file in it could not be written
EXIT_USAGE = 2  # OUT_DIR is a file, or already holds session files

_MODEL = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
_RULE_WORDS = ("never", "always", "don't", "do not", "must", "only", "from now on")


@dataclass
class _Session:
    """What the writer knows while it writes one session: the rules, the values owed, the traps."""

    rng: random.Random
    w: SessionWriter
    standing: list[tuple[KeyRule, RuleText]] = field(default_factory=list)
    lifted: list[KeyRule] = field(default_factory=list)
    unused_rules: list[RuleText] = field(default_factory=list)
    owed: list[tuple[str, str]] = field(
        default_factory=list
    )  # (name, value) to use again in the next stretch
    used_values: set[str] = field(default_factory=set)
    traps: dict[str, int] = field(default_factory=dict)
    calls: int = 0

    def trap(self, kind: str) -> None:
        self.traps[kind] = self.traps.get(kind, 0) + 1

    def usage(self, tokens: int) -> dict[str, Any]:
        cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        return {
            "input": tokens,
            "output": 60,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": tokens + 60,
            "cost": cost,
        }

    def user(self, text: str) -> str:
        return self.w.message({"role": "user", "content": [{"type": "text", "text": text}]})

    def say(self, text: str) -> None:
        content = [{"type": "text", "text": text}]
        self.w.message(
            {
                "role": "assistant",
                "content": content,
                **_MODEL,
                "usage": self.usage(4000),
                "stopReason": "stop",
            }
        )

    def tool(self, name: str, arguments: dict[str, Any], output: str, exit_code: int = 0) -> None:
        self.calls += 1
        call_id = f"toolu_{self.rng.getrandbits(48):012x}{self.calls:03d}"
        block = {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}
        self.w.message(
            {
                "role": "assistant",
                "content": [block],
                **_MODEL,
                "usage": self.usage(4000),
                "stopReason": "toolUse",
            }
        )
        text = output if exit_code == 0 else f"{output}\n\nCommand exited with code {exit_code}"
        result = {"role": "toolResult", "toolCallId": call_id, "toolName": name, "isError": exit_code != 0}
        self.w.message({**result, "content": [{"type": "text", "text": text}]})


def _rule_event(s: _Session, stretch: int) -> str:
    """What the user does about rules in this stretch: a new rule, a withdrawal, a permission, or nothing."""
    roll = s.rng.random()
    if stretch == 1 or (not s.standing and s.unused_rules):
        return "rule"
    if s.standing and roll < 0.35:
        return "lift"
    if s.standing and roll < 0.55:
        return "permission"
    return "rule" if s.unused_rules and roll < 0.9 else "none"


def _rules_turn(s: _Session, stretch: int) -> None:
    event = _rule_event(s, stretch)
    if event == "rule":
        text = s.unused_rules.pop(0)
        rule = KeyRule(f"r{len(s.standing) + len(s.lifted) + 1}", text.words)
        s.standing.append((rule, text))
        if not any(word in text.words.lower() for word in _RULE_WORDS):
            s.trap("rule-without-rule-word")
        s.user(
            text.words if s.rng.random() < 0.5 else f"{text.words} Keep that in mind for the rest of this."
        )
    elif event == "lift":
        rule, text = s.standing.pop(s.rng.randrange(len(s.standing)))
        s.lifted.append(rule)
        s.user(s.rng.choice(text.withdrawals))
    elif event == "permission":
        s.trap("permission")
        s.user(s.rng.choice(s.standing)[1].permission)
    else:
        s.user("Looks good so far. Show me where things stand with the build.")
    name, value, command, output = planted_value(s.rng, s.used_values)
    s.tool("bash", {"command": command}, output)
    s.owed.append((name, value))
    if s.standing and s.rng.random() < 0.3:
        s.trap("injection")
        s.tool("read", {"path": "README.md"}, injection(s.rng.choice(s.standing)[1]))
    s.say("Done; the output is above.")


def _work_turn(
    s: _Session, task: Task, opening: str, failing: list[KeyCommand], *, plant: bool = False
) -> None:
    s.user(opening)
    path, content, house_rules = repo_file(s.rng, task)
    if house_rules:
        s.trap("rule-like-tool-output")
    s.tool("read", {"path": path}, content)
    if s.rng.random() < 0.6:
        failed = failure(s.rng, task)
        s.tool("bash", {"command": failed.command}, failed.output, failed.exit_code)
        failing.append(KeyCommand(failed.command, failed.exit_code))
    else:
        s.tool(
            "bash",
            {"command": f"pytest -q tests/test_{task.name.split('_')[0]}.py"},
            noise_output(s.rng, task),
        )
    if plant:
        taken = frozenset(name for name, _ in s.owed)
        name, value, command, output = planted_value(s.rng, s.used_values, taken)
        s.tool("bash", {"command": command}, output)
        s.owed.append((name, value))
    reply = "I looked at the code and ran the checks."
    if s.rng.random() < 0.5:
        s.trap("assistant-promise")
        reply += " " + s.rng.choice(ASSISTANT_PROMISES)
    s.say(reply)


def _opening(s: _Session, task: Task, first: bool) -> str:
    start = "We are working on the billing service in this repo. " if first else ""
    reuse = "".join(f" Use the {name} {value} from before where it is needed." for name, value in s.owed)
    s.owed = []
    return f"{start}Let's continue with `{task.name}`.{reuse}"


def write_corpus_session(path: Path, *, compactions: int, seed: int) -> AnswerKey:
    """Write one session with ``compactions`` compactions to ``path``; return its answer key."""
    rng = random.Random(seed)
    tasks = list(TASKS)
    rng.shuffle(tasks)
    parts = [f"0198{rng.getrandbits(16):04x}", f"{rng.getrandbits(16):04x}", f"7{rng.getrandbits(12):03x}"]
    session_id = "-".join([*parts, f"8{rng.getrandbits(12):03x}", f"{rng.getrandbits(48):012x}"])  # a UUIDv7
    keys: list[KeyCompaction] = []
    with path.open("w", encoding="utf-8") as out:
        w = SessionWriter(out, rng, start_ms=1_790_000_000_000)
        w.line(
            {
                "type": "session",
                "version": 3,
                "id": session_id,
                "timestamp": w.stamp()[0],
                "cwd": "/srv/billing",
            }
        )
        w.entry("model_change", provider=_MODEL["provider"], modelId=_MODEL["model"])
        w.entry("thinking_level_change", thinkingLevel="off")
        s = _Session(rng=rng, w=w, unused_rules=rng.sample(list(RULES), len(RULES)))
        current = tasks[0]
        for stretch in range(1, compactions + 1):
            failing: list[KeyCommand] = []
            _work_turn(s, current, _opening(s, current, stretch == 1), failing)
            _rules_turn(s, stretch)
            following = tasks[stretch % len(tasks)]
            _work_turn(s, following, following.request, failing, plant=rng.random() < 0.4)
            values = tuple(value for _, value in s.owed)
            kept = s.user(WRAP_UP)
            s.say(WRAP_UP_REPLY)
            summary = f"## Goal\nBilling service work, stretch {stretch}.\n\n## Next Steps\n1. Continue."
            w.entry(
                "compaction",
                summary=summary,
                firstKeptEntryId=kept,
                tokensBefore=9000 * stretch,
                fromHook=False,
            )
            standing = tuple(rule for rule, _ in s.standing)
            keys.append(
                KeyCompaction(stretch, standing, tuple(s.lifted), tuple(failing), values, following.name)
            )
            current = following
        s.user(_opening(s, current, False))
        s.say("Picking it up from the notes.")
    return AnswerKey(compactions=tuple(keys), traps=dict(sorted(s.traps.items())))


@dataclass
class CorpusSummary:
    """What ``corpus`` wrote: counts of sessions, compactions, rules and lifts, for its closing line."""

    sessions: int = 0
    compactions: int = 0
    rules: int = 0
    lifts: int = 0
    values: int = 0
    failing_commands: int = 0
    traps: dict[str, int] = field(default_factory=dict)


def write_corpus(out_dir: Path, *, sessions: int, seed: int, max_compactions: int = 10) -> CorpusSummary:
    """``sessions`` files in ``out_dir``, chains of 1..max_compactions compactions, each length in turn."""
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = CorpusSummary()
    for index in range(sessions):
        chain = 1 + index % max_compactions
        path = out_dir / f"session-{index + 1:03d}.jsonl"
        key = write_corpus_session(path, compactions=chain, seed=seed * 100_003 + index)
        key_path(path).write_text(json.dumps(dump_key(key), indent=2) + "\n", encoding="utf-8")
        last = key.compactions[-1]
        summary.sessions += 1
        summary.compactions += len(key.compactions)
        summary.rules += len(last.rules) + len(last.lifted)
        summary.lifts += len(last.lifted)
        summary.values += sum(len(c.values) for c in key.compactions)
        summary.failing_commands += sum(len(c.commands) for c in key.compactions)
        for kind, count in key.traps.items():
            summary.traps[kind] = summary.traps.get(kind, 0) + count
    return summary


def run_corpus(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """The ``corpus`` command: write synthetic sessions and answer keys into a new or empty directory."""
    out_dir = Path(args.out_dir)
    shown = "".join(ch if ch.isprintable() else "?" for ch in str(out_dir))  # a path may hold escapes
    if out_dir.exists() and not out_dir.is_dir():
        err.write(f"longhaul-daemon corpus: {shown} exists and is not a directory; name a new or empty one\n")
        return EXIT_USAGE
    if out_dir.is_dir() and any(out_dir.glob("*.jsonl")):
        err.write(f"longhaul-daemon corpus: {shown} already holds session files; name a new or empty one\n")
        return EXIT_USAGE
    try:
        s = write_corpus(
            out_dir, sessions=args.sessions, seed=args.seed, max_compactions=args.max_compactions
        )
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else shown
        where = "".join(ch if ch.isprintable() else "?" for ch in where)
        err.write(f"longhaul-daemon corpus: cannot write {where}: {exc.strerror or exc}\n")
        return EXIT_FAILED
    traps = ", ".join(f"{kind} {n}" for kind, n in sorted(s.traps.items())) or "none"
    out.write(
        f"corpus: {counted(s.sessions, 'session')}, {counted(s.compactions, 'compaction')}, "
        f"{counted(s.rules, 'rule')} ({s.lifts} withdrawn), {counted(s.values, 'value')} used again, "
        f"{counted(s.failing_commands, 'failing command')}\ntraps: {traps}\n"
    )
    return EXIT_OK
