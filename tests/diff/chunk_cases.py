"""Spans of every shape chunk planning meets, and a model that labels them, for the chunk and stage tests.

Each case is a whole :class:`DiffInputs` with a state, a ledger whose ids tag the conversation, remembered
notes and a focus, plus the input budget (in tokens) that sends its planning down one path: one chunk, several
chunks, a harder tool edge (DIFF-2), balanced chunks when nothing fits, carried messages, a takeover's earlier
messages and foreign summary, a span opening and ending inside a split turn, and text in many scripts with
the control characters the prompt drops.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.models.completion import CompletionResult, Usage
from longhaul_daemon.models.request import Message
from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.passes.answers.values import Turn
from longhaul_daemon.passes.prompting.chunks import CHARS_PER_TOKEN
from longhaul_daemon.passes.prompting.instructions import SYSTEM_PROMPT
from longhaul_daemon.passes.prompting.planning import DiffInputs
from longhaul_daemon.passes.prompting.prompt import EarlierMessage, OfferedMessage
from longhaul_daemon.passes.prompting.takeover import Takeover
from longhaul_daemon.state.model import Command, ErrorEntry, Item, Note, Rule, State, Value
from longhaul_daemon.transcript.messages import SpanMessage


def user(uid: str | None, text: str, entry: str | None = None) -> SpanMessage:
    """A user message; ``uid`` None is one the transcript could not tie to an entry."""
    message = {"role": "user", "content": [{"type": "text", "text": text}]}
    return SpanMessage(entry or f"e-{uid}", "user", message, uid)


def assistant(
    entry: str, text: str, *calls: tuple[str, dict[str, Any]], error: str | None = None
) -> SpanMessage:
    blocks: list[dict[str, Any]] = [
        {"type": "thinking", "thinking": "hidden"},
        {"type": "text", "text": text},
    ]
    blocks += [{"type": "toolCall", "id": cid, "name": "bash", "arguments": args} for cid, args in calls]
    message: dict[str, Any] = {
        "role": "assistant",
        "content": blocks,
        "stopReason": "error" if error else "toolUse",
    }
    if error:
        message["errorMessage"] = error
    return SpanMessage(entry, "assistant", message)


def result(entry: str, cid: str, text: str, *, error: bool = False, image: bool = False) -> SpanMessage:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if image:
        content.append({"type": "image", "data": "AAAA", "mimeType": "image/png"})
    message = {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": "bash",
        "isError": error,
        "content": content,
    }
    return SpanMessage(entry, "toolResult", message)


def bash_run(entry: str, command: str, output: str, code: int, *, hidden: bool = False) -> SpanMessage:
    message = {"role": "bashExecution", "command": command, "output": output, "exitCode": code}
    return SpanMessage(entry, "bashExecution", message | {"excludeFromContext": hidden})


def log(lines: int, seed: int) -> str:
    """Tool output whose head and tail differ, so every tool edge cuts it differently."""
    return "".join(
        f"line {i}: value={(i * 7 + seed) % 13} {'ok' if i % 3 else 'FAILED'}\n" for i in range(lines)
    )


def turn(n: int, *, lines: int = 120, text: str | None = None) -> list[SpanMessage]:
    """One turn: a user message, a tool call with a long result, and a reply."""
    cid = f"call-{n}"
    return [
        user(f"u{n}", text or f"Step {n}: run the checks and fix what fails."),
        assistant(f"e-a{n}", f"Running step {n}.", (cid, {"command": f"make check-{n}"})),
        result(f"e-r{n}", cid, log(lines, n), error=n % 4 == 0),
        assistant(f"e-b{n}", f"Step {n} done."),
    ]


def state() -> State:
    return State(
        objective="Ship the CSV export.",
        now="Adding tests for the exporter.",
        rules=[
            Rule(id="R1", words="Never push to main.", message="u1", seq=1, span=1),
            Rule(id="R2", words="old rule", message="u2", seq=2, span=1, lifted=True, liftedBy="u3"),
        ],
        decisions=[Item(text="Use the csv module", evidence=["C1"], seq=3, span=1)],
        deadEnds=[Item(text="pandas was too heavy", evidence=[], seq=4, span=1)],
        values=[Value(value="5173", what="dev server port", turn="u3", seq=5, span=1)],
    )


def ledger(turns: range) -> tuple[list[Command], list[ErrorEntry]]:
    commands = [Command(id="C1", text="pytest -q", exit=0, span=1)]
    errors = [ErrorEntry(id="E1", tool="model", text="overloaded", span=1)]
    for n in turns:
        code = 2 if n % 4 == 0 else 0
        commands.append(
            Command(
                id=f"C{n + 1}",
                text=f"make check-{n}",
                exit=code,
                span=2,
                entryId=f"e-r{n}",
                toolCallId=f"call-{n}",
            )
        )
        if code:
            errors.append(
                ErrorEntry(
                    id=f"E{n + 1}",
                    tool="bash",
                    text=f"check-{n} FAILED",
                    command=f"C{n + 1}",
                    span=2,
                    entryId=f"e-r{n}",
                    toolCallId=f"call-{n}",
                )
            )
    return commands, errors


def inputs(span: list[SpanMessage], turns: range, **kw: Any) -> DiffInputs:
    commands, errors = ledger(turns)
    return DiffInputs(
        state=state(),
        span=span,
        commands=commands,
        errors=errors,
        remembered=[Note(text="the exporter lives in csvx/", seq=6)],
        focus="focus on the export tests",
        **kw,
    )


def turns(numbers: range, **kw: Any) -> list[SpanMessage]:
    return [message for n in numbers for message in turn(n, **kw)]


@dataclass(frozen=True)
class Case:
    """A span, and the input budget (tokens) that sends its planning down the path its name says."""

    inputs: DiffInputs
    input_tokens: int
    rules: frozenset[str] = frozenset()  # ids the scripted model labels ``rule``


def _after_system(room_chars: int) -> int:
    """An input budget (tokens) leaving ``room_chars`` beside the system prompt, so a case takes the same
    path however long the instructions are."""
    return -(-(len(SYSTEM_PROMPT) + room_chars) // CHARS_PER_TOKEN)


def small() -> Case:
    span = [user("u4", "Never commit generated files."), *turns(range(5, 7), lines=10)]
    return Case(inputs(span, range(5, 7)), 100_000, frozenset({"u4"}))


def several_chunks() -> Case:
    span = [user("u4", "Never commit generated files."), *turns(range(5, 13), lines=20)]
    return Case(inputs(span, range(5, 13)), _after_system(3536), frozenset({"u4"}))


def harder_edge() -> Case:
    return Case(inputs(turns(range(4, 14)), range(4, 14)), _after_system(3611))


def balanced() -> Case:
    return Case(inputs(turns(range(4, 30), lines=60), range(4, 30)), _after_system(2936))


def carried() -> Case:
    kept = [OfferedMessage("u2", "Never push to main without a review."), OfferedMessage("u3", "c" * 700)]
    span = turns(range(5, 11), lines=30)
    # u3 is over 600 characters, so QUOTE-4's instruction rides in the user prompt (233 characters)
    return Case(inputs(span, range(5, 11), carried=kept), _after_system(4286 + 233), frozenset({"u2"}))


def takeover() -> Case:
    earlier = (
        EarlierMessage("u1", "Always run the linter before committing.", picked=True),
        EarlierMessage("u2", "What does the exporter do with empty rows? " + "d" * 300),
        EarlierMessage("u3", "Thanks."),
    )
    foreign = Takeover(
        summary="The user set up the exporter and asked for lint before commits.\n" * 20,
        earlier=earlier,
        picked={"u1": (0, 40)},
        turns=(Turn("u1", ("Always run the linter before committing.",)),),
    )
    span = turns(range(5, 11), lines=30)
    return Case(inputs(span, range(5, 11), takeover=foreign), _after_system(5936))


def split_turn() -> Case:
    """The span opens inside a turn an earlier span began and ends with the prefix of a turn pi split."""
    opening = [
        result("e-r3", "call-3", log(50, 3)),
        assistant("e-b3", "Finished the earlier step."),
        bash_run("e-x1", "git status", "On branch main\n" * 40, 0),
        bash_run("e-x2", "cat ~/.secrets", "token", 0, hidden=True),
    ]
    unmatched = [user(None, "A message pi sent twice; the transcript could not tie it.", entry="e-dup")]
    prefix = [
        user("u9", "Never delete the fixtures."),
        assistant("e-a9", "Looking.", ("call-9", {"command": "ls fixtures"})),
    ]
    span = [*opening, *turns(range(5, 8), lines=40), *unmatched, *turns(range(8, 9), lines=40), *prefix]
    return Case(inputs(span, range(3, 10)), _after_system(4286), frozenset({"u9"}))


def unicode() -> Case:
    texts = [
        "Nie używaj żadnych nowych zależności — 絶対に main に push しないで。",
        "Emoji 👩🏽‍💻 and flags 🇳🇴, zero-width joiners\u200d and soft\u00adhyphens stay.",
        "Bidi \u202econtrols\u202c and \x1b[31mred escapes\x1b[0m and a bell\x07 go; CRLF\r\nbecomes LF.",
        "Combining: e\u0301 a\u0308 and a line separator\u2028here, in Ελληνικά and العربية.",
    ]
    span: list[SpanMessage] = []
    for n, text in enumerate(texts, start=5):
        cid = f"call-{n}"
        output = ("résultat ✓ 測試 " * 150) + "\x1b]0;title\x07" + ("fin ✗\r\n" * 60)
        span += [
            user(f"u{n}", text),
            assistant(f"e-a{n}", "D'accord — 好的.", (cid, {"command": f"echo '{text[:20]}'"})),
            result(f"e-r{n}", cid, output, image=n % 2 == 0),
            assistant(f"e-b{n}", "", error="überlastet" if n == 6 else None),
        ]
    span.append(
        SpanMessage("e-c1", "custom", {"role": "custom", "customType": "note", "content": "Ünïcödé ✓"})
    )
    return Case(inputs(span, range(5, 9)), _after_system(2636))


CASES: dict[str, Callable[[], Case]] = {
    "small": small,
    "several-chunks": several_chunks,
    "harder-edge": harder_edge,
    "balanced": balanced,
    "carried": carried,
    "takeover": takeover,
    "split-turn": split_turn,
    "unicode": unicode,
}


class RecordingModel:
    """Labels every listed message (``rule`` for the case's rule ids) and records each call it gets."""

    def __init__(self, case: Case) -> None:
        self._case = case
        self.calls: list[tuple[str, str, tuple[Message, ...]]] = []

    def first_budget(self, need: int) -> int:
        return need

    def raised_budget(self, previous: int) -> int | None:
        return None

    def failed_before(self) -> bool:
        return False

    def note_unusable(self) -> None:
        raise AssertionError("every scripted reply here is a usable answer")

    def input_tokens(self, output_budget: int) -> int:
        return self._case.input_tokens

    async def call(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema | None = None,
    ) -> CompletionResult:
        self.calls.append((kind, system, tuple(messages)))
        listed = re.findall(r"Label exactly these messages: ([^\n]*)\.", messages[0].text)
        ids = [part.strip() for part in listed[-1].split(",")] if listed and listed[-1] != "(none)" else []
        labels = [{"msg": uid, "label": "rule" if uid in self._case.rules else "not a rule"} for uid in ids]
        text = json.dumps({"labels": labels, "narrative": "Worked through the checks.", "now": "Continue."})
        return CompletionResult(text=text, stop_reason="stop", raw_stop=None, usage=Usage(10, 5))
