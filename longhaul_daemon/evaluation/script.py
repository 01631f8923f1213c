"""A recorded transcript turned into what a replay does: prompts, user commands and compactions, in order.

The replay drives pi the way the user did (REPLAY-1): each user message becomes an RPC ``prompt`` whose
model answers are the recorded assistant messages of that turn; each ``!command`` becomes an RPC ``bash``
whose output is the recorded one; each compaction entry becomes an RPC ``compact`` at the same place
(REPLAY-3). Tool results are collected by tool-call id, so the stand-in tools can answer every call with what
was recorded instead of running it (REPLAY-2). What pi cannot be made to do again (assistant messages with no
user message before them, extension messages, a compaction right after another) is counted as skipped.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from longhaul_daemon.evaluation.recorded_compactions import message_of, text_of

__all__ = [
    "DEFAULT_KEEP_RECENT_TOKENS",
    "BashResult",
    "RecordedCall",
    "RecordedReply",
    "ReplayScript",
    "Step",
    "build_script",
    "estimate_tokens",
]

DEFAULT_KEEP_RECENT_TOKENS = 20_000  # pi's own default, for a recording with no compaction to learn from

StepKind = Literal["prompt", "bash", "compact"]


@dataclass(frozen=True)
class RecordedCall:
    """A tool call as the transcript recorded it."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class RecordedReply:
    """One recorded assistant message, as the fake model will stream it again."""

    text: str = ""
    thinking: str = ""
    calls: tuple[RecordedCall, ...] = ()
    stop: str = "stop"  # stop, toolUse, length, error, aborted


@dataclass(frozen=True)
class BashResult:
    """One recorded output of a ``!`` bash command."""

    output: str
    exit_code: int


@dataclass
class Step:
    """One thing the replay does: send a prompt, run a bash command, or compact."""

    kind: StepKind
    text: str = ""  # prompt: the user's text; bash: the command
    images: list[dict[str, Any]] = field(default_factory=list)
    replies: list[RecordedReply] = field(default_factory=list)


@dataclass
class ReplayScript:
    """A transcript turned into steps, with the recorded tool and bash results to play back."""

    steps: list[Step] = field(default_factory=list)
    tool_results: dict[str, dict[str, Any]] = field(default_factory=dict)  # toolCallId -> result
    bash_results: dict[str, list[BashResult]] = field(default_factory=dict)  # command -> outputs in order
    skipped: int = 0
    keep_recent_tokens: int = DEFAULT_KEEP_RECENT_TOKENS

    @property
    def compactions(self) -> int:
        """How many compactions the script asks for."""
        return sum(1 for s in self.steps if s.kind == "compact")

    @property
    def prompts(self) -> int:
        """How many prompts the script sends."""
        return sum(1 for s in self.steps if s.kind == "prompt")

    @property
    def tool_names(self) -> list[str]:
        """The tools the recorded results came from, sorted."""
        return sorted({str(r["toolName"]) for r in self.tool_results.values()})


def estimate_tokens(message: Mapping[str, Any]) -> int:
    """pi's ``estimateTokens``: characters / 4, rounded up, over what the message sends (pi-api.md §2.2)."""
    role = message.get("role")
    content = message.get("content")
    chars = 0
    if role == "user":
        chars = len(text_of(content))
    elif role == "assistant" and isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text":
                chars += len(str(block.get("text") or ""))
            elif block.get("type") == "thinking":
                chars += len(str(block.get("thinking") or ""))
            elif block.get("type") == "toolCall":
                chars += len(str(block.get("name") or "")) + len(
                    json.dumps(block.get("arguments"), separators=(",", ":"), ensure_ascii=False)
                )
    elif role in ("toolResult", "custom"):
        chars = len(text_of(content))
        if isinstance(content, list):
            chars += 4800 * sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")
    elif role == "bashExecution":
        chars = len(str(message.get("command") or "")) + len(str(message.get("output") or ""))
    return -(-chars // 4)


def _reply(message: Mapping[str, Any]) -> RecordedReply:
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[RecordedCall] = []
    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
        elif kind == "toolCall" and isinstance(block.get("id"), str) and isinstance(block.get("name"), str):
            arguments = block.get("arguments")
            calls.append(
                RecordedCall(block["id"], block["name"], arguments if isinstance(arguments, dict) else {})
            )
    stop = message.get("stopReason")
    return RecordedReply(
        text="\n".join(texts),
        thinking="\n".join(thinking),
        calls=tuple(calls),
        stop=stop if isinstance(stop, str) else "stop",
    )


def _images(content: object) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return []
    return [
        {"type": "image", "data": b["data"], "mimeType": b["mimeType"]}
        for b in content
        if isinstance(b, dict)
        and b.get("type") == "image"
        and isinstance(b.get("data"), str)
        and isinstance(b.get("mimeType"), str)
    ]


def _kept_ranges(branch: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """For each compaction, the keepRecentTokens values that put pi's cut where the recording has it:
    (exclusive low, inclusive high), from the estimated tokens of the kept messages (findCutPoint)."""
    position_of = {e.get("id"): p for p, e in enumerate(branch) if isinstance(e.get("id"), str)}
    ranges: list[tuple[int, int]] = []
    for position, entry in enumerate(branch):
        if entry.get("type") != "compaction":
            continue
        kept = position_of.get(entry.get("firstKeptEntryId"))
        if kept is None or kept >= position:
            continue
        sizes = [
            estimate_tokens(e["message"])
            for e in branch[kept:position]
            if e.get("type") == "message" and isinstance(e.get("message"), dict)
        ]
        if sizes:
            total = sum(sizes)
            ranges.append((total - sizes[0], total))
    return ranges


def keep_recent_tokens(branch: Sequence[Mapping[str, Any]]) -> int:
    """One keepRecentTokens for the whole replay: one that reproduces every recorded cut when there is one,
    else the median kept window (pi reads the setting once, so it cannot change between compactions)."""
    ranges = _kept_ranges(branch)
    if not ranges:
        return DEFAULT_KEEP_RECENT_TOKENS
    low = max(lo for lo, _ in ranges)
    high = min(hi for _, hi in ranges)
    if low < high:
        return max(high, 1)
    return max(int(statistics.median(hi for _, hi in ranges)), 1)


def build_script(branch: Sequence[Mapping[str, Any]]) -> ReplayScript:
    """The replay of ``branch`` (root first), step by step."""
    script = ReplayScript(keep_recent_tokens=keep_recent_tokens(branch))
    turn: Step | None = None
    for entry in branch:
        kind = entry.get("type")
        if kind == "compaction":
            turn = None
            if script.steps and script.steps[-1].kind == "compact":
                script.skipped += 1  # pi refuses to compact right after a compaction
            else:
                script.steps.append(Step("compact"))
            continue
        message = message_of(entry)
        if message is None:
            continue
        role = message.get("role")
        if role == "user":
            turn = Step(
                "prompt", text=text_of(message.get("content")), images=_images(message.get("content"))
            )
            script.steps.append(turn)
        elif role == "assistant":
            if turn is None:
                script.skipped += 1
            else:
                turn.replies.append(_reply(message))
        elif role == "toolResult" and isinstance(message.get("toolCallId"), str):
            script.tool_results[message["toolCallId"]] = {
                "toolName": str(message.get("toolName") or "unknown"),
                "content": message.get("content") if isinstance(message.get("content"), list) else [],
                "details": message.get("details"),
                "isError": message.get("isError") is True,
            }
        elif role == "bashExecution" and isinstance(message.get("command"), str):
            turn = None
            if message.get("excludeFromContext") is True:
                # A ``!!command``: RPC bash cannot keep one out of the model's view, so it is not replayed.
                script.skipped += 1
                continue
            command = message["command"]
            code = message.get("exitCode")
            exit_code = code if type(code) is int else (130 if message.get("cancelled") else 0)
            raw_output = message.get("output")
            output = raw_output if isinstance(raw_output, str) else ""
            script.bash_results.setdefault(command, []).append(BashResult(output, exit_code))
            script.steps.append(Step("bash", text=command))
        else:
            script.skipped += 1  # an extension's message: pi will not send it again on its own
    return script
