"""longhaul_remember, longhaul_recall and the kept-window strip with a real pi, daemon and scripted model.

Every check is on what a user can see: the session file pi wrote, the requests pi sent to the model, and the
record log in the agent directory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from longhaul_daemon.evaluation.harness.callers import content_text
from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer, RecordedRequest
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call, with_reasoning
from longhaul_daemon.evaluation.harness.sandbox import Sandbox

from .scenario import agent_bash, expect_longhaul, wrap_up
from .session_log import customs, read_entries

pytestmark = pytest.mark.e2e

NOTE = "REMEMBER-MARKER-7Q: the flaky test is test_io_retry, skip it"
THOUGHT = "KEPT-WINDOW-THOUGHT-9Z: the user probably wants the short answer"


def tool_results(request: RecordedRequest) -> list[str]:
    """The text of every tool result message in one request to the model."""
    return [content_text(m.get("content")) for m in request.messages if m.get("role") == "tool"]


def request_after_tool(server: ModelServer, call_id: str) -> RecordedRequest:
    """The first agent request that carries the result of tool call ``call_id``."""
    for request in server.requests("agent"):
        if any(m.get("role") == "tool" and m.get("tool_call_id") == call_id for m in request.messages):
            return request
    raise AssertionError(f"no agent request carries the result of {call_id}")


def last_call_id(server: ModelServer, tool: str) -> str:
    calls = [c.id for r in server.requests("agent") for c in r.reply.calls if c.name == tool]
    assert calls and calls[-1], f"the model server never answered with a {tool} call"
    return calls[-1]


def records(sandbox: Sandbox, event: str) -> list[dict[str, Any]]:
    path = sandbox.agent_dir / "logs" / "compaction-state.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return [r for r in map(json.loads, lines) if r.get("event") == event]


def test_remembered_note_is_carried_by_the_next_pass_as_a_note(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """TOOLS-1..4, FOLD-4: the note reaches details.state.notes and the summary's notes section."""
    pi = start_pi()
    model_server.enqueue(tool_call("longhaul_remember", text=NOTE, kind="dead-end"), text("Noted it."))
    pi.prompt("Please remember which test is flaky.")
    answer = request_after_tool(model_server, last_call_id(model_server, "longhaul_remember"))
    assert any(t.startswith("Remembered as your dead-end note") for t in tool_results(answer)), tool_results(
        answer
    )

    session_file = pi.session_file()
    events = customs(read_entries(session_file), "compaction-state.event")
    assert [e["data"] for e in events] == [
        {"stateFormat": 1, "kind": "remember", "text": NOTE, "noteKind": "dead-end"}
    ]

    wrap_up(pi, "remember")
    response = pi.compact()
    assert response.get("success") is True, f"compact failed: {response}\n{pi.diagnostics()}"
    comp = expect_longhaul(session_file, 1, span=1)
    notes = comp.state.get("notes")
    assert isinstance(notes, list) and [n.get("text") for n in notes] == [NOTE]
    assert notes[0].get("entryId") == events[0]["id"]
    assert all(NOTE not in json.dumps(r) for r in comp.state.get("rules", [])), "a note became a rule"
    intro = comp.summary.index("not the user's words")
    assert comp.summary.index(NOTE) > intro, "the note is not under the summary's notes"
    assert pi.extension_errors() == [], pi.diagnostics()


def test_recall_returns_the_commands_of_span_1_after_two_compactions(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """TOOLS-5, TOOLS-7: the tool result the model gets holds span 1's commands with their exit codes."""
    pi = start_pi()
    session_file = None
    for n, commands in enumerate(
        (["echo alpha-recall", "ls /nonexistent-recall"], ["echo beta-recall"]), start=1
    ):
        agent_bash(pi, model_server, *commands)
        wrap_up(pi, f"recall round {n}")
        response = pi.compact()
        assert response.get("success") is True, f"compact #{n} failed: {response}\n{pi.diagnostics()}"
        session_file = pi.session_file()
        expect_longhaul(session_file, n, span=n)

    model_server.enqueue(tool_call("longhaul_recall", ref="span:1"), text("Recalled span 1."))
    pi.prompt("What did we run in span 1?")
    request = request_after_tool(model_server, last_call_id(model_server, "longhaul_recall"))
    results = [t for t in tool_results(request) if t.startswith("Span 1:")]
    assert len(results) == 1, tool_results(request)
    detail = results[0]
    assert "`echo alpha-recall` exit 0" in detail, detail
    assert "`ls /nonexistent-recall` exit 2" in detail, detail
    assert "beta-recall" not in detail
    assert len(detail) <= 8000
    assert session_file is not None
    results_in_file = [
        e["message"]
        for e in read_entries(session_file)
        if e.get("type") == "message" and e["message"].get("toolName") == "longhaul_recall"
    ]
    assert [m.get("isError") for m in results_in_file] == [False]
    assert pi.extension_errors() == [], pi.diagnostics()


def reasoning_then_compaction(pi: PiRpc, server: ModelServer) -> tuple[str, list[str]]:
    """A kept turn whose answer carries reasoning, a follow-up, a compaction, then two more prompts.

    Returns the request body sent before the compaction and the two sent after it, as JSON text.
    """
    pi.prompt("First question.")
    server.enqueue(with_reasoning(THOUGHT, text("Thought it over: short answer.")))
    wrap_up(pi, "strip")  # long, so the cut keeps this turn: its reasoning is in the kept window
    pi.prompt("A follow-up before any compaction.")
    before = json.dumps(server.requests("agent")[-1].body)
    response = pi.compact()
    assert response.get("success") is True, f"compact failed: {response}\n{pi.diagnostics()}"
    after: list[str] = []
    for n in (1, 2):
        pi.prompt(f"Question {n} after the compaction.")
        after.append(json.dumps(server.requests("agent")[-1].body))
    return before, after


def test_kept_window_reasoning_is_left_out_after_a_longhaul_compaction(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """TOOLS-9, TOOLS-10, LOG-21: kept-window thinking is absent from later requests, present before."""
    pi = start_pi()
    before, after = reasoning_then_compaction(pi, model_server)
    assert THOUGHT in before, "control: pi sends the reasoning back before the compaction"
    session_file = pi.session_file()
    comp = expect_longhaul(session_file, 1, span=1)
    for n, body in enumerate(after, start=1):
        assert "Thought it over: short answer." in body, "the kept window itself must stay in the context"
        assert THOUGHT not in body, f"request {n} after the compaction still carries the old reasoning"

    assert THOUGHT in session_file.read_text(), "the transcript file must keep the reasoning (TOOLS-9)"
    strips = records(sandbox, "kept-window-strip")
    assert len(strips) == 1, f"want one kept-window-strip record for the window, got {strips}"
    record = strips[0]
    assert record["cutoff"] == comp.entry["id"]
    assert record["strippedBlocks"] == 1
    assert record["strippedChars"] == len(THOUGHT)
    assert isinstance(record["contextMessages"], int) and record["contextMessages"] >= 4
    assert pi.extension_errors() == [], pi.diagnostics()


def test_control_pis_own_compaction_keeps_the_reasoning(
    sandbox: Sandbox, daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """TOOLS-9 control: with Longhaul standing down (PI_COMPACTOR=pi) the kept window keeps its thinking."""
    sandbox.extra_pi_env["PI_COMPACTOR"] = "pi"
    pi = start_pi()
    before, after = reasoning_then_compaction(pi, model_server)
    assert THOUGHT in before
    for body in after:
        assert "Thought it over: short answer." in body
        assert THOUGHT in body, "pi's own compaction must not lose the kept window's reasoning"
    assert records(sandbox, "kept-window-strip") == []
    assert pi.extension_errors() == [], pi.diagnostics()


def test_without_the_daemon_the_tools_answer_with_an_error_and_pi_carries_on(
    model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    """TOOLS-8: daemon unreachable → an error result the model sees, the session goes on."""
    pi = start_pi()
    model_server.enqueue(tool_call("longhaul_remember", text="anything"), text("Could not note it."))
    pi.prompt("Remember something.")
    request = request_after_tool(model_server, last_call_id(model_server, "longhaul_remember"))
    results = tool_results(request)
    assert any("the Longhaul daemon is not running" in t for t in results), results
    messages = [
        e["message"]
        for e in read_entries(pi.session_file())
        if e.get("type") == "message" and e["message"].get("toolName") == "longhaul_remember"
    ]
    assert [m.get("isError") for m in messages] == [True]
    assert customs(read_entries(pi.session_file()), "compaction-state.event") == []
    assert pi.extension_errors() == [], pi.diagnostics()
