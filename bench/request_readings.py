"""How code reads requests with no model at all: tasks, one-offs and rules, counts per set, never a text.

A weak model labels every message of a pass `rule` at times; what stands between a task ("Add a --json
flag") or a one-off ("skip the linter on this PR") and a standing rule is code's one-off reading
(``passes/answers/one_offs.py``), which refuses the rule a `rule` label on it would record. Printed per set:
how many tasks and how many one-offs that reading refuses (the more the better), and how many rules it
would wrongly refuse (the fewer the better). A bank's rule is judged by the words a `rule` label records:
the whole message when it is short enough (QUOTE-3), else the rule's own words. Only counts are printed, so
the held-out banks stay unread.

    .venv/bin/python bench/request_readings.py
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import request_dev
from bench_corpus import Bank
from withdrawal_readings import NAMED_BANKS

from longhaul_daemon.passes.answers.one_offs import one_off_request
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE


@dataclass(frozen=True)
class Tally:
    """How many of each kind code's one-off reading refuses as a standing rule."""

    tasks: tuple[int, int]
    one_offs: tuple[int, int]
    rules: tuple[int, int]

    def line(self, name: str) -> str:
        (t, tn), (o, on), (r, rn) = self.tasks, self.one_offs, self.rules
        return (
            f"{name}: tasks refused as rules {t} of {tn}, one-offs refused {o} of {on}; "
            f"rules wrongly refused {r} of {rn}"
        )


def _refused(texts: Iterable[str]) -> tuple[int, int]:
    verdicts = [one_off_request(text) for text in texts]
    return sum(verdicts), len(verdicts)


def bank_tally(bank: Bank) -> Tally:
    rules = [m if len(m) <= LONG_MESSAGE else w for wordings in bank.rules.values() for m, w in wordings]
    return Tally(
        tasks=_refused([*bank.tasks, *bank.chatter]),
        one_offs=_refused(message for message, _ in bank.one_offs),
        rules=_refused(rules),
    )


def main() -> int:
    dev = Tally(
        tasks=_refused(request_dev.TASKS),
        one_offs=_refused(request_dev.ONE_OFFS),
        rules=_refused(text for text in request_dev.RULES if len(text) <= LONG_MESSAGE),
    )
    sys.stdout.write(dev.line("development set (bench/request_dev.py, tuned on)") + "\n")
    for name, bank in NAMED_BANKS:
        sys.stdout.write(bank_tally(bank).line(name) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
