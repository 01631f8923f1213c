"""The Diff as a model stage: its chunks' calls, then what the record and Close need from them (DIFF-20)."""

from __future__ import annotations

import time
from typing import Any

from longhaul_daemon.passes.diff.diff_stage import DiffResult, run_diff
from longhaul_daemon.passes.model_calls import PassModel
from longhaul_daemon.passes.prompting.planning import DiffInputs
from longhaul_daemon.passes.stage_outcome import StageOutcome
from longhaul_daemon.protocol import RouteChoice

__all__ = ["run_diff_stage"]


async def run_diff_stage(inputs: DiffInputs, model: PassModel, /) -> StageOutcome:
    """The Diff over ``inputs`` with the pass's model; never raises for what the model says (FAIL-10)."""
    started = time.monotonic()
    result = await run_diff(inputs, model)
    diff_ms = round((time.monotonic() - started) * 1000)
    return StageOutcome(
        closed_as=result.closed_as,
        reason=result.reason,
        narrative=result.narrative,
        events=result.chunks,
        calls=len(model.traces),
        tokens=model.tokens(),
        stats=_narrative_stats(result, model, diff_ms),
        route=RouteChoice(configured=model.configured, used=model.used, why=model.why),
        unusable=dict(model.unusable),
        held=result.held,
    )


def _narrative_stats(result: DiffResult, model: PassModel, diff_ms: int) -> dict[str, Any]:
    """LOG-17 ``narrative``: how the span closed and what the calls cost, as counts (FAIL-17)."""
    return {
        "kind": result.closed_as,
        "reason": result.reason,
        "chunks": result.chunk_count,
        "accepted": len(result.chunks),
        "held": len(result.held),
        "dropped": sum(result.dropped.values()),
        "droppedBy": dict(result.dropped),
        **model.call_stats(diff_ms),
    }
