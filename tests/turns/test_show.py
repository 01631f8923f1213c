"""``show(ref)`` (TURNS-7, TURNS-8): every kind of ref, the error results, the cap, the result bound."""

from __future__ import annotations

from longhaul_daemon.models.tool_calls import ToolCall
from longhaul_daemon.passes.turns.show import RESULT_CHARS, SHOW_CAP, SHOW_TOOL, ShowIndex, run_show
from longhaul_daemon.passes.turns.span_view import span_view

from .span_cases import SpanBuilder


def index() -> ShowIndex:
    span = SpanBuilder()
    span.user("Never push to main.")
    span.bash("pytest -q", "F" * 9000 + "\n1 failed", error=True)
    span.tool("read", {"path": "src/export.py"}, "def export():\n    pass\n")
    span.user_ran("make lint", "lint ok\n")
    ledger = span.ledger()
    view = span_view(span.messages, ledger.commands, ledger.errors)
    return ShowIndex.build({"u1": "Never push to main."}, ledger.commands, ledger.errors, view)


def show(ref: object, *, used: int = 0, room: int = 100_000, name: str = "show") -> tuple[str, bool]:
    result = run_show(ToolCall("call_x", name, {"ref": ref}), index(), used=used, room_chars=room)
    assert result.call_id == "call_x" and result.name == name
    return result.text, result.is_error


def test_turns7_show_returns_a_message_a_command_an_error_and_a_tool_call_whole() -> None:
    text, error = show("u1")
    assert not error and text.endswith("Never push to main.") and text.startswith("u1, a user message")
    text, error = show("C1")
    assert not error and "pytest -q" in text and "Result (error)" in text and "1 failed" in text
    text, error = show("E1")
    assert not error and text.startswith("E1, an error of bash, from C1 (open)")
    text, error = show("call_2")
    assert not error and 'read(path="src/export.py")' in text and "def export():" in text
    text, error = show("C2")
    assert not error and "make lint" in text and "Result (exit 0)" in text and "lint ok" in text


def test_turns7_an_unknown_ref_or_bad_arguments_is_an_error_result_not_a_failure() -> None:
    for ref in ("u9", "C77", "call_404", "", 12, "x" * 500):
        _, error = show(ref)
        assert error, ref
    assert "unknown ref 'u9'" in show("u9")[0]
    unknown = show("u1", name="sk-made-up-tool-name")[0]
    assert "there is no such tool" in unknown and "made-up" not in unknown  # a made-up name is not echoed


def test_turns8_show_is_capped_per_turn_and_the_call_over_the_cap_says_so() -> None:
    text, error = show("u1", used=SHOW_CAP - 1)
    assert not error
    text, error = show("u1", used=SHOW_CAP)
    assert error and f"limited to {SHOW_CAP} calls a turn" in text


def test_turns8_a_result_is_at_most_4000_characters_head_and_tail_kept() -> None:
    text, error = show("call_1")
    assert not error and len(text) <= RESULT_CHARS
    assert "pytest -q" in text and text.rstrip().endswith("Command exited with code 1")
    assert "characters in all, cut" in text


def test_a_result_is_cut_to_the_room_left_and_refused_when_almost_none_is() -> None:
    text, error = show("call_1", room=1000)
    assert not error and len(text) <= 1000
    text, error = show("u1", room=150)
    assert error and "no room" in text


def test_the_tool_spec_is_a_strict_schema_with_one_string_ref() -> None:
    schema = SHOW_TOOL.parameters
    assert schema["required"] == ["ref"] and schema["additionalProperties"] is False
    assert schema["properties"]["ref"]["type"] == "string"


def test_a_430_kb_result_is_cleaned_at_its_edges_and_cut_to_4000_characters() -> None:
    """A long output is cut before it is cleaned, so showing it costs what its edges cost; what is shown is
    what cleaning the whole and cutting it would show."""
    log = "".join(f"{n:05d} GET /api/{n} 0.{n % 1000:03d}s\n" for n in range(1, 16_001))
    span = SpanBuilder()
    span.user("Read the log.")
    span.bash("cat access.log", "\x1b[31mred\x1b[0m start\r\n" + log + "end \u202eof log")
    ledger = span.ledger()
    view = span_view(span.messages, ledger.commands, ledger.errors)
    big = ShowIndex.build({"u1": "Read the log."}, ledger.commands, ledger.errors, view)
    result = run_show(ToolCall("c", "show", {"ref": "call_1"}), big, used=0, room_chars=100_000)
    assert not result.is_error and len(result.text) <= RESULT_CHARS
    assert "red start\n00001 GET /api/1 0.001s" in result.text  # the escapes and the CR are gone
    assert result.text.endswith("end of log") and "characters in all, cut" in result.text
