"""Run one pass for a ``compact`` request: Fold, Ledger and World, then Close and render (PASS-2, PASS-3).

This is the only entry the RPC layer calls for ``compact``. Every step but the World snapshot is pure; the
pure steps run in a worker thread while git runs, so a long transcript never stalls the daemon's other
sessions (PASS-21), and Close starts only after all of them have finished (PASS-2). The Diff stage slots in
at :func:`_diff`: until it exists the pass closes the span narrative-less with reason ``no-model-call``
(FAIL-10), or as empty when the span holds no messages (PASS-17).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread

from longhaul_daemon.passes.close import close_span, merge_file_lists
from longhaul_daemon.passes.ledger import LedgerResult, apply_ledger
from longhaul_daemon.passes.world import take_world
from longhaul_daemon.protocol import AfterEntries, Compaction, CompactParams, CompactResult
from longhaul_daemon.state.fold import COMPACTOR, FoldResult, fold
from longhaul_daemon.state.model import STATE_FORMAT, ClosedAs, State, World
from longhaul_daemon.state.render import render_summary
from longhaul_daemon.transcript.messages import SpanMessage, messages_before_span, select_span

__all__ = ["NO_MODEL_CALL", "SPAN_RECORD_VERSION", "run_pass"]

NO_MODEL_CALL = "no-model-call"  # FAIL-10 reason code: no Diff was attempted
SPAN_RECORD_VERSION = 1  # FORMAT-5
LINE_VERSION = 1  # FORMAT-8


@dataclass(frozen=True)
class _Prepared:
    """What the pure steps before the Diff produce."""

    folded: FoldResult
    span: list[SpanMessage]
    user_ids: list[str]
    ledger: LedgerResult


@dataclass(frozen=True)
class _DiffOutcome:
    """What the Diff decided: how the span closes, and the model's accepted, verified contribution."""

    closed_as: ClosedAs
    reason: str | None
    narrative: str | None = None
    calls: int = 0
    tokens: int = 0


def _prepare(params: CompactParams) -> _Prepared:
    """Fold, then the span and its ledger; pure, so it may run in a worker thread."""
    branch = list(params.branchEntries)
    folded = fold(branch)
    span = select_span(params.preparation, branch)
    # Commands of a span that fell back to pi's compaction were never offered to a pass: recover them here.
    unseen = messages_before_span(branch, folded.base_compaction_id, span)
    ledger = apply_ledger(
        folded.state, unseen + span, folded.state.span + 1
    )  # LEDGER-5: counters from the fold
    user_ids = list(dict.fromkeys(m.user_id for m in span if m.user_id is not None))
    return _Prepared(folded=folded, span=span, user_ids=user_ids, ledger=ledger)


async def _diff(prepared: _Prepared) -> _DiffOutcome:
    """The Diff stage. No model is called yet, so a span with messages closes narrative-less (FAIL-10)."""
    if not prepared.span:
        return _DiffOutcome(closed_as="empty", reason=None)  # PASS-17: nothing to ask a model about
    return _DiffOutcome(closed_as="narrative-less", reason=NO_MODEL_CALL)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _notice(span_no: int, outcome: _DiffOutcome, carried: int) -> str | None:
    """One sentence for the UI when the pass did less than a whole close (FAIL-10)."""
    if outcome.closed_as == "narrative-less":
        return (
            f"Longhaul closed span {span_no} without a narrative ({outcome.reason}): "
            f"ledger and World updated, {_plural(carried, 'user message')} carried to the next pass."
        )
    if outcome.closed_as == "empty":
        return f"Longhaul closed span {span_no}, which held no messages: ledger and World updated."
    if outcome.closed_as == "chunk-missing":
        return (
            f"Longhaul closed span {span_no} with a chunk missing ({outcome.reason}): "
            f"{_plural(carried, 'user message')} carried to the next pass."
        )
    return None


def _span_record(
    prepared: _Prepared, before: State, after: State, world: World, outcome: _DiffOutcome, pass_id: str
) -> dict[str, Any]:
    """FORMAT-6 without ``compactionId``: only the shim learns the compaction entry's id (PASS-11)."""
    return {
        "v": SPAN_RECORD_VERSION,
        "span": after.span,
        "passId": pass_id,
        "closedAs": outcome.closed_as,
        "reason": outcome.reason,
        "messages": prepared.user_ids,
        "events": list(range(before.seq + 1, after.seq + 1)),  # PASS-5: the numbers this Close handed out
        "commands": [c.model_dump(mode="json") for c in prepared.ledger.new_commands],
        "errors": [e.model_dump(mode="json") for e in prepared.ledger.new_errors],
        "narrative": outcome.narrative,
        "now": after.now,
        "world": world.model_dump(mode="json"),
        "excused": [],
    }


async def run_pass(params: CompactParams, *, pass_id: str) -> CompactResult:
    """One pass over ``params``; never raises for transcript content, only on bugs or cancellation."""
    worlds: list[World] = []

    async def snapshot() -> None:
        worlds.append(await take_world(params.session.cwd))

    async with anyio.create_task_group() as group:  # Ledger with the World, and the Fold (PASS-2)
        group.start_soon(snapshot)
        prepared = await anyio.to_thread.run_sync(_prepare, params)
    world = worlds[0]

    outcome = await _diff(prepared)

    before = prepared.folded.state
    ops = params.preparation.fileOps
    read_files, modified_files = merge_file_lists(
        before, read=ops.read, written=ops.written, edited=ops.edited
    )
    after = close_span(
        before,
        ledger=prepared.ledger,
        world=world,
        user_ids=prepared.user_ids,
        read_files=read_files,
        modified_files=modified_files,
        closed_as=outcome.closed_as,
        reason=outcome.reason,
        pass_id=pass_id,
        remembered=prepared.folded.remembered,
        narrative=outcome.narrative,
    )
    # PASS-7: the summary is the rendered state and nothing else; the pass id makes it unique (PASS-9).
    summary = render_summary(after, pass_id=pass_id)

    details = {
        "stateFormat": STATE_FORMAT,
        "compactor": COMPACTOR,
        "passId": pass_id,
        "span": after.span,
        "state": after.model_dump(mode="json"),
    }
    return CompactResult(
        passId=pass_id,
        span=after.span,
        compaction=Compaction(
            summary=summary,
            firstKeptEntryId=params.preparation.firstKeptEntryId,  # PASS-3: copied, never recomputed
            tokensBefore=params.preparation.tokensBefore,
            details=details,
        ),
        after=AfterEntries(
            spanRecord=_span_record(prepared, before, after, world, outcome, pass_id),
            line={"v": LINE_VERSION, "span": after.span, "calls": outcome.calls, "tokens": outcome.tokens},
        ),
        notice=_notice(after.span, outcome, len(after.carried)),
    )
