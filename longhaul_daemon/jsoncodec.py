"""The daemon's one JSON codec: orjson for speed, the standard library for the little orjson refuses.

Frames on the socket and lines of pi's session file are both JSON written by Node's ``JSON.stringify``, which
may write a lone surrogate escape (``"\\ud800"``) that orjson refuses; those are read again by the standard
library. NaN, Infinity and numbers out of a double's range are not JSON and are refused by both paths.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

__all__ = ["Encoded", "canonical", "dumps", "loads"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400: Infinity spelled as a number
        raise ValueError("number out of range")
    return value


def loads(data: bytes | bytearray | str) -> Any:
    """The JSON value of ``data``; ``ValueError`` (or ``RecursionError``) when it is not JSON.

    orjson first; what it refuses is read again by the stdlib, which accepts lone surrogate escapes (and a
    byte order mark), so only NaN, Infinity and out-of-range numbers are refused on both paths.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    return json.loads(data, parse_constant=_no_constant, parse_float=_finite_float)


def dumps(value: object) -> bytes:
    """Compact JSON, UTF-8, newlines inside strings escaped: always one line.

    orjson writes a non-finite float as ``null``; an :class:`Encoded` value is embedded as it is. What orjson
    refuses (a lone surrogate, an integer past 64 bits, a non-string key) goes through the stdlib with every
    non-ASCII character escaped, so it still becomes valid UTF-8 JSON.
    """
    try:
        return orjson.dumps(value, default=_embedded)
    except TypeError:
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=True, allow_nan=False, default=_decoded
        ).encode()


class Encoded:
    """A value already encoded as JSON text (a big result, encoded off the loop): :func:`dumps` embeds it."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def _embedded(value: object) -> object:
    if isinstance(value, Encoded):
        return orjson.Fragment(value.data)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _decoded(value: object) -> object:
    """For the stdlib path, which cannot embed encoded text: the value again (rare: a lone surrogate in the
    envelope); anything else is refused as the stdlib refuses it."""
    if isinstance(value, Encoded):
        return loads(value.data)
    raise TypeError(f"{type(value).__name__} is not JSON")


def canonical(value: object) -> bytes | None:
    """One text per JSON value, keys sorted, for equality lookups; None when ``value`` cannot be written.

    For values :func:`loads` gave, which hold no NaN or Infinity (orjson would write those as ``null``).
    orjson where it can; what it refuses goes through the stdlib behind a NUL byte, which no orjson text
    starts with, so values of the two paths never share a text.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        pass
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return b"\x00" + text.encode()
