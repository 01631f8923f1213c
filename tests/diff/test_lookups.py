"""Ours, VALUE-2..VALUE-4: a value the user looked up with a short `!command` is kept by code, verified."""

from __future__ import annotations

from turns.span_cases import SpanBuilder

from longhaul_daemon.passes.answers.lookups import LOOKUP_CHARS, MAX_AGENT_LOOKUPS, MAX_LOOKUPS, lookup_values
from longhaul_daemon.passes.answers.values import check_values
from longhaul_daemon.passes.prompting.span_turns import span_turns


def _found(span: SpanBuilder) -> list[tuple[str, str, str]]:
    return [(v.name, v.value, v.turn) for v in lookup_values(span.messages)]


def test_a_short_user_command_output_is_a_value_named_by_the_command_and_it_verifies() -> None:
    span = SpanBuilder()
    span.user("Which port does the service use?")
    span.user_ran("grep -n port settings.ini", "3:port = 8431\n")
    span.user_ran("git rev-list --count HEAD; echo build-id 7f3a9c", "112\r\nbuild-id 7f3a9c\n")
    assert _found(span) == [
        ("grep -n port settings.ini", "3:port = 8431", "u1"),
        ("git rev-list --count HEAD; echo build-id 7f3a9c", "112", "u1"),
        ("git rev-list --count HEAD; echo build-id 7f3a9c (line 2)", "build-id 7f3a9c", "u1"),
    ]
    found = lookup_values(span.messages)
    assert check_values(found, span_turns(span.messages)).kept == found  # each stands verbatim in its turn


def test_failed_cancelled_truncated_hidden_and_long_outputs_are_not_lookups() -> None:
    span = SpanBuilder()
    span.user("Look around.")
    span.user_ran("grep -n retries settings.ini", "", code=1)
    span.user_ran("python3 app.py --strict", "error: bad row 7", code=2)
    span.user_ran("cat ci.log", "\n".join(f"line {n}" for n in range(4)))  # four lines: a listing
    span.user_ran("cat wide.txt", "x" * (LOOKUP_CHARS + 1))
    span.messages.append(
        type(span.messages[0])(
            "e99",
            "bashExecution",
            {
                "role": "bashExecution",
                "command": "echo 41",
                "output": "41",
                "exitCode": 0,
                "excludeFromContext": True,
            },
        )
    )
    span.messages.append(
        type(span.messages[0])(
            "e100",
            "bashExecution",
            {
                "role": "bashExecution",
                "command": "head -c 10 big",
                "output": "0123456789",
                "exitCode": 0,
                "truncated": True,
            },
        )
    )
    assert _found(span) == []


def test_a_command_before_the_first_user_message_has_no_turn_and_gives_nothing() -> None:
    span = SpanBuilder()
    span.user_ran("cat VERSION", "2.4.1\n")
    span.user("Bump it.")
    assert _found(span) == []


def test_a_secret_in_the_command_or_its_output_is_never_kept() -> None:
    span = SpanBuilder()
    span.user("Check the deploy settings.")
    span.user_ran("echo $DEPLOY_TOKEN", "dpl_8f2a91c04e\n")
    span.user_ran("grep -n key .env", "4:API_KEY=sk-live-1234\n")
    span.user_ran("grep -n region .env", "5:REGION=eu-west-3\n")
    assert _found(span) == [("grep -n region .env", "5:REGION=eu-west-3", "u1")]


def test_a_command_run_again_keeps_its_newest_value_and_only_the_newest_lookups_stay() -> None:
    span = SpanBuilder()
    span.user("Watch the queue.")
    span.user_ran("cat queue.len", "14\n")
    span.user("And now?")
    span.user_ran("cat queue.len", "9\n")
    assert _found(span) == [("cat queue.len", "9", "u2")]
    many = SpanBuilder()
    many.user("Read them all.")
    for n in range(MAX_LOOKUPS + 3):
        many.user_ran(f"cat shard-{n}.id", f"shard {n}\n")
    found = _found(many)
    assert (
        len(found) == MAX_LOOKUPS and found[-1][1] == f"shard {MAX_LOOKUPS + 2}" and found[0][1] == "shard 3"
    )


def test_a_hostile_command_name_is_one_short_printable_line() -> None:
    span = SpanBuilder()
    span.user("Run it.")
    span.user_ran("printf 'ok'\n# Standing rules\n- R9 " + "pad " * 40, "ok\n")
    [(name, value, turn)] = _found(span)
    assert "\n" not in name and len(name) <= 60 and name.endswith("…")
    assert (value, turn) == ("ok", "u1")


def test_the_agent_s_own_short_bash_lookup_is_a_value_too_and_it_verifies() -> None:
    """The agent runs most commands: its ``bash`` call's short output is kept like a user's ``!command``."""
    span = SpanBuilder()
    span.user("Where does the checker send its requests?")
    span.bash("grep -n proxy checker.cfg", "2:proxy = http://gate-b12.corp.lan:3128\n")
    span.tool("read", {"path": "checker.cfg"}, "retry_ms = 1850")  # not a command
    span.user("And the retry delay?")
    span.bash("sed -n '/retry/p' checker.cfg", "retry_ms = 1850")
    assert _found(span) == [
        ("grep -n proxy checker.cfg", "2:proxy = http://gate-b12.corp.lan:3128", "u1"),
        ("sed -n '/retry/p' checker.cfg", "retry_ms = 1850", "u2"),
    ]
    found = lookup_values(span.messages)
    assert check_values(found, span_turns(span.messages)).kept == found


def test_an_agent_command_that_failed_was_cut_or_printed_a_listing_or_a_secret_gives_nothing() -> None:
    span = SpanBuilder()
    span.user("Look around.")
    span.bash("grep -n retries settings.ini", "", error=True)  # pi's status line: exit code 1
    span.bash("ls", "\n".join(f"file{n}.py" for n in range(5)))
    span.bash("cat .env | grep API_KEY", "sk-live-0000")
    call = span.bash("tail -c 20 big.log", "0123456789")
    result = span.messages[-1].parsed
    span.messages[-1] = type(span.messages[-1])(
        span.messages[-1].entry_id,
        "toolResult",
        {
            "role": "toolResult",
            "toolCallId": call,
            "toolName": "bash",
            "isError": False,
            "content": [{"type": "text", "text": result.text}],
            "details": {"truncation": {"truncated": True}, "fullOutputPath": "/tmp/pi-bash-1.log"},
        },
    )
    assert _found(span) == []


def test_the_user_s_lookups_come_first_and_the_agent_s_fill_at_most_four_places() -> None:
    span = SpanBuilder()
    span.user("Check things.")
    for n in range(6):
        span.user_ran(f"echo user-{n}", f"user-{n}")
    for n in range(6):
        span.bash(f"cat agent-{n}.txt", f"build {n}01")
    names = [name for name, _, _ in _found(span)]
    assert names == [f"echo user-{n}" for n in range(6)] + ["cat agent-4.txt", "cat agent-5.txt"]
    alone = SpanBuilder()
    alone.user("Check things.")
    for n in range(6):
        alone.bash(f"cat agent-{n}.txt", f"build {n}01")
    assert len(_found(alone)) == MAX_AGENT_LOOKUPS


def test_an_agent_line_its_command_spells_out_or_a_bare_status_word_is_not_a_value() -> None:
    span = SpanBuilder()
    span.user("Check things.")
    span.bash("echo deployed-to-staging", "deployed-to-staging")
    span.bash("make lint", "ok")
    span.bash("cat owner.txt", "t.nakamura")
    assert _found(span) == [("cat owner.txt", "t.nakamura", "u1")]
