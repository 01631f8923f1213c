"""The state Longhaul carries from compaction to compaction, as pydantic models (format 1).

Everything here is plain data: the fold builds it from transcript entries, the pass updates it, the renderer
turns it into the summary. It is stored whole in every Longhaul compaction's ``details`` (FORMAT-7), so field
names are part of the on-disk format: add fields with defaults, never rename.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "NOTE_KINDS",
    "STATE_FORMAT",
    "CarriedMessage",
    "Command",
    "Commit",
    "DirtyPath",
    "ErrorEntry",
    "Item",
    "Note",
    "Rule",
    "State",
    "Value",
    "WorkLogLine",
    "World",
]

STATE_FORMAT = 1
NOTE_KINDS = ("decision", "dead-end", "value", "note")  # TOOLS-1; "note" when the agent names none

ExitCode = int | Literal["cancelled", "no result", "unknown"]
# partial (ours, FAIL-4): every chunk verified, but some offered messages got no label; only those are carried
ClosedAs = Literal["whole", "partial", "narrative-less", "chunk-missing", "empty"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Command(_Model):
    """One command the agent or the user ran (LEDGER-1, LEDGER-7)."""

    id: str  # "C12"
    text: str
    exit: ExitCode
    span: int
    entryId: str | None = None
    toolCallId: str | None = None


class ErrorEntry(_Model):
    """One error seen in a span (LEDGER-4, LEDGER-7)."""

    id: str  # "E3"
    tool: str
    text: str
    command: str | None = None  # the C<n> it came from
    span: int
    entryId: str | None = None
    toolCallId: str | None = None
    open: bool = True


class Commit(_Model):
    """One git commit as the snapshot shows it: hash and subject."""

    hash: str
    subject: str


class DirtyPath(_Model):
    """One uncommitted path with its ``git status`` code."""

    status: str
    path: str


class World(_Model):
    """A read-only snapshot of the git workspace at one pass (WORLD-7)."""

    status: Literal["repository", "no-repository", "unavailable"]
    branch: str | None = None  # "detached" when HEAD is detached
    head: Commit | None = None
    earlier: list[Commit] = Field(default_factory=list)
    dirtyCount: int | None = None
    dirty: list[DirtyPath] = Field(default_factory=list)
    behind: int | None = None
    ahead: int | None = None
    missing: list[str] = Field(default_factory=list)  # fields that could not be read, by name
    commandsRun: int = 0
    commandsFailed: int = 0
    durationMs: int = 0


class Rule(_Model):
    """A standing rule in the user's own words."""

    id: str  # "R3"
    words: str
    message: str  # "u7"
    seq: int
    span: int
    lifted: bool = False
    liftedBy: str | None = None  # the u<n> that withdrew it
    replacedBy: str | None = None  # the R<n> that replaced it, when the withdrawal gave a rule (LABEL-14)
    liftSeq: int | None = None  # the lift event's sequence number (LIFT-9)
    # Code's second look (passes/answers/doubts.py): why code doubts the model's label, if it does, and a
    # later message code reads as withdrawing the rule that was not lifted, with the user's words.
    doubt: Literal["model-read-one-off", "may-be-standing", "reads-as-request"] | None = None
    possiblyWithdrawnBy: str | None = None
    withdrawalWords: str | None = None


class Item(_Model):
    """A decision or a dead end, with the ledger ids that back it."""

    text: str
    evidence: list[str] = Field(default_factory=list)
    seq: int
    span: int
    why: str | None = None  # a decision's reason, as the Diff gave it


class Value(_Model):
    """A value the session relies on, verbatim, with what it is and the turn that gave it."""

    value: str
    what: str
    turn: str
    seq: int
    span: int


class Note(_Model):
    """A note the agent handed to the next pass with ``longhaul_remember``; never a user rule."""

    text: str
    seq: int
    entryId: str | None = None
    kind: str | None = None  # the agent's hint (decision, dead-end, value, note); the Diff decides (TOOLS-3)


class CarriedMessage(_Model):
    """A carried user message (FAIL-11), kept so the summary shows the user's own words until it is labeled.

    The next pass reads the whole message from the branch; this copy only feeds the summary, so it is cleaned
    and cut (``chars`` is the whole message's length, so the summary can say what it left out). A message a
    verified chunk labeled is carried all the same when its span closed with a chunk missing (FAIL-12); it
    is ``labeled``, keeps no text, and the summary does not show it.
    """

    id: str  # "u12"
    text: str
    chars: int
    labeled: bool = False
    # ours: a later message that may withdraw it, read as a rule (passes/answers/doubts.py), and its words
    possiblyWithdrawnBy: str | None = None
    withdrawalWords: str | None = None
    # ours (QUOTE-4): a long message a pass labeled `rule` whose words never verified is carried and offered
    # again (`unconfirmed`); labeled otherwise by a later pass, it is kept verbatim and not offered again
    # (`disputed`), so a rule the user gave is not lost to one label of a weak model
    readAsRule: Literal["unconfirmed", "disputed"] | None = None


class WorkLogLine(_Model):
    """One closed span's line of the work log: how it closed and what it did."""

    span: int
    closedAs: ClosedAs
    text: str
    reason: str | None = None
    passId: str


class State(_Model):
    """The whole carried state after some span closed."""

    stateFormat: int = STATE_FORMAT
    span: int = 0  # the number of the newest span closed into this state
    seq: int = 0  # the highest sequence number handed out
    nextRule: int = 1
    nextCommand: int = 1
    nextError: int = 1
    objective: str | None = None
    now: str | None = None
    rules: list[Rule] = Field(default_factory=list)
    decisions: list[Item] = Field(default_factory=list)
    deadEnds: list[Item] = Field(default_factory=list)
    values: list[Value] = Field(default_factory=list)
    notes: list[Note] = Field(default_factory=list)
    commands: list[Command] = Field(default_factory=list)
    errors: list[ErrorEntry] = Field(default_factory=list)
    readFiles: list[str] = Field(default_factory=list)
    modifiedFiles: list[str] = Field(default_factory=list)
    world: World | None = None
    workLog: list[WorkLogLine] = Field(default_factory=list)
    # u<n> ids never labeled, offered to the next pass (FAIL-11)
    carried: list[str] = Field(default_factory=list)
    # one entry per carried message, in the same order: their words, for the summary
    carriedMessages: list[CarriedMessage] = Field(default_factory=list)
    lastWholeSpan: int = 0
