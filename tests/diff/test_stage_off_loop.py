"""PASS-21: the Diff's CPU work (planning, each chunk's prompt, verification) runs off the event loop.

Each step is held in the middle of its work on a large span until another task on the loop has run. Held in
a worker thread, the step waits while the loop serves that task; held on the loop, nothing else could run,
so the wrapper records that instead of waiting. The tests assert the order of events, never a duration.
"""

from __future__ import annotations

import threading
from typing import Any

import anyio
import anyio.from_thread
import pytest

from longhaul_daemon.diff import stage
from longhaul_daemon.diff.stage import run_diff

from .chunk_cases import Case, inputs, turns
from .chunk_cases import RecordingModel as LabelingModel

pytestmark = pytest.mark.anyio

WAIT_S = 30.0  # bounds a wait so a regression fails instead of hanging; never an assertion about speed


def large_span() -> Case:
    """400 turns of tool output, cut into several chunks at a harder tool edge."""
    return Case(inputs(turns(range(4, 404), lines=40), range(4, 404)), 40_000)


@pytest.mark.parametrize("step", ["plan_diff", "_prepare_chunk", "evaluate"])
async def test_pass21_the_loop_serves_another_task_while_a_diff_step_works(
    step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PASS-21: while ``step`` works on a large span, a concurrent task on the loop runs, and the step
    finishes only after it."""
    loop_thread = threading.get_ident()
    order: list[str] = []
    working = anyio.Event()
    served = threading.Event()
    real = getattr(stage, step)

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() == loop_thread:
            order.append(f"{step} on the loop")  # waiting here would stop the very task it waits for
        elif not served.is_set():
            anyio.from_thread.run_sync(working.set)
            assert served.wait(WAIT_S), "the loop never served the other task"
        value = real(*args, **kwargs)
        order.append(f"{step} finished")
        return value

    async def other_session() -> None:
        await working.wait()
        order.append("other task ran")
        served.set()

    monkeypatch.setattr(stage, step, held)
    case = large_span()
    model = LabelingModel(case)
    async with anyio.create_task_group() as group:
        group.start_soon(other_session)
        result = await run_diff(case.inputs, model)
        group.cancel_scope.cancel()  # the other task never woke when the step ran on the loop
    assert order[:2] == ["other task ran", f"{step} finished"], order
    assert result.chunk_count > 1 and result.closed_as == "whole"  # a real multi-chunk pass went through
