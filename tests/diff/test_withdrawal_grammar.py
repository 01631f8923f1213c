"""Withdrawals in chat's own grammar flag the rule they name; look-alikes flag nothing (ours, reversals.py).

A withdrawal is a withdrawal expression and a reference to the rule: its words, a subject both name in other
words (rule_topics.py), a version number, the order itself named and said to be over ("kill the no-emoji
rule", "the type-hint requirement - gone"), leave given or work handed back ("write the migrations
yourself"), in chat's spelling ("dont bother"). A flag shows the user's sentence; it never lifts (LIFT-6).
News of finished work, a modal in a condition and a passing piece of work withdraw nothing. The wordings are
this file's own, not any bench bank's.
"""

from __future__ import annotations

import pytest

from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.reversal_cues import spelled_out
from longhaul_daemon.passes.answers.withdrawal_reading import StandingRule, withdrawal_candidates

LINT = "Run the linter before every commit."
TESTS_DIR = "Put all tests in the tests/ folder."
TESTS_RUN = "Run the tests before every commit."
CHANGELOG = "Add a changelog entry for every user-facing change."
OLD_PYTHON = "Keep the code compatible with Python 2.7."
EMOJI = "Never put emoji in commit messages."
HINTS = "Every new function gets type hints."
MIGRATIONS = "Don't write database migrations, I do them by hand."
PUSH = "Ask me before you push to the remote."
PRINT = "Use the logger, never print()."
PACKAGES = "Never add third-party packages."
FREEZE = "Leave the payments module alone during the code freeze."
RULES = (
    LINT,
    TESTS_DIR,
    TESTS_RUN,
    CHANGELOG,
    OLD_PYTHON,
    EMOJI,
    HINTS,
    MIGRATIONS,
    PUSH,
    PRINT,
    PACKAGES,
    FREEZE,
)
IN_FORCE = tuple(StandingRule(f"R{n}", f"u{n}", words) for n, words in enumerate(RULES, 1))
NAME = {words: f"R{n}" for n, words in enumerate(RULES, 1)}


def _flagged(text: str) -> list[str]:
    found = withdrawal_candidates((OfferedMessage("u99", text),), IN_FORCE)
    assert not any(c.passes for c in found), "none of these passes the lift check: a flag, never a lift"
    return sorted({c.rule.name for c in found})


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("The changelog's retired.", CHANGELOG),  # a possessive names the changelog
        ("We dropped 2.7 support, modern syntax is fine.", OLD_PYTHON),  # a version number ties
        ("Kill the no-emoji rule.", EMOJI),  # an order named and ended by a verb
        ("The type-hint requirement - gone.", HINTS),  # an order set off by a dash and said to be over
        ("The code freeze is over.", FREEZE),  # an order is over when it is done
        ("dont bother with the changelog anymore", CHANGELOG),  # chat leaves the apostrophe out
        ("Write the migrations yourself from now on.", MIGRATIONS),  # work the user kept, handed over
        ("You can push to the remote without asking me now.", PUSH),  # leave to skip the ordered step
        ("Console prints are fine now.", PRINT),  # "print" and a subject both name (output)
        # two rules share "test": only the one the sentence ties far more strongly is flagged
        ("The tests/ folder rule is over, put tests beside the module.", TESTS_DIR),
    ],
)
def test_ours_a_withdrawal_in_chat_grammar_flags_its_rule_alone(text: str, rule: str) -> None:
    assert _flagged(text) == [NAME[rule]]


@pytest.mark.parametrize(
    "text",
    [
        "The lint check is done, three warnings left.",  # work completed is news, no order ended
        "The typecheck step is done, all green.",
        "The migration step is over, moving on to the API.",
        "Use the standard library where you can.",  # a modal in a condition permits nothing
        "Skip the hints for this one-off script.",  # a one-off scope
        "For this quick hotfix push straight to the remote; after that it's PRs again.",  # passing work
        "Python 2.7 reached end of life upstream.",  # news, no cue
    ],
)
def test_ours_news_a_condition_or_a_passing_piece_of_work_flags_nothing(text: str) -> None:
    assert _flagged(text) == []


def test_ours_chat_spelling_is_read_with_its_apostrophe() -> None:
    assert spelled_out("dont bother, it isnt needed") == "don't bother, it isn't needed"
    assert spelled_out("the front counter") == "the front counter"  # only whole unmarked contractions
