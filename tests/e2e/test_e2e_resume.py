"""Resuming after a fallback through real pi: the daemon is away for one compaction (TAKEOVER-23, -24).

pi's own compaction runs while the daemon is away, so the next Longhaul pass takes over from a foreign summary
on a session that already has a Longhaul state. What the state already judged (the messages of whole spans)
is not offered again, so a rule it lifted stays lifted; what it did not judge (a span that closed
narrative-less) is offered again, so a rule given there is still recorded, from the user's own words.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.answers import PI_OWN_MARKER
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import Lab, answer, lifts, rules_by_id, standing_rules, status
from .diff_steps import close_span, closed, install
from .scenario import expect_longhaul, wrap_up
from .session_log import compactions, read_entries

pytestmark = pytest.mark.e2e

RULE = "Never add new dependencies without asking me first."
LIFT = "The rule about new dependencies no longer applies: add what you need."
LINT = "Always run the linter before committing."


def _fall_back_to_pi(pi: PiRpc, daemon: Daemon, label: str) -> None:
    """One compaction with the daemon away: pi's own summary is written, then the daemon comes back."""
    daemon.stop()
    wrap_up(pi, label)
    response = pi.compact()
    assert response.get("success") is True, pi.diagnostics()
    assert PI_OWN_MARKER in response["data"]["summary"], "precondition: pi's own compaction ran"


def test_takeover23_after_a_fallback_what_the_state_judged_is_not_offered_again(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    script = install(model_server, answer([Lab(RULE, "rule")]), answer([Lab(LIFT, lifts(RULE))]))
    pi = start_pi()
    pi.prompt(RULE)
    first = close_span(pi, 1)
    assert [r["words"] for r in standing_rules(first.state).values()] == [RULE]
    pi.prompt(LIFT)
    second = close_span(pi, 2)
    assert standing_rules(second.state) == {}  # R1 lifted by the user's words

    _fall_back_to_pi(pi, daemon, "daemon away")
    daemon.start(sandbox.daemon_env())
    pi.prompt("Now write the docs for the exporter.")
    wrap_up(pi, "back")
    assert pi.compact().get("success") is True, pi.diagnostics()
    session_file = pi.session_file()
    found = expect_longhaul(session_file, 4, span=3)
    assert len(compactions(read_entries(session_file))) == 4

    takeover = script.calls[-1]
    assert "PI-OWN-SUMMARY" in takeover.prompt  # TAKEOVER-1: pi's summary of the stretch it compacted
    rule_id, lift_id = takeover.id_of(RULE), takeover.id_of(LIFT)
    assert rule_id is None and lift_id is None, "judged messages must not be offered again (TAKEOVER-23)"
    assert takeover.asked, "the messages since the last whole span are offered"
    rules = rules_by_id(found.state)
    assert list(rules) == ["R1"] and rules["R1"]["lifted"] is True  # lifted stays lifted, nothing re-recorded
    assert closed(found) == ("whole", None)


def test_takeover24_a_narrative_less_span_before_the_fallback_is_offered_again(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    script = install(
        model_server,
        answer([Lab(RULE, "rule")]),
        # span 2's call fails for good: a 400, and a 400 again when it is asked without the answer schema
        # (issue 11); it closes narrative-less, judging nothing
        status(400),
        status(400),
        then=answer([Lab(LINT, "rule")]),
    )
    pi = start_pi()
    pi.prompt(RULE)
    close_span(pi, 1)
    pi.prompt(LINT)
    second = close_span(pi, 2)
    assert closed(second)[0] == "narrative-less"

    _fall_back_to_pi(pi, daemon, "daemon away")
    daemon.start(sandbox.daemon_env())
    pi.prompt("Now write the docs for the exporter.")
    wrap_up(pi, "back")
    assert pi.compact().get("success") is True, pi.diagnostics()
    found = expect_longhaul(pi.session_file(), 4, span=3)

    takeover = script.calls[-1]
    lint_id = takeover.id_of(LINT)
    assert lint_id is not None and lint_id in takeover.asked  # TAKEOVER-24: that span judged none of it
    assert takeover.id_of(RULE) is None  # span 1 closed whole: judged
    rules = standing_rules(found.state)
    assert [(r["id"], r["words"]) for r in rules.values()] == [("R1", RULE), ("R2", LINT)]
