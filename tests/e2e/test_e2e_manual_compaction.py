"""A manual compaction (RPC ``compact``) lands Longhaul's summary, ledger and custom entries on disk."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from longhaul_daemon.evaluation.harness.daemon_process import Daemon
from longhaul_daemon.evaluation.harness.model_server import ModelServer
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call

from .scenario import (
    agent_bash,
    block_lines,
    command_ids,
    commands_by_id,
    expect_longhaul,
    last_agent_request,
    summary_wrapper,
    wrap_up,
)
from .session_log import compactions, read_entries

pytestmark = pytest.mark.e2e

FAILING = "ls /nonexistent-dir-xyz"
PASSING = "echo ok"
USER_BANG = "echo from-user-bang"


def test_manual_compact_writes_longhaul_compaction(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    pi = start_pi()
    model_server.enqueue(tool_call("read", path="notes.txt"), text("Read notes.txt."))
    pi.prompt("Please read notes.txt")
    model_server.enqueue(tool_call("write", path="out.txt", content="written by the model\n"), text("Wrote."))
    pi.prompt("Please write out.txt")
    agent_bash(pi, model_server, PASSING, FAILING)
    bang = pi.bash(USER_BANG)
    assert bang["data"]["exitCode"] == 0
    wrap_up(pi, "one")

    response = pi.compact()
    assert response.get("success") is True, f"RPC compact failed: {response}\n{pi.diagnostics()}"
    session_file = pi.session_file()
    found = expect_longhaul(session_file, 1, span=1)
    assert len(compactions(found.entries)) == 1
    assert response["data"]["summary"] == found.summary, "RPC compact answered a different summary"
    assert found.details["stateFormat"] == 1 and found.details["compactor"] == "longhaul"
    assert found.span_record["data"]["compactionId"] == found.entry["id"]
    assert pi.extension_errors() == [], pi.diagnostics()

    # The ledger: every command once, in message order, with ids C1.. and its exit code.
    state = found.state
    by_id = commands_by_id(state)
    texts = {str(c["text"]): cid for cid, c in by_id.items()}
    assert {PASSING, FAILING, USER_BANG} <= set(texts), f"ledger commands: {sorted(texts)}"
    assert command_ids(state) == ["C1", "C2", "C3"], f"ledger ids: {command_ids(state)}"
    assert [by_id[c]["text"] for c in ("C1", "C2", "C3")] == [PASSING, FAILING, USER_BANG]
    assert by_id[texts[PASSING]]["exit"] == 0
    assert by_id[texts[USER_BANG]]["exit"] == 0
    failing_exit = by_id[texts[FAILING]]["exit"]
    assert failing_exit != 0, f"failing command recorded with exit {failing_exit!r}"

    errors = state.get("errors")
    assert isinstance(errors, list) and len(errors) == 1, f"want one error (the failing ls), got {errors!r}"
    assert errors[0]["id"] == "E1"
    assert errors[0]["command"] == texts[FAILING], f"E1 names {errors[0].get('command')!r}"

    # What the user reads: header, command ids with their commands, the open error, pi-style file blocks.
    summary = found.summary
    for cid, command in by_id.items():
        assert cid in summary, f"{cid} missing from the summary:\n{summary}"
        assert str(command["text"]) in summary, f"command {command['text']!r} missing from the summary"
    assert "E1" in summary, f"open error E1 missing from the summary:\n{summary}"
    read_files = block_lines(summary, "read-files")
    modified_files = block_lines(summary, "modified-files")
    assert any(f.endswith("notes.txt") for f in read_files), f"<read-files> block: {read_files}\n{summary}"
    assert any(f.endswith("out.txt") for f in modified_files), f"<modified-files> block: {modified_files}"
    assert not any(f.endswith("out.txt") for f in read_files)

    # Longhaul supplied the summary: pi's own summariser was never asked.
    assert model_server.requests("pi-summary") == []


def test_summary_reaches_next_model_request(
    daemon: Daemon, model_server: ModelServer, start_pi: Callable[[], PiRpc]
) -> None:
    pi = start_pi()
    agent_bash(pi, model_server, "echo before-compaction")
    wrap_up(pi, "before")
    response = pi.compact()
    assert response.get("success") is True, f"RPC compact failed: {response}\n{pi.diagnostics()}"
    found = expect_longhaul(pi.session_file(), 1, span=1)

    pi.prompt("What happened before the compaction?")
    request = last_agent_request(model_server)
    user_texts = request.texts("user")
    wrapped = summary_wrapper(found.summary)
    assert any(wrapped in t for t in user_texts), (
        "the next model request does not carry the Longhaul summary inside <summary>; user messages were:\n"
        + "\n---\n".join(t[:400] for t in user_texts)
    )
    assert user_texts[-1] == "What happened before the compaction?"
    # The file on disk agrees with what pi sent.
    assert compactions(read_entries(pi.session_file()))[0]["summary"] == found.summary
