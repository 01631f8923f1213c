"""The answer: DIFF-17 extraction, DIFF-15 normalization, DIFF-6/16 bounds, DIFF-14 evidence, LABEL-2/3/8."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from longhaul_daemon.passes.answers.extract import (
    BOUNDS,
    Answer,
    Decision,
    cut_to_bounds,
    extract_json,
    normalize,
    parse_answer,
    verify_answer,
)
from longhaul_daemon.passes.answers.labels import Label
from longhaul_daemon.state.model import Rule

OFFERED = ["u3", "u4", "u7"]
LEDGER = {"C1", "C2", "E1"}


def answer(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "labels": [
            {"msg": "u3", "label": "rule"},
            {"msg": "u4", "label": "not a rule"},
            {"msg": "u7", "label": "lifts u3"},
        ],
        "decisions": [{"text": "use sqlite", "why": "no server", "evidence": ["C1"]}],
        "deadEnds": [{"text": "tried redis", "evidence": ["E1"]}],
        "narrative": "Switched storage to sqlite.",
        "now": "Writing the migration.",
    }
    return base | over


def parse(obj: Any, **kwargs: Any) -> Any:
    return parse_answer(json.dumps(obj), OFFERED, LEDGER, **kwargs)


def codes(parsed: Any) -> list[tuple[str, str | None]]:
    return [(d.code, d.msg) for d in parsed.defects]


def test_diff_5_a_good_answer_has_no_defects() -> None:
    """DIFF-4/DIFF-5: the proposed schema reads whole."""
    parsed = parse(answer(objective="ship it", values=[{"name": "port", "value": "5173", "turn": "u4"}]))
    assert parsed.parsed and parsed.defects == ()
    labels = {item.msg: item.label for item in parsed.answer.labels}
    assert labels == {"u3": Label("rule"), "u4": Label("not-a-rule"), "u7": Label("lifts", ("u3",))}
    assert parsed.answer.objective == "ship it" and parsed.answer.values[0].turn == "u4"
    final, dropped = cut_to_bounds(parsed)
    assert isinstance(final, Answer) and dropped == {}
    assert final.decisions == (Decision(text="use sqlite", why="no server", evidence=("C1",)),)


def test_diff_17_object_bare_or_in_a_code_fence() -> None:
    """DIFF-17: the first complete top-level object, bare or fenced, prose around it ignored."""
    assert extract_json('Here you go:\n```json\n{"a": {"b": 1}}\n```\nthanks {"c": 2}') == {"a": {"b": 1}}
    assert extract_json('{"a": 1} {"b": 2}') == {"a": 1}
    assert extract_json('note {not json} then {"a": [1, "}"]}') == {"a": [1, "}"]}


def test_diff_17_no_object_is_a_defect() -> None:
    for reply in ["", "no json here", "[1, 2]", "{", 'He wrote {"x"', "{" + " " * 50]:
        parsed = parse_answer(reply, OFFERED, LEDGER)
        assert not parsed.parsed and parsed.form == "none" and codes(parsed) == [("no-json", None)]


def test_issue_11_an_answer_begun_but_cut_or_broken_is_its_own_defect() -> None:
    """A reply that opens the answer object and never closes it, or writes it as invalid JSON, is "begun":
    the model can write the answer, so the retry note can say what went wrong."""
    for reply in ['{"labels": [{"msg": "u3"}', "{'labels': []}", '{ "narrative": "x", "now": }']:
        parsed = parse_answer(reply, OFFERED, LEDGER)
        assert not parsed.parsed and parsed.form == "begun", reply
        assert codes(parsed) == [("not-json", None)]


def test_issue_11_an_echoed_object_is_not_the_answer() -> None:
    """A tool result echoed from the prompt is JSON of another shape: never the answer, whatever follows."""
    for reply in ['{"status":"ok","uptime_s":812}', 'Tool said {"status":"ok","uptime_s":812}. Done.']:
        parsed = parse_answer(reply, OFFERED, LEDGER)
        assert not parsed.parsed and parsed.form == "foreign"
        assert codes(parsed) == [("not-the-answer", None)]
    issue = {"labels": [{"name": "bug"}], "title": "x", "number": 11, "state": "OPEN", "body": "y"}
    assert parse(issue).form == "foreign"  # a labels list among three or more keys of its own
    echoed_then_answer = '{"status":"ok","uptime_s":812}\n' + json.dumps(answer())
    assert parse_answer(echoed_then_answer, OFFERED, LEDGER).defects == ()


def test_issue_11_shape_tolerance() -> None:
    """Up to two keys of the model's own are tolerated; labels may be omitted when narrative and now are
    there (the missing labels are then defects of an answer, FAIL-1)."""
    assert parse(answer(summary="x", confidence="high")).defects == ()
    assert parse(answer(summary="x", confidence="high", notes="n")).form == "foreign"
    no_labels = {"narrative": "n", "now": "w"}
    assert [c for c, _ in codes(parse(no_labels))] == ["missing-label"] * 3
    assert parse({"narrative": "n"}).form == "foreign"
    assert parse({"labels": ["u3 rule"]}).form == "foreign"  # no item names a message


def test_diff_17_truncated_object_yields_nothing_nested() -> None:
    """An object cut off at the output limit is not replaced by one nested in it (it is not top-level)."""
    assert extract_json('{"labels": [{"msg": "u3", "label": "rule"}, {"msg"') is None


def test_diff_15_null_optional_and_omitted_lists_are_normalized() -> None:
    """DIFF-15: null for an optional → absent; an omitted or null list → empty; no defect."""
    raw = {
        "labels": [{"msg": m, "label": "not a rule", "words": None} for m in OFFERED],
        "decisions": [{"text": "x", "why": None, "evidence": None}],
        "values": None,
        "narrative": "n",
        "now": "w",
        "objective": None,
    }
    assert normalize(raw) == {
        "labels": [{"msg": m, "label": "not a rule"} for m in OFFERED],
        "decisions": [{"text": "x", "evidence": []}],
        "deadEnds": [],
        "values": [],
        "fixed": [],
        "narrative": "n",
        "now": "w",
    }
    parsed = parse(raw)
    assert parsed.defects == ()
    assert parsed.answer.objective is None and parsed.answer.decisions[0].why is None


def test_diff_15_other_deviations_are_defects() -> None:
    """DIFF-15: a wrong type or a null required field is not normalized."""
    parsed = parse(answer(narrative=None, now=5, decisions={"text": "x"}))
    assert ("wrong-type", None) in codes(parsed)
    assert [d.text for d in parsed.defects if d.code == "wrong-type"] == [
        "`decisions` must be a list",
        "`narrative` must be a string",
        "`now` must be a string",
    ]
    missing = parse({k: v for k, v in answer().items() if k != "now"})
    assert codes(missing) == [("missing-field", None)]
    assert normalize([1]) == [1]


def test_fail_2_a_bad_item_is_left_out_and_the_rest_kept() -> None:
    """FAIL-2: the accepted-so-far answer drops defective items only."""
    parsed = parse(answer(decisions=[{"text": 3}, {"text": "kept", "evidence": ["C2"]}]))
    assert codes(parsed) == [("wrong-type", None)]
    assert [d.text for d in parsed.answer.decisions] == ["kept"]
    assert parsed.dropped == {"decisions": 1}


def test_diff_14_unknown_evidence_removed_item_kept() -> None:
    """DIFF-14: ids the ledger lacks are removed; an item left with none stays; no defect."""
    parsed = parse(
        answer(deadEnds=[{"text": "x", "evidence": ["C99", "E1", "E1"]}, {"text": "y", "evidence": ["C9"]}])
    )
    assert parsed.defects == ()
    assert [d.evidence for d in parsed.answer.deadEnds] == [["E1"], []]
    assert parsed.dropped == {"evidence": 2}


def test_label_2_missing_label_is_a_defect() -> None:
    """LABEL-2: every offered message needs a label; a missing one is a defect naming it."""
    parsed = parse(answer(labels=[{"msg": "u3", "label": "rule"}]))
    assert codes(parsed) == [("missing-label", "u4"), ("missing-label", "u7")]


def test_label_2_optional_messages_may_go_unlabeled() -> None:
    """TAKEOVER-20 hook: picked takeover messages may go unlabeled."""
    parsed = parse(answer(labels=[{"msg": "u3", "label": "rule"}]), label_optional={"u4", "u7"})
    assert parsed.defects == ()


def test_label_2_duplicates_merge_and_conflicts_are_defects() -> None:
    """LABEL-2 proposal: identical duplicates merge; two different labels for one message are a defect."""
    labels = [
        {"msg": "u3", "label": "rule"},
        {"msg": "u3", "label": " RULE ", "words": "w"},
        {"msg": "u4", "label": "rule"},
        {"msg": "u4", "label": "not a rule"},
        {"msg": "u7", "label": "not a rule"},
    ]
    parsed = parse(answer(labels=labels))
    assert codes(parsed) == [("conflicting-labels", "u4")]
    assert [(i.msg, i.words) for i in parsed.answer.labels] == [("u3", "w"), ("u7", None)]


def test_label_1_unknown_label_is_a_defect() -> None:
    parsed = parse(answer(labels=[{"msg": "u3", "label": "rule!"}, {"msg": "u4", "label": "not a rule"}]))
    assert codes(parsed) == [("bad-label", "u3"), ("missing-label", "u7")]


def test_label_3_labels_for_ids_not_offered_are_ignored_and_counted() -> None:
    """LABEL-3 proposal: ignored, counted as dropped, no defect."""
    extra = [{"msg": "u99", "label": "rule"}, {"msg": "u98", "label": 7}, {"msg": "C1", "label": "rule"}]
    parsed = parse(answer(labels=[*answer()["labels"], *extra]))
    assert parsed.defects == ()
    assert parsed.dropped == {"labels-not-offered": 3}


def test_label_8_targets_checked_in_the_answer() -> None:
    """LABEL-8: a target naming no rule or a later message is a defect; LIFT-7 ones are reported."""
    rules = [
        Rule(id="R1", words="a", message="u1", seq=1, span=1, lifted=True, liftedBy="u2"),
        Rule(id="R2", words="b", message="u2", seq=2, span=1),
    ]
    labels = [
        {"msg": "u3", "label": "lifts u7"},
        {"msg": "u4", "label": "lifts R9, R1"},
        {"msg": "u7", "label": "rule and lifts u4"},
    ]
    parsed = parse(answer(labels=labels), rules=rules)
    assert codes(parsed) == [("later-target", "u3"), ("unknown-target", "u4"), ("unknown-target", "u7")]
    assert parsed.replaced == (("u4", "R1"),)
    assert {i.msg: i.label for i in parsed.answer.labels}["u7"] == Label("rule")


def test_diff_16_over_bound_is_a_defect_then_cut_after_the_retry() -> None:
    """DIFF-6/DIFF-16: over-bound lists and strings are defects; cut_to_bounds cuts and counts them."""
    long_words = "w" * (BOUNDS["words"] + 1)
    over = answer(
        labels=[{"msg": "u3", "label": "rule", "words": long_words}, *answer()["labels"][1:]],
        decisions=[{"text": f"d{i}", "evidence": ["C1", "C2", "E1"]} for i in range(10)],
        narrative="n" * 241,
        values=[{"name": "x" * 81, "value": "v" * 201, "turn": "u3"}],
    )
    parsed = parse(over)
    assert [d.code for d in parsed.defects] == ["over-bound"] * 5
    final, dropped = cut_to_bounds(parsed)
    assert len(final.decisions) == BOUNDS["decisions"]
    assert final.narrative is not None and len(final.narrative) == 240 and final.narrative.endswith("…")
    assert final.labels[0].words is None and final.values == ()
    assert dropped == {"decisions": 2, "cut-text": 1, "words": 1, "values": 1}  # the value goes whole


def test_issue_11_text_that_says_nothing_is_never_kept() -> None:
    """A schema-constrained small model writes "..." into every string it must fill: such decisions and dead
    ends go, prose and ``why`` become absent, and rule words count as not given; each is counted."""
    filler = answer(
        labels=[{"msg": "u3", "label": "rule", "words": "..."}, *answer()["labels"][1:]],
        decisions=[{"text": "...", "why": "no server"}, {"text": "use sqlite", "why": " - "}],
        deadEnds=[{"text": "…"}],
        narrative="...",
        now="—",
        objective="ship it",
    )
    final, dropped = cut_to_bounds(parse(filler))
    assert final.labels[0].words is None
    assert final.decisions == (Decision(text="use sqlite", why=None, evidence=()),)
    assert final.deadEnds == ()
    assert (final.narrative, final.now, final.objective) == (None, None, "ship it")
    assert dropped == {"empty-text": 6}


def test_diff_6_bounded_models_refuse_over_bound_content() -> None:
    with pytest.raises(ValidationError):
        Decision(text="x" * 301)
    with pytest.raises(ValidationError):
        Decision(text="x", evidence=tuple(f"C{i}" for i in range(7)))


def test_evidence_over_six_is_cut() -> None:
    ledger = {f"C{i}" for i in range(1, 10)}
    parsed = parse_answer(
        json.dumps(answer(decisions=[{"text": "x", "evidence": sorted(ledger)}], deadEnds=[])),
        OFFERED,
        ledger,
    )
    assert [d.code for d in parsed.defects] == ["over-bound"]
    final, dropped = cut_to_bounds(parsed)
    assert len(final.decisions[0].evidence) == 6 and dropped == {"evidence": 3}


def test_not_an_object_is_a_defect() -> None:
    parsed = verify_answer([1, 2], OFFERED, LEDGER)
    assert not parsed.parsed and codes(parsed) == [("not-an-object", None)]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=10,
)
KEYS = st.sampled_from(["labels", "decisions", "deadEnds", "values", "narrative", "now", "objective", "msg"])
SHAPED = st.recursive(
    JSON,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(KEYS | st.text(max_size=5), inner, max_size=6)
    ),
    max_leaves=15,
)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_parse_answer_never_raises_on_arbitrary_text(text: str) -> None:
    parsed = parse_answer(text, OFFERED, LEDGER)
    cut_to_bounds(parsed)


@settings(max_examples=150, deadline=None)
@given(SHAPED)
def test_parse_answer_never_raises_on_arbitrary_json_values(value: Any) -> None:
    parsed = verify_answer(value, OFFERED, LEDGER)
    again = parse_answer(json.dumps(value), OFFERED, LEDGER)
    if isinstance(value, dict):  # the same shape check whether the object is given or found in text
        assert (again.parsed, again.defects) == (parsed.parsed, parsed.defects)
    cut_to_bounds(parsed)


@given(
    SHAPED.filter(lambda v: isinstance(v, dict)), st.text(max_size=40), st.text(max_size=40), st.booleans()
)
def test_diff_17_object_found_in_arbitrary_prose(value: Any, before: str, after: str, fenced: bool) -> None:
    """DIFF-17: an object embedded in prose (that holds no brace before it) is found whole."""
    before = before.replace("{", "(")
    body = json.dumps(value)
    reply = f"{before}\n```json\n{body}\n```\n{after}" if fenced else f"{before}{body}{after}"
    assert extract_json(reply) == value


def test_ex_4_unlabeled_message_costs_a_retry_unless_picked() -> None:
    """EX-4, LABEL-2: a picked takeover message (u4) needs no label; an unlabeled u5 is a defect."""
    reply = '{"labels": [{"msg": "u5", "label": "not a rule"}], "narrative": "n", "now": "w"}'
    assert parse_answer(reply, ["u4", "u5"], set(), label_optional={"u4"}).defects == ()
    missing = parse_answer(
        '{"labels": [], "narrative": "n", "now": "w"}', ["u4", "u5"], set(), label_optional={"u4"}
    )
    assert codes(missing) == [("missing-label", "u5")]


def test_ex_8_lift_of_earlier_rule_in_the_same_answer() -> None:
    """EX-8 (shape only): u20 `rule and lifts R1` and u23 `lifts R1` both read; R1 is still in force here."""
    rules = [Rule(id="R1", words="Never push to main.", message="u2", seq=1, span=1)]
    reply = json.dumps(
        {
            "labels": [{"msg": "u20", "label": "rule and lifts R1"}, {"msg": "u23", "label": "lifts R1"}],
            "narrative": "n",
            "now": "w",
        }
    )
    parsed = parse_answer(reply, ["u20", "u23"], set(), rules=rules)
    assert parsed.defects == () and parsed.replaced == ()
    assert [i.label for i in parsed.answer.labels] == [
        Label("rule-and-lifts", ("R1",)),
        Label("lifts", ("R1",)),
    ]
