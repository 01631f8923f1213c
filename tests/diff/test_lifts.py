"""The lift check: withdrawal and shared words, permissions, replacements (LIFT-1..4, 6, 8, 10, 11)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.answers import lifts as lifts_module
from longhaul_daemon.passes.answers.lifts import (
    DROPPING_VERBS,
    ENDED_STATES,
    FORGET_WHAT_I_SAID,
    FROM_NOW_ON,
    INSTEAD_OF,
    NEGATED_OBLIGATIONS,
    RULE_NOUNS,
    STOP_WORDS,
    WITHDRAWAL_EXPRESSIONS,
    check_lift,
    may_withdraw,
    passes_lift_check,
    passes_question_check,
    rule_withdrawals_in,
    significant_words,
    withdrawal_expressions_in,
)

PUSH = "Never push to main."
TABS = "Always indent with tabs."


def test_lift_1_needs_withdrawal_and_shared_word() -> None:
    assert passes_lift_check("The push rule no longer applies.", PUSH).passed
    assert passes_lift_check("The push rule is fine.", PUSH).reason == "no-withdrawal"
    refused = passes_lift_check("The lint rule no longer applies.", PUSH)
    assert (refused.passed, refused.reason, refused.expressions) == (False, "no-shared-word", ("no longer",))


@pytest.mark.parametrize("expression", WITHDRAWAL_EXPRESSIONS)
def test_lift_2_every_listed_expression_withdraws(expression: str) -> None:
    verdict = passes_lift_check(f"The main {expression} thing.", PUSH)
    assert verdict.passed and expression in verdict.expressions


@pytest.mark.parametrize(
    "text",
    [
        "The push rule NO LONGER holds.",
        "The push rule no\n  longer holds.",
        "The push rule doesn’t apply.",
        "The push rule don’t apply here.",
        "Push rule: Lifted.",
    ],
)
def test_lift_2_case_whitespace_and_curly_apostrophe(text: str) -> None:
    assert passes_lift_check(text, PUSH).passed


@pytest.mark.parametrize(
    "text",
    [
        "Forget it, pushing to main is fine.",
        "The push rule lifts nothing.",
        "Push after the liftoff.",
        "Someone shoplifted the main push.",
        "The push rule is withdrawing.",
        "The push rule no-longer matters.",
        "Never mind, push to main.",
        "The push is gone.",
    ],
)
def test_lift_2_nothing_else_withdraws(text: str) -> None:
    assert passes_lift_check(text, PUSH).reason == "no-withdrawal"


@pytest.mark.parametrize("obligation", NEGATED_OBLIGATIONS)
@pytest.mark.parametrize("later", FROM_NOW_ON)
def test_lift_2_a_released_obligation_withdraws(obligation: str, later: str) -> None:
    """LIFT-2 (ours): a negated obligation, then "any longer"/"anymore"/"any more" in the same sentence."""
    verdict = passes_lift_check(f"You {obligation} to push to main {later}.", PUSH)
    assert verdict.passed and verdict.expressions == (f"{obligation} … {later}",)


@pytest.mark.parametrize(
    "text",
    [
        "No need to check with me about deletions any longer.",
        "You don’t need to RUN the tests   anymore, CI does it.",
        "Honestly, the tests are not required before a commit any more.",
    ],
)
def test_lift_2_released_obligation_as_users_write_it(text: str) -> None:
    rules = ("Check with me before deleting any file.", "Run the tests before every commit.")
    assert any(passes_lift_check(text, rule).passed for rule in rules)
    assert may_withdraw(text)


@pytest.mark.parametrize(
    "text",
    [
        "Don't push to main anymore.",  # a negated order is a rule, not a withdrawal
        "Never push to main any more.",
        "No more pushes to main.",
        "Do you need any more pushes to main?",  # no negated obligation
        "No need to push to main. Any longer and we miss the release.",  # another sentence
        "Push to main any longer and there is no need to.",  # the wrong order
        "No need to push to main\nany more",  # a line break ends a sentence (LIFT-3)
    ],
)
def test_lift_2_a_negated_order_or_a_split_obligation_withdraws_nothing(text: str) -> None:
    assert passes_lift_check(text, PUSH).reason == "no-withdrawal"
    assert not may_withdraw(text)


INDENTATION = "Use four spaces for indentation, never tabs."
COMMIT_LENGTH = "Keep every commit message under fifty characters."
NO_PRINT = "Never use print for diagnostics, write them to stderr with logging."
LOGGING_ONLY = "Diagnostics go through the logging module only, not print."
NO_DEPENDENCIES = "Never add new dependencies to this project: the standard library has to do."


@pytest.mark.parametrize(
    ("text", "rule", "expression"),
    [
        ("Drop the indentation rule, the formatter decides that now.", INDENTATION, "drop … rule"),
        ("The commit message length rule is cancelled.", COMMIT_LENGTH, "rule … is cancelled"),
        (
            "Never mind the fifty-character limit on commit messages any more.",
            COMMIT_LENGTH,
            "never mind … limit",
        ),
        (
            "You can use print again for diagnostics; the logging rule is dropped.",
            NO_PRINT,
            "rule … is dropped",
        ),
        ("Scrap the logging-only rule, print is fine now.", LOGGING_ONLY, "scrap … rule"),
        (
            "Forget what I said about dependencies, third-party packages are fine from here on.",
            NO_DEPENDENCIES,
            "forget what I said about",
        ),
    ],
)
def test_lift_2_ours_the_withdrawals_a_weak_model_missed_pass(text: str, rule: str, expression: str) -> None:
    """LIFT-1, LIFT-2 (ours), LIFT-4: each measured withdrawal withdraws its rule, named readably."""
    verdict = passes_lift_check(text, rule)
    assert (verdict.passed, verdict.expressions) == (True, (expression,))
    assert may_withdraw(text)


@pytest.mark.parametrize("state", ENDED_STATES)
@pytest.mark.parametrize("auxiliary", ["is", "are", "was", "were", "has been", "have been", "is now"])
def test_lift_2_ours_a_rule_noun_then_an_ended_state(auxiliary: str, state: str) -> None:
    verdict = passes_lift_check(f"The push-to-main rule {auxiliary} {state}.", PUSH)
    assert verdict.passed and verdict.expressions == (f"rule … {auxiliary.removesuffix(' now')} {state}",)


@pytest.mark.parametrize("noun", RULE_NOUNS)
@pytest.mark.parametrize("verb", DROPPING_VERBS)
def test_lift_2_ours_a_dropping_verb_aimed_at_a_rule_noun(verb: str, noun: str) -> None:
    verdict = passes_lift_check(f"{verb.capitalize()} that push {noun}.", PUSH)
    assert verdict.passed and verdict.expressions == (f"{verb} … {noun}",)


@pytest.mark.parametrize("expression", FORGET_WHAT_I_SAID)
def test_lift_2_ours_forget_what_i_said_about(expression: str) -> None:
    verdict = passes_lift_check(f"{expression.upper()} pushing to main.", PUSH)
    assert verdict.passed and verdict.expressions == (expression,)


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("Our main push ban’s   gone now.", "ban's gone"),
        ("The ban on pushes to main IS\tNOW revoked.", "ban … is revoked"),
        ("Ignore my old push-to-main restriction.", "ignore … restriction"),
        ("Drop the 'never push to main' rule.", "drop … rule"),
        ("Please remove our main/push constraints.", "remove … constraints"),
        ("Never mind the push rule.", "never mind … rule"),
        ("Never mind pushing to main anymore.", "never mind … anymore"),
        ("Forget what I told you about pushing to main.", "forget what I told you about"),
    ],
)
def test_lift_2_ours_matched_as_whole_words_any_case_any_whitespace_either_apostrophe(
    text: str, expression: str
) -> None:
    assert passes_lift_check(text, PUSH).expressions == (expression,)


@pytest.mark.parametrize(
    "text",
    [
        "Don't drop the push rule.",
        "Don’t ever drop the push rule.",
        "Never drop the main push rule.",
        "Do not ignore the push limit.",
        "You must not remove that push restriction.",
        "We won't scrap the main push rule.",
        "Don't forget what I said about pushing to main.",
        "The push rule never was removed.",
        "The push rule is not cancelled.",
        "The push rule isn't gone.",
        "The push rule hasn't been dropped.",
    ],
)
def test_lift_2_ours_a_negated_order_or_a_negated_state_withdraws_nothing(text: str) -> None:
    """LIFT-2 (ours): "don't drop the rule" orders the rule kept, as an order-not-to keeps a released
    obligation a rule."""
    assert passes_lift_check(text, PUSH).reason == "no-withdrawal"
    assert not may_withdraw(text)


@pytest.mark.parametrize(
    "text",
    [
        "Forget it, pushing to main is fine.",  # EX-5: "forget it" names no rule
        "Drop the main table before you push.",  # no rule noun
        "Remove the push-rule-based hook on main.",  # "rule" inside a longer word
        "Drop the old push script and the rules of main.",  # no determiner right after the verb
        "Drop the first, second, third push rule.",  # naming words cross a comma
        "Drop the push to main. The rule is clear.",  # another sentence
        "Drop the push\nrule on main.",  # a line break ends a sentence (LIFT-3)
        "Drop the one two three four five push rule.",  # more than four naming words
        "The push rule went through main and the branch is gone.",  # more than four words before "is"
        "The rule is fine, the main push is gone.",  # another clause without a rule noun
        "Never mind, push to main.",
        "Never mind the push to main. The rule any more.",
        "Forget what I said.",
        "I never said anything about the push rule; mind the main branch.",
    ],
)
def test_lift_2_ours_other_phrasings_withdraw_nothing(text: str) -> None:
    assert passes_lift_check(text, PUSH).reason == "no-withdrawal"


def test_ex_5_forget_it_is_still_no_withdrawal_expression() -> None:
    """EX-5: u8's lift of u6 is refused, though "changelog" is shared."""
    u6 = "Add a changelog entry for every user-facing change. Don't forget it."
    verdict = passes_lift_check("Forget it, leave the changelog alone.", u6)
    assert (verdict.passed, verdict.reason) == (False, "no-withdrawal")


def test_lift_2_ours_an_ended_state_needs_a_rule_noun_and_a_shared_word() -> None:
    """LIFT-2 (ours): "the build is gone" reports on the work; "the build rule is gone" withdraws a rule,
    but not one sharing no word with it (LIFT-4)."""
    assert passes_lift_check("The build is gone.", PUSH).reason == "no-withdrawal"
    refused = passes_lift_check("The build rule is gone.", PUSH)
    assert (refused.reason, refused.expressions) == ("no-shared-word", ("rule … is gone",))
    assert passes_lift_check("The build rule is gone.", "Always run the build before a commit.").passed


def test_lift_6_ours_a_permission_still_lifts_nothing() -> None:
    assert passes_lift_check("You may use print for diagnostics.", NO_PRINT).reason == "no-withdrawal"
    assert passes_lift_check("Print is fine for diagnostics now.", LOGGING_ONLY).reason == "no-withdrawal"


def test_lift_4_ours_the_new_expressions_own_words_are_never_shared() -> None:
    """LIFT-4 (ours): a rule noun, an ended state, a dropping verb, "mind", "said" and the "never" of "never
    mind" tie a withdrawal to no rule; "never" elsewhere is a word of the rule."""
    for word in (*RULE_NOUNS, *ENDED_STATES, *DROPPING_VERBS, "mind", "said", "told"):
        assert word in STOP_WORDS
    rate = "Respect the API rate limit."
    assert passes_lift_check("Drop the line-length limit.", rate).reason == "no-shared-word"
    assert passes_lift_check("Drop the rate limit.", rate).shared == ("rate",)
    drop_tables = "Never drop database tables."
    assert passes_lift_check("Drop the indentation rule.", drop_tables).reason == "no-shared-word"
    assert passes_lift_check("Forget what I said about tabs.", "Don't forget the changelog.").reason == (
        "no-shared-word"
    )
    assert passes_lift_check("Never mind the tabs rule any more.", PUSH).reason == "no-shared-word"
    assert significant_words("Never mind the never-push rule.") == {"never", "push"}
    assert significant_words("never\tmind never") == {"never"}


def test_lift_2_ours_each_way_is_named_once_in_order_of_kind() -> None:
    text = "Forget what I said about tabs: drop the tabs rule, drop that rule; the rule is gone."
    assert rule_withdrawals_in(text) == ("rule … is gone", "drop … rule", "forget what I said about")


def test_lift_4_now_ties_no_withdrawal_to_a_from_now_on_rule() -> None:
    withdrawal = "The no-dependencies rule is withdrawn: we may add packages now."
    verdict = passes_lift_check(withdrawal, "From now on, run the unit tests after every change you make.")
    assert verdict.reason == "no-shared-word"
    assert passes_lift_check(withdrawal, "Do not add any third-party packages.").passed


def test_lift_3_instead_of_needs_a_word_of_the_rule_in_the_same_sentence() -> None:
    rule = "indent with tabs"
    assert withdrawal_expressions_in("two spaces instead of tabs", rule) == (INSTEAD_OF,)
    assert withdrawal_expressions_in("do this instead of that", rule) == ()
    assert withdrawal_expressions_in("use spaces instead of that. tabs are old", rule) == ()
    assert withdrawal_expressions_in("use spaces instead of that\ntabs are old", rule) == ()
    assert withdrawal_expressions_in("use spaces instead of the old way, tabs", rule) == (INSTEAD_OF,)
    assert withdrawal_expressions_in("tabs instead of spaces", rule) == ()  # the word must follow it
    assert withdrawal_expressions_in("Use Node 22.11 instead of tabs", rule) == (INSTEAD_OF,)


def test_lift_3_instead_of_with_only_a_stop_word_of_the_rule_does_not_count() -> None:
    assert withdrawal_expressions_in("spaces instead of with", "indent with tabs") == ()


def test_lift_4_shared_words_ignore_case_stop_words_and_short_words() -> None:
    assert significant_words("Never push TO main; do it in CI.") == {"never", "push", "main"}
    assert passes_lift_check("The MAIN thing no longer matters.", PUSH).shared == ("main",)
    assert passes_lift_check("It is no longer to be.", PUSH).reason == "no-shared-word"
    assert (
        passes_lift_check("The pushing rule no longer applies.", PUSH).reason == "no-shared-word"
    )  # no stemming
    assert passes_lift_check("The mainline rule no longer applies.", PUSH).reason == "no-shared-word"


def test_lift_4_stop_words_cover_articles_pronouns_auxiliaries_prepositions() -> None:
    for word in ("the", "you", "they", "must", "should", "don't", "with", "from", "between", "and", "not"):
        assert word in STOP_WORDS
    for word in ("never", "always", "push", "tabs"):
        assert word not in STOP_WORDS


def test_lift_4_words_of_the_withdrawal_expression_are_not_shared_words() -> None:
    verdict = passes_lift_check("The lint rule doesn't apply here.", "Always apply the formatter.")
    assert (verdict.passed, verdict.reason) == (False, "no-shared-word")
    assert passes_lift_check("The formatter rule doesn't apply here.", "Always apply the formatter.").passed
    assert not passes_lift_check("The tabs rule no longer applies.", "Rule of thumb: never push.").passed


def test_lift_6_permission_cannot_lift() -> None:
    verdict = passes_lift_check("you may push to main now", PUSH)
    assert (verdict.passed, verdict.reason) == (False, "no-withdrawal")


def test_lift_8_lift_of_replacement_must_name_what_it_added() -> None:
    narrowing = "Instead of never pushing to main, you may push hotfix branches to main from now on."
    named = passes_lift_check("The hotfix push rule no longer applies.", narrowing, [PUSH])
    assert named.passed and named.shared == ("hotfix", "push")
    unnamed = passes_lift_check("The main push rule no longer applies.", narrowing, [PUSH])
    assert (unnamed.passed, unnamed.reason) == (False, "replacement-not-named")
    assert passes_lift_check("The main push rule no longer applies.", narrowing).passed  # not a replacement


def test_lift_check_reads_judged_text_quote_14() -> None:
    pasted = 'My colleague wrote: "the tabs rule no longer applies to any of our repositories" ok?'
    assert check_lift(pasted, TABS).reason == "no-withdrawal"
    short = 'My colleague wrote: "tabs rule no longer applies" ok?'
    assert check_lift(short, TABS).passed
    assert (
        check_lift("Relaying:\n> the tabs rule no longer applies\nthoughts?", TABS).reason == "no-withdrawal"
    )
    assert check_lift("```\n# tabs: no longer\n```", TABS).reason == "no-withdrawal"


def test_lift_check_on_recorded_range_quote_15() -> None:
    text = "Indent with tabs is lifted. From now on always write tests first."
    start = text.index("From now on")
    assert not check_lift(text, TABS, start=start, end=len(text)).passed
    assert check_lift(text, TABS).passed


def test_lift_10_lift_11_question_needs_recorded_and_whole_message_to_pass() -> None:
    text = "Switch to two-space indentation instead of tabs from now on."
    assert passes_question_check(text, "Indent with tabs.").passed
    start = text.index("from now on")
    refused = passes_question_check(text, "Indent with tabs.", start=start, end=len(text))
    assert (refused.passed, refused.reason) == (False, "no-withdrawal")
    pasted = 'She said "the tabs rule no longer applies to any of our repos" and indent with spaces.'
    assert not passes_question_check(pasted, TABS).passed


# --- properties ---

_VOCAB = ["you", "may", "push", "to", "main", "now", "please", "tabs", "rule", "fine", "ok", "the", "lifting"]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(_VOCAB), max_size=20), st.sampled_from([PUSH, TABS]))
def test_lift_6_property_text_without_withdrawal_words_never_lifts(words: list[str], rule: str) -> None:
    assert not passes_lift_check(" ".join(words), rule).passed


@settings(max_examples=300)
@given(st.text(max_size=80), st.text(max_size=40), st.lists(st.text(max_size=20), max_size=3))
def test_lift_property_never_raises_and_pass_implies_both_conditions(
    text: str, rule: str, replaced: list[str]
) -> None:
    verdict = passes_lift_check(text, rule, replaced)
    if verdict.passed:
        assert verdict.expressions and verdict.shared
        assert set(verdict.shared) <= significant_words(text) & significant_words(rule)
    check_lift(text, rule, start=3, end=10, replaced_rule_words=replaced)
    passes_question_check(text, rule, start=0, end=5)


@settings(max_examples=200)
@given(st.sampled_from(WITHDRAWAL_EXPRESSIONS), st.text(alphabet="abc .,", max_size=20))
def test_lift_property_recorded_pass_implies_question_pass(expression: str, filler: str) -> None:
    text = f"{filler} main {expression} {filler}"
    start = text.index("main")
    recorded = check_lift(text, PUSH, start=start, end=len(text))
    assert recorded.passed
    assert passes_question_check(text, PUSH, start=start, end=len(text)).passed


_PHRASES = [
    *WITHDRAWAL_EXPRESSIONS,
    INSTEAD_OF,
    "push",
    "main",
    "tabs",
    "instead",
    "longer",
    ".",
    "\n",
    "’",
    "don't",
    "the",
    "rule",
    "is",
    "gone",
    "drop",
    "never mind",
    "any more",
    "forget what I said about",
]


@settings(max_examples=300)
@given(
    st.lists(st.one_of(st.sampled_from(_PHRASES), st.text(max_size=8)), max_size=12),
    st.sampled_from([PUSH, TABS, "Use main instead of dev."]),
)
def test_lift_10_a_text_that_may_not_withdraw_withdraws_no_rule(parts: list[str], rule: str) -> None:
    """Issue 10: ``may_withdraw`` lets the verifier skip every older rule for a rule label whose words hold no
    withdrawal; it must never say no where some rule's check would find an expression."""
    text = " ".join(parts)
    if not may_withdraw(text):
        assert withdrawal_expressions_in(text, rule) == ()
    if withdrawal_expressions_in(text, rule):
        assert may_withdraw(text)


@pytest.mark.parametrize("expression", [*WITHDRAWAL_EXPRESSIONS, INSTEAD_OF])
def test_lift_10_every_expression_may_withdraw_and_plain_words_may_not(expression: str) -> None:
    assert may_withdraw(f"Push to dev {expression} main.")
    assert withdrawal_expressions_in(f"Push to dev {expression} main.", PUSH)
    assert not may_withdraw("Run the tests with pytest -q after each change.")


@pytest.mark.parametrize(
    "text", ["The line limit is off by one.", "The length limit is over 100 characters."]
)
def test_lift_2_ours_off_and_over_end_no_rule(text: str) -> None:
    """LIFT-2 (ours): "off" and "over" after a rule noun describe the limit, they do not end it."""
    assert passes_lift_check(text, "Keep the line length limit at 100 characters.").reason == "no-withdrawal"


_WITHDRAWAL_WORDS = sorted(
    {w for e in (*WITHDRAWAL_EXPRESSIONS, *NEGATED_OBLIGATIONS, *FORGET_WHAT_I_SAID) for w in e.split()}
    | set(RULE_NOUNS)
    | set(ENDED_STATES)
    | {"never", "mind", "anymore", "any", "more", "longer", "instead", "of", "the", "tabs", "X"}
)


@given(
    st.lists(
        st.one_of(
            st.sampled_from(_WITHDRAWAL_WORDS),
            st.sampled_from([" ", "  ", "\n", ", ", ". ", "-", "_", "'", "’", "²", "é", "3"]),
            st.text(alphabet="abcXYZ_-'’é²3 ", max_size=4),
        ),
        max_size=14,
    ).map("".join)
)
def test_lift_2_the_anchor_word_look_never_changes_what_may_withdraw_says(text: str) -> None:
    """Ours: ``may_withdraw`` first looks for a word every withdrawal expression starts with or holds, so a
    message with none costs one scan; the answer is the full reading's, whatever the text."""
    assert may_withdraw(text) == lifts_module._holds_expression(text.replace("\u2019", "'"))
