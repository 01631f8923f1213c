"""Lenient parsing of pi entries and messages: garbage never raises, unknown shapes are kept by name."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.transcript.entries import (
    ImageBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    UnknownBlock,
    parse_block,
    parse_entry,
    parse_message,
)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
KEYS = st.sampled_from(
    ["type", "id", "parentId", "timestamp", "message", "role", "content", "toolCallId", "isError", "exitCode"]
)
JSON_OBJECT = st.dictionaries(KEYS | st.text(max_size=8), JSON, max_size=8)


def test_assistant_message_with_all_block_kinds() -> None:
    message = parse_message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
                {"type": "text", "text": "Running it."},
                {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "hologram", "beam": 1},
            ],
            "api": "openai-completions",
            "provider": "fake",
            "model": "m",
            "usage": {"input": 1, "output": 2},
            "stopReason": "toolUse",
            "timestamp": 1712345678901,
        }
    )
    assert message is not None
    kinds = [type(block) for block in message.blocks]
    assert kinds == [ThinkingBlock, TextBlock, ToolCallBlock, ImageBlock, UnknownBlock]
    assert message.blocks[4].type == "hologram"
    assert message.tool_calls[0].arguments == {"command": "ls"}
    assert message.text == "Running it."
    assert message.stopReason == "toolUse"


def test_user_message_with_string_content() -> None:
    message = parse_message({"role": "user", "content": "fix the build", "timestamp": 1})
    assert message is not None
    assert message.text == "fix the build"
    assert message.blocks == (TextBlock(text="fix the build"),)


def test_wrong_field_types_become_none() -> None:
    message = parse_message(
        {
            "role": "bashExecution",
            "command": ["not", "a", "string"],
            "exitCode": True,
            "cancelled": "no",
            "excludeFromContext": 1,
            "output": None,
            "timestamp": {"when": "now"},
        }
    )
    assert message is not None
    assert message.command is None
    assert message.exitCode is None  # a JSON true is never read as exit code 1
    assert message.cancelled is None
    assert message.excludeFromContext is None
    assert message.timestamp is None


def test_unknown_role_and_missing_role() -> None:
    future = parse_message({"role": "hologram", "content": 5, "beam": True})
    assert future is not None and future.role == "hologram" and future.blocks == ()
    nameless = parse_message({"content": [{"type": "text", "text": "x"}]})
    assert nameless is not None and nameless.role == "unknown" and nameless.text == "x"


def test_non_objects_parse_to_none() -> None:
    for garbage in (None, 3, "message", [1, 2], 2.5, True):
        assert parse_message(garbage) is None
        assert parse_entry(garbage) is None
        assert isinstance(parse_block(garbage), UnknownBlock)


def test_block_with_wrong_field_types() -> None:
    call = parse_block({"type": "toolCall", "id": 7, "name": None, "arguments": "ls"})
    assert call == ToolCallBlock(id=None, name=None, arguments={})
    text = parse_block({"type": "text", "text": ["x"]})
    assert text == TextBlock(text="")


def test_entries_of_known_and_unknown_types() -> None:
    message_entry = parse_entry(
        {
            "type": "message",
            "id": "a1b2c3d4",
            "parentId": None,
            "timestamp": "2026-05-07T10:00:00.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1},
        }
    )
    assert message_entry is not None and message_entry.is_message
    assert message_entry.message is not None and message_entry.message.text == "hi"
    compaction = parse_entry(
        {
            "type": "compaction",
            "id": "2fee85f2",
            "parentId": "223064a0",
            "summary": "S",
            "firstKeptEntryId": "afc8276c",
            "tokensBefore": 1838,
            "details": {"harness": True},
            "fromHook": True,
        }
    )
    assert compaction is not None and compaction.firstKeptEntryId == "afc8276c" and compaction.fromHook
    future = parse_entry({"type": "teleport", "id": "x", "destination": "mars"})
    assert future is not None and future.type == "teleport" and not future.is_message
    broken = parse_entry({"type": "message", "id": 5, "message": "not an object"})
    assert broken is not None and broken.id is None and not broken.is_message


@settings(max_examples=150, deadline=None)
@given(raw=JSON_OBJECT | JSON)
def test_never_raises_on_arbitrary_json(raw: Any) -> None:
    parse_entry(raw)
    message = parse_message(raw)
    if message is not None:
        assert isinstance(message.text, str)
        assert isinstance(message.tool_calls, tuple)
    parse_block(raw)
    parse_entry({"type": "message", "id": "e", "message": raw})
    parse_message({"role": "assistant", "content": [raw]})
