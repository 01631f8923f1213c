"""How code's second look keeps rules the model called no rule: counts per set, never a message's text.

A weak model labels a standing rule ``not a rule`` at times, and the rule is lost after the next compaction
unless code's second look (``passes/answers/doubts.py``, :func:`second_look_rule`) reads a standing
instruction in it and keeps it in doubt. Printed per set: how many rules it keeps (the more the better), and
how many tasks, one-offs, look-alikes and withdrawals it wrongly keeps as rules (the fewer the better), each
read as one message labeled ``not a rule``. A bank's rule is read by its words. Only counts are printed, so
the held-out banks stay unread; tune on the development sets and the tuning bank only.

    .venv/bin/python bench/rule_readings.py
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import request_dev
import withdrawal_dev
import withdrawal_dev2
from bench_corpus import Bank
from withdrawal_readings import NAMED_BANKS

from longhaul_daemon.passes.answers.doubts import second_look_rule


def _kept(texts: Iterable[str]) -> str:
    verdicts = [second_look_rule(text) is not None for text in texts]
    return f"{sum(verdicts)} of {len(verdicts)}"


def _flat(sets: dict[str, tuple[str, ...]]) -> list[str]:
    return [text for texts in sets.values() for text in texts]


def _bank_line(name: str, bank: Bank) -> str:
    rules = [words for wordings in bank.rules.values() for _, words in wordings]
    return (
        f"{name}: rules kept {_kept(rules)}; wrongly kept: tasks and chatter "
        f"{_kept([*bank.tasks, *bank.chatter])}, one-offs {_kept(message for message, _ in bank.one_offs)}"
    )


def main() -> int:
    rules, tasks, one_offs = _kept(request_dev.RULES), _kept(request_dev.TASKS), _kept(request_dev.ONE_OFFS)
    lines = [f"request_dev: rules kept {rules}; wrongly kept: tasks {tasks}, one-offs {one_offs}"]
    for name, dev in (("withdrawal_dev", withdrawal_dev), ("withdrawal_dev2", withdrawal_dev2)):
        negatives, withdrawals = _kept(_flat(dev.NEGATIVES)), _kept(_flat(dev.LIFTS))
        lines.append(
            f"{name}: rules kept {_kept(_flat(dev.RULES))}; wrongly kept: negatives {negatives}, "
            f"withdrawals {withdrawals}"
        )
    lines.extend(_bank_line(name, bank) for name, bank in NAMED_BANKS)
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
