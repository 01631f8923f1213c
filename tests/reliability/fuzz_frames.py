"""Frames for the socket fuzzer: real requests of every method, then mutated at random, structurally and raw.

:class:`FrameFactory` starts from a request the shim would send for each method (a ``compact`` with a small
real branch, a ``recall`` over a Longhaul compaction and its span record, …) and turns it into a
:class:`Case`: unchanged; one value anywhere replaced by a hostile one (huge, non-finite, deeply nested, a
lone surrogate, bidi and control characters, the wrong type); a key dropped or added; a broken envelope (ids
and method names of every kind); literal ``NaN``/``Infinity``/``1e999``; a truncated frame; raw bytes; a
batch; a huge string. Paths the daemon writes to (``cwd``, ``agentDir``) stay inside the run's work
directory unless a mutation replaces them, and no mutation can produce a URL of a real host, so the daemon
never writes outside its sandbox nor calls the network.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FUZZ_KEY", "METHODS", "Case", "FrameFactory", "hostile_value"]

FUZZ_KEY = "sk-fz-7Hq2Lm9Xc4Vb8Nw1Pd6"
"""The API key every fuzzed ``compact`` carries; the model stub quotes it back, no reply may."""

METHODS = (
    "hello",
    "route",
    "compact",
    "compacted",
    "compact_failed",
    "incident",
    "report",
    "status",
    "remember",
    "recall",
    "strip",
)
_NON_FINITE = (b"NaN", b"Infinity", b"-Infinity", b"1e999", b"-1e999", b"1E400")
_UNICODE = ("\u202e", "\u2028", "\ufeff", "\x00", "\x1b[2J", "e\u0301", "\U0001f600", "\ud800", "٣", "ﷺ")


@dataclass(frozen=True)
class Case:
    """One frame (newline included) and what it is, for the report."""

    kind: str
    frame: bytes
    request_id: Any = None  # the id a reply must carry, when the frame is one valid request object
    replies: bool = True  # False when the frame may legitimately get no reply (notifications, many lines)


def _text(rng: random.Random, length: int) -> str:
    pool = "abcXYZ019 _-/.:" + "".join(_UNICODE)
    return "".join(rng.choice(pool) for _ in range(length))


def hostile_value(rng: random.Random, depth: int = 0) -> Any:
    """A value of any JSON type and size that a field should not hold."""
    choice = rng.randrange(16)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.choice([0, -1, 2**31, 2**63, -(2**63) - 1, 2**64 + 1, 10**30])
    if choice == 3:
        return rng.choice([1.5, -0.0, 1e308, 5e-324, 3.0])
    if choice == 4:
        return ""
    if choice == 5:
        return "x" * rng.choice([257, 4097, 65_537, 300_000])
    if choice in (6, 7):
        return _text(rng, rng.randrange(1, 80))
    if choice == 8:
        return "".join(rng.choice(_UNICODE) for _ in range(rng.randrange(1, 30)))
    if choice == 9 or depth > 3:
        return []
    if choice == 10:
        return [hostile_value(rng, depth + 1) for _ in range(rng.randrange(1, 5))]
    if choice == 11:
        return {}
    if choice == 12:
        return {_text(rng, rng.randrange(1, 12)): hostile_value(rng, depth + 1) for _ in range(3)}
    if choice == 13:
        nested: Any = "leaf"
        for _ in range(rng.choice([10, 200, 900])):
            nested = [nested] if rng.random() < 0.5 else {"k": nested}
        return nested
    if choice == 14:
        return {"id": ["x"], "type": "compaction", "details": {"stateFormat": 1, "span": [1]}}
    return rng.choice(["span:1", "C1", "E1", "R1", "u1", "0123456789ab", "timeout", "startup"])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = [prefix]
    if isinstance(value, dict):
        for key, member in value.items():
            found += _paths(member, (*prefix, key))
    elif isinstance(value, list):
        for index, member in enumerate(value):
            found += _paths(member, (*prefix, index))
    return found


def _set(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return value


class FrameFactory:
    """Real requests and their mutations; deterministic for a given ``rng``."""

    def __init__(
        self, rng: random.Random, workdir: Path, max_frame: int, model_url: str | None = None
    ) -> None:
        self.rng = rng
        self.workdir = workdir
        self.max_frame = max_frame
        self.model_url = model_url
        self._ids = 0

    def model(self) -> dict[str, Any] | None:
        if self.model_url is None or self.rng.random() < 0.5:
            return None
        return {
            "provider": "fuzz",
            "id": self.rng.choice(["m1", "m2"]),
            # an api the daemon does not speak goes through the "shim" as model.complete: the peer path too
            "api": "openai-completions" if self.rng.random() < 0.8 else "bedrock-converse-stream",
            "baseUrl": self.model_url,
            "maxTokens": 4096,
            "contextWindow": 32000,
        }

    def session(self) -> dict[str, Any]:
        return {
            "cwd": str(self.workdir / "project"),
            "sessionId": f"fuzz-{self.rng.randrange(8)}",
            "sessionFile": None,
            "agentDir": str(self.workdir / "agent"),
            "piVersion": "0.73.1",
            "model": self.model(),
            "thinkingLevel": "off",
            "env": {},
        }

    def branch(self) -> list[dict[str, Any]]:
        def message(entry_id: str, parent: str | None, body: dict[str, Any]) -> dict[str, Any]:
            return {
                "type": "message",
                "id": entry_id,
                "parentId": parent,
                "message": {**body, "timestamp": 1},
            }

        call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "pytest -q"}}
        state = {"span": 1, "seq": 1, "commands": [{"id": "C1", "text": "pytest -q", "exit": 1, "span": 1}]}
        return [
            message("e1", None, {"role": "user", "content": [{"type": "text", "text": "fix the parser"}]}),
            message("e2", "e1", {"role": "assistant", "content": [call], "stopReason": "toolUse"}),
            message(
                "e3",
                "e2",
                {
                    "role": "toolResult",
                    "toolCallId": "c1",
                    "toolName": "bash",
                    "content": [{"type": "text", "text": "1 failed\n\nCommand exited with code 1"}],
                    "isError": True,
                },
            ),
            {
                "type": "compaction",
                "id": "e4",
                "parentId": "e3",
                "summary": "Longhaul state",
                "firstKeptEntryId": "e3",
                "tokensBefore": 900,
                "details": {
                    "stateFormat": 1,
                    "compactor": "longhaul",
                    "passId": "0123456789ab",
                    "span": 1,
                    "state": state,
                },
            },
            {
                "type": "custom",
                "id": "e5",
                "parentId": "e4",
                "customType": "compaction-state.span",
                "data": {
                    "v": 1,
                    "span": 1,
                    "compactionId": "e4",
                    "closedAs": "whole",
                    "messages": ["u1"],
                    "commands": state["commands"],
                    "narrative": "ran the tests",
                },
            },
            message("e6", "e5", {"role": "user", "content": [{"type": "text", "text": "keep going"}]}),
        ]

    def params(self, method: str) -> dict[str, Any]:
        session = self.session()
        if method in ("hello",):
            return {"session": session, "reason": "startup"}
        if method in ("route", "report"):
            return {"session": session}
        if method == "status":
            return {}
        if method == "compact":
            refs = [{"entryRef": "e1"}, {"entryRef": "e2"}, {"entryRef": "e3"}]
            return {
                "session": session,
                "reason": None,
                "customInstructions": None,
                "preparation": {
                    "firstKeptEntryId": "e6",
                    "messagesToSummarize": refs,
                    "tokensBefore": 1000,
                    "fileOps": {"read": ["a.py"], "written": [], "edited": []},
                },
                "leafId": "e6",
                "branchEntries": self.branch(),
                "credentials": {"apiKey": FUZZ_KEY, "headers": {"x-fuzz": FUZZ_KEY[::-1]}},
                "summarizer": None,
            }
        if method == "compacted":
            return {
                "session": session,
                "compactionEntryId": "e4",
                "fromExtension": True,
                "passId": "0123456789ab",
                "span": 1,
                "reason": None,
                "summaryChars": 10,
                "tokensBefore": 9,
            }
        if method == "compact_failed":
            return {"session": session, "reason": "overflow", "passId": None, "span": None}
        if method == "incident":
            return {
                "session": session,
                "kind": "fallback",
                "reason": "daemon-down",
                "span": None,
                "passId": "0123456789ab",
                "errorClass": "Error",
                "error": "socket closed",
            }
        if method == "remember":
            return {"session": session, "text": "keep the retry loop", "kind": "decision"}
        if method == "recall":
            return {
                "session": session,
                "ref": self.rng.choice(["span:1", "C1", "u1", None]),
                "query": None,
                "leafId": None,
                "branchEntries": self.branch(),
            }
        return {
            "session": session,
            "messages": [e["message"] for e in self.branch() if "message" in e],
            "branchEntries": self.branch(),
        }

    def request(self, method: str | None = None) -> dict[str, Any]:
        self._ids += 1
        chosen = method or self.rng.choice(METHODS)
        return {"jsonrpc": "2.0", "id": self._ids, "method": chosen, "params": self.params(chosen)}

    def _encode(self, value: Any) -> bytes:
        text = json.dumps(value, ensure_ascii=self.rng.random() < 0.5)
        return text.encode("utf-8", "surrogatepass") + b"\n"

    def _case(self, kind: str, value: Any) -> Case:
        is_request = isinstance(value, dict) and value.get("jsonrpc") == "2.0" and "id" in value
        request_id = value.get("id") if is_request else None
        exact = is_request and isinstance(request_id, str | int) and not isinstance(request_id, bool)
        return Case(kind, self._encode(value), request_id if exact else None, replies=exact)

    def case(self) -> Case:
        """One fuzz case, drawn by the weights of the kinds."""
        rng = self.rng
        roll = rng.random()
        base = self.request()
        if roll < 0.10:
            return self._case("valid", base)
        if roll < 0.50:
            path = rng.choice(_paths(base["params"]))
            return self._case(
                "value", {**base, "params": _set(copy.deepcopy(base["params"]), path, hostile_value(rng))}
            )
        if roll < 0.56:
            params = copy.deepcopy(base["params"])
            if params and rng.random() < 0.5:
                params.pop(rng.choice(list(params)))
            else:
                params[_text(rng, rng.randrange(1, 40))] = hostile_value(rng)
            return self._case("keys", {**base, "params": params})
        if roll < 0.66:
            return self._envelope(base)
        if roll < 0.71:
            frame = self._encode(base)
            spot = frame.index(b'"id": ') + 6 if b'"id": ' in frame else 0
            literal = rng.choice(_NON_FINITE)
            digits = frame[spot:].split(b",", 1)
            return Case(
                "non-finite", frame[:spot] + literal + b"," + digits[1] if len(digits) == 2 else frame
            )
        if roll < 0.76:
            frame = self._encode(base)
            return Case("truncated", frame[: rng.randrange(1, max(2, len(frame) - 1))] + b"\n")
        if roll < 0.81:
            raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
            return Case("raw", raw.replace(b"\n", b" ") + b"\n", replies=False)
        if roll < 0.86:
            depth = rng.choice([100, 1_000, 100_000])
            opening, closing = rng.choice([(b"[", b"]"), (b'{"a":', b"}")])
            return Case(
                "deep",
                b'{"jsonrpc":"2.0","id":1,"method":"status","params":'
                + opening * depth
                + b"1"
                + closing * depth
                + b"}\n",
            )
        if roll < 0.93:
            members = [
                self.request() if rng.random() < 0.7 else hostile_value(rng)
                for _ in range(rng.randrange(1, 20))
            ]
            for member in members:
                if isinstance(member, dict) and rng.random() < 0.2:
                    member.pop("id", None)
            return Case("batch", self._encode(members), replies=False)
        size = rng.choice([70_000, 1_000_000, 3_000_000])
        huge = {**base, "params": {**base["params"], "pad": "y" * size}}
        return self._case("huge", huge)

    def _envelope(self, base: dict[str, Any]) -> Case:
        rng = self.rng
        request = dict(base)
        what = rng.randrange(6)
        if what == 0:
            request["id"] = rng.choice([None, "s", "x" * 5000, 1.5, -7, 2**70, True, [], {}, "\u202e"])
        elif what == 1:
            request.pop("id")
        elif what == 2:
            request["method"] = rng.choice(
                ["", "x" * 5000, "no_such", "model.complete", "rpc.x", "\u202e" * 9]
            )
        elif what == 3:
            request["jsonrpc"] = rng.choice(["1.0", 2.0, None, "2.0 "])
        elif what == 4:
            request["params"] = rng.choice([[], ["a"], "s", 1, None, True])
        else:
            request[rng.choice(["extra", "result", "error"])] = hostile_value(rng)
        return self._case("envelope", request)
