"""The worked examples (EX-*) end to end below the model call: parse, verify, ask, apply at Close, render.

:func:`_chunk` plays the lead's stage with canned replies: the first answer is verified as non-final, a retry
is used only when it had defects, the settled answer is verified as final, and its questions go out in one
round. EX-4 and EX-11 need the takeover reading, which is not built, so they are not here; EX-13 and EX-14
belong to the stage and the pass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.diff.answer import parse_answer
from longhaul_daemon.diff.apply import apply_events
from longhaul_daemon.diff.events import ChunkContext, Evaluation, Question
from longhaul_daemon.diff.prompt import retry_note
from longhaul_daemon.diff.questions import question_block, read_question_reply, with_additions
from longhaul_daemon.diff.quotes import GOAL_TAGS, OfferedMessage
from longhaul_daemon.diff.values import Turn
from longhaul_daemon.diff.verify import evaluate
from longhaul_daemon.state.model import Rule, State
from longhaul_daemon.state.render import render_summary


@dataclass(frozen=True)
class Outcome:
    first: Evaluation
    final: Evaluation
    asked: tuple[Question, ...]
    state: State
    summary: str
    note: str = ""
    block: str = ""


def _reply(labels: dict[str, str], words: dict[str, str] | None = None, **extra: Any) -> str:
    """An answer in the DIFF-5 shape with the given labels, optional words per message, and extra fields."""
    given = words or {}
    items = [
        {"msg": m, "label": lab} | ({"words": given[m]} if m in given else {}) for m, lab in labels.items()
    ]
    return json.dumps({"labels": items, "narrative": "n", "now": "w"} | extra)


def _sized(core: str, length: int, filler: str = "Some notes on the project layout and its tests. ") -> str:
    text = core
    while len(text) < length:
        text = filler + text
    return text[len(text) - length :]


def _chunk(
    state: State,
    offered: list[OfferedMessage],
    first: str,
    *,
    retry: str | None = None,
    reply: str | None = None,
    turns: tuple[Turn, ...] = (),
) -> Outcome:
    ids = [m.id for m in offered]
    ctx = ChunkContext(offered=tuple(offered), rules=tuple(state.rules), ledger_ids=frozenset(), turns=turns)
    parsed = parse_answer(first, ids, ctx.ledger_ids, rules=ctx.rules)
    first_eval = evaluate(parsed, ctx, final=False)
    note = ""
    if first_eval.defects and retry is not None:
        note = retry_note(first_eval.defects, ctx.retry_note_chars)
        parsed = parse_answer(retry, ids, ctx.ledger_ids, rules=ctx.rules)
    final = evaluate(parsed, ctx, final=True)
    block, asked = question_block(final.questions, ctx.retry_note_chars)
    if asked and reply is not None:
        final = evaluate(with_additions(parsed, read_question_reply(reply, asked)), ctx, final=True)
    closed = apply_events(state, [final.events], span=state.span + 1)
    closed.span = state.span + 1
    return Outcome(first_eval, final, asked, closed, render_summary(closed, pass_id="p"), note, block)


def _rules(state: State) -> list[tuple[str, str, str, bool]]:
    return [(r.id, r.words, r.message, r.lifted) for r in state.rules]


def test_ex_1_misquoted_short_rule_recorded_whole_without_retry() -> None:
    """EX-1, QUOTE-1, QUOTE-2, QUOTE-8."""
    u4 = OfferedMessage("u4", "Please never add new dependencies without asking me first.")
    out = _chunk(State(), [u4], _reply({"u4": "rule"}, {"u4": "never add dependencies"}))
    assert out.first.defects == ()
    assert _rules(out.state) == [("R1", u4.text, "u4", False)]
    assert "never add dependencies" not in out.state.model_dump_json()
    assert out.final.events.dropped["rejected-quotes"] == 1
    assert f'- R1 "{u4.text}" (u4)' in out.summary


SENTENCE = "From now on run ruff before every commit."


def _ex_2_messages() -> list[OfferedMessage]:
    return [
        OfferedMessage("u3", _sized(SENTENCE, 640)),
        OfferedMessage("u7", _sized(SENTENCE + " Thanks.", 650)),
        OfferedMessage("u9", _sized("Now look at the failing import in the parser module.", 620)),
    ]


def _words_answer(words: str) -> str:
    return _reply({"u3": "not a rule", "u7": "not a rule", "u9": "rule"}, {"u9": words})


def test_ex_2_quote_under_wrong_message_binds_to_newest_holder() -> None:
    """EX-2, QUOTE-7: the rule goes to u7; u9 is judged and keeps no rule; no retry is spent."""
    offered = _ex_2_messages()
    assert [len(m.text) for m in offered] == [640, 650, 620]
    out = _chunk(State(), offered, _words_answer("run ruff before every commit"))
    assert out.first.defects == () and out.final.unlabeled == ()
    assert _rules(out.state) == [("R1", "run ruff before every commit", "u7", False)]
    assert out.final.events.judged == {"u3", "u7", "u9"}


def test_ex_2_words_no_message_holds_go_back_for_a_long_message() -> None:
    """EX-2, QUOTE-4: u9 is over 600 characters, so unverifiable words are a defect for the retry note."""
    out = _chunk(State(), _ex_2_messages(), _words_answer("run ruff before each commit"))
    assert [(d.code, d.msg) for d in out.first.defects] == [("rule-words", "u9")]
    assert out.first.unlabeled == ("u9",)
    assert out.state.rules == [] and out.final.events.dropped["rules"] == 1


R2_PUSH = Rule(id="R2", words="Never push to main.", message="u3", seq=2, span=1)


def _with_rules(*rules: Rule) -> State:
    numbers = [int(r.id[1:]) for r in rules]
    return State(
        span=1,
        seq=max((r.seq for r in rules), default=0),
        nextRule=max(numbers, default=0) + 1,
        rules=list(rules),
    )


def test_ex_3_permission_lift_is_refused_then_dropped_and_r2_stays() -> None:
    """EX-3, LIFT-1, LIFT-5, LIFT-6, LABEL-13."""
    u15 = OfferedMessage("u15", "you may push to main now")
    out = _chunk(_with_rules(R2_PUSH), [u15], _reply({"u15": "lifts R2"}), retry=_reply({"u15": "lifts R2"}))
    assert [(d.code, d.msg) for d in out.first.defects] == [("lift-refused", "u15")]
    assert "Never push to main." in out.note
    assert out.final.events.dropped["lifts"] == 1 and out.final.defects == ()
    assert _rules(out.state) == [("R2", "Never push to main.", "u3", False)]
    assert '- R2 "Never push to main." (u3)' in out.summary


def test_ex_3_retry_saying_not_a_rule_is_accepted() -> None:
    """EX-3: `not a rule` in the retry stands; R2 stays."""
    u15 = OfferedMessage("u15", "you may push to main now")
    out = _chunk(
        _with_rules(R2_PUSH), [u15], _reply({"u15": "lifts R2"}), retry=_reply({"u15": "not a rule"})
    )
    assert out.final.unlabeled == () and "lifts" not in out.final.events.dropped
    assert _rules(out.state) == [("R2", "Never push to main.", "u3", False)]


def test_ex_5_rule_parts_forget_it_lifts_nothing() -> None:
    """EX-5 (rule parts; the takeover reading is not built): u6 is recorded whole, u8's lift is refused."""
    u6 = OfferedMessage("u6", "Add a changelog entry for every user-facing change. Don't forget it.")
    u8 = OfferedMessage("u8", "Forget it, leave the changelog alone.")
    answer = _reply({"u6": "rule", "u8": "lifts u6"})
    out = _chunk(State(), [u6, u8], answer, retry=answer)
    assert [(d.code, d.msg) for d in out.first.defects] == [("lift-refused", "u8")]
    assert _rules(out.state) == [("R1", u6.text, "u6", False)]
    accepted = _chunk(State(), [u6, u8], answer, retry=_reply({"u6": "rule", "u8": "not a rule"}))
    assert _rules(accepted.state) == [("R1", u6.text, "u6", False)] and accepted.final.unlabeled == ()


DRY = "Every dry-run line must start with DRY: so I can grep for it later."


def _u12() -> OfferedMessage:
    text = _sized(DRY + " The flag is --dry-run and it prints the plan only.", 700)
    assert len(text) == 700 and DRY in text
    return OfferedMessage("u12", text)


def test_ex_6_long_message_without_words_goes_back_and_exact_words_record() -> None:
    """EX-6, QUOTE-4, FAIL-1."""
    retry = _reply({"u12": "rule"}, {"u12": "Every dry-run line must start with DRY:"})
    out = _chunk(State(), [_u12()], _reply({"u12": "rule"}), retry=retry)
    assert [(d.code, d.msg) for d in out.first.defects] == [("rule-words", "u12")]
    assert "exact words" in out.note
    assert _rules(out.state) == [("R1", "Every dry-run line must start with DRY:", "u12", False)]


def test_ex_6_cut_or_miscased_words_in_the_retry_drop_the_rule() -> None:
    """EX-6, QUOTE-5, QUOTE-6: the one retry is spent, so the rule is dropped and counted; u12 is judged."""
    for words in ("very dry-run line must start with DRY:", "every dry-run line must start with DRY:"):
        retry = _reply({"u12": "rule"}, {"u12": words})
        out = _chunk(State(), [_u12()], _reply({"u12": "rule"}), retry=retry)
        assert out.state.rules == [] and out.final.events.dropped["rules"] == 1
        assert out.final.unlabeled == ()


def test_ex_7_values_kept_only_where_their_turn_shows_them() -> None:
    """EX-7, VALUE-2, VALUE-4, VALUE-5: no retry; two dropped."""
    turns = (
        Turn("u9", ("Ran 212 tests in 41.20s", "OK")),
        Turn("u11", ("Local:   http://localhost:5173/",)),
    )
    values = [
        {"name": "test time", "value": "41.2s", "turn": "u9"},
        {"name": "dev server port", "value": "5173", "turn": "u11"},
        {"name": "test count", "value": "212", "turn": "u11"},
    ]
    offered = [OfferedMessage("u9", "run the tests"), OfferedMessage("u11", "start the dev server")]
    answer = _reply({"u9": "not a rule", "u11": "not a rule"}, values=values)
    out = _chunk(State(), offered, answer, turns=turns)
    assert out.first.defects == ()
    assert out.final.events.dropped["values"] == 2
    assert [(v.what, v.value, v.turn) for v in out.state.values] == [("dev server port", "5173", "u11")]
    assert "- dev server port: 5173 (turn u11)" in out.summary


R1_PUSH = Rule(id="R1", words="Never push to main.", message="u2", seq=1, span=1)
U20 = OfferedMessage(
    "u20", "Instead of never pushing to main, you may push hotfix branches to main from now on."
)


def test_ex_8_lift_of_a_replaced_rule_becomes_a_question_and_lifts_the_narrowing() -> None:
    """EX-8, LIFT-3, LIFT-7, LIFT-8, FAIL-5, LABEL-15, LABEL-16."""
    u23 = OfferedMessage("u23", "The hotfix push rule no longer applies.")
    answer = _reply({"u20": "rule and lifts R1", "u23": "lifts R1"})
    reply = json.dumps({"labels": [{"msg": "u23", "label": "lifts u20"}]})
    out = _chunk(_with_rules(R1_PUSH), [U20, u23], answer, reply=reply)
    assert out.first.defects == ()
    assert [(q.msg, q.kind, q.target) for q in out.asked] == [("u23", "replaced", "u20")]
    assert "`lifts u20`" in out.block
    assert out.final.questions == ()  # the label now names the narrowing: nothing left to ask
    r1, r2 = out.state.rules
    assert (r1.lifted, r1.liftedBy, r1.replacedBy) == (True, "u20", "R2")
    assert (r2.id, r2.message, r2.words, r2.lifted, r2.liftedBy) == ("R2", "u20", U20.text, True, "u23")
    assert "## Standing rules" not in out.summary


def test_ex_8_lift_naming_only_the_replaced_rule_words_leaves_the_narrowing() -> None:
    """EX-8 variant, LIFT-8: "main" and "push" come from R1, so the lift of u20 is refused and R2 stays."""
    u23 = OfferedMessage("u23", "The main push rule no longer applies.")
    answer = _reply({"u20": "rule and lifts R1", "u23": "lifts R1"})
    reply = json.dumps({"labels": [{"msg": "u23", "label": "lifts u20"}]})
    out = _chunk(_with_rules(R1_PUSH), [U20, u23], answer, reply=reply)
    assert [(r.id, r.lifted) for r in out.state.rules] == [("R1", True), ("R2", False)]
    assert f'- R2 "{U20.text}" (u20)' in out.summary and "Never push to main." not in out.summary


R3_TABS = Rule(id="R3", words="Always indent with tabs.", message="u4", seq=3, span=1)


def test_ex_9_pasted_withdrawal_raises_no_question() -> None:
    """EX-9, QUOTE-12, QUOTE-14, LIFT-10, LIFT-11."""
    text = (
        'My colleague wrote: "the tabs rule no longer applies to any of our repositories" so what do you '
        "think? Use tabs in the new files from now on."
    )
    assert len(text) == 141
    out = _chunk(_with_rules(R3_TABS), [OfferedMessage("u18", text)], _reply({"u18": "rule"}))
    assert out.final.questions == () and out.asked == ()
    assert _rules(out.state) == [("R3", R3_TABS.words, "u4", False), ("R4", text, "u18", False)]


def test_ex_9_short_quote_counts_and_raises_the_lift_12_question() -> None:
    """EX-9 variant, LIFT-12: a five-word quote stays in the judged text, so the question follows."""
    text = (
        'My colleague wrote: "tabs rule no longer applies" so what do you think? Use tabs in the new files.'
    )
    out = _chunk(_with_rules(R3_TABS), [OfferedMessage("u18", text)], _reply({"u18": "rule"}))
    assert [q.text for q in out.asked] == [
        "u18 is labeled `rule` and may replace the rule u4 gave (Always indent with tabs.): "
        "answer `rule and lifts u4` or `rule`"
    ]
    assert not out.state.rules[0].lifted  # no reply: nothing changes


R2_TABS = Rule(id="R2", words="Indent with tabs.", message="u2", seq=2, span=1)
U17 = OfferedMessage("u17", "Switch to two-space indentation instead of tabs from now on.")
EX_10_QUESTION = (
    "u17 is labeled `rule` and may replace the rule u2 gave (Indent with tabs.): "
    "answer `rule and lifts u2` or `rule`"
)


def test_ex_10_the_offered_reply_lifts_r2_and_records_u17() -> None:
    """EX-10, LIFT-10, LIFT-14, LIFT-16."""
    reply = json.dumps({"labels": [{"msg": "u17", "label": "rule and lifts u2"}]})
    out = _chunk(_with_rules(R2_TABS), [U17], _reply({"u17": "rule"}), reply=reply)
    assert [q.text for q in out.asked] == [EX_10_QUESTION]
    r2, r3 = out.state.rules
    assert (r2.lifted, r2.liftedBy, r2.replacedBy) == (True, "u17", "R3")
    assert (r3.id, r3.words, r3.message, r3.lifted) == ("R3", U17.text, "u17", False)
    assert r2.liftSeq is not None and r3.seq < r2.liftSeq  # a rule before its own lifts (PASS-5)
    assert "Indent with tabs." not in out.summary


def test_ex_10_other_replies_change_nothing() -> None:
    """EX-10, LIFT-15: another form, another target, no JSON, or a reply heard only on the asked message."""
    replies = [
        json.dumps({"labels": [{"msg": "u17", "label": "lifts u2"}]}),
        json.dumps({"labels": [{"msg": "u17", "label": "rule and lifts u9"}]}),
        "I think u17 should lift u2.",
        json.dumps({"labels": [{"msg": "u17", "label": "rule"}, {"msg": "u5", "label": "lifts u2"}]}),
    ]
    for reply in replies:
        out = _chunk(_with_rules(R2_TABS), [U17], _reply({"u17": "rule"}), reply=reply)
        assert [(r.id, r.lifted) for r in out.state.rules] == [("R2", False), ("R3", False)], reply


def test_ex_12_goal_message_records_the_objective_whole() -> None:
    """EX-12, QUOTE-10, QUOTE-2: template words are rejected; the objective is recorded whole."""
    objective = "Ship the CSV export with tests; never touch the public API."
    template = (
        "You are working towards a goal. Work autonomously until the objective is met, and report progress "
        "after each step. " * 4
    )
    text = f"{template}\n{GOAL_TAGS[0]}\n{objective}\n{GOAL_TAGS[1]}\n{template}"
    assert len(text) > 800 and len(objective) == 59
    for words in ("Work autonomously until the objective is met", "never touch the public API"):
        answer = _reply({"u1": "rule"}, {"u1": words})
        out = _chunk(State(), [OfferedMessage("u1", text)], answer)
        assert out.first.defects == ()
        assert _rules(out.state) == [("R1", objective, "u1", False)]
        assert "autonomously" not in out.state.model_dump_json()
