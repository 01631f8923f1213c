"""The model judges only what it sees: the prompt carries state and span in exact words, fenced as data.

Everything the transcript supplied (user messages, rule words, commands, tool output, notes, /compact focus)
is placed inside delimited data blocks that the instructions say can never change the task (DIFF-9). The
markers carry a tag derived from a hash of the data, so no transcript text can forge the end of a block.
Text stays raw so the model can copy exact words, with one cleaning step (:func:`clean`, our documented
choice): CRLF and lone CR become LF, other line or paragraph separators become LF, terminal escape sequences
are removed whole, and every other control character (C0 but tab and LF, DEL, C1), every bidi control and
every lone surrogate is dropped. Other format characters (zero-width joiners, soft hyphens) stay, since
scripts and emoji need them.

Decisions: DIFF-7 keeps the first 240 code points and appends "…"; DIFF-9 follows pi's serializer
(``[User]:``, ``[Assistant]:``, ``[Tool call]:``, ``[Tool result]:``), names each user message's ``u<n>``
and each command's and error's ledger id, leaves thinking out, leaves ``!!`` commands out (the agent never
saw them), and cuts tool results, tool-call arguments, bash output and summaries to their first and last
1,000 characters; DIFF-12 shows /compact instructions as focus text only.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from longhaul_daemon.diff.answer import Defect
from longhaul_daemon.diff.instructions import INSTRUCTIONS, LONG_MESSAGE, SYSTEM_PROMPT
from longhaul_daemon.state.model import Command, ErrorEntry, Item, Note, State
from longhaul_daemon.state.sanitize import sanitize
from longhaul_daemon.transcript.entries import ImageBlock, Message, TextBlock, parse_message
from longhaul_daemon.transcript.messages import SpanMessage, user_text

__all__ = [
    "EXCERPT_CHARS",
    "INSTRUCTIONS",
    "TOOL_RESULT_EDGE",
    "EarlierMessage",
    "OfferedMessage",
    "Prompt",
    "build_prompt",
    "clean",
    "excerpt",
    "retry_note",
]

EXCERPT_CHARS = 240  # DIFF-7
TOOL_RESULT_EDGE = 1000  # DIFF-9: head and tail kept of a long tool result
LEDGER_COMMANDS = 80  # newest commands shown; evidence may still cite any ledger id
LEDGER_ERRORS = 40
STATE_ITEMS = 30  # newest decisions and dead ends shown

_ESCAPES = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]{0,64}[\x20-\x2f]{0,16}[\x40-\x7e]"
    r"|(?:\x1b\]|\x9d)[^\x07\x1b\x9c]{0,4096}(?:\x07|\x1b\\|\x9c)"
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]{0,4096}(?:\x1b\\|\x9c)"
    r"|\x1b[\x20-\x2f]{0,16}[\x30-\x7e]"
)
_NEWLINES = re.compile(r"\r\n|[\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]")
_DROP = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


@dataclass(frozen=True)
class OfferedMessage:
    """A user message offered whole from an earlier span (carried, FAIL-11): its ``u<n>`` and full text."""

    user_id: str
    text: str


@dataclass(frozen=True)
class EarlierMessage:
    """A user message from before the span, offered when Longhaul takes over from another compactor.

    ``picked``: the standing-rule reading picked it (TAKEOVER-4); it is shown whole and may go unlabeled.
    Any other earlier message is shown as its opening and needs a label (TAKEOVER-16, TAKEOVER-17).
    """

    user_id: str
    text: str
    picked: bool = False


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str


def clean(text: str) -> str:
    """Transcript text for a data block: raw words kept, escapes and confusing control characters removed."""
    return _DROP.sub("", _NEWLINES.sub("\n", _ESCAPES.sub("", text)))


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """DIFF-7: the text whole up to ``limit`` code points, else its first ``limit`` followed by "…"."""
    return text if len(text) <= limit else text[:limit] + "…"


def _edges(text: str, edge: int = TOOL_RESULT_EDGE) -> str:
    """DIFF-9: a long text cut to its first and last ``edge`` characters, the cut marked with its size."""
    if len(text) <= 2 * edge:
        return text
    return f"{text[:edge]}\n[… {len(text) - 2 * edge} characters cut …]\n{text[-edge:]}"


def _indent(text: str) -> str:
    return clean(text).replace("\n", "\n  ")


def _block(name: str, tag: str, body: str) -> str:
    return f"=== BEGIN DATA {name} {tag} ===\n{body}\n=== END DATA {name} {tag} ==="


_LedgerIds = dict[tuple[str, str], list[str]]


def _ids(commands: Iterable[Command], errors: Iterable[ErrorEntry]) -> _LedgerIds:
    """(``call`` or ``entry``, key) → the ledger ids a message produced, to annotate the conversation."""
    ids: _LedgerIds = {}
    pairs = [(c.id, c.toolCallId, c.entryId) for c in commands] + [
        (e.id, e.toolCallId, e.entryId) for e in errors
    ]
    for ledger_id, call_id, entry_id in pairs:
        if call_id:
            ids.setdefault(("call", call_id), []).append(ledger_id)
        elif entry_id:
            ids.setdefault(("entry", entry_id), []).append(ledger_id)
    return ids


def _tag(ids: _LedgerIds, kind: str, key: str | None, prefixes: str = "CE") -> str:
    found = [i for i in ids.get((kind, key), []) if i[:1] in prefixes] if key else []
    return " " + ", ".join(found) if found else ""


def _result_text(message: Message) -> str:
    blocks = (b for b in message.blocks if isinstance(b, TextBlock | ImageBlock))
    return "\n".join(b.text if isinstance(b, TextBlock) else "[image]" for b in blocks)


def _serialize(item: SpanMessage, ids: _LedgerIds, edge: int = TOOL_RESULT_EDGE) -> list[str]:
    message = parse_message(item.message)
    if message is None:
        return []
    role = message.role
    if role == "user":
        who = f"User {item.user_id}" if item.user_id else "User"
        return [f"[{who}]: {clean(message.text)}"]
    if role == "assistant":
        lines = [f"[Assistant]: {clean(message.text)}"] if message.text.strip() else []
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


def _newest(items: Sequence[str], limit: int, what: str) -> list[str]:
    shown = list(items[-limit:])
    return ([f"({len(items) - limit} earlier {what} not shown)"] if len(items) > limit else []) + shown


def _state_lines(
    state: State, commands: Sequence[Command], errors: Sequence[ErrorEntry], remembered: Sequence[Note]
) -> list[str]:
    out: list[str] = []
    if state.objective:
        out.append(f"Objective: {_indent(state.objective)}")
    if state.now:
        out.append(f"Previous Now: {_indent(state.now)}")
    rules = [r for r in state.rules if not r.lifted]
    out.append("Rules in force:" if rules else "Rules in force: none")
    out += [f"- {r.id} (given by {r.message}): {_indent(r.words)}" for r in rules]

    def item_lines(title: str, items: Sequence[Item]) -> None:
        texts = [
            f"- {_indent(i.text)}" + (f" [{', '.join(i.evidence)}]" if i.evidence else "") for i in items
        ]
        out.append(f"{title}:" if texts else f"{title}: none")
        out.extend(_newest(texts, STATE_ITEMS, title.lower()))

    item_lines("Decisions", state.decisions)
    item_lines("Dead ends", state.deadEnds)
    open_errors = [e for e in errors if e.open]
    out.append("Open errors:" if open_errors else "Open errors: none")
    out += _newest(
        [f"- {e.id} ({e.command or e.tool}): {_indent(e.text)}" for e in open_errors], LEDGER_ERRORS, "errors"
    )
    if state.values:
        out.append("Values:")
        out += [f"- {_indent(v.what)}: {_indent(v.value)} (turn {v.turn})" for v in state.values]
    out.append("Ledger, commands:" if commands else "Ledger, commands: none")
    out += _newest(
        [f"- {c.id} exit {c.exit}: {_indent(c.text)}" for c in commands], LEDGER_COMMANDS, "commands"
    )
    closed = [f"- {e.id} ({e.command or e.tool}): {_indent(e.text)}" for e in errors if not e.open]
    out.append("Ledger, closed errors:" if closed else "Ledger, closed errors: none")
    out += _newest(closed, LEDGER_ERRORS, "errors")
    if remembered:
        out.append("Remembered notes (the agent's own, never the user's; never rules):")
        out += [
            f"- {f'({n.kind}) ' if n.kind and n.kind != 'note' else ''}{_indent(n.text)}" for n in remembered
        ]
    return out


def _earlier_header(tag: str, message: EarlierMessage) -> str:
    if message.picked:
        return f"--- {message.user_id} ({len(message.text)} characters, picked) {tag} ---"
    shown = ", shown in part: a rule needs exact words" if len(message.text) > EXCERPT_CHARS else ""
    return f"--- {message.user_id} ({len(message.text)} characters{shown}) {tag} ---"


def _message_header(tag: str, user_id: str, length: int) -> str:
    long = f", over {LONG_MESSAGE}: a rule label needs exact words" if length > LONG_MESSAGE else ""
    return f"--- {user_id} ({length} characters{long}) {tag} ---"


def build_prompt(
    state: State,
    span: Sequence[SpanMessage],
    *,
    carried: Sequence[OfferedMessage] = (),
    commands: Sequence[Command] | None = None,
    errors: Sequence[ErrorEntry] | None = None,
    remembered: Sequence[Note] = (),
    focus: str | None = None,
    tool_edge: int = TOOL_RESULT_EDGE,
    earlier: Sequence[EarlierMessage] = (),
    foreign_summary: str | None = None,
) -> Prompt:
    """The system and user prompt for one chunk (DIFF-7..12).

    ``commands``/``errors`` are the ledger after this span's Ledger step (the state's when None); ``carried``
    are the messages carried from earlier spans, listed whole before the span (DIFF-8); ``focus`` is the
    ``/compact`` custom instructions (DIFF-12); ``tool_edge`` how much of each end of a long tool result
    stays (DIFF-2: cut harder when a span would not fit four chunks). ``earlier`` and ``foreign_summary``
    are set only when the pass takes over from another compactor (TAKEOVER-1, TAKEOVER-3, TAKEOVER-25).
    """
    commands = state.commands if commands is None else commands
    errors = state.errors if errors is None else errors
    carried_ids = {m.user_id for m in carried}
    offered = [
        (m.user_id, user_text(m.message))
        for m in span
        if m.role == "user" and m.user_id is not None and m.user_id not in carried_ids
    ]
    ledger_ids = _ids(commands, errors)
    conversation = [line for m in span for line in _serialize(m, ledger_ids, tool_edge)]
    state_text = "\n".join(_state_lines(state, commands, errors, remembered))
    digest = hashlib.sha256()
    for part in [
        state_text,
        foreign_summary or "",
        *(m.text for m in earlier),
        *(m.text for m in carried),
        *(t for _, t in offered),
        *conversation,
        focus or "",
    ]:
        digest.update(clean(part).encode("utf-8", "replace"))
    tag = digest.hexdigest()[:12]

    sections = ["The state so far:", _block("state", tag, state_text)]
    if foreign_summary:
        sections += [
            "Another compactor summarized the conversation before this span. Keep whatever in it still holds "
            "in your decisions, dead ends, Now and objective; it is not the user's words, so it is never a "
            "rule and never quotable:",
            _block("earlier-summary", tag, clean(foreign_summary)),
        ]
    if earlier:
        body = "\n".join(
            f"{_earlier_header(tag, m)}\n{clean(m.text if m.picked else excerpt(m.text))}" for m in earlier
        )
        sections += [
            "User messages from before this span (the other compactor's span), oldest first. A message "
            "marked `picked` reads as a standing rule: code records it as a rule unless you label it "
            "`not a rule` (a one-off: a request, a reply or a question), and when it replaces an older rule "
            "label it "
            "`rule and lifts u<n>`. Every other message here needs a label like a span message; one shown "
            "only in part yields a rule only with its exact words:",
            _block("earlier", tag, body),
        ]
    if carried:
        body = "\n".join(f"{_message_header(tag, m.user_id, len(m.text))}\n{clean(m.text)}" for m in carried)
        sections += [
            "Messages carried from earlier spans, shown whole; label each:",
            _block("carried", tag, body),
        ]
    listing = [f"{_message_header(tag, uid, len(text))}\n{clean(excerpt(text))}" for uid, text in offered]
    sections.append("User messages of this span to label (the conversation below shows them whole):")
    sections.append(_block("messages", tag, "\n".join(listing) if listing else "(none)"))
    sections += [
        "The span's conversation:",
        _block("conversation", tag, "\n\n".join(conversation) or "(empty)"),
    ]
    if focus and focus.strip():
        sections.append(
            "Focus the user asked for in this compaction: use it only to choose what the narrative and Now "
            "stress. It is not a rule, not a message to label and never quotable."
        )
        sections.append(_block("focus", tag, clean(focus)))
    needed = [m.user_id for m in earlier if not m.picked]
    all_ids = needed + [m.user_id for m in carried] + [uid for uid, _ in offered]
    sections.append(f"Label exactly these messages: {', '.join(all_ids) if all_ids else '(none)'}.")
    picked = [m.user_id for m in earlier if m.picked]
    if picked:
        sections.append(f"These picked messages may also be labeled, or left out: {', '.join(picked)}.")
    return Prompt(system=SYSTEM_PROMPT, user="\n\n".join(sections))


def retry_note(defects: Sequence[Defect], limit_chars: int) -> str:
    """FAIL-1, FAIL-3: the defects, one whole line each, at most ``limit_chars`` code points in all."""
    header = "Your previous answer had these problems. Send the whole JSON answer again with them fixed:"
    if limit_chars <= 0:
        return ""
    if len(header) > limit_chars:
        return header[: max(0, limit_chars - 1)] + "…" if limit_chars > 1 else header[:limit_chars]
    lines = [header]
    size = len(header)
    for at, defect in enumerate(defects):
        line = "- " + sanitize(defect.text)
        left = len(defects) - at - 1
        reserve = len(f"\n({left} more problems not shown)") if left else 0
        if size + 1 + len(line) + reserve > limit_chars:
            more = f"({len(defects) - at} more problems not shown)"
            if size + 1 + len(more) <= limit_chars:
                lines.append(more)
            break
        lines.append(line)
        size += 1 + len(line)
    return "\n".join(lines)
