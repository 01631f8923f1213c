"""The standing-rule reading of earlier messages on takeover (TAKEOVER-6..TAKEOVER-15, TAKEOVER-22)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.lifts import WITHDRAWAL_EXPRESSIONS
from longhaul_daemon.passes.answers.quotes import LONG_MESSAGE, cut_at
from longhaul_daemon.passes.answers.rule_reading import Reading, read_standing_rule


def picked(text: str) -> bool:
    return read_standing_rule(text).picked


FILLER = "Some background on the build, which is slow on the old runners and takes a while. "


def _long(*sentences: str) -> str:
    """A message over 600 characters whose given sentences sit between filler with no rule words."""
    head = FILLER * 4
    text = head + " ".join(sentences) + " " + FILLER * 4
    assert len(text) > LONG_MESSAGE
    return text


# --- TAKEOVER-6, TAKEOVER-22: what a reading records ---


def test_takeover_6_not_picked_has_no_range() -> None:
    assert read_standing_rule("tests go under tests/") == Reading(picked=False, start=-1, end=-1)
    assert read_standing_rule("") == Reading(picked=False)


def test_takeover_6_one_qualifying_sentence_is_enough() -> None:
    assert picked("The build is slow. Thanks for looking. Never push to main. Cheers.")


def test_takeover_22_short_message_records_whole() -> None:
    text = "  Some context first.\nNever push to main.  "
    assert read_standing_rule(text) == Reading(picked=True, start=0, end=len(text))


def test_takeover_22_exactly_600_characters_records_whole() -> None:
    text = ("x" * (LONG_MESSAGE - 20)) + " Never push to main."
    text = text[len(text) - LONG_MESSAGE :]
    assert len(text) == LONG_MESSAGE
    assert read_standing_rule(text) == Reading(picked=True, start=0, end=LONG_MESSAGE)


def test_takeover_22_long_message_records_first_to_last_qualifying_sentence() -> None:
    text = _long("Never push to main.", "The runners are old.", "Always lint before committing!")
    reading = read_standing_rule(text)
    assert reading.picked
    assert text[reading.start : reading.end] == (
        "Never push to main. The runners are old. Always lint before committing!"
    )


def test_takeover_22_long_message_with_one_sentence_records_it_trimmed() -> None:
    text = FILLER * 8 + "\n\n   Do not force-push shared branches   \n\n" + FILLER
    reading = read_standing_rule(text)
    assert text[reading.start : reading.end] == "Do not force-push shared branches"


def test_takeover_22_long_message_keeps_closing_tag_with_its_sentence() -> None:
    text = _long("Always run the linter before committing. Ok?")
    reading = read_standing_rule(text)
    assert text[reading.start : reading.end] == "Always run the linter before committing. Ok?"


def test_takeover_22_long_message_without_rule_is_not_picked() -> None:
    assert read_standing_rule(FILLER * 10) == Reading(picked=False)


# --- TAKEOVER-7: questions and closing tags ---


@pytest.mark.parametrize(
    "text",
    [
        "Always run the linter before committing, ok?",
        "Always run the linter before committing, okay?",
        "Always run the linter before committing; right?",
        "Always run the linter before committing - alright?",
        "Always run the linter before committing — OK?",
        "Always run the linter before committing. Ok?",
        "Always run the linter before committing.\nright?",
    ],
)
def test_takeover_7_closing_tag_ok_is_ignored(text: str) -> None:
    assert picked(text)


@pytest.mark.parametrize(
    "text",
    [
        "Should we always run the linter?",
        "Do you always lint? ok?",
        "Is it true that we must sign commits? ",
        "We always lint right?",
        "Must we really?!",
    ],
)
def test_takeover_7_question_never_qualifies(text: str) -> None:
    assert not picked(text)


def test_takeover_7_question_leaves_other_sentences_alone() -> None:
    assert picked("Why is CI red? Never merge with a red CI.")


# --- TAKEOVER-8: from now on ---


@pytest.mark.parametrize(
    "text",
    [
        "From now on, sign off every commit.",
        "from here on we squash merges",
        "Going forward, use pnpm.",
        "switch to two-space indentation instead of tabs from now on",
    ],
)
def test_takeover_8_from_now_on_qualifies_without_rule_word(text: str) -> None:
    assert picked(text)


@pytest.mark.parametrize(
    "text",
    [
        "From now on the lint rule no longer applies.",
        "Going forward the freeze is lifted.",
        "From now on, forget that.",
        "from now on, shall we squash?",
        "from now, on the other hand, it is fine",
    ],
)
def test_takeover_8_withdrawal_or_question_does_not_qualify(text: str) -> None:
    assert not picked(text)


def test_takeover_8_withdrawal_does_not_stop_a_rule_clause() -> None:
    assert picked("From now on the lint rule no longer applies, always use black.")


# --- TAKEOVER-9: rule words ---


@pytest.mark.parametrize(
    "text",
    [
        "never push",
        "ALWAYS lint",
        "Don't push",
        "Don’t push",
        "do not push",
        "Do\tNot push",
        "must lint",
        "Stop.",
        "only use pnpm",
    ],
)
def test_takeover_9_rule_words_any_case(text: str) -> None:
    assert picked(text)


@pytest.mark.parametrize(
    "text",
    ["You mustn't push.", "I can't lint.", "We shouldn't merge.", "it stops here", "nevertheless", "do, not"],
)
def test_takeover_9_other_words_are_not_rule_words(text: str) -> None:
    assert not picked(text)


# --- TAKEOVER-10: for now ---


@pytest.mark.parametrize(
    "text",
    ["don't merge yet", "only run the unit tests this time", "stop the watcher for now", "Never for now."],
)
def test_takeover_10_for_now_marker_excludes(text: str) -> None:
    assert not picked(text)


# --- TAKEOVER-11: withdrawals ---


@pytest.mark.parametrize(
    "text",
    [
        "Forget it, leave the changelog alone.",
        "Scratch that, never mind.",
        "Ignore that; it was a typo",
        "always lint is lifted",
        "the rule to always lint no longer holds",
        "always lint doesn’t apply here",
        "Never squash is withdrawn",
        "always rebase not anymore",
        "You don't need to lint the code any longer.",
        "No need to always rebase anymore",
    ],
)
def test_takeover_11_withdrawal_excludes(text: str) -> None:
    assert not picked(text)


@pytest.mark.parametrize(
    "text",
    [
        "Drop the indentation rule, the formatter decides that now.",
        "Drop the always-spaces indentation rule, the formatter decides that now.",
        "Scrap the logging-only rule, print is fine now.",
        "The always-rebase rule is cancelled.",
        "the must-review rule’s gone",
        "Forget what I said about always rebasing.",
    ],
)
def test_takeover_11_ours_the_added_lift_2_expressions_exclude(text: str) -> None:
    """TAKEOVER-11 with LIFT-2 (ours): a clause that drops a rule names the rule's words; it orders
    nothing."""
    assert not picked(text)


@pytest.mark.parametrize(
    "text",
    [
        "Don't drop the indentation rule.",
        "Never remove the only-tabs rule.",
        "Do not forget what I said about rebasing.",
        "The always-rebase rule never was removed.",
    ],
)
def test_takeover_11_ours_an_order_not_to_drop_a_rule_is_a_rule(text: str) -> None:
    assert picked(text)


def test_takeover_11_a_negated_order_with_anymore_is_still_a_rule() -> None:
    assert picked("Don't use print anymore.")
    assert picked("Never squash commits any more.")


@pytest.mark.parametrize("expression", WITHDRAWAL_EXPRESSIONS)
def test_takeover_11_every_lift_2_expression_excludes(expression: str) -> None:
    assert picked("always lint the code")
    assert not picked(f"always lint the code {expression}")


@pytest.mark.parametrize(
    "text",
    ["Don't forget it.", "Do not forget that", "don’t ignore that warning", "Do not lift the freeze"],
)
def test_takeover_11_dont_before_marker_is_no_withdrawal(text: str) -> None:
    assert picked(text)


def test_takeover_11_instead_of_alone_withdraws_nothing() -> None:
    assert picked("always use spaces instead of tabs")


# --- TAKEOVER-12: never mind ---


def test_takeover_12_never_mind_is_no_rule() -> None:
    assert not picked("Never mind, do it your way.")
    assert not picked("never mind the always-on flag")
    assert picked("Never mind that, always lint.")


# --- TAKEOVER-13: descriptions of things ---


@pytest.mark.parametrize(
    "text",
    [
        "add an option that keeps only lines that match",
        "write a helper which must be pure",
        "ping the person who never replies",
        "This is the only way",
        "an only child",
    ],
)
def test_takeover_13_rule_word_in_description_excludes(text: str) -> None:
    assert not picked(text)


@pytest.mark.parametrize(
    "text",
    [
        "Make sure that you always lint",
        "Remember that we never push to main",
        "I decided that we must sign commits",
        "Always use the tool that keeps lines",
        "use only the tools that match",
    ],
)
def test_takeover_13_rule_word_outside_description_qualifies(text: str) -> None:
    assert picked(text)


# --- TAKEOVER-14: clauses ---


@pytest.mark.parametrize(
    "text",
    [
        "never deploy on a Friday, not even this time",
        "never deploy on a Friday; not yet",
        "never deploy on a Friday: this time too",
        "never deploy on a Friday — not even this time",
        "never deploy on a Friday - not even this time",
        "never deploy on a Friday but not yet",
        "forget it, always lint",
    ],
)
def test_takeover_14_exclusion_acts_only_on_its_clause(text: str) -> None:
    assert picked(text)


def test_takeover_14_hyphen_inside_word_does_not_split() -> None:
    assert not picked("don't merge-yet")
    assert not picked("only pass --yet")


# --- Examples ---


def test_ex_4_reading() -> None:
    assert picked("never deploy on a Friday, not even this time")
    assert not picked("don't deploy yet, the tests are red")


def test_ex_5_reading() -> None:
    text = "Add a changelog entry for every user-facing change. Don't forget it."
    assert len(text) == 68
    assert read_standing_rule(text) == Reading(picked=True, start=0, end=68)
    assert not picked("Forget it, leave the changelog alone.")


def test_ex_11_reading() -> None:
    assert not picked("tests go under tests/")
    assert picked("every dry-run line must start with DRY:")
    assert not picked("add an option that keeps only lines that match")
    assert not picked("the DRY: prefix rule is lifted")


# --- TAKEOVER-15 and properties ---

_WORDS = [
    "never", "always", "don't", "do", "not", "must", "stop", "only", "the", "an", "option", "that", "which",
    "who", "forget", "it", "yet", "for", "now", "this", "time", "from", "on", "going", "forward", "mind",
    "lifted", "no", "longer", "but", "ok?", "right?", "lint", "push", ",", ";", ":", "—", "-", ".", "!", "?",
    "\n", "\r\n", "…", "’", "'",
]  # fmt: skip
_phrases = st.lists(st.sampled_from(_WORDS), max_size=60).map(" ".join)
_texts = st.one_of(
    st.text(max_size=200), _phrases, st.tuples(_phrases, _phrases).map(lambda p: p[0] + FILLER * 8 + p[1])
)


@settings(max_examples=300)
@given(_texts)
def test_takeover_15_deterministic_and_never_raises(text: str) -> None:
    first = read_standing_rule(text)
    assert first == read_standing_rule(text)
    assert isinstance(first.picked, bool)


@settings(max_examples=300)
@given(_texts)
def test_takeover_22_range_is_a_trimmed_substring_at_word_boundaries(text: str) -> None:
    reading = read_standing_rule(text)
    if not reading.picked:
        assert (reading.start, reading.end) == (-1, -1)
        return
    assert 0 <= reading.start < reading.end <= len(text)
    if len(text) <= LONG_MESSAGE:
        assert (reading.start, reading.end) == (0, len(text))
        return
    stretch = text[reading.start : reading.end]
    assert stretch == stretch.strip()
    assert not cut_at(text, reading.start)
    assert not cut_at(text, reading.end)
    assert read_standing_rule(stretch).picked


@settings(max_examples=200)
@given(_phrases)
def test_takeover_14_adding_a_clause_never_unpicks(text: str) -> None:
    if picked(text) and "?" not in text and len(text) < 500:
        assert picked(text + ", not yet")
