"""The ledger (LEDGER-1..9) on realistic pi messages: bash tool calls, their results, user ``!cmd`` runs."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.passes.ledger import LedgerResult, apply_ledger
from longhaul_daemon.state.model import Command, ErrorEntry, State
from longhaul_daemon.transcript.messages import SpanMessage, span_messages

_clock = itertools.count(1_778_000_000_000)
_entry_ids = itertools.count(1)
COST = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": COST}


def assistant(
    *calls: tuple[str, str, dict[str, Any]], stop: str = "toolUse", error: str | None = None
) -> dict[str, Any]:
    blocks = [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    message: dict[str, Any] = {"role": "assistant", "content": blocks, "api": "openai-completions"}
    message |= {"provider": "fake", "model": "fake-model", "usage": USAGE, "stopReason": stop}
    message |= {"timestamp": next(_clock)} | ({"errorMessage": error} if error is not None else {})
    return message


def bash_call(cid: str, command: str) -> tuple[str, str, dict[str, Any]]:
    return (cid, "bash", {"command": command})


def tool_result(cid: str, tool: str, text: str, is_error: bool) -> dict[str, Any]:
    """A toolResult as agent-loop.js stores it; a thrown tool error gets ``details: {}``."""
    message = {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": tool,
        "content": [{"type": "text", "text": text}],
    }
    return message | ({"details": {}} if is_error else {}) | {"isError": is_error, "timestamp": next(_clock)}


def bash_ok(cid: str, output: str = "ok\n") -> dict[str, Any]:
    """What pi's bash tool stores for exit code 0 (bash.js: the output text, details undefined)."""
    return tool_result(cid, "bash", output, False)


def bash_failed(cid: str, output: str, code: int) -> dict[str, Any]:
    """bash.js throws `${output}\\n\\nCommand exited with code N` for a non-zero exit."""
    return tool_result(cid, "bash", f"{output}\n\nCommand exited with code {code}", True)


def tool_error(cid: str, tool: str, text: str) -> dict[str, Any]:
    return tool_result(cid, tool, text, True)


def user_bash(command: str, code: int | None, output: str = "", **extra: Any) -> dict[str, Any]:
    message = {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": code,
        "cancelled": False,
        "truncated": False,
        "timestamp": next(_clock),
    }
    if code is None:
        del message["exitCode"]
    message.update(extra)
    return message


def span_of(*messages: dict[str, Any]) -> list[SpanMessage]:
    ids = [f"e{next(_entry_ids):07d}" for _ in messages]
    branch = [
        {"type": "message", "id": i, "parentId": None, "timestamp": "t", "message": m}
        for i, m in zip(ids, messages, strict=True)
    ]
    return span_messages(list(messages), branch)


def carry(result: LedgerResult) -> State:
    return State(
        commands=result.commands,
        errors=result.errors,
        nextCommand=result.next_command,
        nextError=result.next_error,
    )


def summary(commands: list[Command]) -> list[tuple[str, str, object]]:
    return [(c.id, c.text, c.exit) for c in commands]


def test_ledger_1_three_bash_calls_and_one_user_command_in_message_order() -> None:
    """LEDGER-1: three bash tool calls and one `!cmd` yield four commands in message order."""
    span = span_of(
        {"role": "user", "content": [{"type": "text", "text": "run the tests"}], "timestamp": next(_clock)},
        assistant(bash_call("call_1", "ls"), bash_call("call_2", "pytest -q")),
        bash_ok("call_1", "README.md\n"),
        bash_failed("call_2", "1 failed", 1),
        user_bash("git status", 0, "clean\n"),
        assistant(bash_call("call_3", "make")),
        bash_ok("call_3"),
    )
    result = apply_ledger(State(), span, 1)
    assert summary(result.commands) == [
        ("C1", "ls", 0),
        ("C2", "pytest -q", 1),
        ("C3", "git status", 0),
        ("C4", "make", 0),
    ]
    assert result.new_commands == result.commands
    assert [c.toolCallId for c in result.commands] == ["call_1", "call_2", None, "call_3"]
    ids = [m.entry_id for m in span]
    assert [c.entryId for c in result.commands] == [ids[1], ids[1], ids[4], ids[5]]
    assert {c.span for c in result.commands} == {1}


def test_ledger_1_reused_call_ids_pair_with_the_next_result() -> None:
    """LEDGER-1: some servers number calls per turn ("call_0"); each call pairs with the result after it."""
    span = span_of(
        assistant(bash_call("call_0", "make")),
        bash_failed("call_0", "make: *** [all] Error 2", 2),
        assistant(bash_call("call_0", "make clean")),
        bash_ok("call_0"),
        assistant(("call_0", "read", {"path": "x"})),
        tool_error("call_0", "read", "ENOENT"),
    )
    result = apply_ledger(State(), span, 1)
    assert summary(result.commands) == [("C1", "make", 2), ("C2", "make clean", 0)]
    assert [(e.tool, e.command) for e in result.errors] == [("bash", "C1"), ("read", None)]


def test_ledger_1_other_tools_are_not_commands() -> None:
    span = span_of(
        assistant(("r1", "read", {"path": "a.py"}), ("w1", "write", {"path": "b.py", "content": ""})),
        bash_ok("r1"),
        bash_ok("w1"),
    )
    assert apply_ledger(State(), span, 1).commands == []


def test_ledger_2_exit_codes() -> None:
    """LEDGER-2: exitCode, details.exitCode, trailing "exited with code N", isError, cancelled, no result."""
    details_code = bash_ok("c2")
    details_code["details"] = {"exitCode": 4}
    error_no_code = tool_error("c4", "bash", "Command timed out after 5 seconds")
    span = span_of(
        assistant(*(bash_call(f"c{i}", f"cmd{i}") for i in range(1, 7))),
        bash_failed("c1", "boom", 2),
        details_code,
        bash_ok("c3"),
        error_no_code,
        tool_error("c5", "bash", "partial output\n\nCommand aborted"),
        user_bash("sleep 100", None, "", cancelled=True),
        user_bash("kill -9 $$", None),
        user_bash("false", 1),
    )
    result = apply_ledger(State(), span, 1)
    assert [c.exit for c in result.commands] == [
        2,
        4,
        0,
        "unknown",
        "cancelled",
        "no result",
        "cancelled",
        "unknown",
        1,
    ]


def test_ledger_3_excluded_user_command_is_not_recorded() -> None:
    """LEDGER-3: a `!!cmd` (excludeFromContext) is kept out of the ledger, errors included."""
    span = span_of(user_bash("cat secrets", 1, "denied", excludeFromContext=True), user_bash("ls", 0))
    result = apply_ledger(State(), span, 1)
    assert summary(result.commands) == [("C1", "ls", 0)]
    assert result.errors == []


def test_ledger_4_errors_one_per_source() -> None:
    """LEDGER-4: failing tool results, failing `!cmd`, model errors; a failing bash call gives ONE error."""
    span = span_of(
        assistant(bash_call("call_a", "npm test"), ("call_r", "read", {"path": "missing.txt"})),
        bash_failed("call_a", "\n\nFAIL src/app.test.ts\n  expected 1 got 2", 1),
        tool_error("call_r", "read", "ENOENT: no such file or directory, open 'missing.txt'"),
        user_bash("make deploy", 2, "make: *** No rule to make target 'deploy'.  Stop.\n"),
        assistant(stop="error", error="429 Too Many Requests\nretry later"),
        user_bash("true", 0),
    )
    result = apply_ledger(State(), span, 3)
    assert [(e.id, e.tool, e.text, e.command) for e in result.errors] == [
        ("E1", "bash", "FAIL src/app.test.ts", "C1"),
        ("E2", "read", "ENOENT: no such file or directory, open 'missing.txt'", None),
        ("E3", "bash", "make: *** No rule to make target 'deploy'.  Stop.", "C2"),
        ("E4", "model", "429 Too Many Requests", None),
    ]
    assert [(e.entryId, e.toolCallId, e.span, e.open) for e in result.errors] == [
        (span[1].entry_id, "call_a", 3, True),
        (span[2].entry_id, "call_r", 3, True),
        (span[3].entry_id, None, 3, True),
        (span[4].entry_id, None, 3, True),
    ]


def test_ledger_5_ids_continue_from_the_carried_state() -> None:
    """LEDGER-5: after C11 and E2 the span's first command is C12 and its first error E3."""
    carried = State(
        commands=[
            Command(id=f"C{i}", text=f"old{i}", exit=0, span=1, entryId=f"old{i}") for i in range(1, 12)
        ],
        errors=[ErrorEntry(id=f"E{i}", tool="read", text="x", span=1, entryId=f"olde{i}") for i in (1, 2)],
        nextCommand=12,
        nextError=3,
    )
    result = apply_ledger(carried, span_of(assistant(bash_call("n1", "ls")), bash_failed("n1", "no", 2)), 2)
    assert [c.id for c in result.new_commands] == ["C12"]
    assert [e.id for e in result.new_errors] == ["E3"]
    assert (result.next_command, result.next_error) == (13, 4)
    assert [c.id for c in result.commands] == [f"C{i}" for i in range(1, 13)]


def test_ledger_5_ids_are_never_reused_even_with_a_stale_counter() -> None:
    """LEDGER-5: a counter behind the highest id in the state never hands that id out again."""
    carried = State(commands=[Command(id="C11", text="x", exit=0, span=1)], errors=[], nextCommand=3)
    result = apply_ledger(carried, span_of(user_bash("ls", 0)), 2)
    assert [c.id for c in result.new_commands] == ["C12"]


def test_ledger_6_same_messages_twice_yield_no_duplicates() -> None:
    """LEDGER-6: offering the same messages again adds nothing and reuses no id."""
    span = span_of(
        assistant(bash_call("call_1", "pytest")),
        bash_failed("call_1", "E   assert 1 == 2", 1),
        user_bash("ls", 0),
    )
    first = apply_ledger(State(), span, 1)
    second = apply_ledger(carry(first), span, 2)
    assert second.new_commands == [] and second.new_errors == []
    assert second.commands == first.commands and second.errors == first.errors
    assert (second.next_command, second.next_error) == (first.next_command, first.next_error)
    doubled = apply_ledger(State(), span + span, 1)
    assert summary(doubled.commands) == summary(first.commands)
    assert [e.id for e in doubled.errors] == ["E1"]


def test_ledger_6_unmatched_messages_offered_twice_in_one_span() -> None:
    """LEDGER-6: without an entry id the tool-call id (or the timestamp) is the source."""
    run = user_bash("ls", 3, "nope")
    call = assistant(bash_call("call_x", "make"))
    span = [SpanMessage(entry_id=None, role=m["role"], message=m) for m in (call, run, call, run)]
    result = apply_ledger(State(), span, 1)
    assert summary(result.commands) == [("C1", "make", "no result"), ("C2", "ls", 3)]
    assert len(result.errors) == 1


def test_ledger_6_a_carried_no_result_takes_its_later_result() -> None:
    """LEDGER-6: a call carried as "no result" keeps its id when a later span offers it with its result."""
    call = assistant(bash_call("call_slow", "make -j8"))
    result = bash_failed("call_slow", "error: linker", 2)
    branch: list[dict[str, Any]] = [
        {"type": "message", "id": "call0001", "parentId": None, "timestamp": "t", "message": call},
        {"type": "message", "id": "rslt0001", "parentId": "call0001", "timestamp": "t", "message": result},
    ]
    first = apply_ledger(State(), span_messages([call], branch), 1)
    assert summary(first.commands) == [("C1", "make -j8", "no result")]
    second = apply_ledger(carry(first), span_messages([call, result], branch), 2)
    assert summary(second.commands) == [("C1", "make -j8", 2)]
    assert second.new_commands == []
    assert [(e.id, e.command, e.entryId) for e in second.new_errors] == [("E1", "C1", "rslt0001")]


def test_ledger_7_what_an_entry_keeps() -> None:
    """LEDGER-7: command text up to 300 code points cut with "…"; error text 200 of its first line."""
    long_command = "echo " + "é" * 400
    long_line = "x" * 500
    span = span_of(
        assistant(bash_call("c1", long_command)), bash_failed("c1", f"\n   \n{long_line}\nsecond", 1)
    )
    result = apply_ledger(State(), span, 7)
    (command,) = result.commands
    assert len(command.text) == 300 and command.text.endswith("…") and command.text.startswith("echo éé")
    assert (command.exit, command.span, command.entryId, command.toolCallId) == (1, 7, span[0].entry_id, "c1")
    (error,) = result.errors
    assert len(error.text) == 200 and error.text.endswith("…")
    assert (error.tool, error.command, error.span, error.entryId) == ("bash", "C1", 7, span[1].entry_id)


def test_ledger_8_error_closes_when_the_identical_command_later_exits_0() -> None:
    """LEDGER-8: open until a later run of the identical command text exits 0, in this span."""
    span = span_of(
        assistant(bash_call("c1", "pytest -q")),
        bash_failed("c1", "1 failed", 1),
        assistant(bash_call("c2", "pytest")),
        bash_ok("c2"),
        assistant(bash_call("c3", "pytest -q")),
        bash_ok("c3"),
    )
    (error,) = apply_ledger(State(), span, 1).errors
    assert error.command == "C1" and error.open is False


def test_ledger_8_error_stays_open_until_a_later_span_fixes_it() -> None:
    """LEDGER-8: a different command or an earlier success does not close it; a later span's success does."""
    first = apply_ledger(
        State(),
        span_of(
            user_bash("make", 0), user_bash("make", 2, "make: *** [all] Error 1"), user_bash("make all", 0)
        ),
        1,
    )
    assert [(e.command, e.open) for e in first.errors] == [("C2", True)]
    still = apply_ledger(carry(first), span_of(user_bash("make", 2, "again")), 2)
    assert [(e.id, e.open) for e in still.errors] == [("E1", True), ("E2", True)]
    fixed = apply_ledger(carry(still), span_of(user_bash("make", 0)), 3)
    assert [(e.id, e.open) for e in fixed.errors] == [("E1", False), ("E2", False)]
    assert fixed.new_errors == []


def test_ledger_8_errors_without_a_command_stay_open() -> None:
    span = span_of(
        assistant(("r", "read", {"path": "x"})), tool_error("r", "read", "ENOENT"), user_bash("ls", 0)
    )
    assert [e.open for e in apply_ledger(State(), span, 1).errors] == [True]


def test_ledger_9_pure_and_deterministic() -> None:
    """LEDGER-9: built in code; the same input gives the same output and the carried state is not mutated."""
    span = span_of(assistant(bash_call("c1", "ls")), bash_failed("c1", "x", 1), user_bash("ls", 0))
    carried = State(commands=[Command(id="C1", text="ls", exit=1, span=1, entryId="old")], nextCommand=2)
    before = carried.model_dump_json()
    span_before = copy.deepcopy([m.message for m in span])
    one, two = apply_ledger(carried, span, 2), apply_ledger(carried, span, 2)
    assert one == two
    assert carried.model_dump_json() == before
    assert [m.message for m in span] == span_before


def test_empty_span_keeps_the_carried_ledger() -> None:
    """PASS-17: an empty span still updates (here: keeps) the ledger."""
    carried = State(commands=[Command(id="C4", text="ls", exit=0, span=1)], nextCommand=5, nextError=2)
    result = apply_ledger(carried, [], 2)
    assert result.commands == carried.commands and result.errors == []
    assert (result.next_command, result.next_error) == (5, 2)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=10,
)
ROLE = st.sampled_from(["assistant", "toolResult", "bashExecution", "user", "custom", "weird"]) | JSON
FIELDS = st.sampled_from(
    [
        *("content", "toolCallId", "toolName", "isError", "details", "command", "output", "exitCode"),
        *("cancelled", "excludeFromContext", "stopReason", "errorMessage", "timestamp"),
    ]
)
CALL = st.fixed_dictionaries(
    {"type": st.just("toolCall"), "id": st.sampled_from(["a", "b"]) | JSON, "name": st.just("bash") | JSON}
) | st.fixed_dictionaries({"arguments": JSON | st.fixed_dictionaries({"command": JSON})})
MESSAGE = st.tuples(
    st.fixed_dictionaries({"role": ROLE}, optional={"content": st.lists(CALL | JSON, max_size=3) | JSON}),
    st.dictionaries(FIELDS, JSON, max_size=6),
).map(lambda pair: {**pair[1], **pair[0]})


@settings(max_examples=100, deadline=None)
@given(
    messages=st.lists(MESSAGE, max_size=8),
    entry_ids=st.lists(st.sampled_from(["e1", "e2", None]), min_size=8, max_size=8),
)
def test_apply_ledger_never_raises_on_arbitrary_messages(
    messages: list[dict[str, Any]], entry_ids: list[str | None]
) -> None:
    """LEDGER-9 (never raises on transcript content): arbitrary JSON-ish messages, twice over."""
    span = [
        SpanMessage(entry_id=eid, role="x", message=m) for m, eid in zip(messages, entry_ids, strict=False)
    ]
    first = apply_ledger(State(), span, 1)
    second = apply_ledger(carry(first), span, 2)
    ids = [c.id for c in second.commands]
    assert len(ids) == len(set(ids))
    assert len({e.id for e in second.errors}) == len(second.errors)
