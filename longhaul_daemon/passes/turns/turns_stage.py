"""Turns mode as the pass's model stage: the conversation over the pass's model, and what the record says.

The pass runs this instead of the Diff when ``longhaul.json`` sets ``"narrativeMode": "turns"`` (TURNS-1). The
conversation (:func:`~longhaul_daemon.passes.turns.driver.run_turns`) gets the same routed model, pass budget
and traces as the Diff; its result becomes a :class:`~longhaul_daemon.passes.stage_outcome.StageOutcome` whose
``compaction`` record says ``narrative.kind: "turns"`` (TURNS-3), with how the span closed in ``closedAs``
and, per section, how it ended. :class:`~longhaul_daemon.passes.stage_outcome.TurnsUnavailable` is left to the
caller, which then runs the Diff.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from longhaul_daemon.models.budget import Budget
from longhaul_daemon.passes.model_calls import PassModel
from longhaul_daemon.passes.prompting.planning import DiffInputs
from longhaul_daemon.passes.stage_outcome import StageOutcome
from longhaul_daemon.passes.turns.driver import run_turns
from longhaul_daemon.passes.turns.inputs import prepare_turns
from longhaul_daemon.protocol import RouteChoice
from longhaul_daemon.state.model import World

__all__ = ["TURNS_KIND", "TurnsStage", "run_turns_stage"]

TURNS_KIND = "turns"  # TURNS-3: the compaction record's narrative.kind


async def run_turns_stage(
    inputs: DiffInputs,
    model: PassModel,
    *,
    world: World | None,
    read_files: Sequence[str],
    modified_files: Sequence[str],
    span_modified: Sequence[str],
    budget: Budget,
    turn_seconds: float,
    configured: str | None,
) -> StageOutcome:
    """One turns-mode conversation over ``inputs``; raises ``TurnsUnavailable`` when it cannot run."""
    prepare = partial(
        prepare_turns,
        inputs,
        world=world,
        read_files=read_files,
        modified_files=modified_files,
        span_modified=span_modified,
    )
    turns_inputs = await inputs.offload.run(prepare)
    started = time.monotonic()
    result = await run_turns(turns_inputs, model, budget=budget, turn_seconds=turn_seconds)
    turns_ms = round((time.monotonic() - started) * 1000)
    stats = {
        "kind": TURNS_KIND,
        "closedAs": result.closed_as,
        "reason": result.reason,
        "sections": dict(result.sections),
        "shows": result.shows,
        "excused": [check for check, _ in result.excused],
        "unmet": list(result.unmet),
        "digest": {"resultEdge": result.digest_edge, "linesLeftOut": result.digest_left_out},
        "accepted": len(result.events),
        "dropped": sum(result.dropped.values()),
        "droppedBy": dict(result.dropped),
        **model.call_stats(turns_ms),
    }
    return StageOutcome(
        closed_as=result.closed_as,
        reason=result.reason,
        narrative=result.narrative,
        events=result.events,
        calls=len(model.traces),
        tokens=model.tokens(),
        stats=stats,
        route=RouteChoice(configured=configured, used=model.used, why=model.why),
        unusable=dict(model.unusable),
        excused=result.excused,
        unmet=result.unmet,
    )


@dataclass(frozen=True)
class TurnsStage:
    """Turns mode as a :class:`~longhaul_daemon.passes.model_stage.ModelStage`: what it needs beyond the
    Diff's inputs (the World, the file lists, the budgets), bound once per pass."""

    world: World | None
    read_files: Sequence[str]
    modified_files: Sequence[str]
    span_modified: Sequence[str]
    budget: Budget
    turn_seconds: float

    async def __call__(self, inputs: DiffInputs, model: PassModel, /) -> StageOutcome:
        return await run_turns_stage(
            inputs,
            model,
            world=self.world,
            read_files=self.read_files,
            modified_files=self.modified_files,
            span_modified=self.span_modified,
            budget=self.budget,
            turn_seconds=self.turn_seconds,
            configured=model.configured,
        )
