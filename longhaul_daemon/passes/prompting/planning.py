"""The Diff's pure preparation: which chunks a span is cut into, at which tool edge, and each chunk's prompt.

Kept apart from :mod:`longhaul_daemon.passes.diff.diff_stage` (the calls) so everything here is a plain
function of the pass's inputs (no model, clock or I/O) and can run in a worker thread (:func:`prepare_chunk`).

Output budgets (DIFF-19, ours): a chunk's first budget is what its answer can need (:func:`answer_tokens`),
not a flat 4,096 tokens: a looping model spends its whole budget, and a flat one is too small for a chunk of
a few hundred labels. It is counted from the chunk and the DIFF-6 bounds at three characters a token (never
an understatement): the braces and keys, a label per message, the ``words`` of each message over 300
characters, the prose fields at their bounds, half of each list at its bound (FAIL-7 raises a cut-off one),
and each open error a ``fixed`` claim may name. :data:`FLOOR_TOKENS` is the floor, the model's ``maxTokens``
the cap; chunks are planned with the whole span's need reserved (:func:`span_tokens`).

A chunk is weighed by what its messages add to the span-less prompt (DIFF-1, DIFF-2), in exact per-message
parts summed by :class:`PromptSizer`; whole prompts are built only for the chunks sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from longhaul_daemon.offload import THREADS, Offload
from longhaul_daemon.passes.answers.call_schemas import offers_lifts
from longhaul_daemon.passes.answers.events import ChunkContext, ChunkEvents
from longhaul_daemon.passes.answers.quotes import SHORT_MESSAGE
from longhaul_daemon.passes.answers.quotes import OfferedMessage as QuotableMessage
from longhaul_daemon.passes.answers.schema import BOUNDS
from longhaul_daemon.passes.close_events import pending_rules
from longhaul_daemon.passes.prompting.chunks import CHARS_PER_TOKEN, TOOL_EDGES, ChunkPlan, plan_chunks
from longhaul_daemon.passes.prompting.instructions import LONG_MESSAGE
from longhaul_daemon.passes.prompting.message_text import (
    EXCERPT_CHARS,
    SpanSize,
    ledger_index,
    message_size,
    span_chars,
)
from longhaul_daemon.passes.prompting.prompt import EarlierMessage, OfferedMessage, Prompt, build_prompt
from longhaul_daemon.passes.prompting.span_turns import span_turns
from longhaul_daemon.passes.prompting.takeover import Takeover
from longhaul_daemon.state.model import Command, ErrorEntry, Note, State
from longhaul_daemon.transcript.messages import SpanMessage

__all__ = [
    "FLOOR_TOKENS",
    "DiffInputs",
    "PromptSizer",
    "answer_tokens",
    "chunk_prompt",
    "chunk_tokens",
    "offered_messages",
    "plan_diff",
    "prepare_chunk",
    "span_tokens",
]

FLOOR_TOKENS = 1024
_FRAME = 200
_PER_LABEL = 60
_KEYS = 40  # an item's keys, quotes and commas
_EVIDENCE_ID = 6  # "C123",
_FIXED_ITEM = 30  # {"error":"E12","by":"C345"},
_LIST_SHARE = 2  # lists are budgeted at half their bound


@dataclass(frozen=True)
class DiffInputs:
    """What the pass hands the Diff: the folded state, the span, the ledger after it, and the settings."""

    state: State
    span: Sequence[SpanMessage]
    commands: Sequence[Command]
    errors: Sequence[ErrorEntry]
    carried: Sequence[OfferedMessage] = ()
    remembered: Sequence[Note] = ()
    focus: str | None = None
    retry_note_chars: int = 2000
    takeover: Takeover | None = None  # TAKEOVER-1: set when the newest compaction is another compactor's
    offload: Offload = THREADS  # where the CPU steps run: a worker thread unless the pass is small

    @cached_property
    def offers_lifts(self) -> bool:
        """Whether any chunk of the pass may offer a message a lift: read once for the pass, so every chunk's
        span-less prompt is the one :class:`PromptSizer` measured (the lifting rules go with all or none)."""
        earlier = self.takeover.earlier if self.takeover else ()
        return offers_lifts(offered_messages(self.carried, self.span, earlier))


def chunk_prompt(
    inputs: DiffInputs, state: State, chunk: Sequence[SpanMessage], *, first: bool, edge: int
) -> Prompt:
    """The prompt of one chunk; carried and takeover-earlier messages all go with the first (DIFF-8,
    TAKEOVER-25)."""
    takeover = inputs.takeover
    return build_prompt(
        state,
        chunk,
        carried=inputs.carried if first else (),
        commands=inputs.commands,
        errors=inputs.errors,
        remembered=inputs.remembered,
        focus=inputs.focus,
        tool_edge=edge,
        earlier=takeover.earlier if first and takeover else (),
        foreign_summary=takeover.summary if first and takeover else None,
        long_messages=_offers_long_message(inputs),
        lifts=inputs.offers_lifts,
    )


def _offers_long_message(inputs: DiffInputs) -> bool:
    """Whether any chunk of the pass offers a message over LONG_MESSAGE characters: decided for the pass, so
    every chunk's span-less prompt is the one :class:`PromptSizer` measured."""
    earlier = inputs.takeover.earlier if inputs.takeover else ()
    return any(len(m.text) > LONG_MESSAGE for m in offered_messages(inputs.carried, inputs.span, earlier))


class PromptSizer:
    """Exact prompt lengths for :func:`plan_chunks`: the first chunk's span-less prompt, plus per-message
    parts that add up to what a span adds to it."""

    def __init__(self, inputs: DiffInputs) -> None:
        # The edge only cuts span messages, so the span-less prompt does not depend on it.
        first = chunk_prompt(inputs, inputs.state, [], first=True, edge=TOOL_EDGES[0])
        self._overhead = len(first.system) + len(first.user)
        self._ledger = ledger_index(inputs.commands, inputs.errors)

    def overhead(self, edge: int) -> int:
        """The span-less prompt's length; the same for every edge."""
        return self._overhead

    def parts(self, group: Sequence[SpanMessage], edge: int) -> SpanSize:
        """What each message of ``group`` adds to the prompt at ``edge``, summed."""
        return sum((message_size(m, self._ledger, edge) for m in group), SpanSize())

    def chars(self, parts: Sequence[SpanSize]) -> int:
        """What a chunk of these groups adds to a span-less prompt: its conversation, listing and ids."""
        return span_chars(sum(parts, SpanSize())) - span_chars(SpanSize())


def plan_diff(inputs: DiffInputs, input_chars: int) -> ChunkPlan:
    """DIFF-1..3: the chunks of ``inputs.span`` for prompts of at most ``input_chars`` characters."""
    return plan_chunks(inputs.span, input_chars=input_chars, sizer=PromptSizer(inputs))


def offered_messages(
    carried: Sequence[OfferedMessage], chunk: Sequence[SpanMessage], earlier: Sequence[EarlierMessage] = ()
) -> tuple[QuotableMessage, ...]:
    """Every message a chunk offers, oldest first: takeover-earlier ones, carried ones, then its own (turns
    mode offers the whole span as one)."""
    own = [
        QuotableMessage(id=m.user_id, text=m.text)
        for m in chunk
        if m.role == "user" and m.user_id is not None
    ]
    seen = {m.id for m in own}
    before = [
        # QUOTE-16: an earlier message shown only as its opening yields a rule only with exact words
        QuotableMessage(id=m.user_id, text=m.text, excerpt_only=not m.picked and len(m.text) > EXCERPT_CHARS)
        for m in earlier
        if m.user_id not in seen
    ]
    seen |= {m.id for m in before}
    kept = [QuotableMessage(id=m.user_id, text=m.text) for m in carried if m.user_id not in seen]
    return tuple(before + kept + own)


def prepare_chunk(
    inputs: DiffInputs,
    accepted: Sequence[ChunkEvents],
    chunk: Sequence[SpanMessage],
    *,
    first: bool,
    edge: int,
    ledger_ids: frozenset[str],
) -> tuple[Prompt, ChunkContext]:
    """One chunk's prompt and the context its answer is checked in, given the chunks ``accepted`` so far."""
    takeover = inputs.takeover if first else None
    carried = inputs.carried if first else ()
    carried_state = inputs.state.carriedMessages if first else ()  # carried messages go with the first chunk
    picked = takeover.picked if takeover else {}
    rules = pending_rules(inputs.state.rules, accepted)  # DIFF-3: earlier chunks' rules, named by u<n>
    chunk_state = inputs.state.model_copy(update={"rules": list(rules)})
    ctx = ChunkContext(
        offered=offered_messages(carried, chunk, takeover.earlier if takeover else ()),
        rules=rules,
        ledger_ids=ledger_ids,
        turns=span_turns(chunk, carried) + (takeover.turns if takeover else ()),
        label_optional=frozenset(picked),
        retry_note_chars=inputs.retry_note_chars,
        picked=picked,
        unpicked_earlier=frozenset(
            m.user_id for m in (takeover.earlier if takeover else ()) if m.user_id not in picked
        ),
        commands=tuple(inputs.commands),
        errors=tuple(inputs.errors),
        unconfirmed_rules=frozenset(m.id for m in carried_state if m.readAsRule == "unconfirmed"),
    )
    return chunk_prompt(inputs, chunk_state, chunk, first=first, edge=edge), ctx


def answer_tokens(offered_lengths: Iterable[int], *, open_errors: int, cites_ledger: bool) -> int:
    """The output tokens an answer for these offered messages can need (the module docstring's rule).

    ``offered_lengths``: the length in characters of each message the chunk asks a label for.
    """
    lengths = list(offered_lengths)
    evidence = BOUNDS["evidence"] * _EVIDENCE_ID if cites_ledger else 0
    decision = BOUNDS["text"] + BOUNDS["why"] + evidence + _KEYS
    dead_end = BOUNDS["text"] + evidence + _KEYS
    value = BOUNDS["name"] + BOUNDS["value"] + _KEYS
    lists = BOUNDS["decisions"] * decision + BOUNDS["deadEnds"] * dead_end + BOUNDS["values"] * value
    chars = (
        _FRAME
        + _PER_LABEL * len(lengths)
        + sum(min(size, BOUNDS["words"]) for size in lengths if size > SHORT_MESSAGE)
        + BOUNDS["narrative"]
        + BOUNDS["now"]
        + BOUNDS["objective"]
        + lists // _LIST_SHARE
        + _FIXED_ITEM * min(open_errors, BOUNDS["fixed"])
    )
    return max(FLOOR_TOKENS, -(-chars // CHARS_PER_TOKEN))


def chunk_tokens(ctx: ChunkContext) -> int:
    """DIFF-19: the first output budget one chunk's answer can need, before the model's cap."""
    return answer_tokens(
        (len(m.text) for m in ctx.offered),
        open_errors=sum(1 for e in ctx.errors if e.open),
        cites_ledger=bool(ctx.ledger_ids),
    )


def span_tokens(inputs: DiffInputs) -> int:
    """The most any chunk of this span can need: every message it may offer, for planning the chunks."""
    earlier = inputs.takeover.earlier if inputs.takeover else ()
    lengths = [len(m.text) for m in earlier] + [len(m.text) for m in inputs.carried]
    lengths += [len(m.text) for m in inputs.span if m.role == "user" and m.user_id is not None]
    return answer_tokens(
        lengths,
        open_errors=sum(1 for e in inputs.errors if e.open),
        cites_ledger=bool(inputs.commands or inputs.errors),
    )
