"""One redactor for the credentials of a pass, applied by every writer: logs, records, replies, status.

A provider may echo the API key in an error body, a model may repeat a header value, a user may paste a key
into the chat; nothing the daemon writes or returns may hold a value it holds as a credential. The compact
handler builds a :class:`Redactor` from the pass's ``ModelCredentials`` (:func:`redactor_for_pass`) and hands
it, as an argument, to everything that writes for the pass; its operational-log lines go through a logger
bound with it (:func:`log_binding`, applied by :func:`redact_log_event`). No global list of secrets exists.

Replaced by :data:`MARK`: every whole credential of :data:`MIN_SECRET_CHARS` or more characters, and for one
of :data:`PIECE_SECRET_CHARS` or more every run of :data:`PIECE_CHARS` or more of its characters, so a piece
a provider quotes ("sk-proj-…abcd1234") goes too. Shorter values are flags, not secrets. Writers redact
before they cut, so a cut never leaves a fragment. The search works on UTF-8 bytes: the text's 4-byte grams
at offsets 0, 4, 8, … (any run of 8 holds one whole) meet every 4-byte gram of the credentials in one set
intersection, and only the grams found are grown into runs, far cheaper than a regular expression.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, MutableMapping
from typing import TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:  # annotations only: the record log is read by `report` without pydantic
    from longhaul_daemon.protocol import CompactParams, ModelCredentials

__all__ = [
    "EMPTY",
    "LOG_REDACTOR",
    "MARK",
    "MIN_SECRET_CHARS",
    "PIECE_CHARS",
    "PIECE_SECRET_CHARS",
    "Redactor",
    "credential_values",
    "log_binding",
    "redact_log_event",
    "redactor_for_pass",
]

MIN_SECRET_CHARS: Final = 8
PIECE_SECRET_CHARS: Final = 12
PIECE_CHARS: Final = 8
MARK: Final = "[redacted]"
_GRAM: Final = 4  # any run of PIECE_CHARS bytes holds a whole gram at an offset divisible by 4
_JSON_ESCAPED: Final = frozenset('"\\') | {chr(c) for c in range(0x20)}
_CONTINUATION: Final = 0x80  # UTF-8 continuation bytes are 0b10xxxxxx


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # JSON from Node may hold a lone surrogate


class Redactor:
    """Finds and replaces the credentials it was built from; an empty one changes nothing.

    Its repr names only how many values it holds, so a redactor in a log line or a traceback leaks nothing.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_CHARS})
        owners: dict[int, list[tuple[bytes, int]]] = {}
        wholes: list[bytes] = []
        for secret in values:
            raw = _utf8(secret)
            if len(secret) < PIECE_SECRET_CHARS:
                wholes.append(raw)
                continue
            for offset in range(len(raw) - _GRAM + 1):
                gram = int.from_bytes(raw[offset : offset + _GRAM], sys.byteorder)
                owners.setdefault(gram, []).append((raw, offset))
        self._owners = {gram: tuple(found) for gram, found in owners.items()}
        self._grams = frozenset(self._owners)
        self._wholes = tuple(wholes)
        self._count = len(values)
        # A JSON dump holds each secret verbatim unless the secret has a character JSON escapes; then the
        # quick whole-document check of value() would miss it, so such a redactor always walks.
        self._json_safe = not any(ch in _JSON_ESCAPED for secret in values for ch in secret)

    def __bool__(self) -> bool:
        return self._count > 0

    def __repr__(self) -> str:
        return f"Redactor({self._count} values)"

    def union(self, other: Redactor) -> Redactor:
        """A redactor for the values of both (a pass's own, and those of the call it makes)."""
        if not other:
            return self
        if not self:
            return other
        merged = Redactor()
        merged._owners = dict(self._owners)
        for gram, found in other._owners.items():
            merged._owners[gram] = merged._owners.get(gram, ()) + found
        merged._grams = frozenset(merged._owners)
        merged._wholes = self._wholes + other._wholes
        merged._count = self._count + other._count
        merged._json_safe = self._json_safe and other._json_safe
        return merged

    def _runs(self, data: bytes) -> list[tuple[int, int]]:
        """The merged ``[start, end)`` byte runs of UTF-8 ``data`` that are credentials or long pieces of one.

        The grams at offsets 0, 4, 8, … of ``data`` are checked against every 4-byte gram of the credentials
        in one C-speed set operation; only the grams found are looked up again, with ``bytes.find``, and
        each hit is grown to the longest run that matches the credential around it.
        """
        found: list[tuple[int, int]] = []
        if self._grams and len(data) >= PIECE_CHARS:
            padded = data + b"\0" * (-len(data) % _GRAM)
            present = self._grams.intersection(memoryview(padded).cast("I"))
            for gram in present:
                needle = gram.to_bytes(_GRAM, sys.byteorder)
                at = data.find(needle)
                while at >= 0:
                    for secret, offset in self._owners[gram]:
                        start, end = _extend(data, at, secret, offset)
                        if _chars(data, start, end) >= PIECE_CHARS:
                            found.append((start, end))
                    at = data.find(needle, at + 1)
        for whole in self._wholes:
            at = data.find(whole)
            while at >= 0:
                found.append((at, at + len(whole)))
                at = data.find(whole, at + 1)
        return _merge(found)

    def finds(self, text: str) -> bool:
        """Whether ``text`` holds a credential or a long piece of one."""
        return bool(self) and len(text) >= MIN_SECRET_CHARS and bool(self._runs(_utf8(text)))

    def text(self, text: str) -> str:
        """``text`` with every credential and long piece of one replaced by :data:`MARK`."""
        if not self or len(text) < MIN_SECRET_CHARS:
            return text
        data = _utf8(text)
        runs = self._runs(data)
        if not runs:
            return text
        parts: list[bytes] = []
        last = 0
        for start, end in runs:
            parts += [data[last:start], _MARK_BYTES]
            last = end
        parts.append(data[last:])
        return b"".join(parts).decode("utf-8", "surrogatepass")

    def value(self, value: Any) -> Any:
        """A JSON-like value (dicts, lists, tuples, strings, numbers) with every string redacted, keys too.

        The same object comes back when nothing had to change, so callers can tell with ``is``. A container
        is first checked whole, as one JSON text, and walked only when that finds something.
        """
        if not self:
            return value
        if isinstance(value, dict | list | tuple) and self._json_safe:
            try:
                dumped = orjson.dumps(value)
            except (TypeError, ValueError):  # a value orjson cannot write (a lone surrogate): walk it
                dumped = None
            if dumped is not None and not self._runs(dumped):
                return value
        return self._walk(value)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            items = [(self._walk(k), self._walk(v)) for k, v in value.items()]
            same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True))
            return value if same else dict(items)
        if isinstance(value, list | tuple):
            members = [self._walk(member) for member in value]
            if all(new is old for new, old in zip(members, value, strict=True)):
                return value
            return members if isinstance(value, list) else tuple(members)
        return value


_MARK_BYTES: Final = MARK.encode()


def _extend(data: bytes, at: int, secret: bytes, offset: int) -> tuple[int, int]:
    """The longest run around ``data[at:at+4] == secret[offset:offset+4]`` that matches ``secret`` there,
    widened to whole characters (a piece of a multi-byte character is not cut out alone)."""
    start, left = at, offset
    while start > 0 and left > 0 and data[start - 1] == secret[left - 1]:
        start -= 1
        left -= 1
    end, right = at + _GRAM, offset + _GRAM
    while end < len(data) and right < len(secret) and data[end] == secret[right]:
        end += 1
        right += 1
    while start > 0 and data[start] & 0xC0 == _CONTINUATION:
        start -= 1
    while end < len(data) and data[end] & 0xC0 == _CONTINUATION:
        end += 1
    return start, end


def _chars(data: bytes, start: int, end: int) -> int:
    """How many characters the UTF-8 bytes ``data[start:end]`` hold."""
    piece = data[start:end]
    if piece.isascii():
        return len(piece)
    return sum(1 for byte in piece if byte & 0xC0 != _CONTINUATION)


def _merge(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching runs as one, in order: two pieces side by side leave one mark."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(runs):
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1] = (merged[-1][0], end)
            continue
        merged.append((start, end))
    return merged


EMPTY: Final = Redactor()

LOG_REDACTOR: Final = "_redactor"
"""The field a logger binds a pass's redactor under; :func:`redact_log_event` takes it out of every line."""


def log_binding(redactor: Redactor) -> dict[str, Redactor]:
    """What to ``bind`` on a structlog logger so that every line it writes is redacted with ``redactor``."""
    return {LOG_REDACTOR: redactor} if redactor else {}


def credential_values(credentials: ModelCredentials | None) -> list[str]:
    """The API key and every header value of one model's credentials, as plain strings."""
    if credentials is None:
        return []
    values = [value.get_secret_value() for value in credentials.headers.values()]
    if credentials.apiKey is not None:
        values.append(credentials.apiKey.get_secret_value())
    return values


def redactor_for_pass(params: CompactParams) -> Redactor:
    """The redactor of one ``compact`` request: the session model's and the summarizer's credentials."""
    values = credential_values(params.credentials)
    if params.summarizer is not None:
        values += credential_values(params.summarizer.credentials)
    return Redactor(values)


def redact_log_event(_logger: Any, _method: str, event_dict: MutableMapping[str, Any]) -> Any:
    """structlog processor: every value of a line redacted with the redactor its logger was bound with
    (:func:`log_binding`), which leaves the line."""
    redactor = event_dict.pop(LOG_REDACTOR, None)
    if isinstance(redactor, Redactor) and redactor:
        for key, value in list(event_dict.items()):
            event_dict[key] = redactor.value(value)
    return event_dict
