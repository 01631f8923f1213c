"""Rule words and lifts through a real pi and the real daemon, when the model's answer is wrong about them.

A real pi session is compacted over RPC while the scripted model (``diff_script.py``) answers the daemon's
Diff call with a misquote, a paraphrase, an invented rule, words under the wrong message, a lift without
withdrawal words, a permission posing as a lift, a pasted withdrawal, and the worked examples' cases. The
assertions read what a user sees: the summary and ``details.state`` of the compaction entry, the span record
and the requests the daemon sent (QUOTE-1..QUOTE-16, LIFT-1..LIFT-16, LABEL-4..LABEL-16, EX-1..EX-12).
"""

from __future__ import annotations

import json

import pytest

from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import Reply, text, tool_call

from .diff_script import (
    RETRY_NOTE_MARKER,
    WORDS_NOTE_MARKER,
    DiffCall,
    Lab,
    Responder,
    answer,
    answer_questions,
    is_flagged,
    lifts,
    notices,
    raw,
    rule_line,
    rules_by_id,
    section,
    standing_rules,
    status,
)
from .diff_steps import (
    assert_held,
    assert_whole,
    big_message,
    close_span,
    closed,
    install,
    padded,
    single_rule,
    state_text,
)
from .scenario import expect_longhaul, wrap_up

pytestmark = pytest.mark.e2e


def test_misquoted_short_rule_records_the_whole_message(pi: PiRpc, model_server: ModelServer) -> None:
    """EX-1, QUOTE-1, QUOTE-2, QUOTE-8: words no message holds are discarded without a retry; the short
    message is recorded whole as R1 under its own u<n>, and the misquote is stored nowhere."""
    message = "Please never add new dependencies without asking me first."
    script = install(
        model_server, answer([Lab("never add new dependencies", "rule", words="never add dependencies")])
    )
    pi.prompt(message)
    found = close_span(pi, 1)

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

    assert script.kinds() == ["first", "words"], (
        "FAIL-1, ours: a rule's words alone go back in the words call"
    )
    first_call, retry_call = script.calls
    u_medium = first_call.id_of("keep every public function documented")
    u_long = first_call.id_of("Every dry-run line")
    assert WORDS_NOTE_MARKER in retry_call.last_user and "keep every public" not in retry_call.last_user
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
        flagged = bool(rule.get("possiblyWithdrawnBy"))
        assert (
            rule_line(str(rule["id"]), str(rule["words"]), str(rule["message"]), flagged=flagged) in standing
        )
    assert_whole(found)


def test_invented_rule_words_never_become_a_rule(pi: PiRpc, model_server: ModelServer) -> None:
    """QUOTE-1, QUOTE-8, QUOTE-4, FAIL-1: words that only the assistant or a tool wrote are rejected. Under a
    short message the user's whole message is what gets recorded; under a long one they are a defect, and a
    retry that repeats them records no rule for that message: it is held and carried with its words (QUOTE-4,
    ours), so the span closes partial."""
    invented_reply = "Always squash commits before merging a pull request."
    invented_tool = "never deploy on Fridays"
    # an instruction, not a question: a question labeled rule records nothing (code's second look, one-offs)
    short = "Follow the team's habit for merging pull requests."
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

    assert script.kinds() == ["first", "words"], "the long message's invented words must cost one retry"
    u_short = script.calls[0].id_of("habit for merging")
    rule = single_rule(found)
    assert (rule["words"], rule["message"]) == (short, u_short)
    assert invented_reply not in state_text(found)
    standing = section(found.summary, "Standing rules")
    assert invented_reply not in standing and invented_tool not in standing
    assert all(invented_tool not in str(r["words"]) for r in rules_by_id(found.state).values())
    assert_held(found, str(script.calls[0].id_of("tidy the export module")), "tidy the export module")


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
    line = rule_line("R1", rule_text, u_rule, flagged=is_flagged(found.state, "R1"))
    assert line in section(found.summary, "Standing rules")
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


DRY_LINE = "Every dry-run line must start with DRY: so I can grep for it later."
NO_RULE = "The exporter writes one CSV file per account, sorted by date."


@pytest.mark.parametrize(
    "retry_words",
    ["very dry-run line must start with DRY:", "every dry-run line must start with DRY:"],
    ids=["starts-inside-a-word", "wrong-case"],
)
def test_long_rule_without_exact_words_takes_code_s_reading_after_the_retry(
    pi: PiRpc, model_server: ModelServer, retry_words: str
) -> None:
    """EX-6, QUOTE-4, QUOTE-5, QUOTE-6, FAIL-1, FAIL-2: a rule label on a 700-character message without
    words goes back in the retry note asking for exact words; a retry whose words start inside a word or
    differ in case does not verify. Ours (QUOTE-4): code's own standing-rule reading picks the rule's words
    in the message, the user's own, and they are recorded; the span closes whole."""
    long = padded(DRY_LINE, 700)
    script = install(
        model_server,
        answer([Lab("Every dry-run line", "rule")]),
        answer([Lab("Every dry-run line", "rule", words=retry_words)]),
    )
    pi.prompt(long)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "words"]
    u_long = str(script.calls[0].id_of("Every dry-run line"))
    note = script.calls[1].last_user
    assert u_long in note and "words" in note, note
    rule = single_rule(found)
    assert (rule["id"], rule["words"], rule["message"]) == ("R1", DRY_LINE, u_long), rule
    assert rule_line("R1", DRY_LINE, u_long) in section(found.summary, "Standing rules")
    assert_whole(found)


def test_long_message_code_reads_no_rule_in_is_held_after_the_retry(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """Ours (QUOTE-4): when code's readings pick no rule in the long message either, no rule is recorded and
    the message is held, not dropped: the span closes partial and carries it, the user's words shown
    verbatim, to the next pass."""
    long = padded(NO_RULE, 700)
    script = install(
        model_server,
        answer([Lab("The exporter writes", "rule")]),
        answer([Lab("The exporter writes", "rule", words="the exporter writes")]),
    )
    pi.prompt(long)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "words"]
    u_long = str(script.calls[0].id_of("The exporter writes"))
    assert found.state["rules"] == [], found.state["rules"]
    assert section(found.summary, "Standing rules") == ""
    assert_held(found, u_long, NO_RULE)


def test_a_held_long_rule_labeled_otherwise_later_is_kept_in_the_users_words(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """Ours (QUOTE-4): the first pass holds the long message as a rule whose words never verified; the next
    pass labels it `not a rule`. The two labels disagree, so the message is judged (that span closes whole
    and the message is not offered again) and the summary keeps the user's words under "Possible rules, in
    the user's words" through a third, whole close."""
    long = padded(NO_RULE, 700)
    script = install(
        model_server,
        answer([Lab("The exporter writes", "rule")]),
        answer([Lab("The exporter writes", "rule", words="the exporter writes")]),
        answer([Lab("The exporter writes", "not a rule")]),
    )
    pi.prompt(long)
    first = close_span(pi, 1)
    u_long = str(script.calls[0].id_of("The exporter writes"))
    assert_held(first, u_long, NO_RULE)
    assert [(m["id"], m["readAsRule"]) for m in first.state["carriedMessages"]] == [(u_long, "unconfirmed")]

    pi.prompt("Now add a header row to each file.")
    second = close_span(pi, 2)
    assert u_long in {m.id for m in script.calls[2].offered}
    assert_whole(second)
    assert second.state["carried"] == [] and all(r["message"] != u_long for r in second.state["rules"])
    kept = section(second.summary, "Possible rules, in the user's words")
    assert NO_RULE in kept and "never confirmed" in kept, second.summary
    assert section(second.summary, "User messages not yet labeled") == ""

    before = len(script.calls)
    pi.prompt("Thanks, that works.")
    third = close_span(pi, 3)
    assert u_long not in {m.id for c in script.since(before) for m in c.offered}
    assert_whole(third)
    assert NO_RULE in section(third.summary, "Possible rules, in the user's words"), third.summary


def test_quote_no_message_holds_under_a_long_message_is_sent_back(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """EX-2 (second half), QUOTE-4, QUOTE-8, FAIL-1: words no message holds ("each" for "every"), cited
    under a message over 600 characters, are a defect; the retry's `not a rule` is accepted and nothing of the
    model's is recorded; code's own reading keeps the holder's standing sentence, marked in doubt."""
    sentence = "From now on run ruff before every commit."
    holder = padded(sentence, 650, lead="About the lint setup. ")
    other = padded("The formatter settings can stay as they are for now.", 620)
    script = install(
        model_server,
        answer([Lab("formatter settings can stay", "rule", words="run ruff before each commit")]),
        answer(),
    )
    pi.prompt(holder)
    pi.prompt(other)
    found = close_span(pi, 1)

    assert script.kinds() == ["first", "words"]  # the words call's null takes the label back
    assert str(script.calls[0].id_of("formatter settings can stay")) in script.calls[1].last_user
    # nothing of the model's is recorded; code's reading keeps the user's own sentence, in doubt (doubts.py)
    rules = [(r["words"], r["doubt"]) for r in found.state["rules"]]
    assert rules == [(sentence, "model-read-one-off")], rules
    assert "run ruff before each commit" not in state_text(found)
    assert_whole(found)


@pytest.mark.parametrize("quoted_words", [11, 5], ids=["long-quote", "short-quote"])
def test_pasted_withdrawal_raises_no_question(
    pi: PiRpc, model_server: ModelServer, quoted_words: int
) -> None:
    """EX-9, QUOTE-12, QUOTE-14, LIFT-10, LIFT-11, LIFT-12: a withdrawal inside an 11-word quoted passage is
    left out of the judged text, so the new rule raises no question and R1 stays. With a 5-word quote the
    withdrawal counts: one question call names u<n> of R1 and shows its words; a plain `rule` reply keeps
    R1 in force."""
    tabs = "Always indent with tabs."
    quote = (
        "the tabs rule no longer applies to any of our repositories"
        if quoted_words == 11
        else "tabs rule no longer applies"
    )
    pasted = f'My colleague wrote: "{quote}" so what do you think? Use tabs in the new files from now on.'
    script = install(model_server, answer([Lab(tabs, "rule")]))
    pi.prompt(tabs)
    found = close_span(pi, 1)
    u_tabs = single_rule(found)["message"]

    script = install(
        model_server, answer([Lab("My colleague wrote", "rule")]), answer_questions(accept=False)
    )
    pi.prompt(pasted)
    found = close_span(pi, 2)
    u_pasted = script.calls[0].id_of("My colleague wrote")
    if quoted_words == 11:
        assert script.kinds() == ["first"], "QUOTE-14: a pasted withdrawal must not raise a question"
    else:
        assert script.kinds() == ["first", "question"]
        question = script.calls[1].last_user
        assert f"{u_pasted} is labeled `rule` and may replace the rule {u_tabs} gave ({tabs})" in question
    rules = {r["id"]: (r["words"], r["message"]) for r in standing_rules(found.state).values()}
    assert rules == {"R1": (tabs, u_tabs), "R2": (pasted, u_pasted)}, rules
    standing = section(found.summary, "Standing rules")
    assert rule_line("R1", tabs, str(u_tabs), flagged=is_flagged(found.state, "R1")) in standing
    assert_whole(found)


@pytest.mark.parametrize(
    "reply", ["accept", "wrong-form", "not-json"], ids=["rule-and-lifts", "lifts-only", "prose"]
)
def test_question_replies_can_only_add_the_asked_lift(
    pi: PiRpc, model_server: ModelServer, reply: str
) -> None:
    """EX-10, LIFT-10, LIFT-12, LIFT-14, LIFT-15, LIFT-16: u17-style "instead of tabs" labeled `rule` raises
    one question. Replying `rule and lifts u<n>` lifts R1 and records the new rule; `lifts u<n>` (not the
    offered form) or prose changes nothing, so both rules stay in force."""
    tabs = "Indent with tabs."
    switch = "Switch to two-space indentation instead of tabs from now on."
    script = install(model_server, answer([Lab(tabs, "rule")]))
    pi.prompt(tabs)
    found = close_span(pi, 1)
    u_tabs = str(single_rule(found)["message"])

    def wrong_form(call: DiffCall) -> Reply:
        return text(json.dumps({"labels": [{"msg": call.id_of(switch), "label": f"lifts {u_tabs}"}]}))

    replies: dict[str, Responder] = {
        "accept": answer_questions(accept=True),
        "wrong-form": wrong_form,
        "not-json": raw("I think it replaces the tabs rule, yes."),
    }
    script = install(model_server, answer([Lab(switch, "rule")]), replies[reply])
    pi.prompt(switch)
    found = close_span(pi, 2)
    assert script.kinds() == ["first", "question"]
    u_switch = script.calls[0].id_of(switch)
    rules = rules_by_id(found.state)
    assert (rules["R2"]["words"], rules["R2"]["message"]) == (switch, u_switch)
    standing = section(found.summary, "Standing rules")
    assert rule_line("R2", switch, str(u_switch)) in standing
    if reply == "accept":
        assert rules["R1"]["lifted"] is True and rules["R1"]["liftedBy"] == u_switch, rules["R1"]
        assert set(standing_rules(found.state)) == {"R2"} and tabs not in found.summary
    else:
        assert set(standing_rules(found.state)) == {"R1", "R2"}, rules
        assert rule_line("R1", tabs, u_tabs, flagged=is_flagged(found.state, "R1")) in standing
    assert_whole(found)


def test_focus_text_of_compact_is_never_quotable(pi: PiRpc, model_server: ModelServer) -> None:
    """DIFF-12, QUOTE-8: the /compact instructions reach the prompt as focus text only; words taken from them
    for a long message are a defect, and a retry that repeats them records no rule (the message is held and
    carried, QUOTE-4, ours)."""
    focus = "Always mention the ticket number QZFOCUS-7 in commit messages."
    long = padded("Please tidy the export module when you get to it.", 650)
    labels = [Lab("tidy the export module", "rule", words=focus)]
    script = install(model_server, answer(labels), answer(labels))
    pi.prompt(long)
    wrap_up(pi, "focus")
    response = pi.compact(focus)
    assert response.get("success") is True, f"compact failed: {response}\n{pi.diagnostics()}"
    found = expect_longhaul(pi.session_file(), 1, span=1)

    assert focus in script.calls[0].prompt, "DIFF-12: the focus text should reach the prompt"
    assert focus not in [m.text for m in script.calls[0].offered], "the focus is not a message to label"
    assert script.kinds() == ["first", "words"]
    assert focus not in script.calls[1].last_user, "DIFF-12: the words call shows the messages alone"
    assert found.state["rules"] == []
    assert "QZFOCUS-7" not in found.summary and "QZFOCUS-7" not in state_text(found)
    assert_held(found, str(script.calls[0].id_of("tidy the export module")), "tidy the export module")


def test_words_cited_under_a_long_message_bind_to_a_short_holder(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """QUOTE-7, QUOTE-2: exact words cited under a long message that does not hold them bind to the short
    message that does; the rule then follows the short message's length rule and is recorded whole."""
    short = "Please never add new dependencies without asking me first."
    long = padded("The exporter should stream rows instead of loading whole tables.", 650)
    script = install(
        model_server,
        answer([Lab("stream rows instead", "rule", words="never add new dependencies without asking me")]),
    )
    pi.prompt(short)
    pi.prompt(long)
    found = close_span(pi, 1)

    assert script.kinds() == ["first"]
    rule = single_rule(found)
    assert (rule["words"], rule["message"]) == (short, script.calls[0].id_of(short))
    assert_whole(found)


def test_a_rule_from_an_earlier_span_can_be_lifted_by_its_message_id(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """LABEL-16, LABEL-8, LIFT-1, LIFT-9: after Close a rule can be named by its u<n> too; `lifts u<n>`
    with withdrawal words lifts it."""
    rule_text = "Never add new dependencies without asking me first."
    withdrawal = "The dependencies rule no longer applies."
    script = install(model_server, answer([Lab(rule_text, "rule")]))
    pi.prompt(rule_text)
    found = close_span(pi, 1)
    u_rule = str(single_rule(found)["message"])

    script = install(model_server, answer([Lab(withdrawal, f"lifts {u_rule}")]))
    pi.prompt(withdrawal)
    found = close_span(pi, 2)
    assert script.kinds() == ["first"]
    lifted = rules_by_id(found.state)["R1"]
    assert lifted["lifted"] is True and lifted["liftedBy"] == script.calls[0].id_of(withdrawal)
    assert standing_rules(found.state) == {} and rule_text not in found.summary
    assert_whole(found)


def test_goal_message_quotes_only_its_objective(pi: PiRpc, model_server: ModelServer) -> None:
    """EX-12, QUOTE-10, QUOTE-2: in a pi-goal message only the objective between the goal tags is quotable;
    words from the template are rejected and the (short) objective is recorded whole, without a retry."""
    objective = "Ship the CSV export with tests; never touch the public API."
    template = (
        "Continue working toward the active goal. Work autonomously until the objective is met, and check "
        "your progress after every step. "
    )
    message = (
        template * 3
        + f"<untrusted_objective>{objective}</untrusted_objective> "
        + template * 2
        + "Report when the objective is met."
    )
    assert len(message) > 600
    script = install(
        model_server,
        answer([Lab("untrusted_objective", "rule", words="Work autonomously until the objective is met")]),
    )
    pi.prompt(message)
    found = close_span(pi, 1)

    assert script.kinds() == ["first"]
    rule = single_rule(found)
    assert (rule["words"], rule["message"]) == (objective, script.calls[0].id_of("untrusted_objective"))
    assert "Work autonomously" not in found.summary and "Work autonomously" not in state_text(found)
    assert_whole(found)


def test_a_rule_lifted_in_a_carried_span_does_not_come_back_when_offered_again(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """FAIL-18, FAIL-12, LABEL-15: a rule given and lifted inside the first chunk of a span whose second
    chunk never verifies is recorded as lifted; the whole span is carried, and when the next pass labels the
    rule's message `rule` again and its lift again, no second rule appears and the rule stays lifted."""
    rule_text = "From now on, every CSV file must end with a newline."
    withdrawal = "The newline rule no longer applies."
    good = answer([Lab(rule_text, "rule"), Lab(withdrawal, lifts(rule_text))])
    script = install(model_server, good, then=status(500, retry_after_ms=1))
    pi.prompt(rule_text)
    pi.prompt(withdrawal)
    for part in ("Part one", "Part two", "Part three"):
        pi.prompt(big_message("Nothing binding in this part.", part))
    found = close_span(pi, 1)

    assert closed(found)[0] == "chunk-missing", found.span_record["data"]
    u_rule, u_lift = script.calls[0].id_of(rule_text), script.calls[0].id_of(withdrawal)
    rule = rules_by_id(found.state)["R1"]
    assert (rule["words"], rule["lifted"], rule["liftedBy"]) == (rule_text, True, u_lift), rule
    assert section(found.summary, "Standing rules") == "" and rule_text not in found.summary
    assert {str(u_rule), str(u_lift)} <= set(found.state["carried"])

    before = len(script.calls)
    script.then = good
    found = close_span(pi, 2)
    offered = {m.id for c in script.since(before) for m in c.offered}
    assert {str(u_rule), str(u_lift)} <= offered, offered
    rules = rules_by_id(found.state)
    assert list(rules) == ["R1"], f"FAIL-18: a lifted rule came back: {rules}"
    assert rules["R1"]["lifted"] is True and rules["R1"]["liftedBy"] == u_lift, rules["R1"]
    assert section(found.summary, "Standing rules") == "" and rule_text not in found.summary
    assert closed(found)[0] == "whole"


@pytest.mark.parametrize("names_the_narrowing", [True, False], ids=["hotfix-rule", "main-push-rule"])
def test_lifting_a_rule_a_narrowing_replaced_asks_about_the_narrowing(
    pi: PiRpc, model_server: ModelServer, names_the_narrowing: bool
) -> None:
    """EX-8, LIFT-3, LIFT-7, LIFT-8, FAIL-5, LABEL-16: R1 is replaced by a narrowing in the same span that a
    later message lifts as `lifts R1`. One question shows the narrowing under its u<n>; the reply `lifts
    u<n>` lifts it only when the message names what the narrowing added ("hotfix"); naming only R1's words
    ("main", "push") leaves the narrowing in force."""
    never = "Never push to main."
    narrowing = "Instead of never pushing to main, you may push hotfix branches to main from now on."
    withdrawal = (
        "The hotfix push rule no longer applies."
        if names_the_narrowing
        else "The main push rule no longer applies."
    )
    script = install(model_server, answer([Lab(never, "rule")]))
    pi.prompt(never)
    found = close_span(pi, 1)
    assert single_rule(found)["words"] == never

    script = install(
        model_server,
        answer([Lab(narrowing, "rule and lifts R1"), Lab(withdrawal, "lifts R1")]),
        answer_questions(accept=True),
    )
    pi.prompt(narrowing)
    pi.prompt(withdrawal)
    found = close_span(pi, 2)

    assert script.kinds() == ["first", "question"], "FAIL-5: a replaced target is a question, not a defect"
    u_narrowing, u_withdrawal = script.calls[0].id_of(narrowing), script.calls[0].id_of(withdrawal)
    question = script.calls[1].last_user
    assert f"{u_withdrawal} is labeled `lifts R1`" in question and f"answer `lifts {u_narrowing}`" in question
    rules = rules_by_id(found.state)
    assert rules["R1"]["lifted"] is True and rules["R1"]["liftedBy"] == u_narrowing, rules["R1"]
    assert (rules["R2"]["words"], rules["R2"]["message"]) == (narrowing, u_narrowing)
    standing = section(found.summary, "Standing rules")
    assert never not in found.summary.replace(narrowing, "")
    if names_the_narrowing:
        assert rules["R2"]["lifted"] is True and rules["R2"]["liftedBy"] == u_withdrawal, rules["R2"]
        assert standing == ""
    else:
        # LIFT-8: naming only R1's words lifts nothing; ours: the refused lift of a message that states a
        # withdrawal leaves the narrowing flagged with the user's sentence, never plainly standing
        assert not rules["R2"]["lifted"], rules["R2"]
        flag = f'  possibly withdrawn by {u_withdrawal}: "{withdrawal}"'
        assert standing == rule_line("R2", narrowing, str(u_narrowing), flagged=True) + "\n" + flag, standing
    assert_whole(found)


def test_exact_words_in_a_medium_message_are_recorded(pi: PiRpc, model_server: ModelServer) -> None:
    """QUOTE-3, QUOTE-5: in a 301-600 character message, words that stand in it at word boundaries are what
    the rule records."""
    words = "From now on keep every public function documented with a docstring."
    medium = padded(words, 420)
    assert 300 < len(medium) <= 600
    script = install(model_server, answer([Lab("keep every public function", "rule", words=words)]))
    pi.prompt(medium)
    found = close_span(pi, 1)

    assert script.kinds() == ["first"]
    rule = single_rule(found)
    assert (rule["words"], rule["message"]) == (words, script.calls[0].id_of(words))
    assert rule_line("R1", words, str(rule["message"])) in section(found.summary, "Standing rules")
    assert_whole(found)


@pytest.mark.parametrize(
    "relayed",
    [
        "My colleague wrote:\n> the tabs rule no longer applies\nWhat do you think about tabs?",
        "The old note said:\n```\nthe tabs rule no longer applies\n```\nAny thoughts on tabs?",
    ],
    ids=["blockquote", "code-fence"],
)
def test_a_relayed_withdrawal_lifts_nothing(pi: PiRpc, model_server: ModelServer, relayed: str) -> None:
    """QUOTE-13, QUOTE-14, LIFT-1, LIFT-5: a withdrawal that stands only in a blockquote or a code fence is
    left out of the judged text; the lift is refused, sent back once, dropped when repeated, and R1 stays."""
    tabs = "Always indent with tabs."
    install(model_server, answer([Lab(tabs, "rule")]))
    pi.prompt(tabs)
    found = close_span(pi, 1)
    u_tabs = str(single_rule(found)["message"])

    labels = [Lab("tabs rule no longer applies", lifts(tabs))]
    script = install(model_server, answer(labels), answer(labels))
    pi.prompt(relayed)
    found = close_span(pi, 2)
    assert script.kinds() == ["first", "retry"]
    assert script.calls[0].rule_ref(tabs) == "R1"
    assert list(standing_rules(found.state)) == ["R1"], found.state["rules"]
    line = rule_line("R1", tabs, u_tabs, flagged=is_flagged(found.state, "R1"))
    assert line in section(found.summary, "Standing rules")
    assert_whole(found)
