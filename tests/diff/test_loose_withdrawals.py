"""A withdrawal said to last but worded unlike its rule is still flagged (doubts.py, reversals.py, ours).

"Scrap the doc comments thing I mentioned" shares no stem with "every public function gets a docstring", yet
no reader doubts what it withdraws. When a sentence says its change lasts (a lasting time or a pointer to an
earlier order, :attr:`Cues.states_withdrawal`) and no rule's stems tie it, code flags the rules its words
are loosely about: the same word openings, or a subject both name in other words (rule_topics.py). A flag
shows the user's sentence; it never lifts. The wordings are this file's own, not any bench bank's.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.reversal_cues import may_state_withdrawal, sentence_cues
from longhaul_daemon.passes.answers.reversals import SENTENCE, closest_rules, rule_topics
from longhaul_daemon.passes.answers.rule_topics import topic_families
from longhaul_daemon.passes.answers.withdrawal_reading import (
    StandingRule,
    lift_checked,
    untied_withdrawal,
    withdrawal_candidates,
)

DOCSTRINGS = "Every public function gets a docstring."
HINTS = "Annotate every new function with type hints."
PACKAGES = "Stick to the standard library, no third-party packages."
PUSH = "Never push to the remote yourself."
STYLE = "Run black on every file you touch."
RULES = (
    StandingRule("R1", "u1", DOCSTRINGS),
    StandingRule("R2", "u2", HINTS),
    StandingRule("R3", "u3", PACKAGES),
    StandingRule("R4", "u4", PUSH),
    StandingRule("R5", "u5", STYLE),
)


def _flagged(text: str, rules: tuple[StandingRule, ...] = RULES) -> list[str]:
    found = withdrawal_candidates((OfferedMessage("u9", text),), rules)
    assert not any(c.passes for c in found), "a loose tie never passes the lift check"
    return sorted({c.rule.name for c in found})


def _states(text: str) -> bool:
    cues = [sentence_cues(m.group().strip(), withdrawing=False) for m in SENTENCE.finditer(text)]
    return any(c is not None and c.states_withdrawal for c in cues)


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        (
            "Scrap the doc comments thing I mentioned, nobody reads them.",
            ["R1"],
        ),  # an opening: doc, docstring
        ("The annotation rule is over, leave them out.", ["R2"]),  # a subject in other words: typing
        ("Honestly, forget what I said about outside libraries.", ["R3"]),  # dependencies
        ("Formatting: don't worry about it from now on, the editor does it.", ["R5"]),
        ("The remote ban is over.", ["R4"]),  # the order itself ended, against a prohibition
    ],
)
def test_a_lasting_withdrawal_in_other_words_flags_the_rule_it_is_about(
    text: str, flagged: list[str]
) -> None:
    assert _states(text)
    assert _flagged(text) == flagged


@pytest.mark.parametrize(
    "text",
    [
        "We don't push to the remote anymore.",  # a release of the act restates a prohibition
        "Skip the docstrings for this one file; the rule still stands otherwise.",  # this once, and it holds
        "Forget the flaky login test, it's fixed.",  # no lasting marker: a remark about now
        "Scrap the coffee machine thing I mentioned.",  # lasting, but about no rule at all
        "Which rule did I mention about docs?",  # a question withdraws nothing
    ],
)
def test_news_a_restatement_a_one_off_or_a_question_flags_nothing(text: str) -> None:
    assert _flagged(text) == []


def test_the_loose_tie_flags_every_rule_that_meets_it_most() -> None:
    """Two rules meeting the sentence's words equally are both flagged: code cannot tell them apart."""
    both = (
        StandingRule("R1", "u1", "Document every module."),
        StandingRule("R2", "u2", "Docstrings on every module."),
    )
    assert _flagged("Scrap the doc thing I mentioned.", both) == ["R1", "R2"]


def test_lift_8_what_a_replacement_took_over_ties_nothing_loosely() -> None:
    narrowing = StandingRule(
        "R4", "u3", "Docstrings only on public functions.", ("Every function gets a docstring.",)
    )
    own = rule_topics(narrowing.words, narrowing.replaced_words)
    assert "publ" in own and not own & {"docs", "func", "#documentation"}
    assert _flagged("The docstring rule is over.", (narrowing,)) == []


def test_a_lasting_withdrawal_is_offered_to_the_model_even_when_no_rule_meets_it() -> None:
    """untied_withdrawal: the model is offered the rules in force for it (call_schemas.lift_targets)."""
    message = OfferedMessage("u9", "Scrap the coffee machine thing I mentioned.")
    assert untied_withdrawal(message, lift_checked(withdrawal_candidates((message,), RULES)))
    plain = OfferedMessage("u9", "Run the tests and tell me what fails.")
    assert not untied_withdrawal(plain, lift_checked(withdrawal_candidates((plain,), RULES)))


def test_topic_families_name_a_subject_in_its_many_words() -> None:
    assert topic_families("add annotations where mypy complains") == {"typing"}
    assert topic_families("bring in whatever third-party packages help") == {"dependencies"}
    assert topic_families("the release notes are written by CI") == {"changelog"}
    assert topic_families("plain words about lunch") == frozenset()
    assert closest_rules(
        "forget the annotations", {"R1": rule_topics(HINTS), "R2": rule_topics(PACKAGES)}
    ) == ("R1",)
    assert closest_rules("forget lunch", {"R1": rule_topics(HINTS)}) == ()


_WORDS = [
    "anymore",
    "from now on",
    "rule",
    "the",
    "stop",
    "forget",
    "tests",
    "is over",
    "you can",
    "still stands",
    "docs",
    ".",
    "?",
    "this once",
]


@given(st.lists(st.sampled_from(_WORDS), max_size=12))
def test_may_state_withdrawal_is_false_only_when_no_sentence_states_one(words: list[str]) -> None:
    """may_state_withdrawal is the cheap look untied_withdrawal takes first: it may say yes wrongly, never
    no."""
    text = " ".join(words)
    if not may_state_withdrawal(text):
        assert not _states(text)
