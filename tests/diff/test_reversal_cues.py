"""Withdrawals in words no LIFT-2 expression holds: code reads them and flags the rule (reversals.py, ours).

A user who withdraws a rule says "relax the rule about type hints" or "we don't do dry runs anymore" far
more often than "no longer applies". A weak model labels such a message ``not a rule``, so unless code reads
the reversal itself the withdrawn rule stands in every later summary. Each case here is a rule in force and a
later user message; the wordings are this file's own, not any bench bank's.
"""

from __future__ import annotations

import pytest

from longhaul_daemon.passes.answers.lifts import STOP_WORDS, passes_lift_check
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.reversal_cues import ordered_words
from longhaul_daemon.passes.answers.reversals import stems
from longhaul_daemon.passes.answers.withdrawal_reading import StandingRule, withdrawal_candidates

HINTS = "Every new function gets full type hints."
DRY_RUN = "Always do a dry run with --dry-run before the real run."
CHANGELOG = "Add a changelog entry for every user-facing change."
SHELL = "Only write helper scripts in POSIX shell, never in Python."
PUSH = "Never push to the remote yourself."
MIGRATIONS = "Never run a migration without --dry-run first."


def _flagged(rule: str, text: str) -> bool:
    found = withdrawal_candidates((OfferedMessage("u9", text),), (StandingRule("R1", "u2", rule),))
    return [c.rule.name for c in found] == ["R1"] and not found[0].passes


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        # the rule called relaxed, ended, or of no weight: against any rule
        (HINTS, "Relax the rule about type hints."),
        (HINTS, "Nevermind the type hints."),
        (HINTS, "Type hints are no big deal anymore."),
        (HINTS, "Type hints: not a priority anymore."),
        (HINTS, "I've reconsidered the type-hint rule; leave hints out."),
        (CHANGELOG, "Consider the changelog rule retired."),
        (CHANGELOG, "You're off the hook for the changelog."),
        (CHANGELOG, "Don't worry about the changelog anymore."),
        (DRY_RUN, "Dry runs don't matter now."),
        (DRY_RUN, "The dry-run policy was a temporary measure and it has ended."),
        (DRY_RUN, "We've abandoned the dry-run approach."),
        # work the rule orders, left undone
        (HINTS, "Type hints aren't required any more."),
        (HINTS, "Quit adding type hints everywhere."),
        (HINTS, "Leave out the type hints going forward."),
        (DRY_RUN, "Let's drop the dry-run habit."),
        (DRY_RUN, "Let's retire the dry-run step."),
        (DRY_RUN, "We can live without the dry runs."),
        (DRY_RUN, "We don't do the dry run anymore."),
        (CHANGELOG, "We dropped the changelog, so no entries."),
        # a permission against a rule that forbids
        (SHELL, "I'm okay with Python helper scripts now."),
        (SHELL, "Write helper scripts in whatever language you like."),
        (SHELL, "Python is back on the menu for helper scripts."),
        (PUSH, "You have my blessing to push to the remote."),
        (PUSH, "Pushing to the remote is fine by me now."),
        # a release of what a prohibition orders done under its condition
        (MIGRATIONS, "Migrations can skip the dry run from now on."),
        (MIGRATIONS, "Stop doing a dry run before each migration."),
        ("Run migrations only with --dry-run.", "No need to dry-run the migrations first now."),
    ],
)
def test_ours_a_withdrawal_without_a_lift_2_expression_flags_its_rule(rule: str, text: str) -> None:
    """Ours: a change of mind in other words, a release, a permission: flagged, never lifted (LIFT-6)."""
    assert _flagged(rule, text)


@pytest.mark.parametrize(
    ("rule", "text"),
    [
        # news about a thing is no release
        ("Always run the benchmarks before merging.", "The benchmarks don't fail anymore."),
        ("Always run the integration tests before merging.", "The integration flake is gone."),
        # a release or an end of a prohibited act restates the prohibition
        (PUSH, "We don't push to the remote anymore."),
        ("Never add new dependencies without asking me.", "No more new dependencies, please."),
        ("Never drop tables in the production database.", "Drop the temp table after the test."),
        # ordered away, or a permission against an order
        ("Start every commit subject with the DRY: prefix.", "Don't drop the DRY: prefix from subjects."),
        ("Always log through the logger module.", "The logger module can be smaller, trim it."),
        ("never run migrations against prod", "Keep the migration scripts idempotent so they can be rerun."),
        ("Never run migrations against prod.", "I rely on you to run the migrations against staging."),
        # a release sharing no word with the rule
        (CHANGELOG, "Quit the dev server before you rebuild."),
    ],
)
def test_ours_news_a_restated_prohibition_or_an_unrelated_release_flags_nothing(rule: str, text: str) -> None:
    found = withdrawal_candidates((OfferedMessage("u9", text),), (StandingRule("R1", "u2", rule),))
    assert found == ()


def test_ours_what_a_rule_orders_done_is_what_a_release_must_name() -> None:
    """A rule that prohibits nothing orders all of itself; a prohibition under a condition orders the
    condition; a plain prohibition orders nothing a release could undo."""
    assert ordered_words("Run migrations only with --dry-run.") == "Run migrations only with --dry-run."
    assert stems(ordered_words("Never add new dependencies without asking me.")) == {"ask"}
    assert ordered_words("Never add new dependencies.") == ""


def test_lift_4_ours_a_quantifier_is_no_shared_word() -> None:
    """LIFT-4 ignores articles; "every", "each", "all" are determiners too: "every command" shares nothing
    with "every new function", so "no longer need the flag on every command" lifts nothing about functions."""
    for word in ("every", "each", "all", "some", "other"):
        assert word in STOP_WORDS
    verdict = passes_lift_check("We no longer need the dry-run flag on every command.", HINTS)
    assert verdict.reason == "no-shared-word"
