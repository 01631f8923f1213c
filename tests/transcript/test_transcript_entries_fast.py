"""The fast builders of messages and blocks read any JSON exactly as the validated pydantic models do."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from longhaul_daemon.transcript.entries import (
    Message,
    TextBlock,
    ToolCallBlock,
    UnknownBlock,
    parse_block,
    parse_message,
)

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8))
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
_block_types = st.sampled_from(["text", "thinking", "image", "toolCall", "other", 3, None])
_blocks = st.one_of(
    _json,
    st.fixed_dictionaries(
        {"type": _block_types},
        optional={
            "text": _json,
            "thinking": _json,
            "mimeType": _json,
            "id": _json,
            "name": _json,
            "arguments": _json,
        },
    ),
)
_fields = ["role", "timestamp", "stopReason", "errorMessage", "toolCallId", "toolName", "isError", "details"]
_fields += [
    "command",
    "output",
    "exitCode",
    "cancelled",
    "truncated",
    "excludeFromContext",
    "customType",
    "summary",
]
_messages = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(_json, st.lists(_blocks, max_size=4)),
        **{name: st.one_of(_json, st.sampled_from(["user", "assistant", "toolResult"])) for name in _fields},
    },
)


@settings(max_examples=400, deadline=None)
@given(_messages)
def test_a_message_reads_as_the_validated_model_reads_it(raw: dict[str, Any]) -> None:
    fast = parse_message(raw)
    assert fast is not None
    assert fast.model_dump() == Message.model_validate(raw).model_dump()
    assert fast == Message.model_validate(raw)


@settings(max_examples=300, deadline=None)
@given(_blocks)
def test_a_block_reads_as_the_validated_model_reads_it(raw: Any) -> None:
    fast = parse_block(raw)
    if not isinstance(raw, dict):
        assert fast == UnknownBlock()
        return
    kinds: dict[object, type[BaseModel]] = {"text": TextBlock, "toolCall": ToolCallBlock}
    model = kinds.get(raw.get("type"))
    if model is not None:
        assert fast == model.model_validate(raw)
    validated: type[BaseModel] = type(fast)
    assert validated.model_validate(raw) == fast


@settings(max_examples=200, deadline=None)
@given(_messages)
def test_a_built_message_and_its_blocks_are_what_model_construct_makes(raw: dict[str, Any]) -> None:
    """The builders skip ``model_construct``'s per-field loop; nothing about the instance may differ: field
    order (dumps, repr), the set fields, no extras or private state."""
    fast = parse_message(raw)
    assert fast is not None
    blocks = raw["content"] if isinstance(raw.get("content"), list) else []
    for made in (fast, *(parse_block(block) for block in blocks if isinstance(block, dict))):
        constructed = type(made).model_construct(**dict(made))
        assert list(vars(made)) == list(type(made).model_fields) == list(vars(constructed))
        assert made == constructed and repr(made) == repr(constructed)
        assert made.model_fields_set == constructed.model_fields_set
        assert made.__pydantic_extra__ is None and made.__pydantic_private__ is None
