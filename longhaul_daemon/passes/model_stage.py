"""The one interface the pass has to a model stage, so the Diff and turns mode are interchangeable in it.

A stage gets what the pure steps prepared (:class:`~longhaul_daemon.passes.prompting.planning.DiffInputs`) and
the pass's model (:class:`~longhaul_daemon.passes.model_calls.PassModel`: the routes, the budget, the traces)
and returns a :class:`~longhaul_daemon.passes.stage_outcome.StageOutcome`, which Close turns into the state.
The Diff is :func:`~longhaul_daemon.passes.diff.diff_outcome.run_diff_stage`; turns mode is a
:class:`~longhaul_daemon.passes.turns.turns_stage.TurnsStage` bound to what it needs beyond the inputs. A
stage that cannot run for this span raises :class:`~longhaul_daemon.passes.stage_outcome.TurnsUnavailable`.
"""

from __future__ import annotations

from typing import Protocol

from longhaul_daemon.passes.model_calls import PassModel
from longhaul_daemon.passes.prompting.planning import DiffInputs
from longhaul_daemon.passes.stage_outcome import StageOutcome

__all__ = ["ModelStage"]


class ModelStage(Protocol):
    """The span's part of the state, proposed by the model and checked by code."""

    async def __call__(self, inputs: DiffInputs, model: PassModel, /) -> StageOutcome: ...
