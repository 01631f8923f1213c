"""The labels turn's gate (TURNS-4, TURNS-9, TURNS-10, TURNS-17, TAKEOVER-27) on the Diff's verifiers."""

from __future__ import annotations

from typing import Any

from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.passes.turns.label_gate import LabelsContext, gate_labels, settle_labels
from longhaul_daemon.state.model import Rule

OLD_TABS = Rule(id="R1", words="Indent with tabs.", message="u1", seq=1, span=1)
MESSAGES = {
    "u2": "From now on indent with two spaces instead of tabs.",
    "u3": "Never add dependencies without asking.",
    "u4": "The tabs rule no longer applies.",
    "u5": "Thanks, looks fine.",
}


def context(
    picked: dict[str, tuple[int, int]] | None = None, earlier: frozenset[str] = frozenset()
) -> LabelsContext:
    picked = picked or {}
    offered = tuple(OfferedMessage(id=uid, text=text) for uid, text in MESSAGES.items())
    chunk = ChunkContext(
        offered=offered,
        rules=(OLD_TABS,),
        ledger_ids=frozenset(),
        label_optional=frozenset(picked),
        picked=picked,
        unpicked_earlier=earlier,
    )
    return LabelsContext(chunk, tuple(uid for uid in MESSAGES if uid not in picked))


def answer(**labels: str | tuple[str, str]) -> dict[str, Any]:
    items = [
        {"msg": msg, "label": label[0], "words": label[1]}
        if isinstance(label, tuple)
        else {"msg": msg, "label": label, "words": None}
        for msg, label in labels.items()
    ]
    return {"labels": items}


def test_turns4_code_copies_the_rule_words_and_the_full_label_grammar_still_reads() -> None:
    ctx = context()
    verdict = gate_labels(
        answer(
            u2=("rule and lifts R1", "two spaces"),
            u3="rule",
            u4="not a rule",
            u5="Not A Rule",
        ),
        "answer",
        ctx,
    )
    assert verdict.problems == ()
    settled = settle_labels(verdict, ctx)
    rules = {e.msg: e.rule.words for e in settled.evaluation.events.labels if e.rule is not None}
    assert rules == {"u2": MESSAGES["u2"], "u3": MESSAGES["u3"]}  # QUOTE-2: whole messages, not the words
    [lifting] = [e for e in settled.evaluation.events.labels if e.lifts]
    assert (lifting.msg, lifting.lifts[0].target) == ("u2", "R1")
    assert settled.evaluation.unlabeled == ()


def test_turns9_a_missing_label_a_bad_label_and_an_unknown_target_are_integrity_problems() -> None:
    verdict = gate_labels(answer(u2="rule", u3="maybe", u4="lifts R9"), "answer", context())
    assert {(p.kind, p.code) for p in verdict.problems} == {
        ("integrity", "bad-label"),
        ("integrity", "unknown-target"),
        ("integrity", "missing-label"),
    }
    assert gate_labels(None, "none", context()).problems[0].code == "not-parsed"


def test_turns10_a_refused_lift_is_a_problem_until_settled_then_dropped_with_the_rest_accepted() -> None:
    ctx = context()
    flawed = gate_labels(answer(u2="rule", u3="rule", u4="not a rule", u5="lifts R1"), "answer", ctx)
    assert [p.code for p in flawed.problems] == ["lift-refused"]  # "Thanks, looks fine." withdraws nothing
    settled = settle_labels(flawed, ctx)
    assert settled.problems == () and settled.evaluation.events.dropped == {"lifts": 1}
    assert [e.msg for e in settled.evaluation.events.labels if e.rule] == ["u2", "u3"]


def test_turns16_a_message_still_unlabeled_when_settled_leaves_the_section_unfinished() -> None:
    ctx = context()
    settled = settle_labels(gate_labels(answer(u2="rule", u3="rule"), "answer", ctx), ctx)
    assert settled.evaluation.unlabeled == ("u4", "u5")
    assert {e.msg for e in settled.evaluation.events.labels} == {"u2", "u3"}  # the verified ones stand


def test_takeover27_a_picked_message_takes_no_label_is_recorded_by_code_and_asks_no_question() -> None:
    ctx = context(picked={"u2": (0, len(MESSAGES["u2"]))})
    assert ctx.label_ids == ("u3", "u4", "u5")
    given = answer(u2="not a rule", u3="not a rule", u4="not a rule", u5="not a rule")
    verdict = gate_labels(given, "answer", ctx)
    assert verdict.problems == () and verdict.parsed.dropped == {"labels-not-offered": 1}
    settled = settle_labels(verdict, ctx)
    [picked] = [e for e in settled.evaluation.events.labels if e.msg == "u2"]
    assert picked.rule is not None and picked.rule.words == MESSAGES["u2"] and picked.lifts == ()
    # no question about the picked u2; u4's "The tabs rule no longer applies." is code's withdrawal candidate
    # for both tab rules, since no label lifts either (diff/doubts.py)
    assert [(q.msg, q.kind, q.target) for q in settled.questions] == [
        ("u4", "withdrawal", "R1"),
        ("u4", "withdrawal", "u2"),
    ]
    diff_mode = evaluate(verdict.parsed, ctx.chunk, final=True)  # the Diff asks whether it replaced R1
    asked = [(q.msg, q.target) for q in diff_mode.questions]
    assert asked == [("u2", "u1"), ("u4", "R1"), ("u4", "u2")]


def test_turns17_an_unpicked_earlier_message_left_unlabeled_costs_a_repair_then_reads_not_a_rule() -> None:
    ctx = context(earlier=frozenset({"u5"}))
    verdict = gate_labels(answer(u2="rule", u3="rule", u4="not a rule"), "answer", ctx)
    assert [(p.code, "u5" in p.text) for p in verdict.problems] == [("missing-label", True)]  # TAKEOVER-18
    settled = settle_labels(verdict, ctx)
    assert settled.evaluation.unlabeled == ()  # FAIL-4: the section still finishes


def test_turns4_code_second_look_holds_in_turns_mode_as_in_the_diff() -> None:
    """Issue "Fidelity on sessions it was not tuned on", in turns mode: u4's withdrawal labeled `not a rule`
    is asked about and flagged until a lift is confirmed; "Thanks, looks fine." labeled `rule` (no standing
    marker) is recorded in doubt; u3's "Never ..." labeled `not a rule` is kept in doubt, never lost."""
    verdict = gate_labels(
        answer(u2="rule", u3="not a rule", u4="not a rule", u5="rule"), "answer", ctx := context()
    )
    settled = settle_labels(verdict, ctx)
    assert ("u4", "withdrawal", "R1") in [(q.msg, q.kind, q.target) for q in settled.questions]
    events = settled.evaluation.events
    assert ("R1", "u4") in [(flag.target, flag.by) for flag in events.possibly_withdrawn]
    doubts = {label.msg: label.rule.doubt for label in events.labels if label.rule is not None}
    assert doubts == {"u2": None, "u3": "model-read-one-off", "u5": "reads-as-request"}
