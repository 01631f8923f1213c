"""Keeps the cyclic garbage collector out of heavy work, since each collection stalls every thread (PASS-21).

While a big pass or a session file's indexing runs, most objects it makes survive, so every young-generation
collection walks them all and frees nothing, holding the interpreter lock the event loop needs to answer
``status``. That work makes few reference cycles (reference counting frees the rest at once), so while any of
it runs the collector is off; the measured cost is in docs/reliability.md.

Turning it back on must not cost what was saved: the next collection would walk every object the work left
behind. So the survivors are frozen first, which costs nothing, and only :func:`collect_all` looks at them
again: the daemon calls it between passes, and when passes follow each other without a gap for
:data:`MAX_PAUSE_S` (see ``server.lifecycle``), so cycles a pass left are still freed.

The collector is process-wide, so the pause acts only once ``serve`` has enabled it; a library or a test
process keeps its collector as it was. A collector someone else turned off stays off.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

__all__ = ["MAX_PAUSE_S", "PAUSE", "CollectorPause", "collect_all"]

MAX_PAUSE_S: Final = 30.0  # past this without a gap between passes, the daemon collects anyway


def collect_all() -> int:
    """One full collection that also looks at frozen objects; the survivors are frozen again."""
    gc.unfreeze()
    try:
        return gc.collect()
    finally:
        gc.freeze()


class CollectorPause:
    """Counts the heavy work in progress; while the count is above zero the collector is off."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.enabled = False  # set by ``serve``
        self._clock = clock
        self._lock = threading.Lock()
        self._holders = 0
        self._turned_off = False  # this pause turned the collector off, so it turns it back on
        self._since: float | None = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """The collector stays off for the duration (nested and concurrent holds count)."""
        if not self.enabled:
            yield
            return
        with self._lock:
            self._holders += 1
            if self._holders == 1:
                self._since = self._clock()
                self._turned_off = gc.isenabled()
                gc.disable()
        try:
            yield
        finally:
            with self._lock:
                self._holders -= 1
                if self._holders == 0:
                    self._since = None
                    if self._turned_off:
                        gc.freeze()  # what the work left behind is walked only by collect_all
                        gc.enable()
                    self._turned_off = False

    def paused_for(self) -> float:
        """Seconds since the pause began or was last collected under; 0 when the collector is not paused."""
        with self._lock:
            return 0.0 if self._since is None else self._clock() - self._since

    def collected(self) -> None:
        """A collection ran during the pause: the next one is due :data:`MAX_PAUSE_S` from now."""
        with self._lock:
            if self._since is not None:
                self._since = self._clock()


PAUSE: Final = CollectorPause()
