"""Run a turns-mode conversation: the Digest, then the five sections in order, each through the gate.

Per section (TURNS-2) one turn asks for it, the first carrying the Digest (TURNS-5); its answer goes through
the gate (TURNS-9), and while problems remain up to :data:`MAX_REPAIRS` repair turns list them (TURNS-10,
TURNS-14). The answer with fewer problems is kept, the newer on a tie (as FAIL-2); what still fails is
dropped, or stored as unmet for an expectation check. Ours: a repair that brings back the reply it was to fix
ends the repairs, since at temperature 0 it would repeat again. A labels or decisions reply cut off with no
answer gets a raised budget (FAIL-7). The labels section's questions (LIFT-7, LIFT-10) get one more turn,
read as the Diff reads them (LIFT-14, LIFT-15, TURNS-11), never after a turn that threw (LIFT-17).

Every call of a turn shares ``turn_seconds``, never past the pass's deadline (TURNS-15); a turn over it is
abandoned and the next section goes on; sections not reached carry from the previous state. A section that
does not finish names why (``turn-timeout``, ``budget-exhausted``, ``rate-limited``, ``context-full``,
``model-error``, ``tool-loop``, ``unparsable-answer``, ``nothing-kept``). Model errors end a section, never
the pass; :class:`~longhaul_daemon.passes.stage_outcome.TurnsUnavailable` leaves so the pass can run the Diff.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from functools import partial

from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.call_errors import BudgetExceeded, ModelCallError, RateLimited
from longhaul_daemon.passes.answers.questions import question_block, read_question_reply, with_additions
from longhaul_daemon.passes.answers.schema import BOUNDS, DraftAnswer, ParsedAnswer
from longhaul_daemon.passes.prompting.chunks import CHARS_PER_TOKEN
from longhaul_daemon.passes.stage_outcome import TurnsUnavailable
from longhaul_daemon.passes.turns.asks import SYSTEM_PROMPT, ask, repair_note
from longhaul_daemon.passes.turns.closing import SectionOutcome, TurnsResult, close_turns
from longhaul_daemon.passes.turns.digest import Digest, build_digest
from longhaul_daemon.passes.turns.gate import Verdict, fold_text, gate
from longhaul_daemon.passes.turns.inputs import TurnsInputs
from longhaul_daemon.passes.turns.label_gate import (
    LabelsVerdict,
    evaluate_labels,
    fewer_problems,
    gate_labels,
    settle_labels,
)
from longhaul_daemon.passes.turns.sections import SECTIONS, Section, section_schema
from longhaul_daemon.passes.turns.turn_call import (
    ContextFull,
    Conversation,
    TurnReply,
    TurnsModel,
)

__all__ = ["DIGEST_SHARE", "MAX_REPAIRS", "TURN_SHARE", "run_turns", "section_tokens"]

MAX_REPAIRS = 2  # TURNS-10
TURN_SHARE = 0.4  # TURNS-15: a turn's share of the pass budget, 2 of the default 5 minutes
DIGEST_SHARE = 0.6  # of the conversation's room; the rest is for the turns after it
_FLOOR = 256  # output tokens of the smallest list section
_PROSE: frozenset[Section] = frozenset({"narrative", "objective", "now"})
_KEYS = 60  # a prose section's braces, keys and quotes
_PER_LABEL = 60
_FRAME = 300


def section_tokens(section: Section, offered_lengths: list[int]) -> int:
    """The output tokens a section's answer can need, counted from its bounds at the planner's rate.

    A prose section (narrative, objective, Now) gets what its longest valid answer needs and no more: a
    model that writes past it has run past the field's bound (a small model repeats a sentence until its
    budget is spent), and more room only buys more of that, so a cut-off reply of a prose section is not
    asked again with a raised budget. Labels and decisions are budgeted as the Diff budgets its lists, at
    least :data:`_FLOOR`, and do get FAIL-7's raised budget.
    """
    excuse = 260  # {"check": "...", "reason": "<200 characters>"}
    if section == "narrative":
        return _tokens(_KEYS + BOUNDS["narrative"] + excuse)
    if section == "objective":
        return _tokens(_KEYS + BOUNDS["objective"])
    if section == "now":
        return _tokens(_KEYS + BOUNDS["now"] + excuse)
    if section == "labels":
        words = sum(min(size, BOUNDS["words"]) for size in offered_lengths if size > 300)
        chars = _FRAME + _PER_LABEL * len(offered_lengths) + words
    else:
        item = BOUNDS["text"] + BOUNDS["why"] + 6 * BOUNDS["evidence"] + 40
        chars = (
            _FRAME + (BOUNDS["decisions"] + BOUNDS["deadEnds"]) * item // 2 + 30 * BOUNDS["fixed"] + excuse
        )
    return max(_FLOOR, _tokens(chars))


def _tokens(chars: int) -> int:
    return -(-chars // CHARS_PER_TOKEN)


_DATA = re.compile(r"^=== BEGIN DATA (\S+) (\w+) ===$.*?^=== END DATA \1 \2 ===$", re.S | re.M)


_GIST_CHARS = 200


def _gist(reply: TurnReply) -> object:
    """What a repair is compared with the reply it was asked to fix by: the answer when there was one, else
    the reply's opening (a small model's loop differs only where its output budget cut it)."""
    if reply.answer is not None:
        return reply.answer
    return reply.result.text.strip()[:_GIST_CHARS] if reply.result is not None else None


def _instructions(inputs: TurnsInputs, digest: Digest) -> str:
    """Everything the conversation says in its own words, folded, for the gate's echo check: the system
    prompt, every ask, and the Digest outside its data blocks."""
    gate_ctx, labels = inputs.gate, inputs.labels
    asks = [
        ask(
            section,
            span_modified=gate_ctx.span_modified,
            label_ids=labels.label_ids,
            picked=sorted(labels.picked),
            span_errors=gate_ctx.span_errors,
        )
        for section in SECTIONS
    ]
    return fold_text("\n".join([SYSTEM_PROMPT, _DATA.sub(" ", digest.text), *asks]))


def _digest(inputs: TurnsInputs, room: int) -> tuple[Digest, str] | None:
    """The Digest within ``room`` characters and the folded instructions the gate compares prose with, or
    None when no Digest fits; pure, so it runs in a thread."""
    digest = build_digest(inputs.digest, inputs.view, room)
    return None if digest is None else (digest, _instructions(inputs, digest))


def _fewer(kept: Verdict | None, new: Verdict) -> Verdict:
    """The answer with fewer problems, the newer winning ties; one that parsed beats one that did not."""
    if kept is None or not kept.parsed:
        return new
    if not new.parsed:
        return kept
    return kept if len(kept.problems) < len(new.problems) else new


class _Sections:
    """The sections of one conversation, in order."""

    def __init__(
        self, inputs: TurnsInputs, conversation: Conversation, digest: Digest, tokens: dict[Section, int]
    ) -> None:
        self.inputs = inputs
        self.conversation = conversation
        self.digest: str | None = digest.text
        self.tokens = tokens

    def _ask(self, section: Section) -> str:
        gate_ctx, labels = self.inputs.gate, self.inputs.labels
        text = ask(
            section,
            span_modified=gate_ctx.span_modified,
            label_ids=labels.label_ids,
            picked=sorted(labels.picked),
            span_errors=gate_ctx.span_errors,
        )
        if self.digest is not None:  # TURNS-5: the Digest goes with the first turn
            text, self.digest = f"{self.digest}\n\n{text}", None
        return text

    async def _turn(
        self, section: Section, text: str, kind: str, tokens: int, asked: Sequence[str] | None = None
    ) -> TurnReply | str:
        """One turn, or the failure code that ended it; ``asked``: the only messages a labels reply names
        (a question turn), all of them when None."""
        conversation = self.conversation
        label_ids = self.inputs.labels.label_ids if asked is None else tuple(dict.fromkeys(asked))
        schema = section_schema(
            section,
            label_ids=label_ids,
            required=len(label_ids),
            open_errors=self.inputs.gate.span_errors,
        )
        try:
            return await conversation.turn(section, text, kind=kind, max_output_tokens=tokens, schema=schema)
        except RateLimited:
            return "rate-limited"  # the provider asked for a wait past the budget (a 429's retry-after)
        except BudgetExceeded:
            return "budget-exhausted" if conversation.budget.remaining() <= 0 else "turn-timeout"
        except ContextFull:
            return "context-full"
        except ModelCallError:
            return "model-error"

    async def _check(self, section: Section, reply: TurnReply) -> Verdict | LabelsVerdict:
        if reply.answer is None:
            self.conversation.model.note_unusable()
        # an answer is as large as the reply it came in, which the span does not bound
        offload = self.inputs.offload.sized(len(reply.result.text) if reply.result is not None else 0)
        if section == "labels":
            return await offload.run(partial(gate_labels, reply.answer, reply.form, self.inputs.labels))
        return await offload.run(partial(gate, section, reply.answer, reply.form, self.inputs.gate))

    async def run(self, section: Section) -> SectionOutcome:
        if section == "labels" and not self.inputs.labels.label_ids:
            empty = ParsedAnswer(True, DraftAnswer())  # nothing to ask; picked messages are still recorded
            settled = await self.inputs.offload.run(
                partial(evaluate_labels, empty, self.inputs.labels, final=True)
            )
            return SectionOutcome("labels", "accepted", labels=settled)
        tokens = self.tokens[section]
        kept: Verdict | LabelsVerdict | None = None
        text, kind, repairs, failure = self._ask(section), str(section), 0, None
        previous: object = None
        looped = True  # until a turn of this section ends other than in a tool loop
        while True:
            reply = await self._turn(section, text, kind, tokens)
            if isinstance(reply, str):
                failure = reply
                break
            looped = looped and reply.tool_loop
            said = _gist(reply)
            if repairs and said == previous:
                break  # the repair turn brought the same reply back: the model will not change it
            previous = said
            latest = await self._check(section, reply)
            if isinstance(latest, LabelsVerdict):
                kept = fewer_problems(kept if isinstance(kept, LabelsVerdict) else None, latest)
            else:
                kept = _fewer(kept if isinstance(kept, Verdict) else None, latest)
            if not kept.problems or repairs >= MAX_REPAIRS or self.conversation.budget.remaining() <= 0:
                break
            repairs += 1
            text = repair_note(section, latest.problems, self.inputs.retry_note_chars)
            kind = f"{section}-repair"
            cut_off = reply.result is not None and reply.result.cut_off and reply.answer is None
            if cut_off and section not in _PROSE:
                tokens = self.conversation.model.raised_budget(tokens) or tokens  # FAIL-7
        if failure is None and looped and kept is not None:
            failure = "tool-loop"  # every turn of the section only called tools: no answer to read
        if isinstance(kept, LabelsVerdict):
            return await self._settle_labels(kept, repairs, failure)
        return _outcome(section, kept, repairs, failure)

    async def _settle_labels(self, kept: LabelsVerdict, repairs: int, failure: str | None) -> SectionOutcome:
        ctx = self.inputs.labels
        if not kept.parsed.parsed:
            why = failure or "unparsable-answer"
            return SectionOutcome("labels", "unfinished", why, labels=None, repairs=repairs)
        settled = await self.inputs.offload.run(partial(settle_labels, kept, ctx))
        threw = failure is not None and failure != "tool-loop"
        if settled.questions and not threw:
            settled = await self._question_turn(settled)
        if settled.evaluation.unlabeled:  # FAIL-4, TURNS-16: the labels section did not finish
            return SectionOutcome(
                "labels", "unfinished", "unlabeled-messages", labels=settled, repairs=repairs
            )
        status = "repaired" if repairs and not kept.problems else "accepted"
        if kept.problems:
            status = "accepted-with-drops"
        return SectionOutcome("labels", status, labels=settled, repairs=repairs)

    async def _question_turn(self, settled: LabelsVerdict) -> LabelsVerdict:
        """LIFT-12..LIFT-16 in one more labels turn; a reply can only add an asked target."""
        block, asked = question_block(settled.questions, self.inputs.retry_note_chars)
        if not asked:
            return settled
        reply = await self._turn(
            "labels", block, "labels-question", self.tokens["labels"], [q.msg for q in asked]
        )
        if isinstance(reply, str) or reply.result is None:
            return settled
        text = reply.result.text
        additions = await self.inputs.offload.sized(len(text)).run(partial(read_question_reply, text, asked))
        if not additions:
            return settled
        answered = with_additions(settled.parsed, additions)
        return await self.inputs.offload.run(
            partial(evaluate_labels, answered, self.inputs.labels, final=True)
        )


def _outcome(section: Section, kept: Verdict | None, repairs: int, failure: str | None) -> SectionOutcome:
    if kept is None or not kept.parsed:
        return SectionOutcome(
            section, "unfinished", failure or "unparsable-answer", verdict=kept, repairs=repairs
        )
    if kept.integrity and kept.accepted.holds_nothing:  # every field it gave was wrong: nothing to accept
        return SectionOutcome(section, "unfinished", "nothing-kept", verdict=kept, repairs=repairs)
    if kept.problems:
        return SectionOutcome(section, "accepted-with-drops", verdict=kept, repairs=repairs)
    return SectionOutcome(section, "repaired" if repairs else "accepted", verdict=kept, repairs=repairs)


async def run_turns(
    inputs: TurnsInputs, model: TurnsModel, *, budget: Budget, turn_seconds: float
) -> TurnsResult:
    """The conversation over ``inputs``; never raises for model behaviour, only :class:`TurnsUnavailable`
    (and bugs or cancellation)."""
    asked = set(inputs.labels.label_ids)
    lengths = [len(m.text) for m in inputs.labels.chunk.offered if m.id in asked]
    tokens = {s: model.turn_budget(section_tokens(s, lengths)) for s in SECTIONS}
    room = model.input_tokens(max(tokens.values())) * CHARS_PER_TOKEN
    digest_room = int(room * DIGEST_SHARE) - len(SYSTEM_PROMPT)
    built = await inputs.offload.run(partial(_digest, inputs, digest_room))
    if built is None:
        raise TurnsUnavailable("digest-too-large")
    digest, instructions = built
    inputs = replace(inputs, gate=replace(inputs.gate, instructions=instructions))
    conversation = Conversation(
        model,
        system=SYSTEM_PROMPT,
        index=inputs.show,
        budget=budget,
        turn_seconds=turn_seconds,
        room_chars=room,
        offload=inputs.offload,
    )
    sections = _Sections(inputs, conversation, digest, tokens)
    outcomes: dict[Section, SectionOutcome] = {}
    for section in SECTIONS:
        if budget.remaining() <= 0:
            outcomes[section] = SectionOutcome(section, "unreached", "budget-exhausted")
            continue
        outcomes[section] = await sections.run(section)
    close = partial(
        close_turns,
        outcomes,
        inputs.span,
        shows=conversation.shows,
        digest_edge=digest.edge,
        digest_left_out=digest.left_out,
    )
    return await inputs.offload.run(close)  # values are learned from the span's whole tool output
