"""evaluate(): labels, quotes, lifts, questions and values of one parsed answer (LABEL-*, LIFT-*, DIFF-13)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.answers.events import ChunkContext, Evaluation, LiftEvent, NewRule
from longhaul_daemon.passes.answers.extract import parse_answer
from longhaul_daemon.passes.answers.quotes import OfferedMessage, quotable_text
from longhaul_daemon.passes.answers.values import Turn
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.state.clean import clean_text
from longhaul_daemon.state.model import Rule

TABS = Rule(id="R2", words="Indent with tabs.", message="u2", seq=2, span=1)
PUSH = Rule(id="R1", words="Never push to main.", message="u1", seq=1, span=1)


def _ctx(offered: list[OfferedMessage], rules: tuple[Rule, ...] = (), **over: Any) -> ChunkContext:
    return ChunkContext(offered=tuple(offered), rules=rules, ledger_ids=frozenset({"C1"}), **over)


def _answer(labels: list[dict[str, str]], **extra: Any) -> str:
    return json.dumps({"labels": labels, "narrative": "n", "now": "w"} | extra)


def _run(
    offered: list[OfferedMessage],
    labels: list[dict[str, str]],
    *,
    final: bool,
    rules: tuple[Rule, ...] = (),
    **extra: Any,
) -> Evaluation:
    ctx = _ctx(offered, rules)
    parsed = parse_answer(_answer(labels, **extra), [m.id for m in offered], ctx.ledger_ids, rules=rules)
    return evaluate(parsed, ctx, final=final)


def _lifts(evaluation: Evaluation) -> list[LiftEvent]:
    return [lift for label in evaluation.events.labels for lift in label.lifts]


def _new_rules(evaluation: Evaluation) -> list[NewRule]:
    return [label.rule for label in evaluation.events.labels if label.rule is not None]


def test_diff_13_evaluate_is_pure_and_leaves_its_inputs_alone() -> None:
    """DIFF-13: the same inputs give the same evaluation, and neither the answer nor the context changes."""
    offered = [
        OfferedMessage("u5", "Switch to two-space indentation instead of tabs."),
        OfferedMessage("u6", "ok"),
    ]
    ctx = _ctx(offered, (TABS,))
    labels = [{"msg": "u5", "label": "rule and lifts R2"}, {"msg": "u6", "label": "not a rule"}]
    parsed = parse_answer(_answer(labels), ["u5", "u6"], ctx.ledger_ids, rules=ctx.rules)
    before = (copy.deepcopy(parsed), copy.deepcopy(ctx))
    first = evaluate(parsed, ctx, final=True)
    assert evaluate(parsed, ctx, final=True) == first
    assert (parsed, ctx) == before and not TABS.lifted


def test_label_4_rule_records_the_message_and_label_6_lifts_records_none() -> None:
    """LABEL-4, LABEL-6: `rule` gives a rule; `lifts` gives a lift and no rule, even naming what is fine."""
    u3 = OfferedMessage("u3", "the no-push rule no longer applies; pushing to main is fine")
    u4 = OfferedMessage("u4", "Keep commits small.")
    out = _run(
        [u3, u4],
        [{"msg": "u3", "label": "lifts R1"}, {"msg": "u4", "label": "rule"}],
        final=False,
        rules=(PUSH,),
    )
    assert out.defects == ()
    # "Keep commits small." orders a lasting manner (code's wider reading, norm_reading.py): code agrees
    assert _new_rules(out) == [NewRule("u4", u4.text, 0, len(u4.text))]
    assert _lifts(out) == [LiftEvent("R1", "u3", None)]
    assert out.events.judged == {"u3", "u4"} and out.unlabeled == ()


def test_label_9_each_target_is_judged_on_its_own() -> None:
    """LABEL-9, LIFT-5: one target passes, the other is refused: a defect first, dropped when final."""
    u5 = OfferedMessage("u5", "The tabs rule no longer applies.")
    labels = [{"msg": "u5", "label": "lifts R1, R2"}]
    first = _run([u5], labels, final=False, rules=(PUSH, TABS))
    assert [(d.code, d.msg) for d in first.defects] == [("lift-refused", "u5")]
    assert "Never push to main." in first.defects[0].text
    assert _lifts(first) == [LiftEvent("R2", "u5")]
    final = _run([u5], labels, final=True, rules=(PUSH, TABS))
    assert final.defects == () and final.events.dropped["lifts"] == 1
    assert _lifts(final) == [LiftEvent("R2", "u5")]


def test_label_7_a_refused_target_does_not_stop_the_new_rule() -> None:
    """LABEL-7: `rule and lifts` whose lift is finally dropped still records its rule."""
    u5 = OfferedMessage("u5", "Use spaces in the new files.")
    out = _run([u5], [{"msg": "u5", "label": "rule and lifts R2"}], final=True, rules=(TABS,))
    assert _new_rules(out) == [NewRule("u5", u5.text, 0, len(u5.text))]
    assert _lifts(out) == [] and out.events.dropped["lifts"] == 1


def test_label_16_a_rule_new_in_this_answer_is_lifted_by_its_message_id() -> None:
    """LABEL-16, LABEL-15: u4's rule lifted by u6 in the same answer; the lift names u4."""
    u4 = OfferedMessage("u4", "Every log line starts with a timestamp.")
    u6 = OfferedMessage("u6", "The timestamp rule is lifted.")
    out = _run([u4, u6], [{"msg": "u4", "label": "rule"}, {"msg": "u6", "label": "lifts u4"}], final=True)
    assert _lifts(out) == [LiftEvent("u4", "u6")]
    assert [label.msg for label in out.events.labels] == ["u4", "u6"]


def test_quote_15_rule_and_lifts_judges_only_the_recorded_range() -> None:
    """QUOTE-15: in a long message the withdrawal outside the recorded words cannot lift."""
    filler = "Some background on the indentation tooling. " * 15
    text = "The tabs rule no longer applies. " + filler + "Use four spaces everywhere."
    assert len(text) > 600
    labels = [{"msg": "u9", "label": "rule and lifts R2", "words": "Use four spaces everywhere."}]
    out = _run([OfferedMessage("u9", text)], labels, final=True, rules=(TABS,))
    assert _new_rules(out)[0].words == "Use four spaces everywhere."
    assert _lifts(out) == [] and out.events.dropped["lifts"] == 1
    whole = _run(
        [OfferedMessage("u9", text)], [{"msg": "u9", "label": "lifts R2"}], final=True, rules=(TABS,)
    )
    assert _lifts(whole) == [LiftEvent("R2", "u9")]  # a `lifts` label judges the whole message


def test_quote_7_two_labels_binding_one_quote_give_one_rule() -> None:
    """QUOTE-7: never two identical rules for one holder; the citing message is judged and keeps no rule."""
    text = "From now on run ruff before every commit. " + "Background on the linter setup. " * 20
    u3, u4 = OfferedMessage("u3", text), OfferedMessage("u4", "Also fix the parser. " * 20)
    words = "run ruff before every commit."
    labels = [{"msg": "u3", "label": "rule", "words": words}, {"msg": "u4", "label": "rule", "words": words}]
    out = _run([u3, u4], labels, final=False)
    assert out.defects == ()
    assert _new_rules(out) == [NewRule("u3", words, text.index(words), text.index(words) + len(words))]
    assert out.events.judged == {"u3", "u4"}


def test_fail_18_a_reoffered_rule_already_held_is_not_recorded_again() -> None:
    """FAIL-18: same message and words already in the context: no new rule, and no question about it."""
    u2 = OfferedMessage("u2", "Indent with tabs.")
    out = _run([u2], [{"msg": "u2", "label": "rule"}], final=True, rules=(TABS,))
    assert _new_rules(out) == [] and out.questions == () and out.unlabeled == ()


def test_lift_7_replaced_target_is_a_question_naming_the_narrowing() -> None:
    """LIFT-7, FAIL-5: not a defect; the narrowing is shown by its R<n>, or its u<n> while it is pending."""
    old = PUSH.model_copy(update={"lifted": True, "liftedBy": "u20"})
    u23 = OfferedMessage("u23", "The hotfix push rule no longer applies.")
    for narrowing_id in ("R5", "u20"):
        narrowing = Rule(id=narrowing_id, words="push hotfix branches to main", message="u20", seq=0, span=0)
        out = _run([u23], [{"msg": "u23", "label": "lifts R1"}], final=False, rules=(old, narrowing))
        assert out.defects == () and _lifts(out) == []
        assert [(q.msg, q.kind, q.target) for q in out.questions] == [("u23", "replaced", narrowing_id)]
        assert f"`lifts {narrowing_id}`" in out.questions[0].text


def test_label_8_a_target_lifted_plainly_earlier_in_the_answer_is_dropped_silently() -> None:
    """LABEL-8, FAIL-18: the second lift of the same rule adds nothing and is no defect."""
    u5 = OfferedMessage("u5", "The tabs rule no longer applies.")
    u6 = OfferedMessage("u6", "Again: the tabs rule is lifted.")
    labels = [{"msg": "u5", "label": "lifts R2"}, {"msg": "u6", "label": "lifts R2"}]
    out = _run([u5, u6], labels, final=False, rules=(TABS,))
    assert out.defects == () and out.questions == ()
    assert _lifts(out) == [LiftEvent("R2", "u5")]


def test_lift_10_questions_only_for_plain_rule_labels_about_older_rules() -> None:
    """LIFT-10, FAIL-6: a `rule` label that could lift an older rule asks; questions are never defects."""
    u17 = OfferedMessage("u17", "Switch to two-space indentation instead of tabs from now on.")
    asked = _run([u17], [{"msg": "u17", "label": "rule"}], final=False, rules=(TABS,))
    assert [(q.msg, q.kind, q.target) for q in asked.questions] == [("u17", "rule-lift", "u2")]
    assert asked.defects == ()
    lifted = TABS.model_copy(update={"lifted": True, "liftedBy": "u9"})
    assert _run([u17], [{"msg": "u17", "label": "rule"}], final=True, rules=(lifted,)).questions == ()
    newer = TABS.model_copy(update={"message": "u30"})
    assert _run([u17], [{"msg": "u17", "label": "rule"}], final=True, rules=(newer,)).questions == ()
    both = _run([u17], [{"msg": "u17", "label": "rule and lifts R2"}], final=True, rules=(TABS,))
    assert both.questions == () and _lifts(both) == [LiftEvent("R2", "u17", "u17")]


def test_lift_10_a_rule_new_in_this_answer_can_be_asked_about() -> None:
    """LIFT-10, LABEL-16: the older rule is an earlier message's rule in this answer, named by its u<n>."""
    u3 = OfferedMessage("u3", "Indent with tabs.")
    u8 = OfferedMessage("u8", "Use spaces instead of tabs from now on.")
    out = _run([u3, u8], [{"msg": "u3", "label": "rule"}, {"msg": "u8", "label": "rule"}], final=True)
    assert [(q.msg, q.target) for q in out.questions] == [("u8", "u3")]


def test_value_2_values_that_do_not_verify_are_counted_never_defects() -> None:
    """VALUE-2..VALUE-4: dropped values are counted and cost no retry."""
    u1 = OfferedMessage("u1", "start it")
    values = [{"name": "port", "value": "5173", "turn": "u1"}, {"name": "port", "value": "80", "turn": "u1"}]
    ctx = _ctx([u1], turns=(Turn("u1", ("listening on 8080 and 5173",)),))
    parsed = parse_answer(
        _answer([{"msg": "u1", "label": "not a rule"}], values=values), ["u1"], ctx.ledger_ids
    )
    out = evaluate(parsed, ctx, final=False)
    assert out.defects == () and [v.value for v in out.events.values] == ["5173"]
    assert out.events.dropped["values"] == 1


def test_diff_16_final_answer_is_cut_to_bounds_and_draft_is_kept_as_is() -> None:
    """DIFF-16: over-bound prose is a defect first and cut with "…" (counted) in the final answer."""
    u1 = OfferedMessage("u1", "go on")
    labels = [{"msg": "u1", "label": "not a rule"}]
    decisions = [{"text": "x" * 400, "evidence": ["C1", "C9"]}]
    first = _run([u1], labels, final=False, decisions=decisions)
    assert [d.code for d in first.defects] == ["over-bound"]
    assert first.events.decisions[0].text == "x" * 400 and first.events.decisions[0].evidence == ("C1",)
    final = _run([u1], labels, final=True, decisions=decisions)
    assert final.defects == () and len(final.events.decisions[0].text) == 300
    assert final.events.dropped["cut-text"] == 1 and final.events.dropped["evidence"] == 1


def test_fail_4_unlabeled_messages_are_reported_except_optional_ones() -> None:
    """FAIL-4, LABEL-2: a missing label is a defect and the message stays unlabeled unless label-optional."""
    offered = [OfferedMessage("u1", "a"), OfferedMessage("u2", "b"), OfferedMessage("u3", "c")]
    ctx = _ctx(offered, label_optional=frozenset({"u3"}))
    parsed = parse_answer(
        _answer([{"msg": "u1", "label": "rule"}]),
        ["u1", "u2", "u3"],
        ctx.ledger_ids,
        label_optional=ctx.label_optional,
    )
    out = evaluate(parsed, ctx, final=False)
    assert out.unlabeled == ("u2",) and [(d.code, d.msg) for d in out.defects] == [("missing-label", "u2")]
    assert evaluate(parsed, ctx, final=True).defects == ()


_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyzé", min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(_WORD, min_size=80, max_size=140), data=st.data())
def test_quote_1_property_recorded_rule_text_is_always_copied_from_a_user_message(
    words: list[str], data: st.DataObject
) -> None:
    """QUOTE-1: whatever words the answer gives, a recorded rule is a substring of its holder's text."""
    text = " ".join(words)
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    offered = [OfferedMessage("u2", text), OfferedMessage("u3", "ok")]
    labels = [{"msg": "u2", "label": "rule", "words": text[start:end]}, {"msg": "u3", "label": "not a rule"}]
    for final in (False, True):
        out = _run(offered, labels, final=final)
        for rule in _new_rules(out):
            holder = next(m for m in offered if m.id == rule.message)
            assert quotable_text(holder.text)[rule.start : rule.end] == rule.words


def test_fail_2_a_reply_without_json_yields_no_events_and_leaves_every_message_unlabeled() -> None:
    """FAIL-2, FAIL-4: nothing from an unparsed reply enters the events."""
    offered = [OfferedMessage("u1", "Never force-push."), OfferedMessage("u2", "ok")]
    ctx = _ctx(offered)
    parsed = parse_answer("I could not decide.", ["u1", "u2"], ctx.ledger_ids)
    for final in (False, True):
        out = evaluate(parsed, ctx, final=final)
        assert out.events.labels == () and out.events.judged == frozenset()
        assert out.unlabeled == ("u1", "u2")
    assert [d.code for d in evaluate(parsed, ctx, final=False).defects] == ["no-json"]


def test_quote_16_an_excerpt_only_message_needs_words_and_the_note_says_so() -> None:
    """QUOTE-16: a message shown only in part yields a rule only through exact words."""
    u3 = OfferedMessage("u3", "Keep the public API stable.", excerpt_only=True)
    out = _run([u3], [{"msg": "u3", "label": "rule"}], final=False)
    assert [(d.code, d.msg) for d in out.defects] == [("rule-words", "u3")]
    assert "shown only in part" in out.defects[0].text
    final = _run([u3], [{"msg": "u3", "label": "rule"}], final=True)
    # ours (QUOTE-4): not dropped but held back, so the span carries it to be asked again
    assert _new_rules(final) == [] and final.events.dropped["rules-held-unquoted"] == 1
    assert final.unlabeled == ("u3",) and "u3" not in final.events.judged


def test_issue12_quote5_rule_words_are_stored_clean_and_still_found_in_the_cleaned_message() -> None:
    text = "Never \x1b[31mforce-push\x1b[0m to main.\u202e\x07"
    out = _run([OfferedMessage("u1", text)], [{"msg": "u1", "label": "rule"}], final=True)
    assert [r.words for r in _new_rules(out)] == ["Never force-push to main."]
    assert _new_rules(out)[0].words in clean_text(quotable_text(text))


def test_issue12_fail18_a_reoffered_message_with_control_characters_gives_no_second_rule() -> None:
    """The State holds the cleaned words; the re-offered raw message cleans to the same words."""
    held = Rule(id="R1", words="Never force-push to main.", message="u1", seq=1, span=1)
    text = "Never \x1b[31mforce-push\x1b[0m to main.\u202e"
    out = _run([OfferedMessage("u1", text)], [{"msg": "u1", "label": "rule"}], final=True, rules=(held,))
    assert _new_rules(out) == []


def test_issue12_words_with_nothing_printable_give_no_rule() -> None:
    out = _run([OfferedMessage("u1", "\x07\u202e\x1b[0m")], [{"msg": "u1", "label": "rule"}], final=True)
    assert _new_rules(out) == [] and out.events.dropped.get("rules") == 1


def test_quote_4_placeholder_words_in_a_draft_are_not_given_and_go_back_as_a_defect() -> None:
    """QUOTE-4, FAIL-1: a small model copies the prompt's example and writes "..." as the words of a long
    message. Words that say nothing count as not given in the draft too, as in the final answer: they must
    not bind to another message that happens to hold "...", which hid the defect and cost the rule (seen on
    the real model); the long message's missing words go back in the retry note."""
    long_text = "Some background on the link checker and the way the crawl works. " * 10
    long_text += "The checker must only use the standard library."
    offered = [OfferedMessage("u1", "Hmm... carry on."), OfferedMessage("u2", long_text)]
    labels = [{"msg": "u1", "label": "not a rule"}, {"msg": "u2", "label": "rule", "words": "..."}]
    draft = _run(offered, labels, final=False)
    assert [(d.code, d.msg) for d in draft.defects] == [("rule-words", "u2")]
    assert _new_rules(draft) == []
