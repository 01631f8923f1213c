"""Label strings (LABEL-1, LABEL-2) and lift-target checks (LABEL-8, LABEL-9, LABEL-16, FAIL-18)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.labels import Label, check_targets, format_label, id_number, parse_label
from longhaul_daemon.state.model import Rule


def rule(rid: str, message: str, *, lifted: bool = False, by: str | None = None) -> Rule:
    return Rule(id=rid, words=f"words of {rid}", message=message, seq=1, span=1, lifted=lifted, liftedBy=by)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rule", Label("rule")),
        ("not a rule", Label("not-a-rule")),
        ("lifts R1", Label("lifts", ("R1",))),
        ("rule and lifts u4", Label("rule-and-lifts", ("u4",))),
        ("lifts R1, R6", Label("lifts", ("R1", "R6"))),
    ],
)
def test_label_1_the_four_forms(text: str, expected: Label) -> None:
    """LABEL-1: exactly the four forms, with one or more comma-separated R/u targets."""
    assert parse_label(text) == expected
    assert parse_label(format_label(expected)) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("  RULE\n", Label("rule")),
        ("Not  A\tRule", Label("not-a-rule")),
        ("Rule And Lifts  r1 ,U4", Label("rule-and-lifts", ("R1", "u4"))),
        ("lifts u7,R2,r2", Label("lifts", ("R2", "u7"))),
    ],
)
def test_label_1_case_and_whitespace_ignored(text: str, expected: Label) -> None:
    """LABEL-1 proposal: surrounding whitespace and letter case are ignored; targets come out canonical."""
    assert parse_label(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "notarule",
        "not rule",
        "rules",
        "a rule",
        "lifts",
        "lifts R1,",
        "lifts R1 and R2",
        "lifts R01",
        "lifts C3",
        "lifts R1 R2",
        '"rule"',
        "rule.",
        "rule and lifts",
        "lifts R0",
        "rule, lifts R1",
    ],
)
def test_label_1_anything_else_is_a_defect(text: str) -> None:
    """LABEL-1: any other string is a format defect (parse gives None)."""
    assert parse_label(text) is None


def test_label_1_non_strings_are_not_labels() -> None:
    assert parse_label(None) is None
    assert parse_label(3) is None
    assert parse_label(["rule"]) is None


@given(st.text(max_size=60))
def test_label_1_parse_never_raises(text: str) -> None:
    label = parse_label(text)
    if label is not None:
        assert parse_label(format_label(label)) == label


def test_label_2_spellings_of_one_label_compare_equal() -> None:
    """LABEL-2 proposal: identical duplicates merge, so two spellings of one label must be equal."""
    assert parse_label("lifts R6, R1") == parse_label("LIFTS r1,r6")


def test_id_number() -> None:
    assert id_number("u14", "u") == 14
    assert id_number("R3", "u") is None
    assert id_number("u014", "u") is None


def test_label_8_r_target_must_name_a_rule_in_the_state() -> None:
    """LABEL-8: an R<n> naming no rule is a defect; the label keeps its other targets (LABEL-9)."""
    check = check_targets("u9", Label("lifts", ("R1", "R7")), [rule("R1", "u2")])
    assert check.problems == (("R7", "unknown-target"),)
    assert check.label == Label("lifts", ("R1",))


def test_label_8_u_target_must_come_before_the_lifting_message() -> None:
    """LABEL-8: a u<n> target naming the message itself or a later one is a defect."""
    rules = [rule("R1", "u2")]
    check = check_targets("u9", Label("lifts", ("u9", "u12")), rules, new_rule_messages={"u12"})
    assert check.problems == (("u9", "later-target"), ("u12", "later-target"))
    assert check.label == Label("not-a-rule")  # no target left: the message still counts as judged


def test_label_16_a_new_rule_is_named_by_its_message() -> None:
    """LABEL-16: a rule new in this answer has no R<n> yet; an earlier u<n> labeled rule is a valid target."""
    check = check_targets("u9", Label("rule-and-lifts", ("u5",)), [], new_rule_messages={"u5"})
    assert check.problems == ()
    assert check.label == Label("rule-and-lifts", ("u5",))


def test_label_8_u_target_giving_no_rule_is_a_defect() -> None:
    check = check_targets("u9", Label("lifts", ("u5",)), [], new_rule_messages=set())
    assert check.problems == (("u5", "unknown-target"),)


def test_label_16_a_closed_rule_can_be_named_by_r_or_u_and_merges() -> None:
    """LABEL-16: after Close either id names the rule; naming both is one target."""
    check = check_targets("u9", Label("lifts", ("R1", "u2")), [rule("R1", "u2")])
    assert check.label == Label("lifts", ("R1",))
    assert check_targets("u9", Label("lifts", ("u2",)), [rule("R1", "u2")]).label == Label("lifts", ("u2",))


def test_label_8_target_already_lifted_plainly_is_dropped_silently() -> None:
    """LABEL-8, FAIL-18: one lifted plainly goes without a defect; `rule and lifts` falls back to `rule`."""
    rules = [rule("R1", "u2", lifted=True, by="u5")]
    check = check_targets("u9", Label("rule-and-lifts", ("R1",)), rules)
    assert check.problems == ()
    assert check.silently_dropped == ("R1",)
    assert check.label == Label("rule")


def test_lift_7_target_replaced_by_a_narrowing_is_kept_for_the_question() -> None:
    """LABEL-8 → LIFT-7: a replaced target is no defect; it is flagged for the question."""
    rules = [rule("R1", "u2", lifted=True, by="u20"), rule("R2", "u20")]
    check = check_targets("u23", Label("lifts", ("R1",)), rules)
    assert check.problems == ()
    assert check.replaced == ("R1",)
    assert check.label == Label("lifts", ("R1",))


def test_label_9_each_target_judged_on_its_own() -> None:
    """LABEL-9: a good target survives next to a bad one."""
    rules = [rule("R1", "u2"), rule("R2", "u3", lifted=True, by="u4")]
    check = check_targets("u9", Label("rule-and-lifts", ("R1", "R2", "R5")), rules)
    assert check.label == Label("rule-and-lifts", ("R1",))
    assert check.problems == (("R5", "unknown-target"),)
    assert check.silently_dropped == ("R2",)


def test_rule_and_not_a_rule_have_no_targets_to_check() -> None:
    assert check_targets("u3", Label("rule"), []).label == Label("rule")
    assert Label("rule").records_rule and not Label("not-a-rule").records_rule
