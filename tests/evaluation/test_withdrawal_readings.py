"""bench/withdrawal_readings.py counts how code reads withdrawals, rule by rule, with every rule in force."""

from __future__ import annotations

from withdrawal_dev import LIFTS, NEGATIVES, RULES
from withdrawal_readings import Tally, tally


def test_each_withdrawal_lands_in_exactly_one_count_and_each_wording_is_read() -> None:
    rules = {"hints": ["Annotate every new function with type hints."], "push": ["Never push to main."]}
    lifts = {
        "hints": ["The annotation rule is over, leave them out.", "Let's talk about lunch."],
        "push": ["The documentation thing I mentioned is history now."],
    }
    got = tally(rules, lifts, ["Run the tests, please.", "You may push to main now."])
    # own rule; nothing; a loose tie to no rule in force is nothing too; one look-alike (a permission) flags
    assert got == Tally(withdrawals=3, right=1, beside=0, wrong=0, nothing=2, look_alikes=2, flagging=1)
    two = tally({"push": ["Never push to main.", "Pushing to main is my job only."]}, {"push": ["x"]}, [])
    assert two.withdrawals == 2  # every wording in turn


def test_the_development_set_has_the_shape_its_docstring_says() -> None:
    assert len(RULES) == 12 and all(len(w) == 2 for w in RULES.values())
    assert all(len(LIFTS[k]) == 7 and len(NEGATIVES[k]) == 5 for k in RULES)
