"""One deadline per pass, shared by every model call and retry wait in it, so the pass never overruns.

httpx timeouts are per operation (``read`` is the gap between chunks), so they cannot bound a call; the
budget can. The clock is injectable so tests can move time without sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import anyio

from longhaul_daemon.models.call_errors import BudgetExceeded

__all__ = ["Budget"]


class Budget:
    """A deadline on ``clock`` (default: anyio's clock, the one ``fail_after`` uses)."""

    def __init__(self, deadline: float, *, clock: Callable[[], float] = anyio.current_time) -> None:
        self.deadline = deadline
        self._clock = clock

    @classmethod
    def after(cls, seconds: float, *, clock: Callable[[], float] = anyio.current_time) -> Budget:
        """A budget ending ``seconds`` from now."""
        return cls(clock() + seconds, clock=clock)

    def now(self) -> float:
        """The current time on the budget's clock."""
        return self._clock()

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.deadline - self._clock())

    def fits(self, wait: float) -> bool:
        """Whether waiting ``wait`` seconds still leaves time to make a call."""
        return self._clock() + wait < self.deadline

    def scope(self) -> AbstractContextManager[anyio.CancelScope]:
        """A ``fail_after`` scope ending at the deadline; raises ``BudgetExceeded`` if nothing is left."""
        left = self.remaining()
        if left <= 0:
            raise BudgetExceeded()
        return anyio.fail_after(left)

    def __repr__(self) -> str:
        return f"Budget(remaining={self.remaining():.3f})"
