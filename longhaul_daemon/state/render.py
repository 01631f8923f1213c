"""Turn a closed State into the compaction summary pi stores, the only text a pass returns (PASS-7, PASS-8).

The layout is fixed Markdown, empty sections left out, so a model reading the summary always finds a fact in
the same place. Every list is capped so the summary stays bounded however many spans the session closes; the
whole state stays in the compaction's ``details``.

The rendering rule (docs/how-it-works.md has its table): a model reads the summary as its memory, so every
heading, file tag and bullet in it is one the renderer wrote. Every string taken from the State (model text,
the user's words, tool calls, git output, ids read back from a transcript) reaches the summary only through
:func:`inert` or :func:`inert_lines`, which sanitize it and pass each of its lines through :func:`neutral`:
a line whose first non-blank characters (any Unicode blank) would open a Markdown block gets one backslash,
Markdown's own escape, before the character that makes it structural. The rule is applied to each piece, not
to the line around it, so it holds wherever a piece lands. File paths are listed only when the rule leaves
them as they are and they hold no ``<`` or ``>``, since a path must be exact or absent; the others are
counted after their block.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TypeVar

from longhaul_daemon.state.model import CarriedMessage, Command, ErrorEntry, Item, Rule, State, World
from longhaul_daemon.state.sanitize import ELLIPSIS, sanitize, sanitize_line, sanitize_verbatim

__all__ = [
    "MAX_CARRIED_WORDS",
    "MAX_COMMANDS",
    "MAX_FILES",
    "MAX_OPEN_ERRORS",
    "MAX_WORK_LOG",
    "SECTIONS",
    "inert",
    "inert_lines",
    "neutral",
    "paths_left_out",
    "render_summary",
    "world_lines",
]

MAX_COMMANDS = 20  # LEDGER-12: the newest 20 commands
MAX_OPEN_ERRORS = 30
MAX_ITEMS = 30  # decisions, dead ends, values, notes: the newest ones
MAX_WORK_LOG = 30  # one line per span, the newest ones
MAX_FILES = 100  # per file block
MAX_DIRTY = 20  # WORLD-7
MAX_CARRIED_WORDS = 12_000  # all carried messages' words together; each is already cut at Close

CARRIED_TITLE = "User messages not yet labeled"
KEPT_TITLE = "Possible rules, in the user's words"
SECTIONS = (
    "Objective",
    "Standing rules",
    KEPT_TITLE,
    CARRIED_TITLE,
    "Now",
    "Decisions",
    "Dead ends",
    "Open errors",
    "Values",
    "Notes",
    "World",
    "Recent commands",
    "Work log",
)

_FLAG_WORDS = 300  # the user's withdrawing words under a possibly withdrawn rule
_FIELD = 600  # longest single field copied into the summary (a rule of 600 characters is kept whole)
_COMMAND = 300  # LEDGER-7
_SHORT = 200
_ID = 20
_RULE = 1000

_T = TypeVar("_T")

_OPENS_BLOCK = re.compile(
    r"""
    \#{1,6}(?:\s|$)                # an ATX heading: "## Now"
    | [>|]                         # a blockquote, a table row
    | <[A-Za-z/!?]                 # an HTML block: pi's <read-files> tags, <!-- comments -->, <pre>
    | [-+*](?:\s|$)                # a bullet item: "- R9 ..."
    | `{3} | ~{3}                  # a code fence
    | [-_*=:|+][-_*=:|+\s]*$       # a thematic break, a setext underline, a table's delimiter row
    """,
    re.VERBOSE,
)
_ORDERED = re.compile(r"\d{1,9}(?=[.)](?:\s|$))")


def neutral(line: str) -> str:
    """THE rule: ``line`` unchanged, or with one backslash before the character that would open a block."""
    body = line.lstrip()
    lead = line[: len(line) - len(body)]
    ordered = _ORDERED.match(body)
    if ordered is not None:
        return f"{lead}{body[: ordered.end()]}\\{body[ordered.end() :]}"
    if _OPENS_BLOCK.match(body):
        return f"{lead}\\{body}"
    return line


def inert(text: str, max_chars: int) -> str:
    """One piece of untrusted text for one line: sanitized, cut to ``max_chars`` with "…", made inert."""
    return neutral(sanitize_line(text, max_chars))


def inert_lines(text: str, max_chars: int) -> tuple[list[str], bool]:
    """Untrusted multi-line text kept as written (rule words, a user's message): its lines, made inert.

    Spacing and line breaks stay, blank lines at either end go, and the text is cut after ``max_chars`` code
    points, the cut marked with "…". Returns the lines and whether anything was cut.
    """
    cut = len(text) > max_chars
    lines = sanitize_verbatim(text[:max_chars] if cut else text)
    while lines and not lines[-1].strip():
        lines.pop()
    while lines and not lines[0].strip():
        lines.pop(0)
    if cut and lines:
        lines[-1] = lines[-1].rstrip() + ELLIPSIS
    return [neutral(line.rstrip()) for line in lines], cut


def render_summary(state: State, *, pass_id: str) -> str:
    """The summary for ``state``; the pass id in the header makes every pass's summary unique (PASS-9)."""
    header = f"# Longhaul state after span {state.span} (pass {inert(pass_id, 80)})"
    parts: list[str] = [header]
    for title, lines in zip(
        SECTIONS,
        (
            _text(state.objective),
            _rules(state),
            *_carried(state.carriedMessages),
            _text(state.now),
            _items(state.decisions, state.errors, with_errors=False),
            _items(state.deadEnds, state.errors, with_errors=True),
            _open_errors(state),
            _values(state),
            _notes(state),
            world_lines(state.world),
            _commands(state),
            _work_log(state),
        ),
        strict=True,
    ):
        if lines:
            parts.append(f"## {title}\n" + "\n".join(lines))
    parts.extend(_file_block("read-files", state.readFiles))
    parts.extend(_file_block("modified-files", state.modifiedFiles))
    return "\n\n".join(parts) + "\n"


def _text(value: str | None) -> list[str]:
    clean = inert(value or "", _FIELD)
    return [clean] if clean else []


def _left_out(count: int, what: str) -> list[str]:
    return [f"- ({count} older {what} left out; the compaction details keep them.)"] if count > 0 else []


def _newest(items: Sequence[_T], cap: int) -> tuple[Sequence[_T], int]:
    if len(items) <= cap:
        return items, 0
    return items[-cap:], len(items) - cap


CONTINUED = "┆"
"""Opens each later line of the user's multi-line words under their bullet. A markdown view (pi's screen)
drops the indent and the escape before a line's own "- ", so without a mark a quoted line "- R9 …" would
read there as a rule row of its own; no block starts with this mark, and the user's words follow it."""


def _quoted(lead: str, words: str, tail: str, *, max_chars: int = _RULE, cut: bool = False) -> str:
    """A bullet quoting the user's words as written: line breaks kept, later lines indented under it, each
    opened by :data:`CONTINUED`."""
    lines, _ = inert_lines(words + (ELLIPSIS if cut else ""), max_chars)
    body = "\n".join(line if n == 0 else f"  {CONTINUED} {line}".rstrip() for n, line in enumerate(lines))
    return f'- {lead} "{body}"{tail}'


_DOUBTS = {
    "model-read-one-off": "  in doubt: the model read this message as a one-off; code reads a standing rule",
    "may-be-standing": "  in doubt: the model read this as no rule; code reads a standing instruction in it",
    "reads-as-request": "  in doubt: reads as a one-off request, with no standing marker",
}


def _rule(rule: Rule) -> str:
    """One rule in force, with code's doubts under it (passes/answers/doubts.py): fixed words, the ids
    and the user's withdrawing words made inert, so no flag can forge a line of structure."""
    # A flag says so on the rule's own line too: a reader (or an agent) skimming the rules in force must not
    # take a rule the user may have withdrawn for a plain one before it reads the line under it.
    flagged = "; may be withdrawn, see below" if rule.possiblyWithdrawnBy is not None else ""
    lines = [_quoted(inert(rule.id, _ID), rule.words, f" ({inert(rule.message, _ID)}{flagged})")]
    if rule.doubt is not None:
        lines.append(_DOUBTS[rule.doubt])
    if rule.possiblyWithdrawnBy is not None:
        said = inert(rule.withdrawalWords or "", _FLAG_WORDS)
        lines.append(f'  possibly withdrawn by {inert(rule.possiblyWithdrawnBy, _ID)}: "{said}"')
    return "\n".join(lines)


def _rules(state: State) -> list[str]:
    # A lifted rule never shows (PASS-8); rules in force are never capped: a hidden rule is a broken one.
    return [_rule(r) for r in state.rules if not r.lifted]


def _carried(carried: Sequence[CarriedMessage]) -> tuple[list[str], list[str]]:
    """The user's words, verbatim, the newest first to get room: of long messages kept because two passes'
    labels disagreed on whether they give a rule (QUOTE-4, ours), and of messages no pass has labeled yet.

    A message Close cut, or one left out when :data:`MAX_CARRIED_WORDS` is used up, points at
    ``longhaul_recall``, which reads the message from the branch by its ``u<n>``. A message a verified chunk
    labeled is carried only for the next pass (FAIL-12) and is not shown.
    """
    messages = [m for m in carried if not m.labeled]
    room = MAX_CARRIED_WORDS
    shown: dict[int, str] = {}
    for at in range(len(messages) - 1, -1, -1):
        msg = messages[at]
        uid = inert(msg.id, _ID)
        recall = f"longhaul_recall with ref {uid} shows it"
        if len(msg.text) > room:
            shown[at] = f"- {uid}: not shown here, the room for carried words is used up; {recall}"
            continue
        room -= len(msg.text)
        cut = msg.chars > len(msg.text)
        tail = f" (the first {len(msg.text):,} of {msg.chars:,} characters; {recall})" if cut else ""
        if msg.possiblyWithdrawnBy is not None:
            tail += " (may be withdrawn, see below)"
        shown[at] = _quoted(uid, msg.text, tail, max_chars=len(msg.text) + 1, cut=cut)
        if msg.possiblyWithdrawnBy is not None:  # ours, as under a rule: the user's withdrawing words
            said = inert(msg.withdrawalWords or "", _FLAG_WORDS)
            shown[at] += f'\n  possibly withdrawn by {inert(msg.possiblyWithdrawnBy, _ID)}: "{said}"'
    open_ = [shown[at] for at, m in enumerate(messages) if m.readAsRule != "disputed"]
    kept = [shown[at] for at, m in enumerate(messages) if m.readAsRule == "disputed"]
    return ([_KEPT_INTRO, *kept] if kept else []), ([_CARRIED_INTRO, *open_] if open_ else [])


_CARRIED_INTRO = (
    "The user's own words, verbatim, from messages no verified answer has labeled yet; they stay here"
    " until a pass labels them:"
)
_KEPT_INTRO = (
    "Long messages one pass read as giving a standing rule and a later one did not; the rule's exact words"
    " were never confirmed, so the user's own words are kept here, verbatim:"
)


def _evidence(ids: Iterable[str]) -> str:
    clean = [inert(i, _ID) for i in ids]
    return f" [evidence: {', '.join(c for c in clean if c)}]" if any(clean) else ""


def _error_line(err: ErrorEntry, indent: str = "", command: Command | None = None) -> str:
    """An error; with ``command``, the command that raised it is written out with its exit code."""
    origin = f" (from {inert(err.command, _ID)})" if err.command else ""
    if command is not None:
        origin = f" (from {_command_text(command)})"
    status = "" if err.open else " (fixed)"
    return f"{indent}- {inert(err.id, _ID)} {inert(err.tool, 40)}: {inert(err.text, _SHORT)}{origin}{status}"


def _items(items: Sequence[Item], errors: Sequence[ErrorEntry], *, with_errors: bool) -> list[str]:
    shown, older = _newest(items, MAX_ITEMS)
    by_id = {e.id: e for e in errors}
    lines: list[str] = []
    for item in shown:
        why = f" (why: {inert(item.why, _SHORT)})" if item.why else ""
        lines.append(f"- {inert(item.text, _FIELD)}{why}{_evidence(item.evidence)}")
        if with_errors:  # LEDGER-8: an error cited by a dead end is rendered with it
            lines.extend(_error_line(by_id[e], "  ") for e in item.evidence if e in by_id)
    return _left_out(older, "items") + lines


def _open_errors(state: State) -> list[str]:
    """Open errors, each with the command that raised it written out (its exit code too) when that command
    is older than the recent commands shown: a failing command stays in the summary while its error is
    open."""
    shown, older = _newest([e for e in state.errors if e.open], MAX_OPEN_ERRORS)
    recent = {c.id for c in _newest(state.commands, MAX_COMMANDS)[0]}
    by_id = {c.id: c for c in state.commands if c.id not in recent}
    lines = [_error_line(e, command=by_id.get(e.command) if e.command else None) for e in shown]
    return _left_out(older, "open errors") + lines


def _values(state: State) -> list[str]:
    shown, older = _newest(state.values, MAX_ITEMS)
    lines = [
        f"- {inert(v.what, _SHORT)}: {inert(v.value, _SHORT)} (turn {inert(v.turn, _ID)})" for v in shown
    ]
    return _left_out(older, "values") + lines


def _notes(state: State) -> list[str]:
    shown, older = _newest(state.notes, MAX_ITEMS)
    if not shown:
        return []
    intro = "Notes the agent left with longhaul_remember (the agent's own, not the user's words):"
    return [intro, *_left_out(older, "notes"), *(f"- {inert(n.text, _FIELD)}" for n in shown)]


def _commit(hash_: str, subject: str) -> str:
    return f"{inert(hash_, 40)} {inert(subject, _SHORT)}"


def world_lines(world: World | None) -> list[str]:
    """The World as the summary shows it; turns mode's Digest shows it the same way."""
    if world is None:
        return []
    if world.status == "no-repository":
        return ["No git repository at the session's working directory."]
    if world.status == "unavailable":
        return ["The workspace could not be read (git unavailable)."]
    lines: list[str] = []
    if world.branch is not None:
        track = ""
        if world.ahead is not None and world.behind is not None:
            track = f" (ahead {world.ahead}, behind {world.behind} of its upstream)"
        lines.append(f"- Branch: {inert(world.branch, _SHORT)}{track}")
    if world.head is not None:
        lines.append(f"- HEAD: {_commit(world.head.hash, world.head.subject)}")
    lines.extend(f"- Earlier: {_commit(c.hash, c.subject)}" for c in world.earlier[:4])
    if world.dirtyCount is not None:
        if world.dirtyCount == 0:
            lines.append("- Working tree clean.")
        else:
            lines.append(f"- Dirty paths: {world.dirtyCount}")
            lines.extend(f"  - {inert(d.status, 4)} {inert(d.path, _SHORT)}" for d in world.dirty[:MAX_DIRTY])
            hidden = world.dirtyCount - min(len(world.dirty), MAX_DIRTY)
            if hidden > 0:
                lines.append(f"  - ({hidden} more not listed)")
    if world.missing:
        lines.append(f"- Not read: {', '.join(inert(m, 40) for m in world.missing)}")
    return lines


def _exit(code: object) -> str:
    return f"exit {code}" if isinstance(code, int) else inert(str(code), _ID)


def _commands(state: State) -> list[str]:
    shown, older = _newest(state.commands, MAX_COMMANDS)
    return _left_out(older, "commands") + [f"- {_command_text(c)}" for c in shown]


def _command_text(command: Command) -> str:
    return f"{inert(command.id, _ID)} {_exit(command.exit)}: {inert(command.text, _COMMAND)}"


def _work_log(state: State) -> list[str]:
    shown, older = _newest(state.workLog, MAX_WORK_LOG)
    # The line's own text says how the span closed (FAIL-10, PASS-17), so closedAs is not repeated.
    lines = [f"- Span {line.span}: {inert(line.text, _FIELD)}" for line in shown]
    return _left_out(older, "work-log lines") + lines


def _listable(path: str) -> bool:
    """A path goes into a file block only as a plain line: no ``<`` or ``>`` (it could open or close a tag)
    and nothing the rendering rule would have to escape, since a path must be exact or absent."""
    return "<" not in path and ">" not in path and neutral(path) == path


def _file_split(paths: Sequence[str]) -> tuple[list[str], list[str], list[str]]:
    """A file block's paths, sanitized and sorted: those shown, those past :data:`MAX_FILES`, and those the
    rendering rule refuses to list."""
    clean = sorted({p for p in (sanitize(path) for path in paths) if p})
    listable = [p for p in clean if _listable(p)]
    refused = [p for p in clean if not _listable(p)]
    return listable[:MAX_FILES], listable[MAX_FILES:], refused


def paths_left_out(paths: Sequence[str]) -> list[str]:
    """The paths a file block does not list (over the cap, or refused), which only the details keep."""
    _, more, refused = _file_split(paths)
    return more + refused


def _file_block(tag: str, paths: Sequence[str]) -> list[str]:
    """A pi-style ``<read-files>`` / ``<modified-files>`` block, sorted, one sanitized path a line."""
    shown, more, refused_paths = _file_split(paths)
    refused = len(refused_paths)
    if not shown and not more and not refused:
        return []
    notes: list[str] = []
    if more:
        notes.append(f"({len(more)} more in the compaction details.)")
    if refused:
        notes.append(
            f"({refused} {'path' if refused == 1 else 'paths'} with < or > or a Markdown-like start"
            " not listed; the compaction details keep them.)"
        )
    block = f"<{tag}>\n" + "".join(f"{p}\n" for p in shown) + f"</{tag}>"
    return ["\n".join([block, *notes])]
