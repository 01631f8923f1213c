"""pi's threshold auto-compaction goes through Longhaul, in RPC mode and in print mode (``pi -p``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .print_mode import PrintRun, run_print
from .scenario import LONG_WRAP_UP, agent_bash, expect_longhaul
from .session_log import Entry, compactions, is_longhaul, read_entries

pytestmark = pytest.mark.e2e

OVER_THRESHOLD = "[[tokens=30000]]"  # contextWindow 32000 - reserveTokens 4000 = 28000


def test_threshold_auto_compaction_rpc(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    pi = start_pi()
    agent_bash(pi, model_server, "echo auto-one")
    start = pi.mark()
    pi.prompt(f"{LONG_WRAP_UP} {OVER_THRESHOLD}")
    _, begin = pi.wait_event(
        lambda e: e.get("type") == "compaction_start", start=start, what="auto compaction_start"
    )
    assert begin.get("reason") == "threshold", f"compaction_start: {begin}"
    _, end = pi.wait_event(
        lambda e: e.get("type") == "compaction_end", start=start, what="auto compaction_end"
    )
    result = end.get("result")
    assert isinstance(result, dict), f"auto-compaction ended without a result: {end}\n{pi.diagnostics()}"

    found = expect_longhaul(pi.session_file(), 1, span=1)
    assert result.get("summary") == found.summary
    assert found.state["commands"][0]["text"] == "echo auto-one"
    assert model_server.requests("pi-summary") == [], "pi's own summariser ran"

    # The session goes on after the automatic compaction.
    pi.prompt("still working after auto-compaction")
    assert model_server.requests("agent")[-1].texts("user")[-1] == "still working after auto-compaction"


def test_threshold_auto_compaction_print_mode(
    daemon: Daemon, sandbox: Sandbox, model_server: ModelServer
) -> None:
    model_server.enqueue(tool_call("bash", command="echo print-one"), text("ran print-one"))
    run = run_print(
        sandbox,
        "first message: please run print-one",
        f"second message: {LONG_WRAP_UP}",
        f"third message {OVER_THRESHOLD}",
    )
    first = _print_compaction(run, nth=1, span=1)
    assert [c["text"] for c in first["details"]["state"]["commands"]] == ["echo print-one"]
    assert model_server.requests("pi-summary") == [], "pi's own summariser ran"

    # A second `pi -p -c` run continues the session; its auto-compaction is span 2 and keeps C1.
    # (Print mode disposes the runtime while the last auto-compaction runs, so the shim's custom entries
    # after it may be missing; the state in the compaction's details must carry on regardless.)
    model_server.enqueue(tool_call("bash", command="echo print-two"), text("ran print-two"))
    again = run_print(
        sandbox,
        "fourth message: please run print-two",
        f"fifth message: {LONG_WRAP_UP}",
        f"sixth message {OVER_THRESHOLD}",
        flags=("-c",),
    )
    assert again.session_file == run.session_file, "pi -p -c did not continue the same session"
    second = _print_compaction(again, nth=2, span=2)
    commands = {c["id"]: c["text"] for c in second["details"]["state"]["commands"]}
    assert commands == {"C1": "echo print-one", "C2": "echo print-two"}, commands


def _print_compaction(run: PrintRun, *, nth: int, span: int) -> Entry:
    assert run.returncode == 0, f"pi -p exit {run.returncode}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
    assert "ACK:" in run.stdout
    assert run.session_file is not None, "pi -p wrote no session file"
    comps = compactions(read_entries(run.session_file))
    assert len(comps) == nth, f"want {nth} compaction(s), got {len(comps)}; stderr:\n{run.stderr}"
    entry = comps[-1]
    assert is_longhaul(entry) and entry.get("fromHook") is True, (
        f"print-mode auto-compaction is not Longhaul's: fromHook={entry.get('fromHook')!r} "
        f"summary={str(entry.get('summary'))[:300]!r}\nstderr:\n{run.stderr}"
    )
    assert entry["details"]["span"] == span, f"details.span={entry['details'].get('span')!r}, want {span}"
    return entry
