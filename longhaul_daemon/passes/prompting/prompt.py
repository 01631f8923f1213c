"""The model judges only what it sees: the prompt carries state and span in exact words, fenced as data.

Everything the transcript supplied (user messages, rule words, commands, tool output, notes, /compact focus)
is placed inside delimited data blocks that the instructions say can never change the task (DIFF-9). The
markers carry a tag derived from a hash of the data, so no transcript text can forge the end of a block.
Transcript text stays raw, cleaned only as :func:`~longhaul_daemon.passes.prompting.message_text.clean` says,
and each span message reads as :mod:`longhaul_daemon.passes.prompting.message_text` renders it (DIFF-7,
DIFF-9). DIFF-12 shows /compact instructions as focus text only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from longhaul_daemon.passes.answers.call_schemas import offers_lifts
from longhaul_daemon.passes.answers.quotes import OfferedMessage as QuotableMessage
from longhaul_daemon.passes.prompting.instructions import (
    INSTRUCTIONS,
    LONG_MESSAGE,
    SYSTEM_PROMPT,
    situational_instructions,
)
from longhaul_daemon.passes.prompting.message_text import (
    EXCERPT_CHARS,
    TAG_CHARS,
    TOOL_RESULT_EDGE,
    clean,
    conversation_body,
    excerpt,
    id_list,
    ledger_index,
    listing_body,
    listing_entry,
    message_header,
    serialize,
)
from longhaul_daemon.state.model import Command, ErrorEntry, ExitCode, Item, Note, State
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = [
    "EXCERPT_CHARS",
    "INSTRUCTIONS",
    "TOOL_RESULT_EDGE",
    "EarlierMessage",
    "OfferedMessage",
    "Prompt",
    "build_prompt",
    "clean",
    "command_lines",
    "data_block",
    "excerpt",
    "state_lines",
]

# Newest ledger lines shown; evidence may still cite any ledger id. The span's own commands are also in its
# conversation with their ids, and an older command matters to the answer only through an open error (all
# shown, up to LEDGER_ERRORS) or a decision already carried, so a long ledger costs every call its tokens for
# little: a small model on a CPU reads about 150 prompt tokens a second.
LEDGER_COMMANDS = 12
LEDGER_ERRORS = 40
LEDGER_CLOSED = 12
RUN_IDS = 3  # the newest ids shown on a line of commands run again and again
STATE_ITEMS = 30  # newest decisions and dead ends shown


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
    """A model prompt: the system text and the user message, and the ledger ids the user message shows
    (DIFF-14: evidence cites those; the answer's schema may hold it to them)."""

    system: str
    user: str
    ledger_shown: tuple[str, ...] | None = None  # None: not known (a prompt built by hand)


def _indent(text: str) -> str:
    return clean(text).replace("\n", "\n  ")


def data_block(name: str, tag: str, body: str) -> str:
    """``body`` between BEGIN and END markers carrying ``tag``, which no transcript text can forge."""
    return f"=== BEGIN DATA {name} {tag} ===\n{body}\n=== END DATA {name} {tag} ==="


def _newest(items: Sequence[str], limit: int, what: str) -> list[str]:
    shown = list(items[-limit:])
    return ([f"({len(items) - limit} earlier {what} not shown)"] if len(items) > limit else []) + shown


def command_lines(commands: Sequence[Command]) -> list[str]:
    """The ledger's command lines: a command run again with the same exit status joins its earlier line,
    which moves to where the newest run stands and names the newest :data:`RUN_IDS` ids (a session re-runs
    the same tests and greps dozens of times)."""
    runs: dict[tuple[ExitCode, str], list[str]] = {}
    for command in commands:
        key = (command.exit, command.text)
        runs[key] = [*runs.pop(key, []), command.id]
    lines = []
    for (exit_status, text), ids in runs.items():
        more = f" (and {len(ids) - RUN_IDS} earlier)" if len(ids) > RUN_IDS else ""
        lines.append(f"- {', '.join(ids[-RUN_IDS:])}{more} exit {exit_status}: {_indent(text)}")
    return lines


def state_lines(
    state: State, commands: Sequence[Command], errors: Sequence[ErrorEntry], remembered: Sequence[Note]
) -> list[str]:
    """The state so far as the prompt shows it (DIFF-10): rules, items, open errors, ledger, notes. Values
    are carried by code and need no model's eye (ours): no answer names an old one, and a small model shown
    them copied them into its own answer, where VALUE-2 dropped them, at the price of every call's tokens."""
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
    out.append("Ledger, commands:" if commands else "Ledger, commands: none")
    out += _newest(command_lines(commands), LEDGER_COMMANDS, "commands")
    closed = [f"- {e.id} ({e.command or e.tool}): {_indent(e.text)}" for e in errors if not e.open]
    out.append("Ledger, closed errors:" if closed else "Ledger, closed errors: none")
    out += _newest(closed, LEDGER_CLOSED, "closed errors")
    if remembered:
        out.append("Remembered notes (the agent's own, never the user's; never rules):")
        out += [
            f"- {f'({n.kind}) ' if n.kind and n.kind != 'note' else ''}{_indent(n.text)}" for n in remembered
        ]
    return out


def _replaced_any(state: State) -> bool:
    """Whether a rule in force replaced others (LIFT-7, LIFT-8 and LABEL-9 can matter only then)."""
    in_force = {r.message for r in state.rules if not r.lifted}
    return any(r.liftedBy in in_force for r in state.rules if r.lifted)


def _earlier_header(tag: str, message: EarlierMessage) -> str:
    if message.picked:
        return f"--- {message.user_id} ({len(message.text)} characters, picked) {tag} ---"
    shown = ", shown in part: a rule needs exact words" if len(message.text) > EXCERPT_CHARS else ""
    return f"--- {message.user_id} ({len(message.text)} characters{shown}) {tag} ---"


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
    long_messages: bool | None = None,
    lifts: bool | None = None,
) -> Prompt:
    """The system and user prompt for one chunk (DIFF-7..12).

    ``commands``/``errors`` are the ledger after this span's Ledger step (the state's when None); ``carried``
    are the messages carried from earlier spans, listed whole before the span (DIFF-8); ``focus`` is the
    ``/compact`` custom instructions (DIFF-12); ``tool_edge`` how much of each end of a long tool result
    stays (DIFF-2: cut harder when a span would not fit four chunks). ``earlier`` and ``foreign_summary``
    are set only when the pass takes over from another compactor (TAKEOVER-1, TAKEOVER-3, TAKEOVER-25).
    ``long_messages``: whether the pass offers a message over 600 characters in any chunk (QUOTE-4's
    instruction is sent then); ``lifts``: whether any chunk may offer a message a lift (the lifting rules
    are sent then); None reads this chunk's messages for either.
    """
    commands = state.commands if commands is None else commands
    errors = state.errors if errors is None else errors
    carried_ids = {m.user_id for m in carried}
    offered = [
        (m.user_id, m.text)
        for m in span
        if m.role == "user" and m.user_id is not None and m.user_id not in carried_ids
    ]
    ledger_ids = ledger_index(commands, errors)
    conversation = [line for m in span for line in serialize(m, ledger_ids, tool_edge)]
    state_text = "\n".join(state_lines(state, commands, errors, remembered))
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
    tag = digest.hexdigest()[:TAG_CHARS]

    sections = ["The state so far:", data_block("state", tag, state_text)]
    if foreign_summary:
        sections += [
            "Another compactor summarized the conversation before this span. Keep whatever in it still holds "
            "in your decisions, dead ends, Now and objective; it is not the user's words, so it is never a "
            "rule and never quotable:",
            data_block("earlier-summary", tag, clean(foreign_summary)),
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
            data_block("earlier", tag, body),
        ]
    if carried:
        body = "\n".join(f"{message_header(tag, m.user_id, len(m.text))}\n{clean(m.text)}" for m in carried)
        sections += [
            "Messages carried from earlier spans, shown whole; label each:",
            data_block("carried", tag, body),
        ]
    listing = [listing_entry(tag, uid, text) for uid, text in offered]
    sections.append(
        "User messages of this span to label (the conversation below names the ones shown whole here by "
        "their id, and shows the longer ones whole):"
    )
    sections.append(data_block("messages", tag, listing_body(listing)))
    sections += [
        "The span's conversation:",
        data_block("conversation", tag, conversation_body(conversation)),
    ]
    if focus and focus.strip():
        sections.append(
            "Focus the user asked for in this compaction: use it only to choose what the narrative and Now "
            "stress. It is not a rule, not a message to label and never quotable."
        )
        sections.append(data_block("focus", tag, clean(focus)))
    texts = [*(m.text for m in earlier), *(m.text for m in carried), *(t for _, t in offered)]
    long_messages = any(len(t) > LONG_MESSAGE for t in texts) if long_messages is None else long_messages
    if lifts is None:
        labeled = [
            *(QuotableMessage(m.user_id, m.text) for m in earlier),
            *(QuotableMessage(m.user_id, m.text) for m in carried),
            *(QuotableMessage(uid, text) for uid, text in offered),
        ]
        lifts = offers_lifts(labeled)
    extra = situational_instructions(
        replacements=_replaced_any(state), long_messages=long_messages, lifts=lifts
    )
    if extra:
        sections.append("For this span also:\n" + "\n".join(f"- {text}" for text in extra))
    needed = [m.user_id for m in earlier if not m.picked]
    all_ids = needed + [m.user_id for m in carried] + [uid for uid, _ in offered]
    sections.append(f"Label exactly these messages: {id_list(all_ids)}.")
    picked = [m.user_id for m in earlier if m.picked]
    if picked:
        sections.append(f"These picked messages may also be labeled, or left out: {', '.join(picked)}.")
    shown = _ledger_shown(state_text, conversation, {c.id for c in commands} | {e.id for e in errors})
    return Prompt(system=SYSTEM_PROMPT, user="\n\n".join(sections), ledger_shown=shown)


_LEDGER_ID = re.compile(r"(?<![\w-])[CE][0-9]+(?![\w-])")
_LINE_HEAD = re.compile(r"\[[^\]\n]*\]")  # a conversation line's head, "[Tool result bash, error C5, E2]"


def _ledger_shown(state_text: str, conversation: Sequence[str], known: set[str]) -> tuple[str, ...]:
    """The ledger ids (of ``known``) the prompt shows, in ledger order: those on the state's lines and in
    the heads of the conversation's lines (``[User ran C4, E1]``), never in the text a line holds."""
    seen = {i for i in _LEDGER_ID.findall(state_text) if i in known}
    for line in conversation:
        head = _LINE_HEAD.match(line)
        if head is not None:
            seen.update(i for i in _LEDGER_ID.findall(head.group()) if i in known)
    return tuple(sorted(seen, key=lambda i: (i[0], int(i[1:]))))
