"""Shared e2e steps and checks: scripted work for the model, and what a Longhaul compaction looks like."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longhaul_daemon.evaluation.harness.model_server import ModelServer, RecordedRequest
from longhaul_daemon.evaluation.harness.pi_rpc import PiRpc
from longhaul_daemon.evaluation.harness.replies import text, tool_call

from .session_log import (
    LINE_TYPE,
    SPAN_TYPE,
    Entry,
    compactions,
    customs,
    index_of,
    is_longhaul,
    wait_for_entries,
)

__all__ = [
    "LONG_WRAP_UP",
    "LonghaulCompaction",
    "agent_bash",
    "block_lines",
    "command_ids",
    "commands_by_id",
    "expect_longhaul",
    "last_agent_request",
    "summary_wrapper",
    "wrap_up",
]

# Longer than keepRecentTokens*4 chars, so pi keeps only this last turn and summarises everything before it.
LONG_WRAP_UP = "Wrap-up note for this stretch of work, kept verbatim by pi after the cut. " * 6

_COMMAND_ID = re.compile(r"^C(\d+)$")


def agent_bash(pi: PiRpc, server: ModelServer, *commands: str) -> None:
    """One prompt in which the model runs each command through pi's ``bash`` tool, then answers in text."""
    server.enqueue(*(tool_call("bash", command=c) for c in commands), text("Ran: " + "; ".join(commands)))
    pi.prompt("Please run: " + "; ".join(commands))
    assert server.pending() == 0, "the model server still holds scripted replies: pi made fewer calls"


def wrap_up(pi: PiRpc, label: str) -> None:
    """A long plain turn, so the cut point lands on it and everything before it is summarised."""
    pi.prompt(f"[{label}] {LONG_WRAP_UP}")


def summary_wrapper(summary: str) -> str:
    """How pi puts a compaction summary into the next model request (convertToLlm)."""
    return f"<summary>\n{summary}\n</summary>"


def block_lines(summary: str, tag: str) -> list[str]:
    """The lines inside a pi-style ``<tag>…</tag>`` block of a summary ([] when there is no such block)."""
    match = re.search(rf"<{tag}>\n(.*?)\n?</{tag}>", summary, re.S)
    return [line.strip() for line in match.group(1).splitlines() if line.strip()] if match else []


def commands_by_id(state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    commands = state.get("commands")
    assert isinstance(commands, list), f"details.state.commands is not a list: {commands!r}"
    return {str(c.get("id")): c for c in commands if isinstance(c, dict)}


def command_ids(state: dict[str, Any]) -> list[str]:
    commands = state.get("commands")
    assert isinstance(commands, list), f"details.state.commands is not a list: {commands!r}"
    return [str(c.get("id")) for c in commands if isinstance(c, dict)]


def id_number(command_id: str) -> int:
    match = _COMMAND_ID.match(command_id)
    assert match, f"command id {command_id!r} is not C<n>"
    return int(match.group(1))


@dataclass(frozen=True)
class LonghaulCompaction:
    """A Longhaul compaction in the session file, with the custom entries the shim wrote after it."""

    entry: Entry
    span_record: Entry
    line: Entry
    entries: list[Entry]

    @property
    def summary(self) -> str:
        return str(self.entry["summary"])

    @property
    def details(self) -> dict[str, Any]:
        details = self.entry["details"]
        assert isinstance(details, dict)
        return details

    @property
    def state(self) -> dict[str, Any]:
        state = self.details.get("state")
        assert isinstance(state, dict), f"details.state missing: {self.details!r}"
        return state


def expect_longhaul(session_file: Path, nth: int, *, span: int) -> LonghaulCompaction:
    """The ``nth`` (1-based) compaction in the file must be Longhaul's, numbered ``span``, followed by its
    span record and then its compaction line. Waits (bounded) for the shim's asynchronous appends."""

    entries = wait_for_entries(
        session_file, lambda es: len(compactions(es)) >= nth, what=f"compaction entry #{nth}"
    )
    entry = compactions(entries)[nth - 1]
    assert is_longhaul(entry), f"compaction #{nth} is not Longhaul's: {_brief(entry)}"
    assert entry.get("fromHook") is True, f"compaction #{nth} has fromHook={entry.get('fromHook')!r}"
    details = entry["details"]
    assert details.get("span") == span, (
        f"compaction #{nth}: details.span={details.get('span')!r}, want {span}"
    )
    first_line = str(entry["summary"]).splitlines()[0] if entry["summary"] else ""
    assert "longhaul" in first_line.lower(), f"summary header does not name Longhaul: {first_line!r}"

    def followed(entries: list[Entry]) -> bool:
        spans = [s for s in customs(entries, SPAN_TYPE) if _data(s).get("compactionId") == entry["id"]]
        if not spans:
            return False
        return bool(customs(entries[index_of(entries, str(spans[0]["id"])) + 1 :], LINE_TYPE))

    entries = wait_for_entries(
        session_file,
        followed,
        what=f"a {SPAN_TYPE} record naming compaction {entry['id']}, then a {LINE_TYPE} entry",
    )
    spans = [s for s in customs(entries, SPAN_TYPE) if _data(s).get("compactionId") == entry["id"]]
    assert len(spans) == 1, f"want exactly one span record naming compaction {entry['id']}, got {len(spans)}"
    span_record = spans[0]
    data = _data(span_record)
    assert data.get("v") == 1, f"span record v={data.get('v')!r}"
    assert data.get("span") == span, f"span record span={data.get('span')!r}, want {span}"
    span_at = index_of(entries, str(span_record["id"]))
    assert span_at > index_of(entries, str(entry["id"])), "span record written before its compaction entry"

    lines = customs(entries[span_at + 1 :], LINE_TYPE)
    line = lines[0]
    line_data = _data(line)
    assert line_data.get("v") == 1, f"compaction line v={line_data.get('v')!r}"
    assert "fallback" not in line_data, (
        f"compaction line after a Longhaul compaction says fallback: {line_data}"
    )
    return LonghaulCompaction(entry=entry, span_record=span_record, line=line, entries=entries)


def last_agent_request(server: ModelServer) -> RecordedRequest:
    requests = server.requests("agent")
    assert requests, "the model server saw no agent request"
    return requests[-1]


def _data(entry: Entry) -> dict[str, Any]:
    data = entry.get("data")
    return data if isinstance(data, dict) else {}


def _brief(entry: Entry) -> str:
    return (
        f"id={entry.get('id')} fromHook={entry.get('fromHook')!r} "
        f"details={str(entry.get('details'))[:300]} summary={str(entry.get('summary'))[:300]!r}"
    )
