"""What a pass has learned so far, for the caller that must answer for it if the pass never finishes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PassProgress"]


@dataclass
class PassProgress:
    """Filled in by the pass as it goes; read by the RPC layer when the pass timed out or raised.

    ``span``: the number this pass's span gets (PASS-16), known once the Fold has read the branch. A pass that
    falls back before that point has none, and its records say null.
    """

    span: int | None = None
