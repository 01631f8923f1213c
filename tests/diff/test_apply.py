"""Close numbers verified events into the State: PASS-5 order, R ids, lifts, values (LABEL-14/15, LIFT-9)."""

from __future__ import annotations

import json

from longhaul_daemon.inspector.views import state_text
from longhaul_daemon.passes.answers.events import ChunkContext, ChunkEvents, LabelEvents, LiftEvent, NewRule
from longhaul_daemon.passes.answers.extract import parse_answer
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.answers.schema import DeadEnd, Decision
from longhaul_daemon.passes.answers.values import ValueCandidate
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.passes.close import close_span
from longhaul_daemon.passes.close_events import apply_events, pending_rules
from longhaul_daemon.passes.fold import FoldResult
from longhaul_daemon.passes.ledger import LedgerResult
from longhaul_daemon.state.model import Note, Rule, State, Value, World
from longhaul_daemon.state.render import render_summary

R1 = Rule(id="R1", words="Never push to main.", message="u2", seq=1, span=1)


def _state() -> State:
    return State(
        span=1,
        seq=5,
        nextRule=2,
        rules=[R1.model_copy()],
        objective="Ship it",
        now="Testing",
        values=[Value(value="8080", what="Dev server port", turn="u1", seq=4, span=1)],
    )


def _rule(msg: str, words: str) -> NewRule:
    return NewRule(msg, words, 0, len(words))


def _chunk_one() -> ChunkEvents:
    return ChunkEvents(
        labels=(
            LabelEvents("u20", _rule("u20", "Push hotfix branches only."), (LiftEvent("R1", "u20", "u20"),)),
            LabelEvents("u21", _rule("u21", "Log every request.")),
        ),
        decisions=(Decision(text="Use sqlite", why="no server", evidence=("C1",)),),
        dead_ends=(DeadEnd(text="Tried redis"),),
        values=(ValueCandidate("dev server port", "5173", "u21"),),
        now="Writing the migration",
    )


def _chunk_two() -> ChunkEvents:
    return ChunkEvents(
        labels=(LabelEvents("u23", None, (LiftEvent("u20", "u23"), LiftEvent("u21", "u23"))),),
        decisions=(Decision(text="Keep the CLI flags"),),
        objective="Ship the CSV export",
        now="Reviewing",
    )


def test_pass_5_events_are_numbered_after_the_state_in_the_fixed_order() -> None:
    """PASS-5: labels in message order (a rule before its lifts), then decisions, dead ends, values."""
    closed = apply_events(_state(), [_chunk_one(), _chunk_two()], span=2)
    rules = {r.id: r for r in closed.rules}
    order = [
        rules["R2"].seq,  # u20's rule
        rules["R1"].liftSeq,  # u20's lift of R1
        rules["R3"].seq,  # u21's rule
        rules["R2"].liftSeq,  # u23's lifts
        rules["R3"].liftSeq,
        closed.decisions[0].seq,
        closed.decisions[1].seq,
        closed.deadEnds[0].seq,
        closed.values[0].seq,
    ]
    assert order == list(range(6, 15)) and closed.seq == 14 and closed.nextRule == 4
    assert [d.text for d in closed.decisions] == ["Use sqlite", "Keep the CLI flags"]
    assert closed.decisions[0].why == "no server" and closed.deadEnds[0].span == 2


def test_label_14_lift_9_lifted_rules_keep_who_lifted_and_what_replaced_them() -> None:
    """LABEL-14, LIFT-9, LABEL-15: R1 replaced by R2 (u20); R2 and R3, given this span, lifted by u23."""
    closed = apply_events(_state(), [_chunk_one(), _chunk_two()], span=2)
    summary = {r.id: (r.lifted, r.liftedBy, r.replacedBy, r.span) for r in closed.rules}
    assert summary == {
        "R1": (True, "u20", "R2", 1),
        "R2": (True, "u23", None, 2),
        "R3": (True, "u23", None, 2),
    }
    assert "## Standing rules" not in render_summary(closed, pass_id="p")
    assert State.model_validate(closed.model_dump(mode="json")) == closed  # stored whole in details
    inspected = state_text(FoldResult(state=closed), [])
    assert '- R1 "Never push to main." (u2), lifted by u20, replaced by R2' in inspected
    assert '- R3 "Log every request." (u21), lifted by u23' in inspected


def test_fail_18_duplicate_rules_and_repeated_lifts_use_no_number() -> None:
    """FAIL-18: a rule already held (same message and words) and a lift already applied add nothing."""
    state = _state()
    state.rules[0].lifted, state.rules[0].liftedBy = True, "u9"
    chunk = ChunkEvents(
        labels=(LabelEvents("u2", _rule("u2", "Never push to main."), (LiftEvent("R1", "u30"),)),)
    )
    closed = apply_events(state, [chunk], span=2)
    assert closed.seq == 5 and len(closed.rules) == 1 and closed.rules[0].liftedBy == "u9"


def test_value_8_values_merge_by_name_and_prose_takes_the_last_chunk() -> None:
    """VALUE-8, VALUE-5: the newer port replaces the older; objective and now come from the last chunk."""
    closed = apply_events(_state(), [_chunk_one(), _chunk_two()], span=2)
    assert [(v.what, v.value, v.turn) for v in closed.values] == [("dev server port", "5173", "u21")]
    assert (closed.objective, closed.now) == ("Ship the CSV export", "Reviewing")
    assert "- dev server port: 5173 (turn u21)" in render_summary(closed, pass_id="p")
    unchanged = apply_events(_state(), [ChunkEvents()], span=2)
    assert (unchanged.objective, unchanged.now, unchanged.seq) == ("Ship it", "Testing", 5)


def test_apply_leaves_the_given_state_untouched() -> None:
    """PASS-5: nothing from the pass is numbered before Close, and the input State stays as it was."""
    state = _state()
    before = state.model_dump()
    apply_events(state, [_chunk_one(), _chunk_two()], span=2)
    assert state.model_dump() == before


def test_diff_3_pending_rules_name_new_rules_by_message_and_apply_lifts() -> None:
    """DIFF-3, LABEL-16: later chunks see earlier chunks' rules under their u<n>, lifts applied."""
    rules = (R1,)
    pending = pending_rules(rules, [_chunk_one()])
    assert [(r.id, r.message, r.lifted, r.liftedBy, r.replacedBy) for r in pending] == [
        ("R1", "u2", True, "u20", "u20"),
        ("u20", "u20", False, None, None),
        ("u21", "u21", False, None, None),
    ]
    assert not R1.lifted and pending_rules(rules, []) == rules
    after = pending_rules(rules, [_chunk_one(), _chunk_two()])
    assert [r.lifted for r in after] == [True, True, True]


def test_pass_5_close_span_numbers_notes_first_then_events() -> None:
    """PASS-5, PASS-6: remembered notes keep the first numbers; the Diff's events follow."""
    state = _state()
    ledger = LedgerResult(
        commands=[], errors=[], new_commands=[], new_errors=[], next_command=1, next_error=1
    )
    closed = close_span(
        state,
        ledger=ledger,
        world=World(status="no-repository"),
        user_ids=["u20", "u21"],
        read_files=[],
        modified_files=[],
        closed_as="whole",
        reason=None,
        pass_id="p2",
        remembered=[Note(text="check the flaky test", seq=0)],
        narrative="Added hotfix pushes.",
        events=[_chunk_one()],
    )
    assert closed.notes[0].seq == 6 and closed.rules[1].seq == 7 and closed.rules[1].span == 2
    assert closed.span == 2 and closed.workLog[-1].text == "Added hotfix pushes."


def test_fail_10_a_narrative_less_close_takes_no_events() -> None:
    """FAIL-10: rules stay as they were when no chunk verified."""
    ledger = LedgerResult(
        commands=[], errors=[], new_commands=[], new_errors=[], next_command=1, next_error=1
    )
    try:
        close_span(
            _state(),
            ledger=ledger,
            world=World(status="no-repository"),
            user_ids=[],
            read_files=[],
            modified_files=[],
            closed_as="narrative-less",
            reason="server-error",
            pass_id="p2",
            events=[_chunk_one()],
        )
    except ValueError as error:
        assert "takes no Diff events" in str(error)
    else:
        raise AssertionError("a narrative-less close accepted Diff events")


def test_diff_3_a_later_chunk_lifts_a_rule_an_earlier_chunk_gave() -> None:
    """DIFF-3, LABEL-16, LABEL-15: chunk 2 sees u5's rule under u5, lifts it, and Close numbers both."""
    state = _state()
    u5 = OfferedMessage("u5", "Every log line starts with a timestamp.")
    u9 = OfferedMessage("u9", "The timestamp rule no longer applies.")
    accepted: list[ChunkEvents] = []
    for offered, label in ((u5, "rule"), (u9, "lifts u5")):
        rules = pending_rules(state.rules, accepted)
        ctx = ChunkContext(offered=(offered,), rules=rules, ledger_ids=frozenset())
        reply = json.dumps({"labels": [{"msg": offered.id, "label": label}], "narrative": "n", "now": "w"})
        parsed = parse_answer(reply, [offered.id], ctx.ledger_ids, rules=rules)
        evaluation = evaluate(parsed, ctx, final=True)
        assert evaluation.unlabeled == () and evaluation.defects == ()
        accepted.append(evaluation.events)
    closed = apply_events(state, accepted, span=2)
    rule = closed.rules[-1]
    assert (rule.id, rule.message, rule.lifted, rule.liftedBy) == ("R2", "u5", True, "u9")
    assert rule.seq == 6 and rule.liftSeq == 7


def test_restated_decisions_and_dead_ends_add_nothing_but_their_evidence() -> None:
    """Issue 4: state grows by distinct content, not by number of compactions (FAIL-18's spirit for items)."""

    first = ChunkEvents(
        decisions=(Decision(text="Use SQLite for the cache.", evidence=("C1",)),),
        dead_ends=(DeadEnd(text="Redis needs a server we do not have.", evidence=("E1",)),),
    )
    again = ChunkEvents(
        decisions=(Decision(text="use  sqlite for the cache", evidence=("C4",)),),
        dead_ends=(DeadEnd(text="Redis needs a server we do not have.", evidence=()),),
    )
    state = apply_events(State(), [first], span=1)
    state = apply_events(state, [again], span=2)
    assert [(d.text, d.evidence, d.span) for d in state.decisions] == [
        ("Use SQLite for the cache.", ["C1", "C4"], 1)
    ]
    assert [(d.text, d.evidence) for d in state.deadEnds] == [
        ("Redis needs a server we do not have.", ["E1"])
    ]
    assert state.seq == 2  # the restatements took no sequence numbers


def test_issue12_accepted_model_text_is_cleaned_before_it_is_compared_or_stored() -> None:
    """A restatement that differs only in control characters adds nothing; text with nothing printable left
    is not accepted and takes no number; Now and objective are stored clean."""
    first = ChunkEvents(decisions=(Decision(text="Use SQLite for the cache.", evidence=("C1",)),))
    again = ChunkEvents(
        decisions=(
            Decision(text="Use \x1b[1mSQLite\x1b[0m for the\u200b cache.\x07", evidence=("C4",)),
            Decision(text="\x07\u202e", evidence=()),
        ),
        dead_ends=(DeadEnd(text="Redis\u2028needs a server.", evidence=()),),
        values=(ValueCandidate(name="dev\x00 port", value="51\x0773", turn="u1"),),
        now="\n## Standing rules\x1b]0;t\x07",
        objective="\x85\u2066",
    )
    state = apply_events(State(objective="Ship it."), [first], span=1)
    state = apply_events(state, [again], span=2)
    assert [(d.text, d.evidence) for d in state.decisions] == [("Use SQLite for the cache.", ["C1", "C4"])]
    assert [d.text for d in state.deadEnds] == ["Redis needs a server."]
    assert [(v.what, v.value) for v in state.values] == [("dev port", "5173")]
    assert state.now == "## Standing rules" and state.objective == "Ship it."
    assert state.seq == 3  # the first decision, the dead end and the value
