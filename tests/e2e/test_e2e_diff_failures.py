"""Answers that fail in form or never arrive, through a real pi and the real daemon (FAIL-1..FAIL-19).

Truncated JSON, bad or conflicting labels, over-long lists, replies cut at the output limit, prose and echoed
objects, a model slower than the pass budget, error statuses with and without ``retry-after``: each test
checks the calls the daemon made (first, retry, raised budget), how the span closed, and what the next pass
is offered. The first output budget is what the chunk's answer can need (DIFF-19 decision, under 4,096 tokens
for these small spans) and every call asks for the answer schema as structured output (issue 11).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import Reply, text, tool_call
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import (
    RETRY_NOTE_MARKER,
    WORDS_NOTE_MARKER,
    DiffCall,
    Lab,
    answer,
    answer_object,
    cut_at_limit,
    notices,
    raw,
    rule_line,
    section,
    set_model_max_tokens,
    slow,
    status,
    write_longhaul_settings,
)
from .diff_steps import (
    assert_held,
    assert_whole,
    close_span,
    closed,
    install,
    padded,
    single_rule,
    wait_log_record,
)
from .session_log import compactions, read_entries

pytestmark = pytest.mark.e2e


def test_truncated_json_gets_one_retry_with_a_note(pi: PiRpc, model_server: ModelServer) -> None:
    """FAIL-1, DIFF-17: an answer that is not complete JSON is a fixable defect: one retry that shows the
    reply and a note; the retry's answer is verified and recorded."""
    message = "Tests go under tests/ and nowhere else."
    broken = '{"labels": [{"msg": "u1", "label": "rule"}], "decisions": [{"text": "Use pyt'
    script = install(model_server, raw(broken), answer([Lab("Tests go under", "rule")]))
    pi.prompt(message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "retry"]
    assert script.unstructured() == [], "every Diff call asks for the answer schema (issue 11)"
    retry = script.calls[1]
    assert RETRY_NOTE_MARKER in retry.last_user
    assistant = [m for m in retry.body["messages"] if m.get("role") == "assistant"]
    assert assistant and broken in str(assistant[-1].get("content")), "the retry should show the flawed reply"
    assert single_rule(found)["words"] == message
    assert_whole(found)


def test_reply_cut_at_the_output_limit_is_retried_with_a_raised_budget(
    sandbox: Sandbox, daemon: Daemon, start_pi: Callable[[], PiRpc], model_server: ModelServer
) -> None:
    """FAIL-7, FAIL-8, DIFF-19, EX-13: with maxTokens 16,384 the first call asks what the answer can need; a
    reply cut off at that limit mid-answer is asked again once with 8,192, and that answer is used."""
    set_model_max_tokens(sandbox, 16384)
    pi = start_pi()
    message = "Never commit generated files."
    script = install(
        model_server, cut_at_limit('{"labels": [{"msg": '), answer([Lab("generated files", "rule")])
    )
    pi.prompt(message)
    found = close_span(pi, 1)

    first_budget = script.calls[0].max_tokens
    assert first_budget is not None and 1024 <= first_budget < 4096, first_budget
    assert [c.max_tokens for c in script.calls] == [first_budget, 8192], [c.kind for c in script.calls]
    assert RETRY_NOTE_MARKER not in script.calls[1].last_user, "a raised-budget call is not a format retry"
    assert single_rule(found)["words"] == message
    assert_whole(found)
    narrative = wait_log_record(sandbox, "compaction")["narrative"]  # FAIL-17: the traces, as counts
    assert narrative["callKinds"] == {"first": 1, "raised-budget": 1}, narrative
    assert narrative["outputBudgets"] == [first_budget, 8192], narrative
    assert narrative["structured"] == {"json_schema": 2}, narrative


def test_cut_off_reply_at_max_tokens_gets_no_retry(
    sandbox: Sandbox, daemon: Daemon, start_pi: Callable[[], PiRpc], model_server: ModelServer
) -> None:
    """FAIL-7, FAIL-8 (our decision): with maxTokens 2,000 the first budget is already the maximum, so a reply
    cut off mid-answer cannot be raised; nor is it sent back for its format, since a note at the same limit on
    a longer prompt is cut again. One call; the span closes narrative-less with the message carried whole."""
    set_model_max_tokens(sandbox, 2000)
    pi = start_pi()
    message = "Always run the formatter before you push."
    script = install(model_server, cut_at_limit('{"labels": ['), answer([Lab("formatter before", "rule")]))
    pi.prompt(message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first"]
    assert [c.max_tokens for c in script.calls] == [2000]
    assert closed(found) == ("narrative-less", "unparsable-answer"), found.span_record["data"]
    assert message in [m["text"] for m in found.state["carriedMessages"]]
    assert not found.state["rules"]


@pytest.mark.parametrize(
    "reply",
    [
        "I labeled the messages: the formatter one is a rule.",
        'Running it printed {"status":"ok","uptime_s":812}, so all is well.',
    ],
    ids=["prose", "echoed-object"],
)
def test_a_reply_without_the_answer_object_is_not_retried(
    pi: PiRpc, model_server: ModelServer, reply: str
) -> None:
    """Issue 11: prose, or an object echoed from a tool result, holds no answer: a model that answers so
    cannot do this, and showing it its reply again never helped. The span closes ``unparsable-answer``
    (never ``unlabeled-messages``) after one call, its message carried to the next pass."""
    message = "Always run the formatter before you push."
    script = install(model_server, raw(reply), then=answer([Lab("formatter before", "rule")]))
    model_server.enqueue(tool_call("bash", command='echo \'{"status":"ok","uptime_s":812}\''), text("Ok."))
    pi.prompt(message)
    start = pi.mark()
    found = close_span(pi, 1)

    assert script.kinds() == ["first"]
    assert closed(found) == ("narrative-less", "unparsable-answer"), found.span_record["data"]
    assert found.span_record["data"]["unusableReplies"] == {"fake/fake-model": 1}
    assert script.calls[0].id_of(message) in found.state["carried"]
    assert any("unparsable-answer" in n for n in notices(pi, start))


def test_model_slower_than_the_pass_budget(
    sandbox: Sandbox, daemon_process: Daemon, start_pi: Callable[[], PiRpc], model_server: ModelServer
) -> None:
    """FAIL-14, FAIL-19, FAIL-10, FAIL-11: a model that has not answered when the pass budget runs out never
    reaches the state. The daemon stops the call within its budget and closes the span narrative-less with
    reason ``budget-exhausted`` (its documented code): ledger kept, no rule, the user's message carried, a UI
    notice naming the reason. It never waits for the model."""
    daemon_process.start(sandbox.daemon_env(), extra_args=("--pass-budget", "4"))
    pi = start_pi()
    message = "Never touch the vendored directory."
    script = install(model_server, then=slow(120, answer([Lab("vendored directory", "rule")])))
    model_server.enqueue(tool_call("bash", command="echo slow-span"), text("Ran it."))
    pi.prompt(message)
    start = pi.mark()
    found = close_span(pi, 1)

    assert script.kinds() == ["first"], "no retry follows a call the budget stopped"
    assert closed(found) == ("narrative-less", "budget-exhausted"), found.span_record["data"]
    assert found.state["rules"] == [] and section(found.summary, "Standing rules") == ""
    assert [c["text"] for c in found.state["commands"]] == ["echo slow-span"]
    u_message = script.calls[0].id_of("vendored directory")
    assert u_message in found.state["carried"], found.state["carried"]
    shown = notices(pi, start)
    assert any("budget-exhausted" in n for n in shown), f"FAIL-10: no notice names the reason: {shown}"


def test_server_errors_close_narrative_less_and_carry_messages_whole(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """FAIL-19, FAIL-10, FAIL-11, DIFF-8, EX-14: a model answering 500 to every attempt makes the span close
    narrative-less (reason in the work log, span record and UI notice; ledger updated, no rule). The next
    pass offers the carried user messages whole, ahead of its own, and a label there records the rule under
    its original u<n>."""
    rule_text = "never run migrations against prod"
    long = padded("Keep the migration scripts idempotent so they can be rerun.", 400)
    script = install(model_server, then=status(500))
    pi.prompt(rule_text)
    model_server.enqueue(tool_call("bash", command="echo migrate-dry-run"), text("Dry run done."))
    pi.prompt(long)
    start = pi.mark()
    found = close_span(pi, 1)

    assert len(script.calls) >= 2, "FAIL-19: a 500 is retried by the daemon's policy before it gives up"
    closed_as, reason = closed(found)
    assert closed_as == "narrative-less" and reason, found.span_record["data"]
    last = found.state["workLog"][-1]
    assert last["closedAs"] == "narrative-less" and last["reason"] == reason
    assert "narrative-less" in last["text"] and str(reason) in last["text"]
    assert str(reason) in section(found.summary, "Work log")
    assert found.state["rules"] == [] and section(found.summary, "Standing rules") == ""
    assert [c["text"] for c in found.state["commands"]] == ["echo migrate-dry-run"]
    u_rule = script.calls[0].id_of(rule_text)
    u_long = script.calls[0].id_of("Keep the migration scripts idempotent")
    assert u_rule and u_long and {u_rule, u_long} <= set(found.state["carried"])
    shown = notices(pi, start)
    assert any(str(reason) in n for n in shown), f"FAIL-10: no notice names {reason!r}: {shown}"

    # Span 2: the model answers again; the carried messages come first, whole, and are labeled.
    before = len(script.calls)
    script.then = answer([Lab(rule_text, "rule")])
    pi.prompt("Now let us look at the report page.")
    found = close_span(pi, 2)
    calls = script.since(before)
    assert [c.kind for c in calls] == ["first"]
    call = calls[0]
    carried = [m for m in call.offered if m.carried]
    assert [m.id for m in carried][:2] == [u_rule, u_long], [m.id for m in call.offered]
    assert call.message(str(u_long)).shown == long, "DIFF-8: a carried message is shown whole, never cut"
    assert call.asked[: len(carried)] == tuple(m.id for m in carried)
    rule = single_rule(found)
    assert (rule["id"], rule["words"], rule["message"]) == ("R1", rule_text, u_rule)
    assert rule_line("R1", rule_text, str(u_rule)) in section(found.summary, "Standing rules")
    assert found.state["carried"] == []
    assert_whole(found)


def test_rate_limit_with_retry_after_is_retried_and_the_pass_closes_whole(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """FAIL-19: a 429 carrying ``retry-after-ms`` is retried by the daemon's policy within the pass budget;
    the answer that follows is verified and the span closes whole."""
    message = "Use UTF-8 for every file the exporter writes."
    script = install(
        model_server, status(429, retry_after_ms=50), answer([Lab("UTF-8 for every file", "rule")])
    )
    pi.prompt(message)
    found = close_span(pi, 1)

    assert len(script.calls) == 2 and script.calls[1].prompt == script.calls[0].prompt
    assert single_rule(found)["words"] == message
    assert_whole(found)
    assert len(compactions(read_entries(pi.session_file()))) == 1


def test_bad_labels_and_unknown_targets_cost_one_retry(pi: PiRpc, model_server: ModelServer) -> None:
    """LABEL-1, LABEL-3, LABEL-8, FAIL-1: a label that is none of the four forms and a lift naming a rule the
    state lacks are defects listed in one retry note; a label for a message that was not offered is ignored.
    The fixed retry is accepted."""
    first_message = "Keep the public API backwards compatible."
    second_message = "The old logging rule no longer applies."

    def flawed(call: DiffCall) -> Reply:
        obj = answer_object(call, [Lab(first_message, "maybe a rule"), Lab(second_message, "lifts R9")])
        obj["labels"].append({"msg": "u99", "label": "rule"})
        return text(json.dumps(obj))

    script = install(model_server, flawed, answer([Lab(first_message, "rule")]))
    pi.prompt(first_message)
    pi.prompt(second_message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "retry"]
    note = script.calls[1].last_user
    for fragment in (first_message, second_message):
        assert str(script.calls[0].id_of(fragment)) in note, f"the note misses {fragment!r}:\n{note}"
    assert "u99" not in note, "LABEL-3: a label for a message not offered is no defect"
    rule = single_rule(found)
    assert (rule["id"], rule["words"]) == ("R1", first_message)
    assert_whole(found)


def test_lists_over_their_bound_are_cut_after_the_retry(pi: PiRpc, model_server: ModelServer) -> None:
    """DIFF-6, DIFF-16: ten decisions (at most eight allowed) are a defect for the retry; still ten after
    it, the list is cut to eight."""
    decisions = [{"text": f"Decision number {n} about the exporter.", "evidence": []} for n in range(1, 11)]
    script = install(model_server, answer(decisions=decisions), answer(decisions=decisions))
    pi.prompt("Let us settle the exporter's design.")
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "retry"]
    assert "decisions" in script.calls[1].last_user
    kept = [d["text"] for d in found.state["decisions"]]
    assert kept == [d["text"] for d in decisions[:8]], kept
    assert "Decision number 9 " not in found.summary
    assert_whole(found)


def test_a_retry_that_fails_keeps_the_parsed_first_answer(pi: PiRpc, model_server: ModelServer) -> None:
    """FAIL-2, FAIL-19, LIFT-17: the first answer parsed with one defect (a long message's rule without
    words); its retry fails with server errors until the daemon gives up; the first answer is used with the
    defective item dropped, so the short rule is recorded; the long message, in which code's readings pick no
    rule either, is held and carried (QUOTE-4, ours), so the span closes partial."""
    short = "Always run the linter before you commit."
    long = padded("The exporter writes one CSV file per account, sorted by date.", 700)
    first = answer([Lab(short, "rule"), Lab("The exporter writes", "rule")])
    script = install(model_server, first, then=status(500, retry_after_ms=1))
    pi.prompt(short)
    pi.prompt(long)
    found = close_span(pi, 1)

    kinds = script.kinds()
    assert kinds[0] == "first" and set(kinds[1:]) == {"words"} and len(kinds) >= 3, kinds
    rule = single_rule(found)
    assert (rule["id"], rule["words"]) == ("R1", short)
    assert_held(found, str(script.calls[0].id_of("The exporter writes")), "one CSV file per account")


def test_cut_off_twice_gets_the_raised_budget_and_then_nothing(
    sandbox: Sandbox, daemon: Daemon, start_pi: Callable[[], PiRpc], model_server: ModelServer
) -> None:
    """FAIL-7, FAIL-8: a reply cut off with nothing in it is asked again at the raised budget; cut off again
    mid-answer, it gets no format retry at that limit. Two calls, the second at 8,192 tokens; the span closes
    narrative-less and its message is carried."""
    set_model_max_tokens(sandbox, 16384)
    pi = start_pi()
    message = "Never commit generated files."
    script = install(
        model_server,
        cut_at_limit(""),
        cut_at_limit('{"labels": [{"msg": '),
        answer([Lab("generated files", "rule")]),
    )
    pi.prompt(message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "first"]
    first_budget = script.calls[0].max_tokens
    assert first_budget is not None and first_budget < 4096
    assert [c.max_tokens for c in script.calls] == [first_budget, 8192]
    assert closed(found) == ("narrative-less", "unparsable-answer"), found.span_record["data"]
    assert message in [m["text"] for m in found.state["carriedMessages"]]


def test_a_client_error_is_not_retried_and_closes_narrative_less(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """FAIL-19, FAIL-10: a 400 answer is not worth retrying. The only second request is the same call without
    the answer schema, in case the route rejects structured output (issue 11); a 400 to that too is the
    request's own fault, and the span closes narrative-less with the message carried and rules unchanged."""
    message = "Never log customer emails."
    script = install(model_server, then=status(400, error_code="invalid_request_error"))
    pi.prompt(message)
    start = pi.mark()
    found = close_span(pi, 1)

    assert len(script.calls) == 2, f"{len(script.calls)} requests for a 400"
    assert script.calls[0].schema is not None and script.calls[1].schema is None
    assert script.calls[1].prompt == script.calls[0].prompt
    closed_as, reason = closed(found)
    assert closed_as == "narrative-less" and reason
    assert found.state["rules"] == []
    assert script.calls[0].id_of(message) in found.state["carried"]
    assert any(str(reason) in n for n in notices(pi, start))


def test_conflicting_labels_for_one_message_are_a_defect(pi: PiRpc, model_server: ModelServer) -> None:
    """LABEL-2: two different labels for one message are a defect for the retry; the same label twice is
    merged without one."""
    first_message = "Keep the exporter free of global state."
    second_message = "Let us look at the report page next."

    def doubled(call: DiffCall) -> Reply:
        obj = answer_object(call, [Lab(first_message, "rule")])
        u_first, u_second = call.id_of(first_message), call.id_of(second_message)
        obj["labels"] += [{"msg": u_first, "label": "rule"}, {"msg": u_second, "label": "rule"}]
        return text(json.dumps(obj))

    script = install(model_server, doubled, answer([Lab(first_message, "rule")]))
    pi.prompt(first_message)
    pi.prompt(second_message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "retry"]
    note = script.calls[1].last_user
    assert str(script.calls[0].id_of(second_message)) in note, note
    assert str(script.calls[0].id_of(first_message)) not in note, f"identical duplicates are merged:\n{note}"
    rule = single_rule(found)
    assert (rule["id"], rule["words"]) == ("R1", first_message)
    assert_whole(found)


def test_retry_note_stays_within_retry_note_chars(
    sandbox: Sandbox, daemon: Daemon, start_pi: Callable[[], PiRpc], model_server: ModelServer
) -> None:
    """FAIL-3, CONFIG-7: with ``retryNoteChars`` 400 in longhaul.json, the note for eight defects (here the
    words call's, FAIL-1 ours: eight long messages without words) holds whole lines only and says how many
    problems it left out, within 400 characters."""
    write_longhaul_settings(sandbox, retryNoteChars=400)
    pi = start_pi()
    for n in range(1, 9):
        pi.prompt(padded(f"Topic {n}: every report row must carry its source id.", 650, lead=f"Topic {n}. "))
    script = install(model_server, answer([Lab(f"Topic {n}.", "rule") for n in range(1, 9)]), answer())
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "words"]  # FAIL-1, ours: the words alone go back, noted as a retry is
    asked = script.calls[1].last_user
    note = asked[asked.index(WORDS_NOTE_MARKER) :].split("\n\n", 1)[0]
    assert len(note) <= 400, f"{len(note)} characters:\n{note}"
    assert re.search(r"\(\d+ more problems not shown\)$", note), note
    # the retry called every message a one-off; code's reading keeps each user's order, in doubt (doubts.py)
    rules = found.state["rules"]
    assert len(rules) == 8 and all(r["doubt"] == "model-read-one-off" for r in rules), rules
    assert all("every report row must carry its source id." in r["words"] for r in rules), rules
    assert_whole(found)


def test_a_retry_after_longer_than_the_pass_budget_is_not_waited_for(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """FAIL-19: a 429 asking to wait ten minutes, longer than what is left of the 5-minute pass budget, is
    not waited for: the call gives up at once and the span closes narrative-less with the message carried."""
    message = "Never rename the public CSV columns."
    script = install(model_server, then=status(429, retry_after_ms=600_000))
    pi.prompt(message)
    start = pi.mark()
    found = close_span(pi, 1)

    assert len(script.calls) == 1, f"{len(script.calls)} requests"
    closed_as, reason = closed(found)
    assert closed_as == "narrative-less" and reason, found.span_record["data"]
    assert script.calls[0].id_of(message) in found.state["carried"]
    assert any(str(reason) in n for n in notices(pi, start))


def test_an_over_long_narrative_is_sent_back_then_cut(pi: PiRpc, model_server: ModelServer) -> None:
    """DIFF-6, DIFF-16: a narrative over 240 characters is a defect for the retry; still too long after it,
    it is cut to its bound and marked with "…", and the work log shows the cut line."""
    # distinct sentences: one sentence written again and again is a loop, cut while it streams (models.md)
    long_narrative = " ".join(
        f"Step {n} reworked the {part} of the exporter and its tests."
        for n, part in enumerate(["reader", "writer", "header", "footer", "quoting", "encoding"], 1)
    )
    assert len(long_narrative) > 240
    script = install(model_server, answer(narrative=long_narrative), answer(narrative=long_narrative))
    pi.prompt("Let us rework the exporter.")
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "retry"]
    assert "narrative" in script.calls[1].last_user
    line = found.state["workLog"][-1]["text"]
    assert len(line) <= 240 and line.endswith("…") and long_narrative.startswith(line[:-1]), line
    assert f"- Span 1: {line}" in section(found.summary, "Work log")
