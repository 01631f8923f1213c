"""The words call's pieces (FAIL-1, QUOTE-4, ours): which answers it serves, and what a reply may change.

A reply is model text: anything but a non-empty string for a message asked about changes nothing.
"""

from __future__ import annotations

from longhaul_daemon.passes.answers.labels import Label
from longhaul_daemon.passes.answers.schema import Defect, DraftAnswer, LabeledMessage, ParsedAnswer
from longhaul_daemon.passes.diff.words_call import rule_words_only, with_words

RULE = Label(kind="rule")
FIRST = ParsedAnswer(
    parsed=True,
    answer=DraftAnswer(
        labels=(LabeledMessage("u3", RULE, "wrong words"), LabeledMessage("u4", Label(kind="not-a-rule")))
    ),
)


def test_only_an_answer_whose_every_defect_is_a_rule_s_words_gets_the_words_call() -> None:
    words = Defect("rule-words", "u3", "u3 has 700 characters (over 600); give the rule's exact words")
    assert rule_words_only([words, Defect("rule-words", "u9", "…"), words]) == ("u3", "u9")
    assert rule_words_only([words, Defect("missing-label", "u4", "u4 has no label")]) == ()
    assert rule_words_only([]) == ()


def test_the_reply_s_words_replace_the_asked_ones_and_nothing_else() -> None:
    after = with_words(FIRST, '{"words": {"u3": "Never push.", "u4": "hijack", "u9": "x"}}', ["u3"])
    assert [(label.msg, label.label.kind, label.words) for label in after.answer.labels] == [
        ("u3", "rule", "Never push."),
        ("u4", "not-a-rule", None),
    ]


def test_a_reply_in_any_other_shape_changes_nothing() -> None:
    for reply in ("", "no json here", '{"words": ["u3"]}', '{"words": {"u3": ""}}', '{"words": {"u3": 7}}'):
        assert with_words(FIRST, reply, ["u3"]) is FIRST


def test_a_null_takes_the_rule_back_and_a_replacement_keeps_its_lifts() -> None:
    """As a full retry's `not a rule` would: the model finds no rule in the message after all."""
    replacing = LabeledMessage("u5", Label(kind="rule-and-lifts", targets=("R1",)), "bad")
    first = FIRST.__class__(parsed=True, answer=DraftAnswer(labels=(*FIRST.answer.labels, replacing)))
    after = with_words(first, '{"words": {"u3": null, "u5": null}}', ["u3", "u5"])
    assert [
        (label.msg, label.label.kind, label.label.targets, label.words) for label in after.answer.labels
    ] == [
        ("u3", "not-a-rule", (), None),
        ("u4", "not-a-rule", (), None),
        ("u5", "lifts", ("R1",), None),
    ]
