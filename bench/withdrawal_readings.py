"""How code reads withdrawals with no model at all: counts per bank, never a message's text.

Each bank's rules are put in force together (one wording each, every wording in turn), and every withdrawal
and every look-alike of the bank is read against them as one later user message, as the pass's second look
reads it (``passes/answers/doubts.py``: a lift check that passes, a reversal, a loose tie). Printed per bank:
how many withdrawals had their own rule flagged or lifted (and how many other rules beside it), only a wrong
rule, or nothing; and how many look-alikes (tasks, chatter, one-offs; for a development set its
look-alikes) flagged any rule. The two development sets come first (withdrawal_dev.py, and
withdrawal_dev2.py, written blind by another hand). Only counts are printed, so the held-out banks stay
unread.

    .venv/bin/python bench/withdrawal_readings.py
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import withdrawal_dev
import withdrawal_dev2
from bench_bank_heldout import HELD_OUT
from bench_bank_heldout2 import HELD_OUT_2
from bench_bank_heldout3 import HELD_OUT_3
from bench_bank_tuning import TUNING
from bench_corpus import Bank

from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.withdrawal_reading import StandingRule, withdrawal_candidates

NAMED_BANKS: tuple[tuple[str, Bank], ...] = (
    ("tuning", TUNING),
    ("held-out", HELD_OUT),
    ("held-out-2 (blind)", HELD_OUT_2),
    ("held-out-3 (blind)", HELD_OUT_3),
)
"""Every bank, named as the reading benches print it (request_readings.py reads the same list)."""


@dataclass
class Tally:
    """What one set's withdrawals and look-alikes came to."""

    withdrawals: int = 0
    right: int = 0
    beside: int = 0
    wrong: int = 0
    nothing: int = 0
    look_alikes: int = 0
    flagging: int = 0

    def line(self, name: str) -> str:
        return (
            f"{name}: own rule flagged or lifted {self.right} of {self.withdrawals} (other rules beside it "
            f"{self.beside}), only a wrong rule {self.wrong}, nothing {self.nothing}; look-alikes flagging a "
            f"rule {self.flagging} of {self.look_alikes}"
        )


def _read(text: str, rules: Sequence[StandingRule]) -> set[str]:
    return {c.rule.name for c in withdrawal_candidates((OfferedMessage("u999", text),), rules)}


def tally(
    rules: Mapping[str, Sequence[str]], lifts: Mapping[str, Sequence[str]], look_alikes: Sequence[str]
) -> Tally:
    """``rules``: key -> its wordings; ``lifts``: key -> its withdrawals; every wording in turn."""
    out = Tally()
    for which in range(min(len(w) for w in rules.values())):
        in_force = [StandingRule(f"R{n}", f"u{n}", w[which]) for n, w in enumerate(rules.values(), 1)]
        key_of = {f"R{n}": key for n, key in enumerate(rules, 1)}
        for key, texts in lifts.items():
            for text in texts:
                out.withdrawals += 1
                keys = {key_of[name] for name in _read(text, in_force)}
                if not keys:
                    out.nothing += 1
                elif key in keys:
                    out.right += 1
                    out.beside += len(keys) - 1
                else:
                    out.wrong += 1
        for text in look_alikes:
            out.look_alikes += 1
            out.flagging += bool(_read(text, in_force))
    return out


def bank_tally(bank: Bank) -> Tally:
    rules = {key: [words for _, words in wordings] for key, wordings in bank.rules.items()}
    look_alikes = [*bank.tasks, *bank.chatter, *(message for message, _ in bank.one_offs)]
    return tally(rules, bank.lifts, look_alikes)


DEVELOPMENT_SETS: tuple[tuple[str, ModuleType], ...] = (
    ("development set", withdrawal_dev),
    ("development set 2", withdrawal_dev2),
)
"""Each development set, named as printed: a module with RULES, LIFTS and NEGATIVES (key -> texts)."""


def development_tally(dev: ModuleType) -> Tally:
    look_alikes = [text for texts in dev.NEGATIVES.values() for text in texts]
    return tally(dev.RULES, dev.LIFTS, look_alikes)


def main() -> int:
    for name, dev in DEVELOPMENT_SETS:
        sys.stdout.write(development_tally(dev).line(name) + "\n")
    for name, bank in NAMED_BANKS:
        sys.stdout.write(bank_tally(bank).line(name) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
