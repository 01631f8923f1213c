"""CPU work of a pass off the event loop, when there is enough of it to matter (PASS-21).

A big span's planning, prompts, verification and Close take long enough to stall ``status`` and other
sessions, so they run in a worker thread. A small span's take less than the thread hop itself costs, and
with many small passes at once the hops are most of the daemon's work; those run on the loop.
:class:`Offload` is decided once per pass from what the pass reads and used by every step; a step over a
model's reply, whose size the transcript does not bound, asks again for that reply (:meth:`Offload.sized`).

A step in a thread does not hold the pass: when the pass's budget runs out or its client goes, the pass is
cancelled at once and answers, and the thread finishes its step for nobody. Every step is linear in its
input, so what it goes on computing is bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread

__all__ = ["INLINE_BYTES", "THREADS", "Offload"]

T = TypeVar("T")

INLINE_BYTES = 256 * 1024  # a pass over less transcript than this runs its CPU steps on the loop


@dataclass(frozen=True)
class Offload:
    """Where a pass runs its pure steps: a worker thread, or the loop when the pass is small."""

    threads: bool = True

    @classmethod
    def for_bytes(cls, transcript_bytes: int | None) -> Offload:
        """Threads unless the pass reads less than :data:`INLINE_BYTES` (None: not known, so threads)."""
        return cls(threads=transcript_bytes is None or transcript_bytes >= INLINE_BYTES)

    @classmethod
    def for_read(cls, branch_stats: Mapping[str, Any] | None) -> Offload:
        """:meth:`for_bytes` of what a pass read from the session file, as its branch stats say; a branch
        sent inline has no such size, so it takes the thread."""
        return cls.for_bytes((branch_stats or {}).get("wholeBytes"))

    def sized(self, chars: int) -> Offload:
        """This offload, or a thread for a step over ``chars`` characters of model output: a reply may be
        far larger than the span it answers."""
        return self if self.threads or chars < INLINE_BYTES else THREADS

    async def run(self, work: Callable[[], T]) -> T:
        """``work()``, in a worker thread or here. A cancelled pass does not wait for a thread that already
        started: the pass's budget, not the step, decides when it answers."""
        if not self.threads:
            return work()
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)


THREADS = Offload()  # the default: every step in a worker thread
