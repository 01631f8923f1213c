"""The question round: a bounded block of whole questions and a strictly read reply (LIFT-12..LIFT-16)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.events import Question
from longhaul_daemon.passes.answers.labels import Label
from longhaul_daemon.passes.answers.questions import (
    QUESTION_FOOTER,
    QUESTION_HEADER,
    question_block,
    read_question_reply,
    with_additions,
)
from longhaul_daemon.passes.answers.schema import DraftAnswer, LabeledMessage, ParsedAnswer
from longhaul_daemon.passes.answers.verify import question_text, replaced_question_text

Q17 = Question("u17", "u2", "rule-lift", question_text("u17", "u2", "Indent with tabs."))
Q9 = Question("u9", "u4", "rule-lift", question_text("u9", "u4", "Always indent with tabs."))
Q23 = Question(
    "u23", "u20", "replaced", replaced_question_text("u23", "lifts", "R1", "u20", "push hotfix branches")
)


def _reply(*labels: tuple[str, str]) -> str:
    return json.dumps({"labels": [{"msg": m, "label": lab} for m, lab in labels]})


def test_lift_12_block_has_the_header_the_questions_in_message_order_and_the_reply_shape() -> None:
    """LIFT-12, LIFT-13: header on own words versus quoted or pasted text; questions sorted by message."""
    text, asked = question_block([Q17, Q9], 2000)
    assert asked == (Q9, Q17)
    assert text.startswith(QUESTION_HEADER) and text.endswith(QUESTION_FOOTER)
    assert "own words" in QUESTION_HEADER and "quotes, pastes" in QUESTION_HEADER
    assert '{"labels":{"u<n>":' in QUESTION_FOOTER
    assert text.index(Q9.text) < text.index(Q17.text)


def test_lift_13_questions_are_whole_or_left_out() -> None:
    """LIFT-13: a question that would overflow is left out whole, never cut; none fitting gives ("", ())."""
    frame = len(QUESTION_HEADER) + 1 + len(QUESTION_FOOTER)
    just_one = frame + 1 + len(f"- {Q9.text}")
    text, asked = question_block([Q9, Q17], just_one)
    assert asked == (Q9,) and len(text) == just_one and Q17.text[:20] not in text
    assert question_block([Q9, Q17], just_one - 1) == ("", ())
    assert question_block([], 5000) == ("", ())


@settings(max_examples=80, deadline=None)
@given(limit=st.integers(0, 1200), count=st.integers(0, 5))
def test_lift_13_property_the_block_never_exceeds_the_limit(limit: int, count: int) -> None:
    """LIFT-13, FAIL-3: whatever the limit, the block stays within it and holds every asked question whole."""
    questions = [Question(f"u{n + 1}", "u1", "rule-lift", f"question {n} " * (n + 3)) for n in range(count)]
    text, asked = question_block(questions, limit)
    assert len(text) <= limit
    assert all(q.text in text for q in asked)
    assert list(asked) == questions[: len(asked)]


def test_lift_14_the_offered_form_adds_the_asked_target() -> None:
    """LIFT-14: `rule and lifts u2` for a rule-lift question; `lifts u20` for a replaced one."""
    reply = _reply(("u17", "rule and lifts u2"), ("u23", "lifts u20"))
    assert read_question_reply(reply, [Q17, Q23]) == (("u17", "u2"), ("u23", "u20"))
    assert read_question_reply(f"Sure:\n```json\n{_reply(('u17', 'Rule And Lifts U2'))}\n```", [Q17]) == (
        ("u17", "u2"),
    )


def test_lift_15_other_forms_targets_messages_and_non_json_change_nothing() -> None:
    """LIFT-15: only the offered form on an asked message counts."""
    for reply in (
        _reply(("u17", "lifts u2")),
        _reply(("u17", "rule and lifts u9")),
        _reply(("u17", "rule and lifts u2, u9")),
        _reply(("u17", "rule")),
        _reply(("u5", "rule and lifts u2")),
        _reply(("u23", "rule and lifts u20")),
        "u17: rule and lifts u2",
        json.dumps({"labels": "u17 rule and lifts u2"}),
    ):
        assert read_question_reply(reply, [Q17, Q23]) == (), reply


def test_lift_15_first_label_for_an_asked_message_is_the_one_read() -> None:
    """LIFT-15: a reply that labels u17 twice is read on its first label only."""
    assert read_question_reply(_reply(("u17", "rule"), ("u17", "rule and lifts u2")), [Q17]) == ()


def test_lift_15_a_rule_and_lifts_label_may_answer_in_its_own_form() -> None:
    """LIFT-15: a replaced question about a `rule and lifts` label also accepts `rule and lifts <target>`."""
    question = Question("u23", "u20", "replaced", "…", answer_label="rule and lifts u20")
    assert read_question_reply(_reply(("u23", "rule and lifts u20")), [question]) == (("u23", "u20"),)
    assert read_question_reply(_reply(("u23", "lifts u20")), [question]) == (("u23", "u20"),)


def _parsed(*labels: LabeledMessage) -> ParsedAnswer:
    return ParsedAnswer(True, DraftAnswer(labels=labels, narrative="n", now="w"), dropped={"evidence": 1})


def test_lift_14_with_additions_upgrades_rule_and_keeps_the_words() -> None:
    """LIFT-14: `rule` becomes `rule and lifts u2` with its words; `lifts R1` gains u20 in canonical order."""
    parsed = _parsed(
        LabeledMessage("u17", Label("rule"), "two-space indentation"),
        LabeledMessage("u23", Label("lifts", ("R1",))),
        LabeledMessage("u24", Label("not-a-rule")),
    )
    added = with_additions(parsed, [("u17", "u2"), ("u23", "u20"), ("u99", "u2")])
    assert added.answer.labels == (
        LabeledMessage("u17", Label("rule-and-lifts", ("u2",)), "two-space indentation"),
        LabeledMessage("u23", Label("lifts", ("R1", "u20"))),
        LabeledMessage("u24", Label("not-a-rule")),
    )
    assert added.dropped == parsed.dropped and added.answer.narrative == "n"
    assert parsed.answer.labels[0].label == Label("rule")  # the input is left alone
    assert with_additions(parsed, []) is parsed
