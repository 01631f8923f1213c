"""The span record a pass hands the shim to append after pi's compaction entry (FORMAT-5, FORMAT-6)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from longhaul_daemon.passes.ledger import LedgerResult
from longhaul_daemon.passes.model_calls import UNUSABLE_KEY
from longhaul_daemon.passes.stage_outcome import StageOutcome
from longhaul_daemon.state.clean import clean_command, clean_error, prose
from longhaul_daemon.state.model import State, World

__all__ = ["SPAN_RECORD_VERSION", "span_record"]

SPAN_RECORD_VERSION = 1  # FORMAT-5


def span_record(
    *,
    before: State,
    after: State,
    world: World,
    outcome: StageOutcome,
    pass_id: str,
    user_ids: Sequence[str],
    ledger: LedgerResult,
) -> dict[str, Any]:
    """FORMAT-6 without ``compactionId``: only the shim learns the compaction entry's id (PASS-11).

    Every text in it is cleaned as the State's is, so a reader of the span record (recall, the inspector,
    another tool) never meets a control character either.
    """
    return {
        "v": SPAN_RECORD_VERSION,
        "span": after.span,
        "passId": pass_id,
        "closedAs": outcome.closed_as,
        "reason": outcome.reason,
        "messages": list(user_ids),
        "held": list(outcome.held),  # a partial close's unlabeled messages, carried (FAIL-4, ours)
        "events": list(range(before.seq + 1, after.seq + 1)),  # PASS-5: the numbers this Close handed out
        "commands": [clean_command(c).model_dump(mode="json") for c in ledger.new_commands],
        "errors": [clean_error(e).model_dump(mode="json") for e in ledger.new_errors],
        "narrative": prose(outcome.narrative),
        "now": after.now,
        "world": (after.world or world).model_dump(mode="json"),
        "excused": [{"check": check, "reason": reason} for check, reason in outcome.excused],  # TURNS-13
        "unmet": list(outcome.unmet),  # TURNS-14
        UNUSABLE_KEY: outcome.unusable,  # read back by later passes of this session
    }
