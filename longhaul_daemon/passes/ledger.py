"""The ledger step: the span's commands and errors, with ids, merged into the carried ledger.

No model call (LEDGER-9): pure, deterministic, never raises on transcript content; per LEDGER-1..8:

- a command is a ``bash`` tool call paired with its ``toolResult``, or a user ``bashExecution``, in message
  order (LEDGER-1); ``!!`` commands (``excludeFromContext``) are left out (LEDGER-3);
- exit codes (LEDGER-2): ``exitCode`` or ``details.exitCode``, else pi's trailing "Command exited with code
  N", else "Command aborted" → ``cancelled``, else 0 or ``unknown`` by ``isError``; no result → ``no result``;
- an error (LEDGER-4) per ``isError`` tool result, non-zero ``bashExecution`` and assistant message with
  ``stopReason: "error"`` (tool ``model``) keeps one line (LEDGER-7): for command output the one
  :mod:`longhaul_daemon.passes.failure_line` picks, else the first non-blank line;
- ids continue the carried counters (LEDGER-5); a source already held is not added again (LEDGER-6), but a
  carried ``no result`` command takes its late exit code;
- an error stays open until identical text exits 0 (LEDGER-8); one fixed by a different command is closed by
  the Diff's checked ``fixed`` claim (:mod:`longhaul_daemon.passes.answers.fixes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from longhaul_daemon.passes.failure_line import failure_line
from longhaul_daemon.state.model import Command, ErrorEntry, ExitCode, State
from longhaul_daemon.transcript.entries import Message
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = ["COMMAND_CHARS", "ERROR_CHARS", "LedgerResult", "apply_ledger", "cut"]

COMMAND_CHARS = 300
ERROR_CHARS = 200

_EXITED = re.compile(r"Command exited with code (-?\d{1,10})\s*\Z")
_ABORTED_LINE = "Command aborted"
_STATUS_TAIL = 64  # longer than any "Command exited with code N" line
_ID_NUMBER = re.compile(r"\A[CE](\d{1,9})\Z")

Source = tuple[str, str | None]


@dataclass(frozen=True)
class LedgerResult:
    """The merged ledger after one span, and what the span added."""

    commands: list[Command]
    errors: list[ErrorEntry]
    new_commands: list[Command]
    new_errors: list[ErrorEntry]
    next_command: int
    next_error: int


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` code points, ending in "…" when something was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.split("\n") if line.strip()), "")


def _source(entry_id: str | None, tool_call_id: str | None, timestamp: object) -> Source | None:
    """The dedup key of LEDGER-6; without an entry id the tool-call id, else the timestamp, stands in."""
    if entry_id is not None:
        return ("id:" + entry_id, tool_call_id)
    if tool_call_id is not None:
        return ("call", tool_call_id)
    if isinstance(timestamp, int | float | str) and not isinstance(timestamp, bool):
        return ("ts:" + str(timestamp), None)
    return None


def _carried_source(entry_id: str | None, tool_call_id: str | None) -> Source | None:
    if entry_id is not None:
        return ("id:" + entry_id, tool_call_id)
    return ("call", tool_call_id) if tool_call_id is not None else None


def _next_id(counter: int, ids: list[str]) -> int:
    """The carried counter, never below one past the highest id already used (LEDGER-5)."""
    highest = 0
    for value in ids:
        match = _ID_NUMBER.match(value)
        if match:
            highest = max(highest, int(match.group(1)))
    return max(counter, highest + 1, 1)


def tool_exit(result: Message) -> ExitCode:
    """A bash tool result's exit code (LEDGER-2): ``details.exitCode``, pi's status line, or ``isError``."""
    details = result.details
    if isinstance(details, dict):
        code = details.get("exitCode")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    text = result.text.rstrip()
    match = _EXITED.search(text[-_STATUS_TAIL:])  # pi puts these status lines last; outputs can be long
    if match:
        return int(match.group(1))
    if text == _ABORTED_LINE or text.endswith("\n" + _ABORTED_LINE):
        return "cancelled"
    return "unknown" if result.isError else 0


def _bash_exit(message: Message) -> ExitCode:
    if message.cancelled:
        return "cancelled"
    return message.exitCode if message.exitCode is not None else "unknown"


@dataclass
class _Builder:
    span_no: int
    next_command: int
    next_error: int
    command_ids: dict[Source, str] = field(default_factory=dict)  # source -> C<n>, carried and new
    seen_errors: set[Source] = field(default_factory=set)
    carried: dict[str, Command] = field(default_factory=dict)  # C<n> -> carried command, updated in place
    command_by_call: dict[str, str] = field(default_factory=dict)  # carried toolCallId -> C<n>
    command_by_result: dict[int, str] = field(default_factory=dict)  # span position of a result -> C<n>
    new_commands: list[Command] = field(default_factory=list)
    new_errors: list[ErrorEntry] = field(default_factory=list)

    def command(
        self, text: str, exit_code: ExitCode, entry_id: str | None, call_id: str | None, ts: object
    ) -> str:
        """Record a command unless its source is known (LEDGER-6); return its C<n> either way."""
        source = _source(entry_id, call_id, ts)
        known = self.command_ids.get(source) if source is not None else None
        if known is not None:
            carried = self.carried.get(known)
            if carried is not None and carried.exit == "no result" and exit_code != "no result":
                self.carried[known] = carried.model_copy(update={"exit": exit_code})
            return known
        cid = f"C{self.next_command}"
        self.next_command += 1
        if source is not None:
            self.command_ids[source] = cid
        self.new_commands.append(
            Command(
                id=cid,
                text=cut(text, COMMAND_CHARS),
                exit=exit_code,
                span=self.span_no,
                entryId=entry_id,
                toolCallId=call_id,
            )
        )
        return cid

    def error(
        self, tool: str, line: str, command: str | None, entry_id: str | None, call_id: str | None, ts: object
    ) -> None:
        """Record an error whose text is ``line`` (picked from its output) unless its source is known."""
        source = _source(entry_id, call_id, ts)
        if source is not None:
            if source in self.seen_errors:
                return
            self.seen_errors.add(source)
        self.new_errors.append(
            ErrorEntry(
                id=f"E{self.next_error}",
                tool=cut(tool, ERROR_CHARS),
                text=cut(line, ERROR_CHARS),
                command=command or None,
                span=self.span_no,
                entryId=entry_id,
                toolCallId=call_id,
            )
        )
        self.next_error += 1


class _Results:
    """Tool results by call id; a call takes the first unpaired result after it (some servers reuse ids)."""

    def __init__(self, messages: list[Message | None]) -> None:
        self._by_call: dict[str, list[int]] = {}
        self._messages = messages
        self._paired: set[int] = set()
        for at, message in enumerate(messages):
            if message is not None and message.role == "toolResult" and message.toolCallId is not None:
                self._by_call.setdefault(message.toolCallId, []).append(at)

    def pair(self, call_id: str | None, call_at: int) -> tuple[int, Message] | None:
        if call_id is None:
            return None
        for at in self._by_call.get(call_id, []):
            message = self._messages[at]
            if at > call_at and at not in self._paired and message is not None:
                self._paired.add(at)
                return at, message
        return None


def _close_errors(commands: list[Command], errors: list[ErrorEntry]) -> list[ErrorEntry]:
    """LEDGER-8: an open error naming C<n> closes once a later command with the same text exits 0."""
    position = {command.id: i for i, command in enumerate(commands)}
    last_success: dict[str, int] = {}
    for i, command in enumerate(commands):
        if command.exit == 0:
            last_success[command.text] = i
    closed: list[ErrorEntry] = []
    for error in errors:
        at = position.get(error.command) if error.command is not None else None
        if error.open and at is not None and last_success.get(commands[at].text, -1) > at:
            closed.append(error.model_copy(update={"open": False}))
        else:
            closed.append(error)
    return closed


def _walk(builder: _Builder, span: list[SpanMessage]) -> None:
    messages: list[Message | None] = [item.parsed for item in span]
    results = _Results(messages)
    for at, (item, message) in enumerate(zip(span, messages, strict=True)):
        if message is None:
            continue
        ts = message.timestamp
        if message.role == "assistant":
            for call in message.tool_calls:
                if call.name != "bash":
                    continue
                raw_command = call.arguments.get("command")
                text = raw_command if isinstance(raw_command, str) else ""
                paired = results.pair(call.id, at)
                exit_code = tool_exit(paired[1]) if paired is not None else "no result"
                cid = builder.command(text, exit_code, item.entry_id, call.id, ts)
                if paired is not None:
                    builder.command_by_result[paired[0]] = cid
            if message.stopReason == "error":
                line = _first_line(message.errorMessage or "error")
                builder.error("model", line, None, item.entry_id, None, ts)
        elif message.role == "toolResult" and message.isError is True:
            call_id = message.toolCallId
            command = builder.command_by_result.get(at)
            if command is None and call_id is not None and message.toolName == "bash":
                command = builder.command_by_call.get(call_id)  # its call closed in an earlier span
            tool = message.toolName or "unknown"
            line = failure_line(message.text) if message.toolName == "bash" else _first_line(message.text)
            builder.error(tool, line, command, item.entry_id, call_id, ts)
        elif message.role == "bashExecution" and message.excludeFromContext is not True:
            exit_code = _bash_exit(message)
            cid = builder.command(message.command or "", exit_code, item.entry_id, None, ts)
            if isinstance(exit_code, int) and exit_code != 0:
                line = failure_line(message.output or "") or f"exit code {exit_code}"
                builder.error("bash", line, cid, item.entry_id, None, ts)


def apply_ledger(state: State, span: list[SpanMessage], span_no: int) -> LedgerResult:
    """Merge the span's commands and errors into the carried ledger (LEDGER-1..9)."""
    builder = _Builder(
        span_no=span_no,
        next_command=_next_id(state.nextCommand, [c.id for c in state.commands]),
        next_error=_next_id(state.nextError, [e.id for e in state.errors]),
    )
    for carried in state.commands:
        builder.carried[carried.id] = carried
        source = _carried_source(carried.entryId, carried.toolCallId)
        if source is not None:
            builder.command_ids.setdefault(source, carried.id)
        if carried.toolCallId is not None:
            builder.command_by_call.setdefault(carried.toolCallId, carried.id)
    for carried_error in state.errors:
        source = _carried_source(carried_error.entryId, carried_error.toolCallId)
        if source is not None:
            builder.seen_errors.add(source)
    _walk(builder, span)
    commands = [builder.carried.get(c.id, c) for c in state.commands] + builder.new_commands
    errors = _close_errors(commands, [*state.errors, *builder.new_errors])
    new_ids = {e.id for e in builder.new_errors}
    return LedgerResult(
        commands=commands,
        errors=errors,
        new_commands=list(builder.new_commands),
        new_errors=[e for e in errors if e.id in new_ids],
        next_command=builder.next_command,
        next_error=builder.next_error,
    )
