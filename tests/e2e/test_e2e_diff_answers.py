"""Flawed Diff answers through a real pi and the real daemon: what ends up in the state and the summary.

Each test drives a real pi session (a few prompts, then RPC ``compact``) while the model server answers
the daemon's Diff call from a script (``diff_script.py``) with a flawed answer: a misquote, a paraphrase, an
invented rule, a quote under the wrong message, a refused lift, ``null`` optionals, unknown evidence ids, a
value in the wrong turn, truncated JSON, a reply cut at the output limit, a model too slow for the pass
budget, and error statuses. The assertions read what a user sees: the compaction entry's summary and
``details.state``, the span record, the UI notice, and the requests the daemon sent to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from .daemon_proc import Daemon
from .diff_script import (
    NULL,
    RETRY_NOTE_MARKER,
    DiffScript,
    Lab,
    Responder,
    Val,
    answer,
    cut_at_limit,
    lifts,
    notices,
    raw,
    rule_line,
    rules_by_id,
    set_model_max_tokens,
    slow,
    standing_rules,
    status,
)
from .model_server import ModelServer, text, tool_call
from .pi_driver import PiRpc
from .sandbox import Sandbox
from .scenario import LonghaulCompaction, expect_longhaul, wrap_up
from .session_log import compactions, read_entries

pytestmark = pytest.mark.e2e

FILLER = (
    "Some background on the export module: it reads the table, formats each row and writes a file. "
    "The format code lives in one place and the writer in another. "
)


def padded(core: str, size: int, *, lead: str = "") -> str:
    """``lead`` + filler + ``core`` + filler, at least ``size`` characters (for the QUOTE length rules)."""
    body = lead + FILLER * 2 + core + " "
    while len(body) < size:
        body += FILLER
    return body.strip()


# ---- steps and checks --------------------------------------------------------------------------------------


@pytest.fixture
def pi(daemon: Daemon, start_pi: Callable[[], PiRpc]) -> Iterator[PiRpc]:
    yield start_pi()


def install(server: ModelServer, *steps: Responder, then: Responder | None = None) -> DiffScript:
    script = DiffScript(steps=steps) if then is None else DiffScript(steps=steps, then=then)
    return script.install(server)


def close_span(pi: PiRpc, nth: int) -> LonghaulCompaction:
    """End the stretch with a long kept turn, compact over RPC, return the Longhaul compaction ``nth``."""
    wrap_up(pi, f"span {nth}")
    response = pi.compact()
    assert response.get("success") is True, f"compact #{nth} failed: {response}\n{pi.diagnostics()}"
    found = expect_longhaul(pi.session_file(), nth, span=nth)
    assert response["data"]["summary"] == found.summary
    return found


def require_diff_stage(found: LonghaulCompaction, script: DiffScript) -> None:
    """Skip (with the reason) while the daemon's Diff stage is not wired: it then calls no model at all."""
    last = found.state.get("workLog", [{}])[-1]
    if not script.calls and last.get("reason") == "no-model-call":
        pytest.skip(
            "the daemon's Diff stage is not wired yet: the span closed narrative-less (no-model-call)"
        )


def section(summary: str, title: str) -> str:
    """The body of ``## title`` in the summary ("" when the section is left out)."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=\n\n## |\n\n<|\Z)", summary, re.S | re.M)
    return match.group(1) if match else ""


def closed(found: LonghaulCompaction) -> tuple[str, str | None]:
    data = found.span_record["data"]
    return str(data.get("closedAs")), data.get("reason")


def assert_whole(
    found: LonghaulCompaction, narrative: str = "Scripted narrative line for this span."
) -> None:
    """DIFF-13: the answer verified, so the span closed whole with the model's narrative as its log line."""
    assert closed(found) == ("whole", None), f"span record: {found.span_record['data']}\n{found.summary}"
    last = found.state["workLog"][-1]
    assert last["closedAs"] == "whole" and last["text"] == narrative, last
    assert f"- Span {found.details['span']}: {narrative}" in section(found.summary, "Work log")


def single_rule(found: LonghaulCompaction) -> dict[str, Any]:
    rules = standing_rules(found.state)
    assert len(rules) == 1, f"want one rule in force, got {rules}"
    return next(iter(rules.values()))


def state_text(found: LonghaulCompaction) -> str:
    return json.dumps(found.state, ensure_ascii=False)


# ---- quotes ------------------------------------------------------------------------------------------------


def test_misquoted_short_rule_records_the_whole_message(pi: PiRpc, model_server: ModelServer) -> None:
    """EX-1, QUOTE-1, QUOTE-2, QUOTE-8: words no message holds are discarded without a retry; the short
    message is recorded whole as R1 under its own u<n>, and the misquote is stored nowhere."""
    message = "Please never add new dependencies without asking me first."
    script = install(
        model_server, answer([Lab("never add new dependencies", "rule", words="never add dependencies")])
    )
    pi.prompt(message)
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert script.kinds() == ["first"], "a rejected quote on a short message must not cost a retry"
    uid = script.calls[0].id_of("never add new dependencies")
    rule = single_rule(found)
    assert (rule["id"], rule["words"], rule["message"]) == ("R1", message, uid)
    assert rule_line("R1", message, str(uid)) in section(found.summary, "Standing rules")
    assert "never add dependencies" not in state_text(found)
    assert "never add dependencies" not in found.summary
    assert_whole(found)
    assert notices(pi) == []


def test_paraphrased_rule_words(pi: PiRpc, model_server: ModelServer) -> None:
    """QUOTE-3, QUOTE-4, FAIL-1, EX-6: a paraphrase under a 301-600 character message falls back to the whole
    message; under a message over 600 characters it is a defect sent back in one retry note, and the exact
    words of the retry are recorded."""
    medium = padded("From now on keep every public function documented with a docstring.", 420)
    long = padded("Every dry-run line must start with DRY: so I can grep for it later.", 700)
    assert 300 < len(medium) <= 600 and len(long) > 600
    first = answer(
        [
            Lab("keep every public function documented", "rule", words="document all public functions"),
            Lab("Every dry-run line", "rule", words="dry-run lines should begin with DRY:"),
        ]
    )
    retry = answer(
        [
            Lab("keep every public function documented", "rule", words="document all public functions"),
            Lab("Every dry-run line", "rule", words="Every dry-run line must start with DRY:"),
        ]
    )
    script = install(model_server, first, retry)
    pi.prompt(medium)
    pi.prompt(long)
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert script.kinds() == ["first", "retry"]
    first_call, retry_call = script.calls
    u_medium = first_call.id_of("keep every public function documented")
    u_long = first_call.id_of("Every dry-run line")
    assert RETRY_NOTE_MARKER in retry_call.last_user
    assert str(u_long) in retry_call.last_user, (
        f"the retry note does not name {u_long}:\n{retry_call.last_user}"
    )
    rules = {r["message"]: r for r in standing_rules(found.state).values()}
    assert set(rules) == {u_medium, u_long}, rules
    assert rules[u_medium]["words"] == medium, "QUOTE-3: unverified words on a 301-600 message keep it whole"
    assert rules[u_long]["words"] == "Every dry-run line must start with DRY:"
    for paraphrase in ("document all public functions", "dry-run lines should begin with DRY:"):
        assert paraphrase not in state_text(found) and paraphrase not in found.summary
    standing = section(found.summary, "Standing rules")
    for rule in rules.values():
        assert rule_line(str(rule["id"]), str(rule["words"]), str(rule["message"])) in standing
    assert_whole(found)


def test_invented_rule_words_never_become_a_rule(pi: PiRpc, model_server: ModelServer) -> None:
    """QUOTE-1, QUOTE-8, QUOTE-4, FAIL-1: words that only the assistant or a tool wrote are rejected. Under a
    short message the user's whole message is what gets recorded; under a long one they are a defect, and a
    retry that repeats them records no rule for that message."""
    invented_reply = "Always squash commits before merging a pull request."
    invented_tool = "never deploy on Fridays"
    short = "What is the team's habit for merging pull requests?"
    long = padded("Please tidy the export module when you get to it.", 650)
    model_server.enqueue(text(f"The usual habit: {invented_reply}"))
    pi.prompt(short)
    model_server.enqueue(
        tool_call("bash", command=f"echo 'Policy: {invented_tool}'"), text("Printed the policy.")
    )
    pi.prompt(long)
    labels = [
        Lab("habit for merging", "rule", words=invented_reply),
        Lab("tidy the export module", "rule", words=invented_tool),
    ]
    script = install(model_server, answer(labels), answer(labels))
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert script.kinds() == ["first", "retry"], "the long message's invented words must cost one retry"
    u_short = script.calls[0].id_of("habit for merging")
    rule = single_rule(found)
    assert (rule["words"], rule["message"]) == (short, u_short)
    assert invented_reply not in state_text(found)
    standing = section(found.summary, "Standing rules")
    assert invented_reply not in standing and invented_tool not in standing
    assert all(invented_tool not in str(r["words"]) for r in rules_by_id(found.state).values())
    assert_whole(found)


def test_quote_under_the_wrong_message_binds_to_the_newest_holder(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """EX-2, QUOTE-7, QUOTE-4: words cited under a message that lacks them bind to the newest offered
    message that holds them; the rule is that message's, keeps the exact words (it is over 600), and no
    retry is spent."""
    sentence = "From now on run ruff before every commit."
    first = padded(sentence, 640, lead="About the lint setup. ")
    second = padded(sentence, 650, lead="About the lint setup, again. ")
    third = padded("The formatter settings can stay as they are for now.", 620)
    assert min(len(first), len(second), len(third)) > 600
    script = install(
        model_server,
        answer([Lab("formatter settings can stay", "rule", words="run ruff before every commit")]),
    )
    for message in (first, second, third):
        pi.prompt(message)
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert script.kinds() == ["first"]
    call = script.calls[0]
    u_first, u_second = call.id_of("About the lint setup. "), call.id_of("About the lint setup, again.")
    assert u_first and u_second and u_first != u_second
    rule = single_rule(found)
    assert (rule["id"], rule["words"], rule["message"]) == ("R1", "run ruff before every commit", u_second)
    assert rule_line("R1", "run ruff before every commit", u_second) in section(
        found.summary, "Standing rules"
    )
    assert_whole(found)


# ---- lifts -------------------------------------------------------------------------------------------------


def test_lifts_need_withdrawal_words_and_permissions_lift_nothing(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """EX-3, LIFT-1, LIFT-5, LIFT-6, LABEL-13, LABEL-14: a permission labeled as a lift, and a lift with no
    withdrawal words, are refused and sent back once; the rule stays in force and in the summary. A later
    message that says the rule no longer applies lifts it: gone from the summary, kept lifted in the state."""
    rule_text = "Never push to main."
    permission = "you may push to main now"
    no_withdrawal = "Main is the branch we push release tags to."
    withdrawal = "The push to main rule no longer applies."
    script = install(model_server, answer([Lab(rule_text, "rule")]))
    pi.prompt(rule_text)
    found = close_span(pi, 1)
    require_diff_stage(found, script)
    rule = single_rule(found)
    assert (rule["id"], rule["words"]) == ("R1", rule_text)
    u_rule = rule["message"]

    # Span 2: both refused. The retry keeps the permission's lift and turns the other into `not a rule`.
    first = answer([Lab(permission, lifts("push to main")), Lab(no_withdrawal, lifts("push to main"))])
    retry = answer([Lab(permission, lifts("push to main"))])
    script = install(model_server, first, retry)
    pi.prompt(permission)
    pi.prompt(no_withdrawal)
    found = close_span(pi, 2)
    assert script.kinds() == ["first", "retry"]
    assert script.calls[0].rule_ref("push to main") == "R1", "the prompt should show R1 in force"
    note = script.calls[1].last_user
    assert RETRY_NOTE_MARKER in note and rule_text in note, f"LIFT-5: the note must show R1's words:\n{note}"
    assert standing_rules(found.state).keys() == {"R1"}, found.state["rules"]
    assert rule_line("R1", rule_text, u_rule) in section(found.summary, "Standing rules")
    assert_whole(found)

    # Span 3: the user's own withdrawal lifts R1.
    script = install(model_server, answer([Lab(withdrawal, lifts("push to main"))]))
    pi.prompt(withdrawal)
    found = close_span(pi, 3)
    assert script.kinds() == ["first"]
    u_withdrawal = script.calls[0].id_of(withdrawal)
    assert standing_rules(found.state) == {}
    lifted = rules_by_id(found.state)["R1"]
    assert lifted["lifted"] is True and lifted["liftedBy"] == u_withdrawal, lifted
    assert section(found.summary, "Standing rules") == ""
    assert rule_text not in found.summary
    assert_whole(found)


# ---- shape slips and evidence ------------------------------------------------------------------------------


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
    require_diff_stage(found, script)

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
    require_diff_stage(found, script)

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


def test_values_are_kept_only_when_verbatim_in_their_turn(pi: PiRpc, model_server: ModelServer) -> None:
    """EX-7, VALUE-2, VALUE-4, VALUE-5: "41.2s" (the turn says 41.20s) and "212" (named under the wrong turn)
    are dropped without a retry; "5173" stands in its turn and is shown with it."""
    model_server.enqueue(
        tool_call("bash", command="echo 'Ran 212 tests in 41.20s'; echo OK"), text("Tests ran.")
    )
    pi.prompt("Please run the test suite.")
    model_server.enqueue(
        tool_call("bash", command="echo 'Local:   http://localhost:5173/'"), text("Dev server up.")
    )
    pi.prompt("Please start the dev server.")
    script = install(
        model_server,
        answer(
            values=[
                Val("test time", "41.2s", "run the test suite"),
                Val("dev server port", "5173", "start the dev server"),
                Val("test count", "212", "start the dev server"),
            ]
        ),
    )
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert script.kinds() == ["first"], "VALUE-2: a dropped value costs no retry"
    u_server = script.calls[0].id_of("start the dev server")
    values = [(v["what"], v["value"], v["turn"]) for v in found.state["values"]]
    assert values == [("dev server port", "5173", u_server)]
    shown = section(found.summary, "Values")
    assert shown == f"- dev server port: 5173 (turn {u_server})", shown
    assert_whole(found)


# ---- format failures and budgets ---------------------------------------------------------------------------


def test_truncated_json_gets_one_retry_with_a_note(pi: PiRpc, model_server: ModelServer) -> None:
    """FAIL-1, DIFF-17: an answer that is not complete JSON is a fixable defect: one retry that shows the
    reply and a note; the retry's answer is verified and recorded."""
    message = "Tests go under tests/ and nowhere else."
    broken = '{"labels": [{"msg": "u1", "label": "rule"}], "decisions": [{"text": "Use pyt'
    script = install(model_server, raw(broken), answer([Lab("Tests go under", "rule")]))
    pi.prompt(message)
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert script.kinds() == ["first", "retry"]
    retry = script.calls[1]
    assert RETRY_NOTE_MARKER in retry.last_user
    assistant = [m for m in retry.body["messages"] if m.get("role") == "assistant"]
    assert assistant and broken in str(assistant[-1].get("content")), "the retry should show the flawed reply"
    assert single_rule(found)["words"] == message
    assert_whole(found)


def test_reply_cut_at_the_output_limit_is_retried_with_a_raised_budget(
    sandbox: Sandbox, daemon: Daemon, start_pi: Callable[[], PiRpc], model_server: ModelServer
) -> None:
    """FAIL-7, FAIL-8, DIFF-19, EX-13: with maxTokens 16,384 the first call asks 4,096 tokens; a reply cut
    off at that limit with no JSON is asked again once with 8,192, and that answer is used."""
    set_model_max_tokens(sandbox, 16384)
    pi = start_pi()
    message = "Never commit generated files."
    script = install(
        model_server, cut_at_limit('{"labels": [{"msg": '), answer([Lab("generated files", "rule")])
    )
    pi.prompt(message)
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert [c.max_tokens for c in script.calls] == [4096, 8192], [c.kind for c in script.calls]
    assert RETRY_NOTE_MARKER not in script.calls[1].last_user, "a raised-budget call is not a format retry"
    assert single_rule(found)["words"] == message
    assert_whole(found)


def test_cut_off_reply_at_max_tokens_gets_only_the_format_retry(pi: PiRpc, model_server: ModelServer) -> None:
    """FAIL-7 proposal, FAIL-1: with maxTokens 4,096 the first budget is already the maximum, so a cut-off
    reply is not raised; having nothing usable, it is a format defect with one retry at the same budget."""
    message = "Always run the formatter before you push."
    script = install(model_server, cut_at_limit(""), answer([Lab("formatter before", "rule")]))
    pi.prompt(message)
    found = close_span(pi, 1)
    require_diff_stage(found, script)

    assert script.kinds() == ["first", "retry"]
    assert [c.max_tokens for c in script.calls] == [4096, 4096]
    assert single_rule(found)["words"] == message
    assert_whole(found)


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
    require_diff_stage(found, script)

    assert script.kinds() == ["first"], "no retry follows a call the budget stopped"
    assert closed(found) == ("narrative-less", "budget-exhausted"), found.span_record["data"]
    assert found.state["rules"] == [] and section(found.summary, "Standing rules") == ""
    assert [c["text"] for c in found.state["commands"]] == ["echo slow-span"]
    u_message = script.calls[0].id_of("vendored directory")
    assert u_message in found.state["carried"], found.state["carried"]
    shown = notices(pi, start)
    assert any("budget-exhausted" in n for n in shown), f"FAIL-10: no notice names the reason: {shown}"


# ---- error statuses ----------------------------------------------------------------------------------------


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
    require_diff_stage(found, script)

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
    require_diff_stage(found, script)

    assert len(script.calls) == 2 and script.calls[1].prompt == script.calls[0].prompt
    assert single_rule(found)["words"] == message
    assert_whole(found)
    assert len(compactions(read_entries(pi.session_file()))) == 1
