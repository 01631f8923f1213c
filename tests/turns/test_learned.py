"""VALUE-7: in turns mode the only values kept are those code learns from tool output."""

from __future__ import annotations

from longhaul_daemon.passes.answers.values import check_values
from longhaul_daemon.passes.prompting.span_turns import span_turns
from longhaul_daemon.passes.turns.learned import MAX_LEARNED, learned_values

from .span_cases import SpanBuilder


def test_value7_a_value_printed_by_a_tool_and_used_again_is_learned_named_by_its_line() -> None:
    span = SpanBuilder()
    span.user("Start the dev server.")
    span.bash("npm run dev", "VITE ready\n  Local: listening on port 5173\n  took 812ms")
    span.assistant("The server is up on 5173.")
    [value] = learned_values(span.messages)
    assert (value.name, value.value, value.turn) == ("Local listening on port", "5173", "u1")
    assert check_values([value], span_turns(span.messages)).kept == (value,)  # it verifies (VALUE-2)


def test_value7_a_value_only_printed_or_first_said_outside_tool_output_is_not_learned() -> None:
    span = SpanBuilder()
    span.user("Use port 8080 for the API.")
    span.bash("serve", "api on 8080\nworker pid 41872")
    span.assistant("Serving on 8080.")
    assert learned_values(span.messages) == ()  # 8080 came from the user first; 41872 was never used again


def test_value7_a_flanked_repeat_does_not_count_and_the_newest_values_are_kept() -> None:
    span = SpanBuilder()
    span.user("Measure it.")
    span.bash("bench", "total 4120ms")
    span.assistant("That took 4120ms5 runs.")  # flanked: not a use of 4120ms
    assert learned_values(span.messages) == ()
    many = SpanBuilder()
    many.user("Collect the numbers.")
    for n in range(12):
        many.bash(f"probe {n}", f"value: {1000 + n}")
        many.assistant(f"Noted {1000 + n}.")
    values = learned_values(many.messages)
    assert len(values) == MAX_LEARNED and values[-1].value == "1011" and values[0].value == "1004"


def test_value7_output_before_the_first_user_message_has_no_turn_to_credit() -> None:
    span = SpanBuilder()
    span.bash("build", "built in 9.52s")
    span.user("Was it fast?")
    span.assistant("9.52s.")
    assert learned_values(span.messages) == ()


def test_value7_a_huge_output_is_read_once_and_names_come_from_the_words_just_before() -> None:
    """A 16,000-line log (about 60,000 tokens) and a line of 200,000 characters: each value is still named
    by the words right before it on its line, and CRLF output names it as LF output would."""
    lines = "".join(f"{n:05d}: GET /api/items/{n} 200 in 0.{n % 1000:03d}s\r\n" for n in range(1, 16_001))
    wide = "noise " * 40_000 + "served on port 48123\n"
    span = SpanBuilder()
    span.user("Read the access log.")
    span.bash("cat access.log", lines + wide)
    span.assistant("Item 12000 took 0.000s; the server is on 48123.")
    values = {v.value: v for v in learned_values(span.messages)}
    assert set(values) == {"12000", "0.000s", "48123"}
    assert values["12000"].name == "bash output"  # it first stood at the start of line 12000: no words
    assert values["0.000s"].name == "GET api/items/1000 in"  # the words before it: numbers are not words
    assert values["48123"].name == "noise noise served on port"
    assert all(v.turn == "u1" for v in values.values())
    assert check_values(list(values.values()), span_turns(span.messages)).dropped == 0
