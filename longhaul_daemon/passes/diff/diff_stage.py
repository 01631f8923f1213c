"""The Diff stage: ask the model about each chunk, let code verify, and hand Close only what verified.

Per chunk (DIFF-1) one call, budgeted to what its answer can need (DIFF-19). A reply cut off at the limit
that is empty or began the answer is asked again once with a raised budget (FAIL-7). Format defects earn one
retry with a note (FAIL-1); the answer with fewer defects wins, the retry on a tie (FAIL-2). The questions
an answer raises go out in one extra call (LIFT-10..18, FAIL-5, FAIL-6), never after a call that threw
(LIFT-17). Our policy, since retries are paid for: a reply with no answer-shaped object (none, or an echo)
closes the chunk ``unparsable-answer`` without a retry, as asking again did not help; and once the model in
use has given no usable answer in this session, a chunk gets at most one retry of either kind.

When every defect is a missing label, or every one a rule's words, the retry is a short call instead
(:mod:`.label_call`, :mod:`.words_call`). A chunk that never parsed adds nothing to the State (DIFF-13) and
its user messages are carried (FAIL-12); when no chunk verifies the span closes narrative-less (FAIL-10,
FAIL-19). Ours for FAIL-4: messages a verified answer still leaves unlabeled are held back, the rest counts,
and the span closes ``partial``, carrying only those messages, with their words. Model errors end a chunk,
never the pass: only a bug or cancellation escapes, and the RPC layer turns it into pi's own compaction
(FAIL-13). Planning, prompts and verification run in a worker thread so the loop keeps serving (PASS-21).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Protocol

from longhaul_daemon.models.call_errors import BudgetExceeded, ModelCallError, RateLimited
from longhaul_daemon.models.completion import CompletionResult
from longhaul_daemon.models.request import Message
from longhaul_daemon.models.structured import OutputSchema
from longhaul_daemon.offload import Offload
from longhaul_daemon.passes.answers.call_schemas import (
    answer_schema,
    label_call_schema,
    lift_targets,
    question_schema,
)
from longhaul_daemon.passes.answers.events import ChunkContext, ChunkEvents, Evaluation
from longhaul_daemon.passes.answers.extract import Defect, ParsedAnswer, parse_answer, salvage
from longhaul_daemon.passes.answers.questions import question_block, read_question_reply, with_additions
from longhaul_daemon.passes.answers.verify import evaluate
from longhaul_daemon.passes.diff.label_call import label_call_prompt, missing_labels_only, with_labels
from longhaul_daemon.passes.diff.words_call import (
    rule_words_only,
    with_words,
    words_call_prompt,
    words_call_schema,
)
from longhaul_daemon.passes.prompting.chunks import CHARS_PER_TOKEN
from longhaul_daemon.passes.prompting.instructions import (
    LABEL_SYSTEM_PROMPT,
    QUESTION_SYSTEM_PROMPT,
    WORDS_SYSTEM_PROMPT,
)
from longhaul_daemon.passes.prompting.planning import (
    DiffInputs,
    chunk_tokens,
    plan_diff,
    prepare_chunk,
    span_tokens,
)
from longhaul_daemon.passes.prompting.prompt import Prompt
from longhaul_daemon.passes.prompting.retry_prompts import question_prompt, retry_note
from longhaul_daemon.state.model import ClosedAs

__all__ = ["UNLABELED", "DiffInputs", "DiffModel", "DiffResult", "run_diff"]

UNLABELED = "unlabeled-messages"  # the reason of a partial close (FAIL-4, ours)
SALVAGED = "cut-reply-tail"  # dropped: a cut answer's tail after its last whole part (FAIL-7, ours)
_REPLY_SHOWN = 8000  # how much of a flawed reply the retry shows back to the model, in characters


class DiffModel(Protocol):
    """The model the Diff talks to, with routing, retries and the pass budget behind it."""

    def first_budget(self, need: int) -> int:
        """DIFF-19: the first call's output budget for an answer that can need ``need`` tokens (capped)."""
        ...

    def raised_budget(self, previous: int) -> int | None:
        """FAIL-7: the budget after a cut-off reply, or None when it cannot be raised."""
        ...

    def input_tokens(self, output_budget: int) -> int:
        """How many prompt tokens one call may carry with ``output_budget`` left for the answer."""
        ...

    def failed_before(self) -> bool:
        """Whether the model now called gave a reply with no usable answer earlier in this session."""
        ...

    def note_unusable(self) -> None:
        """A reply of the model now called held no usable answer."""
        ...

    async def call(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema | None = None,
    ) -> CompletionResult:
        """One logical call; raises ``ModelCallError`` when it gives up. ``schema``: the answer schema for
        this call (its labels held to the messages asked about), sent where the route takes it."""
        ...


@dataclass(frozen=True)
class DiffResult:
    """How the span closes and the verified events of each chunk that verified, in chunk order."""

    closed_as: ClosedAs
    reason: str | None
    narrative: str | None = None
    chunks: tuple[ChunkEvents, ...] = ()
    chunk_count: int = 0
    dropped: dict[str, int] = field(default_factory=dict)
    held: tuple[str, ...] = ()  # messages verified chunks left unlabeled, carried with their words


@dataclass
class _ChunkRun:
    """One chunk's outcome: its events when it verified, else why not."""

    events: ChunkEvents | None = None
    failure: str | None = None
    held: tuple[str, ...] = ()  # offered messages the verified answer left unlabeled (FAIL-4, ours)


def _failure_code(error: ModelCallError) -> str:
    if isinstance(error, RateLimited):
        return "rate-limited"  # the provider's 429 asked for a wait past the budget
    return "budget-exhausted" if isinstance(error, BudgetExceeded) else "model-error"


class _Chunk:
    """The calls of one chunk, in the order FAIL-1, FAIL-2, FAIL-7 and LIFT-10..18 give them."""

    def __init__(
        self,
        model: DiffModel,
        prompt: Prompt,
        ctx: ChunkContext,
        lifts: Mapping[str, Sequence[str]],
        offload: Offload,
    ) -> None:
        self._model = model
        self._offload = offload
        self._prompt = prompt
        self._ctx = ctx
        self._budget = model.first_budget(chunk_tokens(ctx))
        self._raised = False
        self._strict = model.failed_before()  # at most one retry of either kind in this chunk
        self._retries = 0
        self._ids = [m.id for m in ctx.offered]
        self._lifts = lifts  # the lifts each message's label may name: code's reading (call_schemas)
        shown = (
            None if prompt.ledger_shown is None else [i for i in prompt.ledger_shown if i in ctx.ledger_ids]
        )
        self._schema = answer_schema(
            ctx.offered, lifts=lifts, optional=ctx.label_optional, ledger_shown=shown
        )

    async def _parse(self, text: str) -> ParsedAnswer:
        """The reply read as an answer; off the loop for a big pass, since a big span's answer is big too."""
        read = partial(
            parse_answer,
            text,
            self._ids,
            self._ctx.ledger_ids,
            rules=self._ctx.rules,
            label_optional=self._ctx.label_optional,
        )
        return await self._offload.run(read)

    def _may_retry(self) -> bool:
        return not self._strict or self._retries == 0

    async def _call(self, messages: Sequence[Message], kind: str) -> tuple[CompletionResult, ParsedAnswer]:
        result = await self._model.call(
            self._prompt.system, messages, kind=kind, max_output_tokens=self._budget, schema=self._schema
        )
        parsed = await self._parse(result.text)
        if not parsed.parsed and result.cut_off and parsed.form == "begun" and self._last_room(kind, result):
            parsed = await self._salvaged(result.text, parsed)
        if not parsed.parsed:
            self._model.note_unusable()
        return result, parsed

    def _last_room(self, kind: str, result: CompletionResult) -> bool:
        """Whether a cut reply of this call gets no more room: FAIL-7's raise is spent or impossible, or the
        reply was ended at a loop inside a string, which more room would only write longer (ours)."""
        if result.looped:
            return True
        return kind == "raised-budget" or self._raised or self._model.raised_budget(self._budget) is None

    async def _salvaged(self, text: str, parsed: ParsedAnswer) -> ParsedAnswer:
        """Ours, after FAIL-7: a begun answer cut at the last room it gets, cut back to its last whole part;
        taken only when its labels and prose came (:func:`~.extract.salvage`), else ``parsed`` stands."""
        closed = await self._offload.run(partial(salvage, text))
        if closed is None:
            return parsed
        kept = await self._parse(closed)
        if not kept.parsed:
            return parsed
        dropped = Counter(kept.dropped)
        dropped[SALVAGED] += 1  # what came after the last whole part is lost, and counted
        return replace(kept, dropped=dict(dropped))

    async def _ask(self, messages: Sequence[Message], kind: str) -> tuple[CompletionResult, ParsedAnswer]:
        """One call; a reply cut off with nothing usable is asked again, budget raised (FAIL-7, FAIL-8),
        unless it was ended at a loop (salvaged in :meth:`_call` instead)."""
        result, parsed = await self._call(messages, kind)
        if parsed.parsed or not result.cut_off or self._raised or not self._may_retry():
            return result, parsed
        if result.looped:
            return result, parsed  # ended at a loop inside a string: more room only buys more of the loop
        if parsed.form != "begun" and result.text.strip():
            return result, parsed  # prose or an echo ran to the cap: more room only buys more of it
        raised = self._model.raised_budget(self._budget)
        if raised is None:
            return result, parsed
        self._raised = True
        self._retries += 1
        self._budget = raised
        return await self._call(messages, "raised-budget")

    async def run(self) -> _ChunkRun:
        first_messages = (Message("user", self._prompt.user),)
        try:
            reply, parsed = await self._ask(first_messages, "first")
        except ModelCallError as error:
            return _ChunkRun(failure=_failure_code(error))
        first = await self._offload.run(partial(evaluate, parsed, self._ctx, final=False))
        settled, threw = parsed, False
        # A begun answer cut at the output limit is retried with more room (FAIL-7, in _ask) or not at all:
        # a format note at the same limit, on a longer prompt, is cut again.
        # So is a salvaged one (cut back after the cap): its defects would meet the same limit again.
        salvaged = SALVAGED in parsed.dropped
        fixable = (
            bool(first.defects) and not salvaged
            if parsed.parsed
            else parsed.form == "begun" and not reply.cut_off
        )
        unlabeled = missing_labels_only(first.defects) if parsed.parsed else ()
        unquoted = rule_words_only(first.defects) if parsed.parsed and not salvaged else ()
        if unlabeled and self._may_retry():
            self._retries += 1  # FAIL-1, ours: the one retry asks for the missing labels alone
            settled, threw = await self._label_call(parsed, unlabeled)
        elif unquoted and self._may_retry():
            self._retries += 1  # FAIL-1, ours: the one retry asks for the rule's words alone
            settled, threw = await self._words_call(parsed, unquoted, first.defects)
        elif fixable and self._may_retry():
            self._retries += 1
            note = retry_note(first.defects, self._ctx.retry_note_chars)  # parse defects included
            shown = reply.text[:_REPLY_SHOWN] or "(empty reply)"
            retry_messages = (*first_messages, Message("assistant", shown), Message("user", note))
            try:
                _, retried = await self._ask(retry_messages, "retry")
            except ModelCallError as error:
                threw = True
                if not parsed.parsed:
                    return _ChunkRun(failure=_failure_code(error))
            else:
                settled = await self._choose(parsed, first, retried)
        if not settled.parsed:
            return _ChunkRun(failure="unparsable-answer")
        final = await self._offload.run(partial(evaluate, settled, self._ctx, final=True))
        if final.questions and not threw:
            final = await self._question_round(settled, final)
        # FAIL-4, ours: messages still unlabeled are held back and carried with their words; the rest of the
        # answer verified and counts
        return _ChunkRun(events=final.events, held=final.unlabeled)

    async def _short_call(
        self, kind: str, system: str, user: str, schema: OutputSchema
    ) -> CompletionResult | None:
        """The one retry as a short call showing only what it asks about (``label_call``, ``words_call``);
        None when it threw, and the first answer stands (its unlabeled messages held back, its words decided
        by QUOTE-4 in verify.py)."""
        try:
            return await self._model.call(
                system, (Message("user", user),), kind=kind, max_output_tokens=self._budget, schema=schema
            )
        except ModelCallError:
            return None

    async def _label_call(self, first: ParsedAnswer, asked: Sequence[str]) -> tuple[ParsedAnswer, bool]:
        """The retry of an answer whose only defects are missing labels: the first answer with the labels
        the call gave joined to it, and whether the call threw."""
        wanted = set(asked)
        schema = label_call_schema([m for m in self._ctx.offered if m.id in wanted], lifts=self._lifts)
        prompt = label_call_prompt(asked, self._ctx)
        result = await self._short_call("label-retry", LABEL_SYSTEM_PROMPT, prompt, schema)
        return (first, True) if result is None else (with_labels(first, result.text, asked, self._ctx), False)

    async def _words_call(
        self, first: ParsedAnswer, asked: Sequence[str], defects: Sequence[Defect]
    ) -> tuple[ParsedAnswer, bool]:
        """The retry of an answer whose only defects are a rule's words: the first answer with the words
        the call gave in place of its own, and whether the call threw."""
        prompt = words_call_prompt(asked, self._ctx, defects)
        result = await self._short_call("words-retry", WORDS_SYSTEM_PROMPT, prompt, words_call_schema(asked))
        return (first, True) if result is None else (with_words(first, result.text, asked), False)

    async def _choose(self, kept: ParsedAnswer, kept_eval: Evaluation, retried: ParsedAnswer) -> ParsedAnswer:
        """FAIL-2: the parsed answer with fewer defects; the retry wins a tie; an unparsed retry loses."""
        if not retried.parsed:
            return kept
        if not kept.parsed:
            return retried
        retried_eval = await self._offload.run(partial(evaluate, retried, self._ctx, final=False))
        return kept if len(kept_eval.defects) < len(retried_eval.defects) else retried

    async def _question_round(self, settled: ParsedAnswer, final: Evaluation) -> Evaluation:
        """LIFT-12..LIFT-16, LIFT-18: one call for all questions; a reply can only add an asked target."""
        block, asked = question_block(final.questions, self._ctx.retry_note_chars)
        if not asked:
            return final
        asked_ids = {q.msg for q in asked}
        asked_messages = [(m.id, m.text) for m in self._ctx.offered if m.id in asked_ids]
        try:
            result = await self._model.call(
                QUESTION_SYSTEM_PROMPT,
                (Message("user", question_prompt(asked_messages, block)),),
                kind="question",
                max_output_tokens=self._budget,
                schema=question_schema([q.msg for q in asked]),
            )
        except ModelCallError:
            return final  # the settled answer stands
        additions = read_question_reply(result.text, asked)
        if not additions:
            return final
        answered = with_additions(settled, additions)
        return await self._offload.run(partial(evaluate, answered, self._ctx, final=True))


def _narrative(chunks: Sequence[ChunkEvents]) -> str | None:
    parts = [c.narrative.strip() for c in chunks if c.narrative and c.narrative.strip()]
    return " ".join(parts) if parts else None


async def run_diff(inputs: DiffInputs, model: DiffModel) -> DiffResult:
    """Run the Diff over the span; never raises for model behaviour (only bugs and cancellation escape)."""
    span = list(inputs.span)
    if not span:
        return DiffResult(closed_as="empty", reason=None)  # PASS-17: nothing to ask a model about
    ledger_ids = frozenset([c.id for c in inputs.commands] + [e.id for e in inputs.errors])
    # chunks are planned with the most any of them can need kept free for the answer (DIFF-19)
    need = await inputs.offload.run(partial(span_tokens, inputs))  # a pass over the whole span
    budget_chars = model.input_tokens(model.first_budget(need)) * CHARS_PER_TOKEN

    plan = await inputs.offload.run(partial(plan_diff, inputs, budget_chars))
    accepted: list[ChunkEvents] = []
    failures: list[str] = []
    held: list[str] = []
    for index, chunk in enumerate(plan.chunks):
        prepare = partial(
            prepare_chunk,
            inputs,
            tuple(accepted),
            chunk,
            first=index == 0,  # carried and takeover-earlier messages all go with the first (DIFF-8)
            edge=plan.tool_edge,
            ledger_ids=ledger_ids,
        )
        prompt, ctx = await inputs.offload.run(prepare)
        lifts = await inputs.offload.run(partial(lift_targets, ctx.offered, ctx.rules))
        outcome = await _Chunk(model, prompt, ctx, lifts, inputs.offload).run()
        if outcome.events is None:
            failures.append(outcome.failure or "unverified")
        else:
            accepted.append(outcome.events)
            held.extend(outcome.held)
    dropped: Counter[str] = Counter()
    for events in accepted:
        dropped.update(events.dropped)
    if not accepted:
        return DiffResult(
            closed_as="narrative-less",
            reason=failures[0] if failures else "unverified",
            chunk_count=len(plan.chunks),
            dropped=dict(dropped),
        )
    narrative = _narrative(accepted) or "The span closed without a narrative line from the model."
    closed_as: ClosedAs = "chunk-missing" if failures else "partial" if held else "whole"
    reason = f"chunk-{failures[0]}" if failures else UNLABELED if held else None
    return DiffResult(
        closed_as=closed_as,
        reason=reason,
        narrative=narrative,
        chunks=tuple(accepted),
        chunk_count=len(plan.chunks),
        dropped=dict(dropped),
        held=tuple(dict.fromkeys(held)),
    )
