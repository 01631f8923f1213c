"""Longhaul takes over a real pi session whose first compaction pi wrote itself (TAKEOVER-1..TAKEOVER-25).

The first compaction runs with ``PI_COMPACTOR=pi``, so pi's own summary replaces the user's words. The session
then continues (``pi -c``) with Longhaul on: its first pass must show the model pi's summary and the earlier
user messages, and code must record the earlier standing rule the reading picks, in the user's own words,
even though the model left it unlabeled.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .diff_script import answer, standing_rules
from .diff_steps import install
from .scenario import expect_longhaul, wrap_up
from .session_log import compactions, read_entries

pytestmark = pytest.mark.e2e

RULE = "Never add new dependencies without asking me first."


def test_takeover_after_pis_own_compaction_keeps_the_users_earlier_rule_verbatim(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    sandbox.extra_pi_env["PI_COMPACTOR"] = "pi"
    first = start_pi()
    first.prompt(RULE)
    first.prompt("Please build the exporter.")
    wrap_up(first, "pi compacts")
    assert first.compact().get("success") is True, first.diagnostics()
    session_file = first.session_file()
    first.close()
    own = compactions(read_entries(session_file))
    assert len(own) == 1 and not (own[0].get("details") or {}).get("compactor"), "precondition: pi's own"

    del sandbox.extra_pi_env["PI_COMPACTOR"]
    script = install(model_server, answer([]))  # every asked message `not a rule`; the picked one unlabeled
    second = PiRpc(sandbox, extra_args=("-c",))
    try:
        second.prompt("Now add the header row.")
        wrap_up(second, "longhaul takes over")
        assert second.compact().get("success") is True, second.diagnostics()
        # pi stays up until the shim's span record and line are written (the line comes a timer tick later)
        found = expect_longhaul(session_file, 2, span=1)
    finally:
        second.close()

    rules = standing_rules(found.state)
    assert [(r["message"], r["words"]) for r in rules.values()] == [("u1", RULE)]
    assert f'"{RULE}" (u1)' in found.summary
    call = script.calls[0]
    assert "PI-OWN-SUMMARY" in call.prompt  # TAKEOVER-1: pi's summary is shown, as data
    assert "--- u1 (51 characters, picked)" in call.prompt  # TAKEOVER-4: shown whole, label optional
    assert "u1" not in call.asked and "u2" in call.asked  # TAKEOVER-16: the unpicked one needs a label
