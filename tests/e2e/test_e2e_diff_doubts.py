"""Code's second look through a real pi and the real daemon: a withdrawal or a rule the model's labels missed.

The issue "Fidelity on sessions it was not tuned on": a weak model labeled the user's "the DRY: prefix rule no
longer applies" `not a rule`, so every later summary told the agent to obey the withdrawn rule. Here the
scripted model (``diff_script.py``) makes the same mistakes and the assertions read what the agent is shown:
the summary and ``details.state`` of each compaction entry, and the Diff calls the daemon made
(diff/doubts.py; LIFT-1, LIFT-2, LIFT-4, LIFT-16, LIFT-18, QUOTE-12..QUOTE-15, TAKEOVER-6).
"""

from __future__ import annotations

import pytest

from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc

from .diff_script import Lab, answer, answer_questions, rule_line, rules_by_id, section, standing_rules
from .diff_steps import assert_whole, close_span, install, single_rule

pytestmark = pytest.mark.e2e

DRY = "From now on start every commit message with the DRY: prefix."
WITHDRAWAL = "The DRY: prefix rule no longer applies."


def _rule_then_missed_withdrawal(pi: PiRpc, model_server: ModelServer, *, accept: bool) -> tuple[str, str]:
    """Span 1 records the rule; span 2 offers the withdrawal, which the model labels `not a rule`; the
    question code asks is answered ``accept``. Returns the rule's and the withdrawal's ``u<n>``."""
    install(model_server, answer([Lab(DRY, "rule")]))
    pi.prompt(DRY)
    found = close_span(pi, 1)
    u_rule = str(single_rule(found)["message"])

    script = install(model_server, answer([Lab(WITHDRAWAL, "not a rule")]), answer_questions(accept=accept))
    pi.prompt(WITHDRAWAL)
    pi.prompt("Now rename the parser module.")
    found = close_span(pi, 2)
    assert script.kinds() == ["first", "question"], "code's withdrawal candidate must be asked, once"
    u_withdrawal = str(script.calls[0].id_of(WITHDRAWAL))
    assert f"{u_withdrawal} is labeled `not a rule` and may withdraw the rule R1" in script.calls[1].last_user
    assert_whole(found)
    return u_rule, u_withdrawal


def test_a_withdrawal_the_model_did_not_label_is_asked_and_lifted(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """LIFT-1, LIFT-16: the model missed the withdrawal; code's candidate goes out as one question, the
    confirmed lift passes the lift check, and no later summary shows the rule."""
    _, u_withdrawal = _rule_then_missed_withdrawal(pi, model_server, accept=True)
    install(model_server, answer())
    pi.prompt("Keep going with the parser.")
    found = close_span(pi, 3)
    lifted = rules_by_id(found.state)["R1"]
    assert lifted["lifted"] is True and lifted["liftedBy"] == u_withdrawal, lifted
    assert standing_rules(found.state) == {} and DRY not in found.summary
    assert_whole(found)


def test_a_withdrawal_the_model_keeps_stays_flagged_in_every_later_summary(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """The model answers that the rule still stands: it is never shown as plainly standing, but under a
    flag naming the withdrawing message and quoting the user's words, in this and the next compaction."""
    u_rule, u_withdrawal = _rule_then_missed_withdrawal(pi, model_server, accept=False)
    install(model_server, answer())
    pi.prompt("Keep going with the parser.")
    found = close_span(pi, 3)
    rule = rules_by_id(found.state)["R1"]
    assert rule["lifted"] is False and rule["possiblyWithdrawnBy"] == u_withdrawal, rule
    rules = section(found.summary, "Standing rules")
    flag = f'  possibly withdrawn by {u_withdrawal}: "{WITHDRAWAL}"'
    flagged = f"{rule_line('R1', DRY, u_rule, flagged=True)}\n{flag}"
    assert flagged in rules, rules
    assert_whole(found)


def test_a_standing_rule_the_model_called_a_one_off_is_kept_in_doubt(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """TAKEOVER-6: code reads "Never ..." as a standing rule; the model's `not a rule` does not lose it in a
    whole close: recorded with the user's words, marked in doubt. Issue 23 item 2, ours: so is a standing
    instruction with no rule word ("Keep every …"), under its own doubt line. A request to report back the
    model labels `rule` records nothing; a request with no standing cue and no one-off scope is recorded but
    marked in doubt, never an unflagged standing rule."""
    new_rule = "Never force-push to a shared branch."
    wider_rule = "Keep every log line under a hundred characters."
    report = "Run the build and tell me which port it uses."
    request = "Use the logging module for diagnostics."
    install(
        model_server,
        answer(
            [
                Lab(new_rule, "not a rule"),
                Lab(wider_rule, "not a rule"),
                Lab(report, "rule"),
                Lab(request, "rule"),
            ]
        ),
    )
    for text in (new_rule, wider_rule, report, request):
        pi.prompt(text)
    found = close_span(pi, 1)
    doubts = {rule["words"]: rule["doubt"] for rule in standing_rules(found.state).values()}
    assert doubts == {
        new_rule: "model-read-one-off",
        wider_rule: "may-be-standing",
        request: "reads-as-request",
    }, found.state["rules"]
    rules = section(found.summary, "Standing rules")
    assert new_rule in rules and "in doubt: the model read this message as a one-off" in rules
    assert f'"{wider_rule}"' in rules and "in doubt: the model read this as no rule" in rules
    assert "in doubt: reads as a one-off request" in rules and report not in found.summary.split("## Now")[0]
    assert_whole(found)


HINTS = "Every new function gets full type hints."
REMOTE = "Never push to the remote yourself."
SCRAPPED = "Honestly, the annotation rule I mentioned was overkill, scrap it."


def test_a_lasting_withdrawal_in_other_words_flags_the_rule_it_is_about(
    pi: PiRpc, model_server: ModelServer
) -> None:
    """Ours (withdrawal_reading.py, reversals.closest_rules): "the annotation rule I mentioned … scrap it"
    shares no stem with the typing rule, and the model calls it `not a rule`; the rule is flagged with the
    user's sentence all the same, asked nothing, and the other rule in force is left plain."""
    install(model_server, answer([Lab(HINTS, "rule"), Lab(REMOTE, "rule")]))
    pi.prompt(HINTS)
    pi.prompt(REMOTE)
    found = close_span(pi, 1)
    by_words = {str(r["words"]): r for r in rules_by_id(found.state).values()}
    hints, remote = by_words[HINTS], by_words[REMOTE]

    script = install(model_server, answer([Lab(SCRAPPED, "not a rule")]))
    pi.prompt(SCRAPPED)
    pi.prompt("Now rename the parser module.")
    found = close_span(pi, 2)
    assert script.kinds() == ["first"], "a loose tie can only be flagged, so nothing is asked"
    u_scrapped = str(script.calls[0].id_of(SCRAPPED))
    state = rules_by_id(found.state)
    assert state[str(hints["id"])]["possiblyWithdrawnBy"] == u_scrapped, state
    assert state[str(remote["id"])]["possiblyWithdrawnBy"] is None, state
    rules = section(found.summary, "Standing rules")
    flagged = rule_line(str(hints["id"]), HINTS, str(hints["message"]), flagged=True)
    assert f'{flagged}\n  possibly withdrawn by {u_scrapped}: "{SCRAPPED}"' in rules, rules
    assert rule_line(str(remote["id"]), REMOTE, str(remote["message"])) + "\n" in rules + "\n", rules
    assert_whole(found)
