"""The JSON-RPC methods ``remember``, ``recall`` and ``strip``: thin handlers over the pure ``tools`` package.

The logic is pure and lives in ``tools``; these handlers add what only a daemon has: a worker thread for the
branch-sized work (so one long transcript never stalls other sessions), the per-daemon memory of which kept
windows were already logged (``Services.kept_windows``, TOOLS-10), the ``kept-window-strip`` record (LOG-21),
and operational log lines that hold codes and counts, never note or transcript text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread
import structlog

from longhaul_daemon.protocol import (
    RecallParams,
    RecallResult,
    RememberParams,
    RememberResult,
    StripParams,
    StripResult,
)
from longhaul_daemon.rpc.registry import RpcMethod, rpc
from longhaul_daemon.tools.recall import recall
from longhaul_daemon.tools.remember import remember
from longhaul_daemon.tools.strip import plan_strip

if TYPE_CHECKING:
    from longhaul_daemon.rpc.services import Services

__all__ = ["build_tool_methods"]

STRIP_DEADLINE_S = 2.0  # the shim waits this long before leaving pi's context as it is (lib/strip.ts)

_log = structlog.get_logger("longhaul.tools")


def build_tool_methods(services: Services) -> dict[str, RpcMethod]:
    """The three tool methods for one daemon; handlers close over ``services``."""

    @rpc("remember", RememberParams)
    async def remember_method(params: RememberParams) -> RememberResult:
        services.sessions_seen.add(params.session.sessionId)
        outcome = remember(params.text, params.kind)
        _log.info(
            "remember",
            session_id=params.session.sessionId,
            ok=outcome.ok,
            chars=len(outcome.data["text"]) if outcome.data else None,
        )
        return RememberResult(
            ok=outcome.ok, text=outcome.text, customType=outcome.custom_type, data=outcome.data
        )

    @rpc("recall", RecallParams)
    async def recall_method(params: RecallParams) -> RecallResult:
        services.sessions_seen.add(params.session.sessionId)
        if params.branchEntries is not None:
            branch = list(params.branchEntries)
        else:
            assert params.leafId is not None  # RecallParams checks that a branch source is given
            branch = (await services.read_branch(params.session, params.leafId, whole=False)).entries
        outcome = await anyio.to_thread.run_sync(lambda: recall(branch, ref=params.ref, query=params.query))
        _log.info(
            "recall",
            session_id=params.session.sessionId,
            ok=outcome.ok,
            spans=outcome.spans,
            chars=len(outcome.text),
        )
        return RecallResult(ok=outcome.ok, text=outcome.text, spans=outcome.spans)

    @rpc("strip", StripParams, deadline_s=STRIP_DEADLINE_S)
    async def strip_method(params: StripParams) -> StripResult:
        services.sessions_seen.add(params.session.sessionId)
        messages, branch = list(params.messages), list(params.branchEntries)
        plan = await anyio.to_thread.run_sync(lambda: plan_strip(messages, branch))
        counts: dict[str, object] = {
            "cutoff": plan.cutoff,
            "strippedBlocks": plan.stripped_blocks,
            "strippedChars": plan.stripped_chars,
            "contextMessages": plan.context_messages,
        }
        logged = False
        # TOOLS-10: only a window that really lost reasoning is logged, and only the first time.
        if plan.cutoff is not None and plan.stripped_blocks > 0:
            logged = services.kept_windows.first_time(params.session.sessionId, plan.cutoff)
            if logged:
                await services.recorder.kept_window_strip(params.session, counts)
                _log.info("kept_window_strip", session_id=params.session.sessionId, **counts)
        return StripResult(
            cutoff=plan.cutoff,
            strip=list(plan.indexes),
            strippedBlocks=plan.stripped_blocks,
            strippedChars=plan.stripped_chars,
            contextMessages=plan.context_messages,
            logged=logged,
        )

    return {m.name: m for m in (remember_method, recall_method, strip_method)}
