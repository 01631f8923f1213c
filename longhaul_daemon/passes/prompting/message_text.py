"""How one span message reads in the Diff prompt, rendered alone, so a chunk's size adds up from its messages.

Text stays raw so the model can copy exact words, with one cleaning step (:func:`clean`, ours): line
separators become LF, terminal escapes go whole, other control and bidi characters and lone surrogates are
dropped; other format characters stay, since scripts and emoji need them. Assistant text loses exact repeats
of a line, or of a block of up to eight lines, in a row (:func:`collapse_repeats`), counted in a marker, so a
looping reply shrinks. Tool output is not searched for repeats: it is cut to its edges anyway, and the search
was costly on large spans.

DIFF-7 keeps the first 240 code points and appends "…"; DIFF-9 follows pi's serializer (``[User]:``,
``[Assistant]:``, ``[Tool call]:``, ``[Tool result]:``), names ``u<n>`` and ledger ids, leaves thinking and
``!!`` commands out, and cuts tool results, arguments, bash output and summaries to their first and last
1,000 characters. A message's lines, listing entry and id depend on it alone, so a span's share of a prompt
adds up from per-message :class:`SpanSize` parts (DIFF-1, DIFF-2).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.prompting.instructions import LONG_MESSAGE
from longhaul_daemon.state.model import Command, ErrorEntry
from longhaul_daemon.transcript.entries import ImageBlock, Message, TextBlock
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = [
    "EXCERPT_CHARS",
    "TAG_CHARS",
    "TOOL_RESULT_EDGE",
    "LedgerIds",
    "SpanSize",
    "clean",
    "collapse_repeats",
    "conversation_body",
    "excerpt",
    "id_list",
    "ledger_index",
    "listing_body",
    "listing_entry",
    "message_header",
    "message_size",
    "serialize",
    "span_chars",
]

EXCERPT_CHARS = 240  # DIFF-7
TOOL_RESULT_EDGE = 1000  # DIFF-9: head and tail kept of a long tool result
TAG_CHARS = 12  # the data blocks' tag: this many hex digits of the data's hash, whatever the data
# A user message the label listing shows whole is named, not written again, in the conversation (DIFF-9,
# ours): every prompt token costs a small model on a CPU time, and the second copy says nothing new.
LISTED_WHOLE = "(shown whole in the list above)"

# How the prompt joins the span's parts, and what it shows when there are none
_LINE_JOIN, _NO_LINES = "\n\n", "(empty)"
_ENTRY_JOIN, _NO_ENTRIES = "\n", "(none)"
_ID_JOIN, _NO_IDS = ", ", "(none)"

_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]{0,64}[\x20-\x2f]{0,16}[\x40-\x7e]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]{0,4096}(?:\x1b\\|\x9c)"
    r"|\x1b[\x20-\x2f]{0,16}[\x30-\x7e]"
)
_NEWLINES = re.compile(r"\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_DROP = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


# Every character one of the three patterns above can touch; most transcript text has none of them.
_TOUCHED = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)


def clean(text: str) -> str:
    """Transcript text for a data block: raw words kept, escapes and confusing control characters removed."""
    if _TOUCHED.search(text) is None:
        return text
    return _DROP.sub("", _NEWLINES.sub("\n", _ESCAPES.sub("", text)))


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """DIFF-7: the text whole up to ``limit`` code points, else its first ``limit`` followed by "…"."""
    return text if len(text) <= limit else text[:limit] + "…"


_REPEATS_WORTH = 60  # a run of copies is collapsed only when the copies hold at least this many characters
_REPEAT_PERIOD = 8  # the longest block of lines looked for as a repeat


def _marker(period: int, copies: int) -> str:
    what = "the line above" if period == 1 else f"the {period} lines above"
    return f"[… {what} repeated {copies} more time{'s' if copies > 1 else ''} …]"


def _run_at(lines: list[str], at: int) -> tuple[int, int] | None:
    """The shortest block of lines starting at ``at`` that the next lines repeat: its length and how many
    copies follow."""
    first = lines[at]
    for period in range(1, min(_REPEAT_PERIOD, (len(lines) - at) // 2) + 1):
        if lines[at + period] != first:
            continue  # a block repeated from here begins again with this line
        block = lines[at : at + period]
        if not any(line.strip() for line in block):
            continue  # blank lines alone stay as written
        copies, probe = 0, at + period
        while lines[probe : probe + period] == block:
            copies, probe = copies + 1, probe + period
        if copies:
            return period, copies
    return None


def collapse_repeats(text: str) -> str:
    """A line or block of up to eight lines written again and again in a row kept once, the copies counted.

    A small model that loops fills its reply with the same paragraph; each copy costs prompt time and says
    nothing new. Only exact copies go, so every distinct line of the text is still shown.
    """
    if "\n" not in text:
        return text
    lines = text.split("\n")
    said = [line for line in lines if line.strip()]
    if len(set(said)) == len(said):
        return text  # every block holds a non-blank line, so with none said twice nothing repeats
    out: list[str] = []
    at = 0
    while at < len(lines):
        run = _run_at(lines, at)
        if run is None:
            out.append(lines[at])
            at += 1
            continue
        period, copies = run
        end = at + period * (copies + 1)
        if copies * sum(len(line) + 1 for line in lines[at : at + period]) >= _REPEATS_WORTH:
            out += [*lines[at : at + period], _marker(period, copies)]
        else:
            out += lines[at:end]  # cheaper as written than as a marker
        at = end
    return "\n".join(out)


def _edges(text: str, edge: int = TOOL_RESULT_EDGE) -> str:
    """DIFF-9: a long text cut to its first and last ``edge`` characters, the cut marked with its size."""
    if len(text) <= 2 * edge:
        return text
    return f"{text[:edge]}\n[… {len(text) - 2 * edge} characters cut …]\n{text[-edge:]}"


LedgerIds = dict[tuple[str, str], list[str]]


def ledger_index(commands: Iterable[Command], errors: Iterable[ErrorEntry]) -> LedgerIds:
    """(``call`` or ``entry``, key) → the ledger ids a message produced, to annotate the conversation."""
    ids: LedgerIds = {}
    pairs = [(c.id, c.toolCallId, c.entryId) for c in commands] + [
        (e.id, e.toolCallId, e.entryId) for e in errors
    ]
    for ledger_id, call_id, entry_id in pairs:
        if call_id:
            ids.setdefault(("call", call_id), []).append(ledger_id)
        elif entry_id:
            ids.setdefault(("entry", entry_id), []).append(ledger_id)
    return ids


def _tag(ids: LedgerIds, kind: str, key: str | None, prefixes: str = "CE") -> str:
    found = [i for i in ids.get((kind, key), []) if i[:1] in prefixes] if key else []
    return " " + ", ".join(found) if found else ""


def _result_text(message: Message) -> str:
    blocks = (b for b in message.blocks if isinstance(b, TextBlock | ImageBlock))
    return "\n".join(b.text if isinstance(b, TextBlock) else "[image]" for b in blocks)


def serialize(item: SpanMessage, ids: LedgerIds, edge: int = TOOL_RESULT_EDGE) -> list[str]:
    """A span message as the lines the model reads, tool results cut at ``edge``."""
    message = item.parsed
    role = message.role
    if role == "user":
        if item.user_id is None:
            return [f"[User]: {clean(message.text)}"]
        if len(item.text) <= EXCERPT_CHARS:
            return [f"[User {item.user_id}]: {LISTED_WHOLE}"]  # the label listing shows it whole (DIFF-7)
        return [f"[User {item.user_id}]: {clean(message.text)}"]
    if role == "assistant":
        lines = [f"[Assistant]: {clean(collapse_repeats(message.text))}"] if message.text.strip() else []
        for call in message.tool_calls:
            args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in call.arguments.items())
            cid = _tag(ids, "call", call.id, "C")
            lines.append(f"[Tool call{cid}]: {clean(_edges(f'{call.name}({args})', edge))}")
        if message.stopReason == "error":
            eid = _tag(ids, "entry", item.entry_id, "E")
            lines.append(f"[Assistant error{eid}]: {clean(message.errorMessage or 'error')}")
        return lines
    if role == "toolResult":
        ledger = _tag(ids, "call", message.toolCallId)
        error = ", error" if message.isError else ""
        head = f"[Tool result {message.toolName or 'unknown'}{error}{ledger}]"
        return [f"{head}: {clean(_edges(_result_text(message), edge))}"]
    if role == "bashExecution":
        if message.excludeFromContext:
            return []  # LEDGER-3: a !! command the agent never saw
        ledger = _tag(ids, "entry", item.entry_id)
        exit_text = "cancelled" if message.cancelled else f"exit {message.exitCode}"
        return [
            f"[User ran{ledger}]: !{clean(message.command or '')}",
            f"[Command output, {exit_text}]: {clean(_edges(message.output or '', edge))}",
        ]
    if role in ("branchSummary", "compactionSummary"):
        return [f"[Earlier summary]: {clean(_edges(message.summary or message.text, edge))}"]
    name = f"{role} {message.customType}" if message.customType else role
    return [f"[{clean(name)}]: {clean(_edges(message.text, edge))}"]


def message_header(tag: str, user_id: str, length: int) -> str:
    """The header above an offered message; says when a rule label needs exact words."""
    long = f", over {LONG_MESSAGE}: a rule label needs exact words" if length > LONG_MESSAGE else ""
    return f"--- {user_id} ({length} characters{long}) {tag} ---"


def listing_entry(tag: str, user_id: str, text: str) -> str:
    """A span message in the label listing: its header and its opening (DIFF-7)."""
    return f"{message_header(tag, user_id, len(text))}\n{clean(excerpt(text))}"


def conversation_body(lines: Sequence[str]) -> str:
    """The conversation lines joined, or a marker when there are none."""
    return _LINE_JOIN.join(lines) if lines else _NO_LINES  # no line is empty: each opens with its "[…]:"


def listing_body(entries: Sequence[str]) -> str:
    """The listing entries joined, or a marker when there are none."""
    return _ENTRY_JOIN.join(entries) if entries else _NO_ENTRIES


def id_list(ids: Sequence[str]) -> str:
    """The ids joined, or a marker when there are none."""
    return _ID_JOIN.join(ids) if ids else _NO_IDS


@dataclass(frozen=True, slots=True)
class SpanSize:
    """What some span messages add to a later chunk's prompt, before joining; parts of runs add up."""

    line_chars: int = 0
    lines: int = 0
    entry_chars: int = 0  # the label listing's entries, one per offered user message
    id_chars: int = 0  # their u<n> ids in the closing "Label exactly these messages" line
    offered: int = 0

    def __add__(self, other: SpanSize) -> SpanSize:
        return SpanSize(
            self.line_chars + other.line_chars,
            self.lines + other.lines,
            self.entry_chars + other.entry_chars,
            self.id_chars + other.id_chars,
            self.offered + other.offered,
        )


def message_size(item: SpanMessage, ids: LedgerIds, edge: int) -> SpanSize:
    """The parts ``item`` adds to a prompt that carries no carried or earlier messages."""
    lines = serialize(item, ids, edge)
    size = SpanSize(sum(len(line) for line in lines), len(lines))
    if item.role != "user" or item.user_id is None:
        return size
    entry = listing_entry("0" * TAG_CHARS, item.user_id, item.text)  # every tag is this long
    return size + SpanSize(entry_chars=len(entry), id_chars=len(item.user_id), offered=1)


def _joined(chars: int, count: int, join: str, empty: str) -> int:
    """The length of ``count`` parts of ``chars`` characters joined, or of the placeholder for none."""
    return chars + len(join) * (count - 1) if count else len(empty)


def span_chars(size: SpanSize) -> int:
    """How long the joined conversation, label listing and id list of parts ``size`` are."""
    return (
        _joined(size.line_chars, size.lines, _LINE_JOIN, _NO_LINES)
        + _joined(size.entry_chars, size.offered, _ENTRY_JOIN, _NO_ENTRIES)
        + _joined(size.id_chars, size.offered, _ID_JOIN, _NO_IDS)
    )
