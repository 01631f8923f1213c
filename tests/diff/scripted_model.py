"""A scripted model and span builders for the tests that run the real Diff stage (:func:`run_diff`).

The model is the edge of the world for the Diff: :class:`ScriptedModel` hands out canned replies in order and
records each call's kind, output budget, messages and schema, so a test sees exactly what the stage asked and
when. Kept here so the stage tests and the worked examples drive the one stage the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from longhaul_daemon.models.call_errors import ModelCallError
from longhaul_daemon.models.completion import CompletionResult, StopReason, Usage
from longhaul_daemon.models.request import Message
from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.passes.diff.diff_stage import DiffInputs, DiffResult, run_diff
from longhaul_daemon.passes.model_calls import first_budget, raised_budget
from longhaul_daemon.passes.prompting.planning import answer_tokens
from longhaul_daemon.state.model import State
from longhaul_daemon.transcript.messages import SpanMessage, user_text


@dataclass
class Call:
    """One call the stage made: its kind, output budget, messages and answer schema."""

    kind: str
    budget: int
    messages: tuple[Message, ...]
    schema: OutputSchema | None = None
    system: str = ""

    @property
    def last_user(self) -> str:
        return next(m.text for m in reversed(self.messages) if m.role == "user")


Reply = str | tuple[str, StopReason] | ModelCallError


class ScriptedModel:
    """A :class:`~longhaul_daemon.passes.diff.diff_stage.DiffModel` that replies in order; a
    ``ModelCallError`` in the script is raised for that call, and a call past the end fails the test."""

    def __init__(
        self,
        *replies: Reply,
        max_tokens: int | None = 16_384,
        input_tokens: int = 100_000,
        failed_before: bool = False,
    ) -> None:
        self.replies = list(replies)
        self.calls: list[Call] = []
        self._max_tokens = max_tokens
        self._input_tokens = input_tokens
        self._failed_before = failed_before
        self.unusable = 0

    def first_budget(self, need: int) -> int:
        return first_budget(need, self._max_tokens)

    def failed_before(self) -> bool:
        return self._failed_before or self.unusable > 0

    def note_unusable(self) -> None:
        self.unusable += 1

    def raised_budget(self, previous: int) -> int | None:
        return raised_budget(previous, self._max_tokens)

    def input_tokens(self, output_budget: int) -> int:
        return self._input_tokens

    async def call(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema | None = None,
    ) -> CompletionResult:
        self.calls.append(Call(kind, max_output_tokens, tuple(messages), schema, system))
        if not self.replies:
            raise AssertionError(f"unexpected {kind} call")
        reply = self.replies.pop(0)
        if isinstance(reply, ModelCallError):
            raise reply
        text, stop = reply if isinstance(reply, tuple) else (reply, "stop")
        return CompletionResult(text=text, stop_reason=stop, raw_stop=None, usage=Usage(10, 5))


def user(uid: str, text: str) -> SpanMessage:
    """A span user message ``uid`` whose content is plain text."""
    return SpanMessage(
        entry_id=f"e-{uid}", role="user", message={"role": "user", "content": text}, user_id=uid
    )


def assistant(text: str) -> SpanMessage:
    """A span assistant message holding ``text``."""
    message: dict[str, Any] = {"role": "assistant", "content": [{"type": "text", "text": text}]}
    return SpanMessage(entry_id=None, role="assistant", message=message)


def answer(labels: dict[str, str | tuple[str, str]], **fields: Any) -> str:
    """An answer in the DIFF-5 shape: a label per message (``(label, words)`` gives words) and ``fields``."""
    items = []
    for msg, label in labels.items():
        if isinstance(label, tuple):
            items.append({"msg": msg, "label": label[0], "words": label[1]})
        else:
            items.append({"msg": msg, "label": label})
    body = {"labels": items, "narrative": "Worked on the span.", "now": "Next: continue.", **fields}
    return json.dumps(body)


def inputs(span: list[SpanMessage], state: State | None = None, **kw: Any) -> DiffInputs:
    """The Diff's inputs for ``span`` over ``state`` with an empty ledger."""
    return DiffInputs(state=state or State(), span=span, commands=(), errors=(), **kw)


SPAN = [user("u1", "Never add new dependencies."), assistant("Understood."), user("u2", "Fix the bug.")]
SPAN_NEED = answer_tokens(
    [len(user_text(m.message)) for m in SPAN if m.role == "user"], open_errors=0, cites_ledger=False
)


async def run(span: list[SpanMessage], model: ScriptedModel, **kw: Any) -> DiffResult:
    """The real Diff stage over ``span`` with ``model``; ``kw`` go to :func:`inputs`."""
    return await run_diff(inputs(span, **kw), model)
