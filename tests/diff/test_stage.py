"""The Diff stage's call sequence per chunk: retry with a note, kept answers, raised budgets, questions.

The model is the edge of the world here: the model of :mod:`tests.diff.scripted_model` hands out replies in
order and records each call's kind, output budget and messages, so the tests see exactly what the stage asked
and when.

The stage's CPU work (planning, each chunk's prompt, verification) runs off the event loop (PASS-21): each
step is held mid-work on a large span until another task on the loop has run. Held in a worker thread, it
waits while the loop serves that task; held on the loop, nothing else could run, so the wrapper records that
instead of waiting. Those tests assert the order of events, never a duration.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import anyio
import anyio.from_thread
import pytest

from longhaul_daemon.models.call_errors import BudgetExceeded, RetryableError
from longhaul_daemon.passes.diff import diff_stage as stage
from longhaul_daemon.passes.diff.diff_stage import run_diff
from longhaul_daemon.passes.model_calls import raised_budget
from longhaul_daemon.passes.prompting.instructions import LABEL_SYSTEM_PROMPT, QUESTION_SYSTEM_PROMPT
from longhaul_daemon.passes.prompting.prompt import EarlierMessage, OfferedMessage
from longhaul_daemon.passes.prompting.takeover import Takeover
from longhaul_daemon.state.model import Rule, State
from longhaul_daemon.transcript.messages import SpanMessage

from . import chunk_cases
from .scripted_model import SPAN, SPAN_NEED, Call, ScriptedModel, answer, assistant, run, user

pytestmark = pytest.mark.anyio

WAIT_S = 30.0  # bounds a wait so a regression fails instead of hanging; never an assertion about speed


async def test_diff1_a_good_answer_is_one_call_and_closes_whole() -> None:
    model = ScriptedModel(answer({"u1": "rule", "u2": "not a rule"}))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert result.closed_as == "whole"
    assert result.narrative == "Worked on the span."
    rules = [label.rule for label in result.chunks[0].labels if label.rule is not None]
    assert [(r.message, r.words) for r in rules] == [("u1", "Never add new dependencies.")]


def _labels(*pairs: tuple[str, str]) -> str:
    """A label call's reply: only labels."""
    return json.dumps({"labels": [{"msg": msg, "label": label} for msg, label in pairs]})


async def test_fail1_ours_missing_labels_alone_are_asked_in_a_short_label_call() -> None:
    """FAIL-1, ours: an answer whose only defect is an unlabeled message gets its one retry as a label call
    showing that message alone, under the label instructions, with a schema asking for that label only."""
    model = ScriptedModel(answer({"u1": "rule"}), _labels(("u2", "not a rule")))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "label-retry"]
    call = model.calls[1]
    assert call.system == LABEL_SYSTEM_PROMPT
    assert [m.role for m in call.messages] == ["user"]  # not the chunk's conversation again
    assert "Fix the bug." in call.last_user and "Never add new dependencies." not in call.last_user
    assert call.schema is not None and call.schema.name == "diff_label_reply"
    assert call.schema.schema["properties"]["labels"]["required"] == ["u2"]
    assert result.closed_as == "whole" and result.held == ()
    [chunk] = result.chunks
    assert chunk.judged == {"u1", "u2"}
    assert [(label.msg, label.rule.words) for label in chunk.labels if label.rule] == [
        ("u1", "Never add new dependencies.")
    ]


async def test_fail1_ours_the_label_call_shows_the_rules_in_force_and_its_lift_is_checked() -> None:
    """A label call may lift a rule in force; the lift meets every store check (LIFT-1, LIFT-16)."""
    state = State(rules=[Rule(id="R1", words="Never add new dependencies.", message="u0", seq=1, span=1)])
    span = [
        user("u1", "Fix the bug."),
        assistant("Done."),
        user("u2", "The dependencies rule no longer applies."),
    ]
    model = ScriptedModel(answer({"u1": "not a rule"}), _labels(("u2", "lifts R1")))
    result = await run(span, model, state=state)
    assert "R1: Never add new dependencies." in model.calls[1].last_user
    assert result.closed_as == "whole"
    [chunk] = result.chunks
    assert [(label.msg, [lift.target for lift in label.lifts]) for label in chunk.labels] == [("u2", ["R1"])]


async def test_fail1_ours_a_label_call_cannot_relabel_what_the_answer_labeled() -> None:
    """Only the asked messages take a label from the call: u1 keeps the first answer's `rule`."""
    model = ScriptedModel(answer({"u1": "rule"}), _labels(("u1", "not a rule"), ("u2", "not a rule")))
    result = await run(SPAN, model)
    [chunk] = result.chunks
    assert [label.msg for label in chunk.labels if label.rule] == ["u1"]
    assert result.closed_as == "whole"


async def test_fail1_a_missing_label_beside_another_defect_still_costs_the_whole_retry() -> None:
    """With any other defect the retry is FAIL-1's: the whole answer again, the flawed reply shown back."""
    flawed = answer({"u1": "lifts R9"})
    model = ScriptedModel(flawed, answer({"u1": "rule", "u2": "not a rule"}))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "retry"]
    note = model.calls[1].last_user
    assert "Your previous answer had these problems" in note and "u2" in note
    assert model.calls[1].messages[1].role == "assistant"  # the flawed reply is shown back
    assert result.closed_as == "whole"


async def test_fail4_ours_a_message_still_unlabeled_is_held_and_the_span_closes_partial() -> None:
    """FAIL-1: never a second retry. FAIL-4, ours: the rest of the answer counts; u2 is held back."""
    model = ScriptedModel(answer({"u1": "rule"}), _labels())
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "label-retry"]
    assert (result.closed_as, result.reason, result.held) == ("partial", "unlabeled-messages", ("u2",))
    assert result.narrative == "Worked on the span."
    [chunk] = result.chunks
    assert chunk.judged == {"u1"}
    assert [label.msg for label in chunk.labels if label.rule] == ["u1"]


async def test_fail4_ours_a_label_call_that_throws_leaves_the_answer_and_holds_the_message() -> None:
    model = ScriptedModel(answer({"u1": "rule"}), RetryableError(status=500))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "label-retry"]
    assert (result.closed_as, result.held) == ("partial", ("u2",))


def _takeover() -> Takeover:
    """u1 picked by the standing-rule reading, u2 and u3 earlier messages it did not pick."""
    return Takeover(
        summary="The user set up the exporter.",
        earlier=(
            EarlierMessage("u1", "Always run the linter before committing.", picked=True),
            EarlierMessage("u2", "What does the exporter do with empty rows?"),
            EarlierMessage("u3", "Keep the CSV header in English."),
        ),
        picked={"u1": (0, 40)},
    )


TAKEOVER_SPAN = [user("u4", "Fix the export bug."), assistant("Fixed.")]


async def test_fail4_an_unpicked_earlier_message_left_unlabeled_reads_as_not_a_rule() -> None:
    """FAIL-4 (takeover part): unlabeled u3 costs the retry, then reads as `not a rule`; the span is whole."""
    leaves_u3 = answer({"u2": "not a rule", "u4": "not a rule"})
    model = ScriptedModel(leaves_u3, leaves_u3)
    result = await run(TAKEOVER_SPAN, model, takeover=_takeover())
    assert [c.kind for c in model.calls] == ["first", "label-retry"]
    assert "u3" in model.calls[1].last_user  # asked for once, like any unlabeled message
    assert result.closed_as == "whole" and result.reason is None
    [chunk] = result.chunks
    rules = [(label.msg, label.rule.words) for label in chunk.labels if label.rule is not None]
    assert rules == [("u1", "Always run the linter before committing.")]  # TAKEOVER-20: the pick stands
    assert "u3" not in chunk.judged


async def test_fail4_an_unlabeled_span_message_is_still_held_on_takeover() -> None:
    """FAIL-4: the excuse covers only earlier messages of the takeover, never the span's own: u4 is held."""
    leaves_u4 = answer({"u2": "not a rule", "u3": "rule"})
    model = ScriptedModel(leaves_u4, leaves_u4)
    result = await run(TAKEOVER_SPAN, model, takeover=_takeover())
    assert (result.closed_as, result.reason, result.held) == ("partial", "unlabeled-messages", ("u4",))


async def test_fail2_a_retry_that_throws_leaves_the_kept_answer() -> None:
    """The first answer parsed with one defect (an over-long narrative); the retry's call fails."""
    first = answer({"u1": "rule", "u2": "not a rule"}, narrative="x" * 300)
    model = ScriptedModel(first, RetryableError(status=503))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "retry"]
    assert result.closed_as == "whole"
    assert result.narrative is not None and len(result.narrative) <= 241  # cut to its bound (DIFF-16)


async def test_fail2_the_answer_with_fewer_defects_wins() -> None:
    first = answer({"u1": "rule", "u2": "not a rule"}, narrative="y" * 300)
    worse = json.dumps({"labels": [{"msg": "u1", "label": "maybe"}], "narrative": "z" * 300})
    model = ScriptedModel(first, worse)
    result = await run(SPAN, model)
    assert result.closed_as == "whole"
    assert result.narrative is not None and result.narrative.startswith("y")


async def test_fail2_retry_wins_a_tie() -> None:
    first = answer({"u1": "rule", "u2": "not a rule"}, narrative="a" * 300)
    retry = answer({"u1": "not a rule", "u2": "not a rule"}, narrative="b" * 300)
    result = await run(SPAN, ScriptedModel(first, retry))
    assert result.narrative is not None and result.narrative.startswith("b")
    # the retry's labels won: u1 keeps no rule of the model's; code's reading records it in doubt (doubts.py)
    assert [(label.msg, label.rule.doubt if label.rule else None) for label in result.chunks[0].labels] == [
        ("u1", "model-read-one-off")
    ]


async def test_fail7_cut_off_reply_is_retried_once_with_a_raised_budget() -> None:
    model = ScriptedModel(
        ('thinking about it... {"labels": [', "length"), answer({"u1": "rule", "u2": "not a rule"})
    )
    result = await run(SPAN, model)
    assert [(c.kind, c.budget) for c in model.calls] == [("first", SPAN_NEED), ("raised-budget", 8192)]
    assert result.closed_as == "whole"


async def test_fail7_no_raised_retry_when_the_budget_is_already_max_tokens() -> None:
    """FAIL-7, FAIL-8 (our choice): at ``maxTokens`` a cut answer gets neither a raised budget nor a format
    retry, which would be cut at the same limit again."""
    model = ScriptedModel(('{"labels": [', "length"), max_tokens=2000)
    result = await run(SPAN, model)
    assert [(c.kind, c.budget) for c in model.calls] == [("first", 2000)]
    assert result.closed_as == "narrative-less"
    assert result.reason == "unparsable-answer"


async def test_fail8_a_complete_answer_with_defects_still_gets_its_format_retry_at_max_tokens() -> None:
    model = ScriptedModel(answer({"u1": "rule"}), answer({"u1": "rule", "u2": "not a rule"}), max_tokens=2000)
    result = await run(SPAN, model)
    assert [(c.kind, c.budget) for c in model.calls] == [("first", 2000), ("label-retry", 2000)]
    assert result.closed_as == "whole"


def test_fail7_ex13_raised_budgets() -> None:
    """EX-13: 4,096 on 16,384 → 8,192; 6,000 on 32,000 → 12,000; 4,096 on 6,000 → 6,000; at max → none."""
    assert raised_budget(4096, 16_384) == 8192
    assert raised_budget(6000, 32_000) == 12_000
    assert raised_budget(4096, 6000) == 6000
    assert raised_budget(6000, 6000) is None
    assert raised_budget(4096, None) == 8192


async def test_fail10_fail19_every_call_failing_closes_narrative_less() -> None:
    model = ScriptedModel(RetryableError(status=500))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert (result.closed_as, result.reason) == ("narrative-less", "model-error")


async def test_fail10_budget_exhausted_has_its_own_reason() -> None:
    result = await run(SPAN, ScriptedModel(BudgetExceeded()))
    assert (result.closed_as, result.reason) == ("narrative-less", "budget-exhausted")


async def test_pass17_an_empty_span_asks_no_model() -> None:
    model = ScriptedModel()
    result = await run([], model)
    assert result.closed_as == "empty" and model.calls == []


async def test_lift10_a_question_round_follows_a_settled_answer() -> None:
    """EX-10: u17 labeled `rule` may replace R2; the reply `rule and lifts u2` lifts it."""
    state = State(
        rules=[Rule(id="R2", words="Indent with tabs.", message="u2", seq=1, span=1)], seq=1, nextRule=3
    )
    span = [user("u17", "Switch to two-space indentation instead of tabs from now on.")]
    reply = json.dumps({"labels": [{"msg": "u17", "label": "rule and lifts u2"}]})
    model = ScriptedModel(answer({"u17": "rule"}), reply)
    result = await run(span, model, state=state)
    assert [c.kind for c in model.calls] == ["first", "question"]
    assert (
        "u17 is labeled `rule` and may replace the rule u2 gave (Indent with tabs.)"
        in model.calls[1].last_user
    )
    # the round sends the asked message whole, not the chunk's state and conversation again
    [sent] = model.calls[1].messages
    assert "Switch to two-space indentation instead of tabs from now on." in sent.text
    assert "The span's conversation" not in sent.text and "The state so far" not in sent.text
    assert len(sent.text) < len(model.calls[0].messages[0].text)
    # and only the instructions a label needs: the first call's system prompt is several times longer
    assert model.calls[1].system == QUESTION_SYSTEM_PROMPT
    assert len(model.calls[1].system) < len(model.calls[0].system) / 2
    # and a schema asking for the asked labels alone, not the answer's other lists
    schema = model.calls[1].schema
    assert schema is not None and list(schema.schema["properties"]) == ["labels"]
    assert schema.schema["properties"]["labels"]["required"] == ["u17"]
    label = result.chunks[0].labels[0]
    assert label.rule is not None and [lift.target for lift in label.lifts] in (["R2"], ["u2"])


async def test_lift17_no_question_after_a_call_that_threw() -> None:
    state = State(
        rules=[Rule(id="R2", words="Indent with tabs.", message="u2", seq=1, span=1)], seq=1, nextRule=3
    )
    span = [user("u17", "Switch to two-space indentation instead of tabs from now on.")]
    flawed = answer({"u17": "rule"}, narrative="n" * 300)  # parsed, one defect: a retry is asked
    model = ScriptedModel(flawed, RetryableError(status=500))
    result = await run(span, model, state=state)
    assert [c.kind for c in model.calls] == ["first", "retry"]
    assert result.closed_as == "whole"
    assert result.chunks[0].labels[0].lifts == ()


async def test_fail11_carried_messages_are_offered_whole_and_labeled() -> None:
    long_text = "Never run migrations against prod. " + "context " * 60
    carried = [OfferedMessage(user_id="u1", text=long_text)]
    span = [user("u5", "Carry on with the export.")]
    words = "Never run migrations against prod."
    model = ScriptedModel(answer({"u1": ("rule", words), "u5": "not a rule"}))
    result = await run(span, model, carried=carried)
    assert long_text.strip() in model.calls[0].messages[0].text  # whole, not cut at 240 (DIFF-8)
    rules = [label.rule for label in result.chunks[0].labels if label.rule is not None]
    assert [(r.message, r.words) for r in rules] == [("u1", words)]


def _offered_ids(call: Call) -> list[str]:
    found = re.search(r"Label exactly these messages: ([^\n]*)\.", call.messages[0].text)
    assert found is not None
    return [part.strip() for part in found.group(1).split(",")]


async def test_diff1_diff3_a_large_span_is_cut_into_at_most_four_chunks_at_user_messages() -> None:
    span: list[SpanMessage] = []
    for n in range(1, 11):
        span += [user(f"u{n}", f"Step {n}: do the next part."), assistant("done " + "x" * 2000)]
    replies = [answer({uid: "not a rule" for uid in ids}) for ids in ([f"u{n}" for n in range(1, 11)],)]
    model = ScriptedModel(*replies * 4, input_tokens=3000)
    # The scripted replies label every id; the stage must still offer each chunk only its own messages.
    result = await run(span, model)
    assert 2 <= len(model.calls) <= 4
    seen = [_offered_ids(call) for call in model.calls]
    assert sum(len(ids) for ids in seen) == 10
    assert [uid for ids in seen for uid in ids] == [f"u{n}" for n in range(1, 11)]
    assert result.chunk_count == len(model.calls)


async def test_diff3_a_later_chunk_can_lift_a_rule_an_earlier_chunk_recorded() -> None:
    span = [
        user("u1", "Never push to main."),
        assistant("ok " + "y" * 3000),
        user("u2", "The push to main rule no longer applies."),
        assistant("ok " + "z" * 3000),
    ]
    model = ScriptedModel(
        answer({"u1": "rule"}),
        answer({"u2": "lifts u1"}),
        input_tokens=1500,
    )
    result = await run(span, model)
    assert len(model.calls) == 2
    assert "u1" in model.calls[1].messages[0].text  # the earlier chunk's rule is in the later prompt
    assert result.closed_as == "whole"
    lifts = [lift for events in result.chunks for label in events.labels for lift in label.lifts]
    assert [(lift.target, lift.by) for lift in lifts] == [("u1", "u2")]


async def test_fail12_a_chunk_that_never_verifies_marks_the_span_chunk_missing() -> None:
    span = [
        user("u1", "Never push to main."),
        assistant("ok " + "y" * 3000),
        user("u2", "Next."),
        assistant("z" * 3000),
    ]
    model = ScriptedModel(answer({"u1": "rule"}), RetryableError(status=500), input_tokens=1500)
    result = await run(span, model)
    assert result.closed_as == "chunk-missing"
    assert result.reason == "chunk-model-error"
    assert len(result.chunks) == 1


def large_span() -> chunk_cases.Case:
    """400 turns of tool output, cut into several chunks at a harder tool edge."""
    span = chunk_cases.turns(range(4, 404), lines=40)
    return chunk_cases.Case(chunk_cases.inputs(span, range(4, 404)), 40_000)


@pytest.mark.parametrize("step", ["plan_diff", "prepare_chunk", "evaluate"])
async def test_pass21_the_loop_serves_another_task_while_a_diff_step_works(
    step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PASS-21: while ``step`` works on a large span, a concurrent task on the loop runs, and the step
    finishes only after it."""
    loop_thread = threading.get_ident()
    order: list[str] = []
    working = anyio.Event()
    served = threading.Event()
    real = getattr(stage, step)

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == loop_thread:
            order.append(f"{step} on the loop")  # waiting here would stop the very task it waits for
        elif not served.is_set():
            anyio.from_thread.run_sync(working.set)
            assert served.wait(WAIT_S), "the loop never served the other task"
        value = real(*args, **kwargs)
        order.append(f"{step} finished")
        return value

    async def other_session() -> None:
        await working.wait()
        order.append("other task ran")
        served.set()

    monkeypatch.setattr(stage, step, held)
    case = large_span()
    model = chunk_cases.RecordingModel(case)
    async with anyio.create_task_group() as group:
        group.start_soon(other_session)
        result = await run_diff(case.inputs, model)
        group.cancel_scope.cancel()  # the other task never woke when the step ran on the loop
    assert order[:2] == ["other task ran", f"{step} finished"], order
    assert result.chunk_count > 1 and result.closed_as == "whole"  # a real multi-chunk pass went through


async def test_lift18_fail5_and_lift10_questions_of_one_chunk_share_one_call() -> None:
    """LIFT-18 (our choice): a lift refused because a narrowing replaced its rule (FAIL-5, LIFT-7) and a rule
    that may replace an older one (LIFT-10) are asked in the same single question round."""
    push = Rule(
        id="R1", words="Never push to main.", message="u1", seq=1, span=1, lifted=True, liftedBy="u20"
    )
    narrowing = Rule(id="R5", words="push hotfix branches to main", message="u20", seq=2, span=1)
    tabs = Rule(id="R2", words="Indent with tabs.", message="u2", seq=3, span=1)
    state = State(rules=[push, tabs, narrowing], seq=3, nextRule=6)
    span = [
        user("u23", "The hotfix push rule no longer applies."),
        user("u24", "Switch to two-space indentation instead of tabs from now on."),
    ]
    questions_answered = json.dumps(
        {"labels": [{"msg": "u23", "label": "lifts R5"}, {"msg": "u24", "label": "rule and lifts u2"}]}
    )
    model = ScriptedModel(answer({"u23": "lifts R1", "u24": "rule"}), questions_answered)
    result = await run(span, model, state=state)
    assert [c.kind for c in model.calls] == ["first", "question"]  # one round for both kinds
    asked = model.calls[1].last_user
    assert "`lifts R5`" in asked and "u24 is labeled `rule` and may replace the rule u2 gave" in asked
    labels = {label.msg: label for label in result.chunks[0].labels}
    assert [lift.target for lift in labels["u23"].lifts] == ["R5"]
    assert [lift.target for lift in labels["u24"].lifts] in (["R2"], ["u2"])
