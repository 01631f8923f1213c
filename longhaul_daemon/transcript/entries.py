"""Lenient models of pi's session entries, messages and blocks, because transcript bytes are untrusted.

pi writes one JSON object per session entry (pi-api.md §3) and nests an ``AgentMessage`` in every ``message``
entry (§4). Everything here reads that JSON without trusting it: a field of the wrong type becomes ``None``
(or an empty value), an unknown entry type, role or block type is kept under its own name, unknown fields are
ignored, and a value that is not a JSON object at all parses to ``None``. No function in this module raises on
its input.

Messages use one flat model for every role (``user``, ``assistant``, ``toolResult``, ``bashExecution``,
``custom``, ``branchSummary``, ``compactionSummary`` and whatever a newer pi adds): each role-specific field
is optional, so a message of an unknown role, or a known role missing a field, still parses.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

__all__ = [
    "Block",
    "Entry",
    "ImageBlock",
    "Message",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "UnknownBlock",
    "parse_block",
    "parse_entry",
    "parse_message",
]


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _str_or_empty(value: object) -> str:
    return value if isinstance(value, str) else ""


def _bool_or_none(value: object) -> bool | None:
    return value if isinstance(value, bool) else None


def _int_or_none(value: object) -> int | None:
    # JSON true/false are bools in Python, and bool is a subclass of int: never read them as 0/1.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _dict_or_empty(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _timestamp(value: object) -> int | float | str | None:
    if isinstance(value, bool):
        return None
    return value if isinstance(value, int | float | str) else None


OptStr = Annotated[str | None, BeforeValidator(_str_or_none)]
OptBool = Annotated[bool | None, BeforeValidator(_bool_or_none)]
OptInt = Annotated[int | None, BeforeValidator(_int_or_none)]
JsonObject = Annotated[dict[str, Any], BeforeValidator(_dict_or_empty)]
Timestamp = Annotated[int | float | str | None, BeforeValidator(_timestamp)]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class TextBlock(_Lenient):
    """A text block of a message."""

    type: Literal["text"] = "text"
    text: Annotated[str, BeforeValidator(_str_or_empty)] = ""


class ThinkingBlock(_Lenient):
    """A thinking block of an assistant message."""

    type: Literal["thinking"] = "thinking"
    thinking: Annotated[str, BeforeValidator(_str_or_empty)] = ""


class ImageBlock(_Lenient):
    """An image block; only its MIME type is kept."""

    type: Literal["image"] = "image"
    mimeType: OptStr = None


class ToolCallBlock(_Lenient):
    """A tool call of an assistant message: id, tool name and arguments."""

    type: Literal["toolCall"] = "toolCall"
    id: OptStr = None
    name: OptStr = None
    arguments: JsonObject = Field(default_factory=dict)


class UnknownBlock(_Lenient):
    """A block of a type not known here; ``type`` is None when the block is not a JSON object."""

    type: OptStr = None


Block = TextBlock | ThinkingBlock | ImageBlock | ToolCallBlock | UnknownBlock
M = TypeVar("M", bound=_Lenient)
_set = object.__setattr__


def _built(model: type[M], **values: Any) -> M:
    """What ``model.model_construct(**values)`` makes when ``values`` names every field in order, without its
    loop over each field's aliases and default: that loop was most of the cost of parsing a message."""
    made = model.__new__(model)
    _set(made, "__dict__", values)
    _set(made, "__pydantic_fields_set__", set(values))
    _set(made, "__pydantic_extra__", None)
    _set(made, "__pydantic_private__", None)
    return made


def parse_block(raw: object) -> Block:
    """One content block; anything unreadable is an ``UnknownBlock``.

    Built field by field with the same lenient readings the models' validators apply, then constructed
    without validation: a pass reads thousands of blocks, and validating each one cost more than the pass's
    own work. ``tests/transcript`` holds this to the validated models on arbitrary JSON.
    """
    if not isinstance(raw, dict):
        return UnknownBlock()
    kind = raw.get("type")
    if kind == "text":
        return _built(TextBlock, type="text", text=_str_or_empty(raw.get("text")))
    if kind == "toolCall":
        return _built(
            ToolCallBlock,
            type="toolCall",
            id=_str_or_none(raw.get("id")),
            name=_str_or_none(raw.get("name")),
            arguments=_dict_or_empty(raw.get("arguments")),
        )
    if kind == "thinking":
        return _built(ThinkingBlock, type="thinking", thinking=_str_or_empty(raw.get("thinking")))
    if kind == "image":
        return _built(ImageBlock, type="image", mimeType=_str_or_none(raw.get("mimeType")))
    return _built(UnknownBlock, type=kind if isinstance(kind, str) else None)


def _content(value: object) -> str | tuple[Block, ...] | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return tuple(parse_block(item) for item in value)
    return None


class Message(_Lenient):
    """An ``AgentMessage`` of any role; ``role`` is ``"unknown"`` when the message names none."""

    role: Annotated[str, BeforeValidator(lambda v: v if isinstance(v, str) else "unknown")] = "unknown"
    content: Annotated[str | tuple[Block, ...] | None, BeforeValidator(_content)] = None
    timestamp: Timestamp = None
    # assistant
    stopReason: OptStr = None
    errorMessage: OptStr = None
    # toolResult
    toolCallId: OptStr = None
    toolName: OptStr = None
    isError: OptBool = None
    details: Any = None
    # bashExecution
    command: OptStr = None
    output: OptStr = None
    exitCode: OptInt = None
    cancelled: OptBool = None
    truncated: OptBool = None
    excludeFromContext: OptBool = None
    # custom, branchSummary, compactionSummary
    customType: OptStr = None
    summary: OptStr = None

    @property
    def blocks(self) -> tuple[Block, ...]:
        """The content as blocks; string content is one text block."""
        if isinstance(self.content, str):
            return (TextBlock(text=self.content),)
        return self.content or ()

    @property
    def text(self) -> str:
        """The text blocks joined by newlines (string content as it is)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(block.text for block in self.blocks if isinstance(block, TextBlock))

    @property
    def tool_calls(self) -> tuple[ToolCallBlock, ...]:
        """The message's tool-call blocks, in order."""
        return tuple(block for block in self.blocks if isinstance(block, ToolCallBlock))


def parse_message(raw: object) -> Message | None:
    """A message, or None when ``raw`` is not a JSON object; built as :func:`parse_block` builds blocks."""
    if not isinstance(raw, dict):
        return None
    role = raw.get("role")
    get = raw.get
    return _built(
        Message,
        role=role if isinstance(role, str) else "unknown",
        content=_content(get("content")),
        timestamp=_timestamp(get("timestamp")),
        stopReason=_str_or_none(get("stopReason")),
        errorMessage=_str_or_none(get("errorMessage")),
        toolCallId=_str_or_none(get("toolCallId")),
        toolName=_str_or_none(get("toolName")),
        isError=_bool_or_none(get("isError")),
        details=get("details"),
        command=_str_or_none(get("command")),
        output=_str_or_none(get("output")),
        exitCode=_int_or_none(get("exitCode")),
        cancelled=_bool_or_none(get("cancelled")),
        truncated=_bool_or_none(get("truncated")),
        excludeFromContext=_bool_or_none(get("excludeFromContext")),
        customType=_str_or_none(get("customType")),
        summary=_str_or_none(get("summary")),
    )


def _message(value: object) -> Message | None:
    return parse_message(value)


class Entry(_Lenient):
    """A session entry of any type; ``type`` is ``"unknown"`` when the entry names none."""

    type: Annotated[str, BeforeValidator(lambda v: v if isinstance(v, str) else "unknown")] = "unknown"
    id: OptStr = None
    parentId: OptStr = None
    timestamp: Timestamp = None
    message: Annotated[Message | None, BeforeValidator(_message)] = None
    # custom, custom_message
    customType: OptStr = None
    data: Any = None
    content: Annotated[str | tuple[Block, ...] | None, BeforeValidator(_content)] = None
    # compaction, branch_summary
    summary: OptStr = None
    firstKeptEntryId: OptStr = None
    tokensBefore: OptInt = None
    details: Any = None
    fromHook: OptBool = None

    @property
    def is_message(self) -> bool:
        """True for a ``message`` entry whose message could be read."""
        return self.type == "message" and self.message is not None


def parse_entry(raw: object) -> Entry | None:
    """An entry, or None when ``raw`` is not a JSON object."""
    if not isinstance(raw, dict):
        return None
    try:
        return Entry.model_validate(raw)
    except (ValidationError, TypeError, ValueError):
        return Entry(type="unknown")
