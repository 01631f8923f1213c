"""What a good-enough answer leaves in the state, through a real pi and the real daemon (DIFF-, VALUE-).

``null`` optionals, unknown evidence ids, values in the wrong turn, answers in code fences, chunked spans,
carried messages, the prompt's excerpts, split turns and the summarizer route: the summary, the state and
the requests the model server saw show what was kept and what was dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import Reply, text, tool_call, with_reasoning
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import (
    NULL,
    DiffCall,
    Lab,
    Val,
    add_model,
    answer,
    answer_object,
    lifts,
    model_of,
    notices,
    rules_by_id,
    section,
    standing_rules,
    status,
    write_longhaul_settings,
)
from .diff_steps import (
    assert_whole,
    big_message,
    close_span,
    closed,
    install,
    single_rule,
    state_text,
    wait_log_record,
)
from .scenario import expect_longhaul

pytestmark = pytest.mark.e2e


def test_null_for_optional_fields_is_accepted(pi: PiRpc, model_server: ModelServer) -> None:
    """DIFF-15: ``null`` for words, why, evidence, objective, values and dead ends is read as absent; the
    answer verifies at the first call and everything else in it is kept."""
    message = "Keep the CSV column order exactly as the spec lists it."
    script = install(
        model_server,
        answer(
            [Lab("CSV column order", "rule", words=NULL)],
            decisions=[{"text": "Write the exporter as one module.", "why": None, "evidence": None}],
            objective=NULL,
            null_lists=True,
        ),
    )
    pi.prompt(message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first"], "null optionals are not a defect: no retry"
    assert single_rule(found)["words"] == message
    decisions = found.state["decisions"]
    assert [(d["text"], d["evidence"]) for d in decisions] == [("Write the exporter as one module.", [])]
    assert found.state["values"] == [] and found.state["deadEnds"] == [] and found.state["objective"] is None
    assert "- Write the exporter as one module." in section(found.summary, "Decisions")
    assert section(found.summary, "Objective") == ""
    assert_whole(found)


def test_unknown_evidence_ids_are_removed_and_items_kept(pi: PiRpc, model_server: ModelServer) -> None:
    """DIFF-14: evidence ids the ledger lacks are removed from their item; the decision or dead end stays,
    even with no evidence left."""
    model_server.enqueue(
        tool_call("bash", command="echo build-ok"),
        tool_call("bash", command="ls /nonexistent-evidence-dir"),
        text("Built; the listing failed."),
    )
    pi.prompt("Please build and then list the evidence directory.")
    script = install(
        model_server,
        answer(
            decisions=[
                {"text": "Keep the build script as it is.", "why": "it passed", "evidence": ["C1", "C99"]},
                {"text": "Skip the old cache step.", "evidence": ["C42"]},
            ],
            dead_ends=[{"text": "Listing the evidence directory fails.", "evidence": ["E1", "E7", "C2"]}],
        ),
    )
    found = close_span(pi, 1)

    assert script.kinds() == ["first"]
    assert [c["id"] for c in found.state["commands"]] == ["C1", "C2"]
    assert [(d["text"], d["evidence"]) for d in found.state["decisions"]] == [
        ("Keep the build script as it is.", ["C1"]),
        ("Skip the old cache step.", []),
    ]
    assert [(d["text"], d["evidence"]) for d in found.state["deadEnds"]] == [
        ("Listing the evidence directory fails.", ["E1", "C2"])
    ]
    decisions = section(found.summary, "Decisions")
    assert "- Keep the build script as it is. (why: it passed) [evidence: C1]" in decisions
    assert "- Skip the old cache step." in decisions
    for unknown in ("C99", "C42", "E7"):
        assert unknown not in found.summary and unknown not in state_text(found)
    assert "- Listing the evidence directory fails. [evidence: E1, C2]" in section(found.summary, "Dead ends")
    assert_whole(found)


def test_values_are_kept_only_when_verbatim_in_their_turn(
    sandbox: Sandbox, pi: PiRpc, model_server: ModelServer
) -> None:
    """EX-7, VALUE-2, VALUE-4, VALUE-5: "41.2s" (the turn says 41.20s), "80" (only inside "8080") and "212"
    (named under the wrong turn) are dropped without a retry; "5173" stands in its turn and is shown."""
    model_server.enqueue(
        tool_call("bash", command="echo 'Ran 212 tests in 41.20s'; echo OK"), text("Tests ran.")
    )
    pi.prompt("Please run the test suite.")
    model_server.enqueue(
        tool_call("bash", command="echo 'Local:   http://localhost:5173/'; echo 'proxy on 8080'"),
        text("Dev server up."),
    )
    pi.prompt("Please start the dev server.")
    script = install(
        model_server,
        answer(
            values=[
                Val("test time", "41.2s", "run the test suite"),
                Val("dev server port", "5173", "start the dev server"),
                Val("test count", "212", "start the dev server"),
                Val("proxy port", "80", "start the dev server"),
            ]
        ),
    )
    found = close_span(pi, 1)

    assert script.kinds() == ["first"], "VALUE-2: a dropped value costs no retry"
    u_server = script.calls[0].id_of("start the dev server")
    values = [(v["what"], v["value"], v["turn"]) for v in found.state["values"]]
    assert values == [("dev server port", "5173", u_server)]
    shown = section(found.summary, "Values")
    assert shown == f"- dev server port: 5173 (turn {u_server})", shown
    assert_whole(found)
    narrative = wait_log_record(sandbox, "compaction")["narrative"]
    assert narrative["dropped"] == 3, f"VALUE-2: three values dropped and counted: {narrative}"


def test_span_too_large_for_one_call_is_split_into_chunks(pi: PiRpc, model_server: ModelServer) -> None:
    """DIFF-1, DIFF-3, LABEL-16, QUOTE-4: a span over one call's input budget is labeled in chunks cut at user
    messages; the second chunk's prompt shows the rule the first chunk recorded under its u<n>, and lifting it
    there by u<n> works. The span closes whole with R1 lifted."""
    rule_words = "From now on, every CSV file must end with a newline."
    first = big_message(rule_words, "Part one")
    middle = big_message("Nothing binding in this part.", "Part two")
    last = big_message("The newline rule no longer applies.", "Part three")
    good = answer(
        [
            Lab("Part one", "rule", words=rule_words),
            Lab("Part three", lifts(rule_words)),
        ]
    )
    script = install(model_server, then=good)
    for message in (first, middle, last):
        pi.prompt(message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "first"], "DIFF-1: two chunks, one call each"
    one, two = script.calls
    u_first, u_last = one.id_of("Part one"), two.id_of("Part three")
    assert u_first and u_last and two.id_of("Part one") is None, "DIFF-3: chunks are cut at user messages"
    assert [(r.id, r.words) for r in two.rules] == [(u_first, rule_words)], two.rules
    rules = rules_by_id(found.state)
    assert list(rules) == ["R1"] and rules["R1"]["words"] == rule_words
    assert rules["R1"]["lifted"] is True and rules["R1"]["liftedBy"] == u_last, rules["R1"]
    assert section(found.summary, "Standing rules") == ""
    narrative = "Scripted narrative line for this span."
    assert_whole(found, narrative=f"{narrative} {narrative}")  # one line joining the chunks' narratives


def test_a_chunk_that_never_verifies_carries_the_whole_span(pi: PiRpc, model_server: ModelServer) -> None:
    """FAIL-12, FAIL-19, FAIL-18, DIFF-8: when the second chunk's calls all fail, the first chunk's rule is
    kept, the span closes as chunk-missing and all its user messages are carried; the next pass offers them
    whole, records no second copy of the rule, and applies the lift it missed."""
    rule_words = "From now on, every CSV file must end with a newline."
    first = big_message(rule_words, "Part one")
    middle = big_message("Nothing binding in this part.", "Part two")
    last = big_message("The newline rule no longer applies.", "Part three")
    good = answer([Lab("Part one", "rule", words=rule_words), Lab("Part three", lifts(rule_words))])
    script = install(model_server, good, then=status(500, retry_after_ms=1))
    for message in (first, middle, last):
        pi.prompt(message)
    start = pi.mark()
    found = close_span(pi, 1)

    closed_as, reason = closed(found)
    assert closed_as == "chunk-missing" and reason, found.span_record["data"]
    rule = single_rule(found)
    assert (rule["id"], rule["words"]) == ("R1", rule_words)
    u_ids = [str(script.calls[0].id_of("Part one")), str(script.calls[1].id_of("Part three"))]
    assert set(u_ids) <= set(found.state["carried"]), found.state["carried"]
    assert notices(pi, start), "a chunk-missing close should show a notice"

    before = len(script.calls)
    script.then = good
    found = close_span(pi, 2)
    calls = script.since(before)
    carried_ids = {m.id for c in calls for m in c.offered if m.carried}
    assert set(u_ids) <= carried_ids, carried_ids
    assert all(
        m.shown == m.text and len(m.shown) == m.length for c in calls for m in c.offered if m.carried
    ), "DIFF-8: carried messages are shown whole"
    rules = rules_by_id(found.state)
    assert list(rules) == ["R1"], f"FAIL-18: the re-offered rule was recorded again: {rules}"
    assert rules["R1"]["lifted"] is True and rules["R1"]["liftedBy"] == u_ids[1], rules["R1"]
    assert found.state["carried"] == []
    assert_whole(found)


def test_at_most_thirty_carried_messages_are_offered(pi: PiRpc, model_server: ModelServer) -> None:
    """FAIL-11, FAIL-19, EX-14: after two narrative-less spans (every attempt rate limited) holding 41 user
    messages, the next pass offers only the newest 30, whole and in order; a rule among them is recorded
    under its original u<n>, one in an older message is not offered again."""
    old_rule = "Rule five: never delete the fixtures folder."
    kept_rule = "Rule fifteen: always pin the Python version."
    script = install(model_server, then=status(429, retry_after_ms=1))
    for n in range(1, 21):
        pi.prompt(old_rule if n == 5 else kept_rule if n == 15 else f"Note {n}: nothing binding here.")
    first = close_span(pi, 1)
    assert closed(first)[0] == "narrative-less"
    for n in range(21, 41):
        pi.prompt(f"Note {n}: nothing binding here either.")
    second = close_span(pi, 2)
    assert closed(second)[0] == "narrative-less"

    before = len(script.calls)
    script.then = answer([Lab(old_rule, "rule"), Lab(kept_rule, "rule")])
    found = close_span(pi, 3)
    calls = script.since(before)
    assert [c.kind for c in calls] == ["first"]
    carried = [m for m in calls[0].offered if m.carried]
    numbers = [int(m.id[1:]) for m in carried]
    assert len(carried) == 30, f"FAIL-11: {len(carried)} carried messages offered: {numbers}"
    assert numbers == sorted(numbers) and numbers[-1] == max(int(u[1:]) for u in second.state["carried"])
    assert calls[0].id_of(old_rule) is None, "an older message than the newest 30 was offered again"
    u_kept = calls[0].id_of(kept_rule)
    assert u_kept == "u15", f"user ids: {numbers}"
    rule = single_rule(found)
    assert (rule["id"], rule["words"], rule["message"]) == ("R1", kept_rule, "u15")
    assert_whole(found)


def test_answer_in_a_code_fence_after_reasoning_is_read_without_a_retry(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """DIFF-17: the first complete JSON object is used even inside a code fence after prose; streamed
    reasoning is not part of the answer."""
    message = "Name every new module in snake_case."

    def fenced(call: DiffCall) -> Reply:
        body = json.dumps(answer_object(call, [Lab("snake_case", "rule")]))
        return with_reasoning(
            "Let me think {not json}.", text(f"Here is my answer:\n```json\n{body}\n```\nDone.")
        )

    script = install(model_server, fenced)
    pi.prompt(message)
    found = close_span(pi, 1)
    assert script.kinds() == ["first"]
    assert single_rule(found)["words"] == message
    assert_whole(found)


def test_rule_words_with_control_characters_are_cleaned_in_the_state_and_the_summary(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """QUOTE-1, PASS-10, PASS-8, issue 12: the state records the user's message cleaned (escape sequences and
    control characters gone, the line break kept), so every reader of the state gets clean text; the summary
    shows those words with their line break (the second line indented under the rule)."""
    message = "Never print \x1b[31mred\x1b[0m text in the logs.\nKeep logs plain."
    install(model_server, answer([Lab("text in the logs", "rule")]))
    pi.prompt(message)
    found = close_span(pi, 1)

    rule = single_rule(found)
    assert rule["words"] == "Never print red text in the logs.\nKeep logs plain."
    standing = section(found.summary, "Standing rules")
    assert '- R1 "Never print red text in the logs.\n  ┆ Keep logs plain." (u1)' in standing
    assert not any(ord(ch) < 32 and ch not in "\n\t" for ch in found.summary), repr(standing)
    assert_whole(found)


@pytest.mark.parametrize("summarizer", ["works", "unknown", "server-error"])
def test_diff_call_follows_the_summarizer_route(
    sandbox: Sandbox,
    daemon: Daemon,
    start_pi: Callable[[], PiRpc],
    model_server: ModelServer,
    summarizer: str,
) -> None:
    """DIFF-20, FAIL-9, CONFIG-8: with ``summarizer`` set in longhaul.json the Diff goes to that model; when
    it is not in pi's registry, or answers with a server error before any output, the pass uses the
    session's own model and the ``compaction`` record's ``route`` says why."""
    spec = add_model(sandbox, "summarizer-model") if summarizer != "unknown" else "fake/no-such-model"
    write_longhaul_settings(sandbox, summarizer=spec)
    pi = start_pi()
    message = "Keep every exported date in ISO 8601."
    good = answer([Lab("ISO 8601", "rule")])

    def respond(call: DiffCall) -> Reply:
        if summarizer == "server-error" and model_of(call) == "summarizer-model":
            return status(500, retry_after_ms=1)(call)
        return good(call)

    script = install(model_server, then=respond)
    pi.prompt(message)
    found = close_span(pi, 1)

    used = [model_of(c) for c in script.calls]
    record = wait_log_record(sandbox, "compaction")
    route = record.get("route") or {}
    assert route.get("configured") == spec, route
    if summarizer == "works":
        assert used == ["summarizer-model"], used
        assert route.get("used") == spec and not route.get("why"), route
    else:
        assert used[-1] == "fake-model" and "fake-model" not in used[:-1], used
        assert route.get("used") == "fake/fake-model" and route.get("why"), route
    assert single_rule(found)["words"] == message
    assert_whole(found)


def test_prompt_lists_messages_whole_up_to_240_characters(pi: PiRpc, model_server: ModelServer) -> None:
    """DIFF-7: in the label list a 240-character message shows whole and a 241-character one is cut after
    240 characters and marked with "…"; the conversation still shows both whole."""
    exact = ("Rows " * 48).strip().ljust(240, "x")
    longer = ("Cols " * 48).strip().ljust(241, "y")
    script = install(model_server, answer())
    pi.prompt(exact)
    pi.prompt(longer)
    close_span(pi, 1)

    call = script.calls[0]
    shown_exact = call.message(str(call.id_of("Rows Rows")))
    shown_longer = call.message(str(call.id_of("Cols Cols")))
    assert (shown_exact.length, shown_exact.shown) == (240, exact)
    assert (shown_longer.length, shown_longer.shown) == (241, longer[:240] + "…")
    assert shown_longer.text == longer


def test_a_split_turn_is_labeled_and_its_values_are_found(pi: PiRpc, model_server: ModelServer) -> None:
    """PASS-4, VALUE-3: when pi cuts inside the last turn (``isSplitTurn``), the turn's prefix is part of the
    span: its user message is offered and labeled, and a value in its tool output is credited to it."""
    first = "Always keep the changelog sorted by date."
    second = "Never store secrets in the repository."
    pi.prompt(first)
    model_server.enqueue(
        tool_call("bash", command="echo 'Local:   http://localhost:5173/'"),
        text("The dev server is up. " + "Here is a long explanation of what happened next. " * 8),
    )
    pi.prompt(second)
    script = install(
        model_server,
        answer([Lab(first, "rule"), Lab(second, "rule")], values=[Val("dev server port", "5173", second)]),
    )
    response = pi.compact()
    assert response.get("success") is True, f"compact failed: {response}\n{pi.diagnostics()}"
    found = expect_longhaul(pi.session_file(), 1, span=1)

    assert script.kinds() == ["first"]
    call = script.calls[0]
    u_first, u_second = call.id_of(first), call.id_of(second)
    assert u_first and u_second, [m.id for m in call.offered]
    rules = {r["message"]: r["words"] for r in standing_rules(found.state).values()}
    assert rules == {u_first: first, u_second: second}, rules
    assert section(found.summary, "Values") == f"- dev server port: 5173 (turn {u_second})"
    assert_whole(found)
