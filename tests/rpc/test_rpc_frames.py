"""Frames in and out: the envelope check decides as jsonrpcserver's schema did, NaN is a parse error, and
what orjson refuses still round-trips through the stdlib."""

from __future__ import annotations

import json
from typing import Any

import anyio
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from longhaul_daemon.rpc.dispatch import Dispatcher, decode_frame, encode_message
from longhaul_daemon.rpc.jsonrpcserver_adapter import InvalidEnvelope, check_envelope
from longhaul_daemon.rpc.registry import rpc

# jsonrpcserver 5.0.9's request-schema.json less its descriptions: the decision check_envelope must keep.
REQUEST_SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "oneOf": [
        {"$ref": "#/definitions/request"},
        {"type": "array", "items": {"$ref": "#/definitions/request"}, "minItems": 1},
    ],
    "definitions": {
        "request": {
            "type": "object",
            "required": ["jsonrpc", "method"],
            "properties": {
                "jsonrpc": {"enum": ["2.0"]},
                "method": {"type": "string"},
                "id": {"type": ["string", "number", "null"]},
                "params": {"type": ["array", "object"]},
            },
            "additionalProperties": False,
        }
    },
}
SCHEMA = jsonschema.Draft4Validator(REQUEST_SCHEMA)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=3), inner, max_size=2),
    max_leaves=4,
)
members = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "1.0", 2.0]) | values,
        "method": st.text(max_size=5) | values,
        "id": values,
        "params": values,
        "extra": values,
    },
)
envelopes = members | st.lists(members, max_size=3) | values


def schema_accepts(request: object) -> bool:
    return bool(SCHEMA.is_valid(request))


def check_accepts(request: object) -> bool:
    try:
        check_envelope(request)
    except InvalidEnvelope:
        return False
    return True


@given(envelopes)
@settings(max_examples=400, deadline=None)
def test_the_envelope_check_decides_as_jsonrpcservers_schema(request: object) -> None:
    assert check_accepts(request) == schema_accepts(request)


@pytest.mark.parametrize(
    "request_",
    [
        {"jsonrpc": "2.0", "method": "m"},
        {"jsonrpc": "2.0", "method": "m", "id": None, "params": []},
        {"jsonrpc": "2.0", "method": "m", "id": 1.5, "params": {}},
        [{"jsonrpc": "2.0", "method": "m", "id": "x"}],
        {"jsonrpc": "2.0", "method": "m", "id": True},
        {"jsonrpc": "2.0", "method": "m", "params": None},
        {"jsonrpc": "2.0", "method": 1},
        {"jsonrpc": "2.0"},
        [],
        [{"jsonrpc": "2.0", "method": "m"}, 1],
    ],
)
def test_the_envelope_check_on_the_edges_of_the_schema(request_: object) -> None:
    assert check_accepts(request_) == schema_accepts(request_)


class Echo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""


def echo_dispatcher() -> Dispatcher:
    @rpc("echo", Echo)
    async def echo(params: Echo) -> Echo:
        return params

    return Dispatcher({"echo": echo})


async def dispatch(frame: bytes) -> Any:
    with anyio.fail_after(10):
        reply = await echo_dispatcher().dispatch(frame)
    assert reply is not None
    return json.loads(reply)


@pytest.mark.anyio
async def test_an_invalid_envelope_gets_the_same_reply_as_before() -> None:
    reply = await dispatch(b'{"jsonrpc": "2.0", "method": "echo", "id": 1, "extra": 1}')
    assert reply == {
        "jsonrpc": "2.0",
        "error": {
            "code": -32600,
            "message": "Invalid request",
            "data": "The request failed schema validation",
        },
        "id": None,
    }


@pytest.mark.anyio
@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc": "2.0", "method": "echo", "id": NaN}',
        b'{"jsonrpc": "2.0", "method": "echo", "id": Infinity}',
        b'{"jsonrpc": "2.0", "method": "echo", "id": -Infinity}',
        b'{"jsonrpc": "2.0", "method": "echo", "id": 1e400}',
        b'{"jsonrpc": "2.0", "method": "echo", "id": 1, "params": {"text": "a", "n": NaN}}',
    ],
)
async def test_nan_and_infinity_are_parse_errors_not_unencodable_replies(frame: bytes) -> None:
    assert await dispatch(frame) == {
        "jsonrpc": "2.0",
        "error": {"code": -32700, "message": "Parse error"},
        "id": None,
    }


@pytest.mark.anyio
async def test_a_lone_surrogate_from_javascript_is_read_and_sent_back_as_json() -> None:
    """``JSON.stringify`` writes a string cut in an emoji as a lone surrogate escape; orjson refuses it."""
    frame = b'{"jsonrpc": "2.0", "method": "echo", "id": 7, "params": {"text": "cut \\ud83d here"}}'
    reply = await dispatch(frame)
    assert reply == {"jsonrpc": "2.0", "result": {"text": "cut \ud83d here"}, "id": 7}


def test_decode_frame_reads_what_the_stdlib_read_except_nan_and_infinity() -> None:
    assert decode_frame(b'{"a": [1, 2.5, "\\u2028", null, true]}') == {"a": [1, 2.5, "\u2028", None, True]}
    assert decode_frame(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # a byte order mark, as json.loads took it
    assert decode_frame(b'{"a": "\\udc00"}') == {"a": "\udc00"}
    for bad in (b"NaN", b"[Infinity]", b'{"a": -Infinity}', b"[1e999]", b"{", b"\xff"):
        with pytest.raises(ValueError):
            decode_frame(bad)


@pytest.mark.parametrize(
    "message",
    [
        {"text": "line\nbreak \u2028 é ✓", "n": [1, 2.5, None, True]},
        {"text": "lone \ud800 surrogate"},
        {"big": 2**70},
        {1: "int key"},
    ],
)
def test_encode_message_is_one_line_of_json_that_reads_back(message: dict[Any, Any]) -> None:
    encoded = encode_message(message)
    assert b"\n" not in encoded
    encoded.decode("utf-8")  # valid UTF-8 even for a lone surrogate
    assert json.loads(encoded) == json.loads(json.dumps(message))
