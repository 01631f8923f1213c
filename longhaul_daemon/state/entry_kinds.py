"""How Longhaul's own entries look in pi's session file: one test per kind, so every reader agrees.

The fold, the inspector, the kept-window strip and the session-file reader all need to know whether a
compaction is Longhaul's and which custom entries are ours; each asks here instead of spelling the test again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "COMPACTOR",
    "EVENT_TYPE",
    "LINE_TYPE",
    "OWN_CUSTOM_PREFIX",
    "SPAN_TYPE",
    "is_custom",
    "is_longhaul_compaction",
]

COMPACTOR = "longhaul"  # details.compactor of every compaction Longhaul writes (FOLD-2)
EVENT_TYPE = "compaction-state.event"
SPAN_TYPE = "compaction-state.span"
LINE_TYPE = "compaction-state.line"
OWN_CUSTOM_PREFIX = "compaction-state."


def is_longhaul_compaction(entry: Mapping[str, Any]) -> bool:
    """A compaction entry whose ``details`` name Longhaul as the compactor (FOLD-2).

    Only the tag decides: a Longhaul base refused for its format is still Longhaul's (FORMAT-3).
    """
    details = entry.get("details")
    return (
        entry.get("type") == "compaction"
        and isinstance(details, Mapping)
        and details.get("compactor") == COMPACTOR
    )


def is_custom(entry: Mapping[str, Any], custom_type: str) -> bool:
    """A ``custom`` entry of ``custom_type``."""
    return entry.get("type") == "custom" and entry.get("customType") == custom_type
