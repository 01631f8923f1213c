"""One continuing conversation with the model (TURNS-2): its messages, its room, and one turn with ``show``.

A turn is one user message and what follows until the model answers: each ``show`` call is answered in the
next user turn (TURNS-7, TURNS-8). After :data:`~longhaul_daemon.passes.turns.show.SHOW_CAP` calls the model
is asked to answer (``tool_choice`` ``none``); later calls get error results, and after
:data:`MAX_CALLS_A_TURN` the turn ends as a tool loop. Every call of a turn shares its budget (TURNS-15).

Every later turn resends what the model wrote, so it is kept bounded (ours): an answer as the assistant's
text whatever form it came in, so no provider sees a call without its result; a reply with no answer as its
first 600 characters; at most :data:`CALLS_KEPT` calls (the next turn says how many were dropped), each
under a daemon-given id (``show_1``, …), named ``show`` or :data:`UNKNOWN_TOOL`, its arguments cut to
``{"ref": …}`` of at most :data:`~longhaul_daemon.passes.turns.show.MAX_REF` characters.

The room is the context window less an answer's output budget (:class:`TurnsModel`), in characters of the
JSON request body: a turn that would not fit is not sent (:class:`ContextFull`), ``show`` results are cut.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Final, Protocol

from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.completion import CompletionResult
from longhaul_daemon.models.request import Message
from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.models.tool_calls import ToolCall, ToolChoice, ToolResult, ToolSpec
from longhaul_daemon.offload import THREADS, Offload
from longhaul_daemon.passes.answers.schema import ReplyForm
from longhaul_daemon.passes.turns.sections import Section, find_section, wants
from longhaul_daemon.passes.turns.show import MAX_REF, SHOW_CAP, SHOW_TOOL, ShowIndex, run_show

__all__ = [
    "CALLS_KEPT",
    "MAX_CALLS_A_TURN",
    "UNKNOWN_TOOL",
    "ContextFull",
    "Conversation",
    "TurnReply",
    "TurnsModel",
]

MAX_CALLS_A_TURN = SHOW_CAP + 2  # the cap's calls, one asked to answer, one more for a parallel call over it
CALLS_KEPT: Final = MAX_CALLS_A_TURN  # calls of one reply kept in the conversation, each with its result
UNKNOWN_TOOL: Final = "unknown_tool"  # the name a call of any tool but show is kept under
_REPLY_KEPT = 8000  # characters of an answered reply kept in the conversation
_UNANSWERED_KEPT = 600  # of a reply with no answer: enough for the model to see what the repair is about
_ANSWER_RESERVE = 2000  # characters kept free for the turn's own answer when a show result is cut to fit
_SIGNATURE_CHARS = 64 * 1024  # a Gemini signature longer than this is dropped rather than resent every turn


class ContextFull(Exception):
    """The next turn would not fit in the model's context window."""


class TurnsModel(Protocol):
    """The model turns mode talks to, with routing, retries and the pass's traces behind it."""

    def turn_budget(self, need: int) -> int:
        """The output budget of a turn whose answer can need ``need`` tokens, capped at ``maxTokens``."""
        ...

    def raised_budget(self, previous: int) -> int | None:
        """FAIL-7: the budget after a reply cut off with nothing usable, or None when it cannot rise."""
        ...

    def input_tokens(self, output_budget: int) -> int:
        """How many tokens the whole conversation may take with ``output_budget`` kept for the answer."""
        ...

    def note_unusable(self) -> None:
        """A reply of the model now called held no usable answer."""
        ...

    def request_chars(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        schema: OutputSchema,
        tools: tuple[ToolSpec, ...],
        tool_choice: ToolChoice,
        max_output_tokens: int,
    ) -> int:
        """How many characters the call would put on the wire to the model now called."""
        ...

    async def converse(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema,
        tools: tuple[ToolSpec, ...],
        tool_choice: ToolChoice,
        stop_at: Callable[[dict[str, Any]], bool],
        budget: Budget,
    ) -> CompletionResult:
        """One call; raises ``ModelCallError``, or :class:`TurnsUnavailable` when the route cannot carry
        the tool."""
        ...


@dataclass(frozen=True)
class TurnReply:
    """How a turn ended: the last reply, the section's answer in it (None when there was none), its form.

    ``tool_loop``: the turn used all its calls and the model was still calling tools, never answering.
    """

    result: CompletionResult | None
    answer: dict[str, Any] | None
    form: ReplyForm
    shows: int = 0
    tool_loop: bool = False


def _kept_arguments(call: ToolCall) -> dict[str, Any]:
    """A call's arguments as the conversation keeps them: ``{"ref": …}`` cut to a ref's longest length."""
    ref = call.arguments.get("ref") if call.name == SHOW_TOOL.name else None
    return {"ref": ref[:MAX_REF]} if isinstance(ref, str) else {}


class Conversation:
    """The messages so far and how to add one turn to them."""

    def __init__(
        self,
        model: TurnsModel,
        *,
        system: str,
        index: ShowIndex,
        budget: Budget,
        turn_seconds: float,
        room_chars: int,
        offload: Offload = THREADS,
    ) -> None:
        self.model = model
        self.system = system
        self.index = index
        self.budget = budget
        self.turn_seconds = turn_seconds
        self.room = room_chars
        self.offload = offload
        self.messages: list[Message] = []
        self.shows = 0
        self.calls_dropped = 0  # calls past CALLS_KEPT in one reply, never answered or kept
        self._call_ids = 0

    def say(self, text: str) -> None:
        """A user message; one right after tool results joins their turn, so roles alternate."""
        if self.messages and self.messages[-1].role == "user":
            last = self.messages[-1]
            joined = f"{last.text}\n\n{text}" if last.text else text
            self.messages[-1] = Message("user", joined, tool_results=last.tool_results)
        else:
            self.messages.append(Message("user", text))

    def _turn_budget(self) -> Budget:
        deadline = min(self.budget.deadline, self.budget.now() + self.turn_seconds)
        return Budget(deadline, clock=self.budget.now)

    def _kept(self, call: ToolCall) -> ToolCall:
        """``call`` as the conversation keeps and resends it: the daemon's id, a known name, bounded
        arguments (the module docstring)."""
        self._call_ids += 1
        name = SHOW_TOOL.name if call.name == SHOW_TOOL.name else UNKNOWN_TOOL
        signature = call.signature if call.signature and len(call.signature) <= _SIGNATURE_CHARS else None
        return ToolCall(f"show_{self._call_ids}", name, _kept_arguments(call), signature)

    async def turn(
        self, section: Section, text: str, *, kind: str, max_output_tokens: int, schema: OutputSchema
    ) -> TurnReply:
        """Ask ``text`` and run the turn to its answer (or its end without one)."""
        self.say(text)
        budget = self._turn_budget()
        used = 0
        result: CompletionResult | None = None
        for step in range(MAX_CALLS_A_TURN):
            choice: ToolChoice = "auto" if used < SHOW_CAP else "none"
            size = partial(
                self.model.request_chars,
                self.system,
                schema=schema,
                tools=(SHOW_TOOL,),
                tool_choice=choice,
                max_output_tokens=max_output_tokens,
            )
            if size(self.messages) > self.room:
                raise ContextFull()
            result = await self.model.converse(
                self.system,
                tuple(self.messages),
                kind=kind if step == 0 else f"{kind}-after-show",
                max_output_tokens=max_output_tokens,
                schema=schema,
                tools=(SHOW_TOOL,),
                tool_choice=choice,
                stop_at=wants(section),
                budget=budget,
            )
            found = partial(find_section, result.text, section)  # a reply may be far larger than the span
            answer, form = await self.offload.sized(len(result.text)).run(found)
            if answer is not None or not result.tool_calls:
                limit = _REPLY_KEPT if answer is not None else _UNANSWERED_KEPT
                cut = "…" if len(result.text) > limit else ""
                kept = result.text[:limit] + cut or "(empty reply)"
                self.messages.append(Message("assistant", kept))
                return TurnReply(result, answer, form, used)
            calls = result.tool_calls[:CALLS_KEPT]
            kept_calls = tuple(self._kept(call) for call in calls)
            self.messages.append(Message("assistant", result.text[:_REPLY_KEPT], tool_calls=kept_calls))
            results: list[ToolResult] = []
            room = self.room - size(self.messages) - _ANSWER_RESERVE
            for call, kept_call in zip(calls, kept_calls, strict=True):
                shown = run_show(call, self.index, used=used, room_chars=room // 2)  # escapes may double it
                results.append(replace(shown, call_id=kept_call.id, name=kept_call.name))
                room -= 2 * len(shown.text)
                used += 1
            dropped = len(result.tool_calls) - len(calls)
            used += dropped
            self.shows += len(results)
            self.calls_dropped += dropped
            note = (
                f"{dropped} more calls in your reply were not run: at most {SHOW_CAP} calls a turn."
                if dropped
                else ""
            )
            self.messages.append(Message("user", note, tool_results=tuple(results)))
        return TurnReply(result, None, "none", used, tool_loop=result is not None and bool(result.tool_calls))
