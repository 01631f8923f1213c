"""The model bench's corpus: sessions generated from a template bank and a seed, a bank per half.

A session is a script for real pi: ``say`` steps are prompts the real model answers, ``run`` steps are
commands run through pi's RPC ``bash`` in a scratch git project holding the bank's files. Each stretch of work
ends in ``cat`` of a long log (what pi keeps) and a compaction. The script knows what a faithful summary holds
after each compaction: the standing rules' words, the withdrawn rules', the one-off requests', and the values
shown once in tool output. The tuning half comes from :mod:`bench_bank_tuning`, the held-out half from
:mod:`bench_bank_heldout` and the second held-out half (written blind to the compactor's heuristics) from
:mod:`bench_bank_heldout2`, each with its own wording and seed; ``half_sessions`` builds one half.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

Half = Literal["tuning", "held-out", "held-out-2", "held-out-3"]
HALVES: tuple[Half, ...] = ("tuning", "held-out", "held-out-2", "held-out-3")
# --half's groups; the third held-out half is played only by name, so earlier "all" figures stay comparable
GROUPS: dict[str, tuple[Half, ...]] = {"both": ("tuning", "held-out"), "all": HALVES[:3]}
SESSIONS_PER_HALF = 6
CHAIN_STRETCHES = 5
SHORT_STRETCHES = 3
MIN_USER_MESSAGES = 20
MAX_USER_MESSAGES = 40
LONG_MESSAGE_WORDS = 60  # a rule "inside a long message" sits in a message at least this long


@dataclass(frozen=True)
class Rule:
    """A standing rule the user gives: the message, and the words that must stay visible (part of it)."""

    key: str
    message: str
    words: str


@dataclass(frozen=True)
class Step:
    """One thing the user does: ``say`` a prompt (a real model turn) or ``run`` a command (RPC ``bash``)."""

    kind: Literal["say", "run"]
    text: str
    rule: Rule | None = None
    lifts: str | None = None  # the key of the rule this message withdraws
    one_off: str | None = None  # the words of a request meant for this once, not a standing rule
    value: str | None = None  # a value this command's output shows (once) that the summary should keep
    task: bool = False  # a work request of the bank's: never a standing rule


@dataclass
class Session:
    name: str
    half: Half
    files: dict[str, str]
    stretches: list[list[Step]]
    promises: tuple[str, ...] = ()  # the agent's rule-like sentences, for recorded replies (transcripts)

    @property
    def chain(self) -> bool:
        return len(self.stretches) >= CHAIN_STRETCHES

    def steps(self, through: int) -> list[Step]:
        return [step for stretch in self.stretches[: through + 1] for step in stretch]

    def user_messages(self) -> list[str]:
        return [s.text for s in self.steps(len(self.stretches)) if s.kind == "say"]

    def rules(self) -> list[Rule]:
        return [s.rule for s in self.steps(len(self.stretches)) if s.rule is not None]

    def in_force(self, through: int) -> list[Rule]:
        """The rules given and not withdrawn in stretches 0..``through``."""
        rules: dict[str, Rule] = {}
        for step in self.steps(through):
            if step.rule is not None:
                rules[step.rule.key] = step.rule
            if step.lifts is not None:
                rules.pop(step.lifts, None)
        return list(rules.values())

    def withdrawn(self, through: int) -> list[Rule]:
        """The rules given and then withdrawn in stretches 0..``through``."""
        standing = {r.key for r in self.in_force(through)}
        given = {s.rule.key: s.rule for s in self.steps(through) if s.rule is not None}
        lifted = {s.lifts for s in self.steps(through) if s.lifts is not None}
        return [rule for key, rule in given.items() if key in lifted and key not in standing]

    def one_offs(self, through: int) -> list[str]:
        return [s.one_off for s in self.steps(through) if s.one_off is not None]

    def tasks(self, through: int) -> list[str]:
        """The work requests the user made in stretches 0..``through``, each once."""
        return list(dict.fromkeys(s.text for s in self.steps(through) if s.task))

    def values(self, through: int) -> list[str]:
        return [s.value for s in self.steps(through) if s.value is not None]


@dataclass(frozen=True)
class Bank:
    """The templates one half is generated from. No text is shared between the banks."""

    name: str
    seed: int
    files: dict[str, str]
    tasks: tuple[str, ...]  # short work requests
    chatter: tuple[str, ...]  # questions and status requests, no rule in them
    long_context: tuple[tuple[str, str], ...]  # (before, after) around a rule: the long message's padding
    rules: dict[str, tuple[tuple[str, str], ...]]  # key -> (message, words) wordings
    lifts: dict[str, tuple[str, ...]]  # key -> ways to withdraw that rule
    one_offs: tuple[tuple[str, str], ...]  # (message, words): a request for this once only
    commands: tuple[str, ...]  # succeed
    failing: tuple[str, ...]  # fail (exit status not 0)
    value_runs: tuple[tuple[str, str], ...]  # (command, the value its output shows)
    rule_like_runs: tuple[str, ...]  # commands whose output holds rule-like sentences nobody gave as rules
    log_name: str  # "{n}" is the stretch: the long log each stretch ends with
    log_line: str  # "{run}" and "{n}" filled in, 36 lines of it
    promises: tuple[str, ...] = ()  # the agent's rule-like sentences, for recorded replies (transcripts)


def _log(bank: Bank, run: int) -> str:
    return "\n".join(bank.log_line.format(run=run, n=n) for n in range(36)) + "\n"


def project_files(bank: Bank, stretches: int) -> dict[str, str]:
    files = dict(bank.files)
    for run in range(1, stretches + 1):
        files[bank.log_name.format(n=run)] = _log(bank, run)
    return files


def _rule(rng: random.Random, bank: Bank, key: str) -> Rule:
    message, words = rng.choice(bank.rules[key])
    return Rule(key=key, message=message, words=words)


def _long(rng: random.Random, bank: Bank, rule: Rule) -> Step:
    before, after = rng.choice(bank.long_context)
    return Step("say", f"{before} {rule.message} {after}", rule=rule)


def _events(rng: random.Random, bank: Bank, stretches: int) -> list[list[Step]]:
    """The rule events of each stretch: rules (one inside a long message), one-offs, withdrawals."""
    keys = rng.sample(sorted(bank.rules), len(bank.rules))
    first, second = _rule(rng, bank, keys[0]), _rule(rng, bank, keys[1])
    events: list[list[Step]] = [[_long(rng, bank, first), Step("say", second.message, rule=second)]]
    message, words = rng.choice(bank.one_offs)
    lifted = rng.choice([first, second])
    withdraw = Step("say", rng.choice(bank.lifts[lifted.key]), lifts=lifted.key)
    if stretches < CHAIN_STRETCHES:  # one-off in the second stretch, the withdrawal in the last
        third = _rule(rng, bank, keys[2])
        events.append([Step("say", message, one_off=words), Step("say", third.message, rule=third)])
        events.append([withdraw])
        return events
    # a chain: a new rule or a withdrawal between every two compactions
    third, fourth, fifth = (_rule(rng, bank, k) for k in keys[2:5])
    other = first if lifted is second else second
    events.append([_long(rng, bank, third)])
    events.append([withdraw, Step("say", message, one_off=words)])
    events.append([Step("say", fourth.message, rule=fourth)])
    again = Step("say", rng.choice(bank.lifts[other.key]), lifts=other.key)
    events.append([again, _long(rng, bank, fifth)])
    return events


def session(bank: Bank, half: Half, index: int, *, seed: int, chain: bool) -> Session:
    """One session: its stretches of tasks, chatter, commands and rule events, each ending in the long log."""
    rng = random.Random(f"{bank.name}:{seed}:{index}")
    stretches = CHAIN_STRETCHES if chain else SHORT_STRETCHES
    events = _events(rng, bank, stretches)
    fixed = sum(1 for stretch in events for s in stretch if s.kind == "say")
    target = rng.randint(MIN_USER_MESSAGES + 2, MAX_USER_MESSAGES - 6)
    fillers = [rng.choice(bank.tasks + bank.chatter) for _ in range(target - fixed - stretches)]
    tasks = rng.sample(bank.tasks, len(bank.tasks))
    values = rng.sample(bank.value_runs, min(stretches, len(bank.value_runs)))
    plan: list[list[Step]] = []
    for n in range(stretches):
        share = len(fillers) // (stretches - n)
        says = [Step("say", tasks[n % len(tasks)], task=True)]
        says += [Step("say", t, task=t in bank.tasks) for t in fillers[:share]]
        fillers = fillers[share:]
        picked = [*rng.sample(bank.commands, 3), *rng.sample(bank.failing, rng.randint(1, 2))]
        rng.shuffle(picked)
        commands = [Step("run", c) for c in picked]
        command, value = values[n % len(values)]
        commands.append(Step("run", command, value=value))
        if rng.random() < 0.6:
            commands.append(Step("run", rng.choice(bank.rule_like_runs)))
        body = says[:1] + events[n] + says[1:]
        mixed: list[Step] = []
        for step in body:  # a command or two after each prompt, while they last
            taken = rng.randint(0, 2)
            mixed += [step, *commands[:taken]]
            commands = commands[taken:]
        mixed.extend(commands)
        mixed.append(Step("run", f"cat {bank.log_name.format(n=n + 1)}"))
        plan.append(mixed)
    name = f"{bank.name}-{index + 1:02d}{'-chain' if chain else ''}"
    return Session(name, half, project_files(bank, stretches), plan, bank.promises)


def half_sessions(bank: Bank, half: Half, seed: int, count: int = SESSIONS_PER_HALF) -> list[Session]:
    """``count`` sessions from one bank; the first is the 5-compaction chain."""
    return [session(bank, half, i, seed=bank.seed + seed, chain=i == 0) for i in range(count)]
