"""Issue 11: which replies earn a retry, what a route that failed before still gets, and the output budget.

A retry is paid for. Only a reply that holds the answer or began it gets the format retry (FAIL-1); a reply
with no JSON object, or only an echoed object of another shape, closes the chunk ``unparsable-answer`` at
once. A reply cut at the cap gets FAIL-7's raised budget when it is empty or began the answer, never when it
is prose. A model that already gave a reply with no usable answer in this session gets at most one retry a
chunk. The first budget is what the chunk's answer can need (DIFF-19 decision), capped at ``maxTokens``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from longhaul_daemon.models.completion import CompletionResult, StopReason
from longhaul_daemon.models.request import Message
from longhaul_daemon.models.stream_watch import StreamWatch
from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.passes.answers.events import ChunkContext
from longhaul_daemon.passes.answers.extract import answer_shaped, answer_with_prose
from longhaul_daemon.passes.answers.quotes import OfferedMessage
from longhaul_daemon.passes.prompting.planning import FLOOR_TOKENS, answer_tokens, chunk_tokens

from .scripted_model import SPAN, SPAN_NEED, ScriptedModel, answer, assistant, run, user

pytestmark = pytest.mark.anyio

GOOD = answer({"u1": "rule", "u2": "not a rule"})
ECHO = 'Here is the result: {"status":"ok","uptime_s":812}'
LENGTH: StopReason = "length"


async def test_a_reply_with_no_json_object_is_not_retried() -> None:
    """A model that answers in prose cannot do this; a retry showing its prose back never helped."""
    model = ScriptedModel("I have labeled the messages as asked. The user wants no new dependencies.")
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert (result.closed_as, result.reason) == ("narrative-less", "unparsable-answer")
    assert model.unusable == 1


async def test_issue_11_an_echoed_tool_result_closes_unparsable_answer_never_unlabeled_messages() -> None:
    """The only object in the reply is a tool result echoed from the prompt: it is not the answer, so the
    chunk did not fail for its labels; it never held an answer at all."""
    span = [*SPAN[:2], assistant('Health check said {"status":"ok","uptime_s":812}.'), SPAN[2]]
    model = ScriptedModel(ECHO)
    result = await run(span, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert (result.closed_as, result.reason) == ("narrative-less", "unparsable-answer")


async def test_an_answer_begun_but_broken_gets_the_format_retry() -> None:
    broken = '{"labels": [{"msg": "u1", "label": "rule"}], "narrative": "x", "now": '  # stopped, not cut
    model = ScriptedModel(broken, GOOD)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "retry"]
    assert "cut off or is not valid JSON" in model.calls[1].last_user
    assert result.closed_as == "whole"


async def test_prose_cut_at_the_cap_gets_no_raised_budget() -> None:
    """A loop of prose to the output limit is a model not answering; more room buys more prose."""
    model = ScriptedModel(("The messages are: u1 u1 u1 u1 u1 u1 u1", LENGTH))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert result.reason == "unparsable-answer"


async def test_an_empty_reply_cut_at_the_cap_gets_the_raised_budget() -> None:
    """EX-13: the budget went on reasoning, so nothing visible came back: FAIL-7 still applies."""
    model = ScriptedModel(("", LENGTH), GOOD)
    result = await run(SPAN, model)
    assert [(c.kind, c.budget) for c in model.calls] == [("first", SPAN_NEED), ("raised-budget", 8192)]
    assert result.closed_as == "whole"


async def test_a_route_that_failed_before_gets_one_retry_a_chunk_not_two() -> None:
    """FAIL-8 allows a raised budget and a format retry; after an earlier reply with no usable answer in
    this session, the raised budget is the chunk's one retry, and the still-broken answer is not retried."""
    cut: tuple[str, StopReason] = ('{"labels": [{"msg": "u1"', "length")
    model = ScriptedModel(cut, ('{"labels": [', "length"), failed_before=True)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "raised-budget"]
    assert result.reason == "unparsable-answer"
    fresh = ScriptedModel(cut, answer({"u1": "rule"}), GOOD)  # the raised reply is whole but misses u2
    assert (await run(SPAN, fresh)).closed_as == "whole"
    assert [c.kind for c in fresh.calls] == ["first", "raised-budget", "label-retry"]  # FAIL-8: one of each
    still_cut = ScriptedModel(cut, ('{"labels": [', "length"))
    assert (await run(SPAN, still_cut)).reason == "unparsable-answer"
    assert [c.kind for c in still_cut.calls] == ["first", "raised-budget"]  # cut again: no note at the limit


async def test_a_route_that_failed_before_still_gets_one_format_retry() -> None:
    model = ScriptedModel(answer({"u1": "rule"}), GOOD, failed_before=True)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "label-retry"]
    assert result.closed_as == "whole"


async def test_a_chunk_after_one_with_no_answer_gets_at_most_one_retry() -> None:
    """The failure of an earlier chunk of the same pass counts too (here the model reports it back)."""
    big = "x" * 3000
    span = [user("u1", f"First part. {big}"), assistant("ok"), user("u2", f"Second part. {big}")]
    model = ScriptedModel(
        "no json here",  # chunk 1: no object, no retry
        ('{"labels": [{"msg": "u2"', "length"),  # chunk 2: begun and cut: the raised budget is its retry
        ('{"labels": [', "length"),
        input_tokens=1500,
    )
    result = await run(span, model)
    assert [c.kind for c in model.calls] == ["first", "first", "raised-budget"]
    assert result.closed_as == "narrative-less" and model.unusable == 3


def test_diff19_budget_counts_labels_long_words_lists_and_fixes() -> None:
    """DIFF-19 decision: 200 + 60 a label + words of long messages + prose bounds + half the lists + 30 an
    open error, at three characters a token, never below the floor."""
    prose = 240 + 600 + 300
    lists = (8 * (300 + 300 + 40) + 8 * (300 + 40) + 12 * (80 + 200 + 40)) // 2
    assert answer_tokens([40, 40], open_errors=0, cites_ledger=False) == -(-(200 + 120 + prose + lists) // 3)
    with_ledger = (8 * (300 + 300 + 36 + 40) + 8 * (300 + 36 + 40) + 12 * (80 + 200 + 40)) // 2
    expected = -(-(200 + 60 + 600 + prose + with_ledger + 3 * 30) // 3)
    assert answer_tokens([900], open_errors=3, cites_ledger=True) == expected
    assert (
        answer_tokens([301], open_errors=0, cites_ledger=False)
        - answer_tokens([300], open_errors=0, cites_ledger=False)
        == 100
    )  # words count from 301 characters on (QUOTE-2: up to 300 the message is the rule)
    hundred = answer_tokens([50] * 100, open_errors=0, cites_ledger=True)
    assert 4096 < hundred < 5000 and 2000 < answer_tokens([], open_errors=0, cites_ledger=False) < 4096
    assert answer_tokens([], open_errors=0, cites_ledger=False) >= FLOOR_TOKENS


def test_diff19_a_chunk_budget_reads_its_offered_messages_and_open_errors() -> None:
    offered = (OfferedMessage("u1", "a" * 700), OfferedMessage("u2", "b"))
    ctx = ChunkContext(offered=offered, rules=(), ledger_ids=frozenset())
    assert chunk_tokens(ctx) == answer_tokens([700, 1], open_errors=0, cites_ledger=False)


async def test_diff19_the_first_budget_is_the_chunks_need_capped_at_max_tokens() -> None:
    model = ScriptedModel(GOOD, max_tokens=1500)
    await run(SPAN, model)
    assert [c.budget for c in model.calls] == [1500]
    sized = ScriptedModel(GOOD, max_tokens=None)
    await run(SPAN, sized)
    assert [c.budget for c in sized.calls] == [SPAN_NEED] and SPAN_NEED < 4096


async def test_issue_11_each_call_holds_labels_to_the_messages_asked_about() -> None:
    """A constrained small model repeated label items until its output limit: the schema of a chunk's calls
    allows exactly one label per offered message, keyed by its id; other lists keep their bounds."""
    model = ScriptedModel(answer({"u1": "lifts R9"}), GOOD)  # a defect beside the missing label: full retry
    await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "retry"]
    for call in model.calls:  # the first call and its retry
        assert call.schema is not None
        labels = call.schema.schema["properties"]["labels"]
        assert labels["required"] == ["u1", "u2"] and labels["additionalProperties"] is False
        forms = labels["properties"]["u2"]["properties"]["label"]["enum"]
        assert forms == ["rule", "not a rule"]  # once each, held to its forms
        assert call.schema.schema["properties"]["decisions"]["maxItems"] == 8
    asked = ScriptedModel(answer({"u1": "rule"}), GOOD)  # only u2 unlabeled: the label call asks for u2
    await run(SPAN, asked)
    label_schema = asked.calls[1].schema
    assert label_schema is not None and asked.calls[1].kind == "label-retry"
    labels = label_schema.schema["properties"]["labels"]
    assert labels["required"] == ["u2"] and list(labels["properties"]) == ["u2"]
    assert set(label_schema.schema["properties"]) == {"labels"}


# Ours, after FAIL-7: a begun answer cut at the last room it gets keeps its whole labels and prose.

CUT_AFTER_PROSE = (
    '{"labels": {"u1": {"label": "rule"}, "u2": {"label": "not a rule"}}, "narrative": "Fixed the bug.", '
    '"now": "Run the tests.", "decisions": [{"text": "Use a regex", "why": "simpler", "evidence": []}, '
    '{"text": "Keep the par'
)


async def test_an_answer_cut_after_its_prose_at_the_last_room_is_salvaged() -> None:
    """The cap cannot be raised (``maxTokens`` reached): the answer is cut back to its last whole item and
    closed, so the labels and prose count, one call, and the lost tail is counted."""
    model = ScriptedModel((CUT_AFTER_PROSE, LENGTH), max_tokens=SPAN_NEED)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert (result.closed_as, result.narrative) == ("whole", "Fixed the bug.")
    [chunk] = result.chunks
    assert [d.text for d in chunk.decisions] == ["Use a regex"]
    assert result.dropped.get("cut-reply-tail") == 1
    assert model.unusable == 0


async def test_fail_7_comes_first_a_raisable_cut_answer_is_asked_again() -> None:
    model = ScriptedModel((CUT_AFTER_PROSE, LENGTH), GOOD)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "raised-budget"]
    assert result.closed_as == "whole" and "cut-reply-tail" not in result.dropped


async def test_a_cut_inside_the_labels_is_not_salvaged() -> None:
    """Labels half written are not an answer: the chunk stays unparsed and its messages are carried."""
    cut = '{"labels": {"u1": {"label": "rule"}, "u2": {"lab'
    model = ScriptedModel((cut, LENGTH), max_tokens=SPAN_NEED)
    result = await run(SPAN, model)
    assert (result.closed_as, result.reason) == ("narrative-less", "unparsable-answer")
    assert model.unusable == 1


async def test_a_narrative_written_on_to_the_cap_is_cut_and_the_labels_kept() -> None:
    """A model that copies the conversation into its narrative until the limit: the labels count, the
    narrative is cut to its bound with "…", and the Now it never reached says nothing."""
    cut = '{"labels": {"u1": {"label": "rule"}, "u2": {"label": "not a rule"}}, "narrative": "' + "ab " * 200
    model = ScriptedModel((cut, LENGTH), max_tokens=SPAN_NEED)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert result.closed_as == "whole" and result.narrative is not None
    assert result.narrative.endswith("…") and len(result.narrative) <= 240
    assert result.dropped.get("cut-reply-tail") == 1 and model.unusable == 0


async def test_a_salvaged_answer_with_a_defect_gets_no_format_retry() -> None:
    """The retry would meet the same output limit on a longer prompt: the salvaged answer stands, its bad
    item left out."""
    cut = CUT_AFTER_PROSE.replace(
        '"decisions": [', '"values": [{"name": "n", "value": 5, "turn": "u1"}], "decisions": ['
    )
    model = ScriptedModel((cut, LENGTH), max_tokens=SPAN_NEED)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert result.closed_as == "whole" and result.dropped.get("values") == 1


# Ours, after FAIL-7: a reply the stream ended at a loop inside its narrative gets no raised budget.

LABELS_THEN_LOOP = (
    '{"labels": {"u1": {"label": "rule"}, "u2": {"label": "not a rule"}}, "narrative": "Fixed the bug'
    + ". See the build" * 40
)


class StreamedModel(ScriptedModel):
    """Each scripted reply read as a direct call reads its stream: in small pieces through the daemon's
    :class:`StreamWatch`, with the Diff's own stop and cut rules; a reply the watch ends comes back as the
    watch hands it on, and the model writes nothing past that."""

    async def call(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema | None = None,
    ) -> CompletionResult:
        whole = await super().call(
            system, messages, kind=kind, max_output_tokens=max_output_tokens, schema=schema
        )
        watch = StreamWatch(answer_shaped, answer_with_prose)
        for at in range(0, len(whole.text), 4):
            if watch.feed(whole.text[at : at + 4]):
                return watch.result(replace(whole, text=watch.text, stop_reason="stop", stopped_early=True))
        return whole


async def test_fail_7_a_reply_ended_at_a_loop_in_its_narrative_is_salvaged_with_one_call() -> None:
    """DIFF-19's first budget could be raised, but a model looping in its narrative would loop on in more
    room: the reply the stream ended at the loop is salvaged as it is, its labels kept and its narrative the
    text before the loop and one copy of it. One call, no raised-budget retry, no format retry."""
    model = StreamedModel((LABELS_THEN_LOOP, LENGTH))
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first"]
    assert (result.closed_as, result.narrative) == ("whole", "Fixed the bug. See the build")
    [chunk] = result.chunks
    assert chunk.judged == {"u1", "u2"} and [label.msg for label in chunk.labels] == ["u1"]
    assert result.dropped.get("cut-reply-tail") == 1 and model.unusable == 0


async def test_fail_7_the_same_loop_run_to_the_cap_unwatched_still_gets_the_raised_budget() -> None:
    """Without the stream ended at the loop (a reply read whole, cut at its limit), FAIL-7 stands: a begun
    answer cut where the budget can still grow is asked again with more room."""
    model = ScriptedModel((LABELS_THEN_LOOP, LENGTH), GOOD)
    result = await run(SPAN, model)
    assert [c.kind for c in model.calls] == ["first", "raised-budget"]
    assert result.closed_as == "whole"
