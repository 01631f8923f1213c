"""Run one pass for a ``compact`` request: Fold, Ledger and World, the Diff, then Close and render (PASS-2).

This is the only entry the RPC layer calls for ``compact``. Every step but the World snapshot and the model
calls is pure; the pure steps and the Diff run while git runs (a long transcript's in a worker thread, so it
never stalls the daemon's other sessions, PASS-21), and Close starts once all have finished (PASS-2). The Diff
(:mod:`longhaul_daemon.passes.diff.diff_stage`) gets the routed model under the pass's budget; when it cannot
verify anything the span closes narrative-less (FAIL-10), and an empty span closes without a call (PASS-17).

With ``"narrativeMode": "turns"`` the same model and budget go to turns mode instead
(:mod:`longhaul_daemon.passes.turns.turns_stage`, TURNS-1), each of its turns capped at two fifths of the pass
budget (2 of the default 5 minutes, TURNS-15). When turns mode cannot run for this span (the route refuses
tool calls, the shim cannot carry them, the Digest does not fit the window) the Diff runs in the time left,
and the notice and the record say why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, TypeAlias

from longhaul_daemon.defaults import DEFAULT_PASS_BUDGET_S
from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.routing import RoutePlan, plan_routes
from longhaul_daemon.models.via_pi import PiPeer
from longhaul_daemon.offload import THREADS, Offload
from longhaul_daemon.passes.answers.lookups import lookup_values
from longhaul_daemon.passes.beside_world import decide_beside_world
from longhaul_daemon.passes.close import close_span, merge_file_lists, user_texts
from longhaul_daemon.passes.diff.diff_outcome import run_diff_stage
from longhaul_daemon.passes.fold import FoldResult, fold
from longhaul_daemon.passes.ledger import LedgerResult, apply_ledger
from longhaul_daemon.passes.model_calls import PassModel, unusable_routes
from longhaul_daemon.passes.model_stage import ModelStage
from longhaul_daemon.passes.narrative_choice import NarrativeChoices, stage_of_pass
from longhaul_daemon.passes.progress import PassProgress
from longhaul_daemon.passes.prompting.planning import DiffInputs
from longhaul_daemon.passes.prompting.prompt import OfferedMessage
from longhaul_daemon.passes.prompting.span_turns import carried_messages
from longhaul_daemon.passes.prompting.takeover import Takeover, plan_takeover
from longhaul_daemon.passes.span_record import SPAN_RECORD_VERSION, span_record
from longhaul_daemon.passes.stage_outcome import StageOutcome, TurnsUnavailable, notice
from longhaul_daemon.passes.turns.driver import TURN_SHARE
from longhaul_daemon.passes.turns.turns_stage import TurnsStage
from longhaul_daemon.protocol import (
    AfterEntries,
    Compaction,
    CompactParams,
    CompactResult,
    PassDiagnostics,
    RouteChoice,
)
from longhaul_daemon.secrets.redaction import Redactor, redactor_for_pass
from longhaul_daemon.state.entry_kinds import COMPACTOR
from longhaul_daemon.state.model import STATE_FORMAT, World
from longhaul_daemon.state.render import render_summary
from longhaul_daemon.transcript.messages import SpanMessage, messages_before_span, select_span, user_ids
from longhaul_daemon.user_settings import Settings, load_settings

__all__ = ["NO_MODEL", "SPAN_RECORD_VERSION", "diff_budget_s", "run_pass"]

NO_MODEL = "no-model"  # FAIL-10 reason code: neither a summarizer route nor a session model to call
LINE_VERSION = 1  # FORMAT-8
_Decided: TypeAlias = "tuple[_Prepared, StageOutcome]"  # all a pass knows before Close but the World


@dataclass(frozen=True)
class _Prepared:
    """What the pure steps before the Diff produce."""

    folded: FoldResult
    span: list[SpanMessage]
    user_ids: list[str]
    ledger: LedgerResult
    carried: list[OfferedMessage]
    takeover: Takeover | None
    failed_routes: frozenset[str] = frozenset()  # models whose replies held no answer earlier


def _prepare(
    params: CompactParams, branch: list[dict[str, Any]], users: Mapping[str, str] | None = None
) -> _Prepared:
    """Fold, then the span and its ledger; pure, so it may run in a worker thread. ``users`` is
    :func:`user_ids` of ``branch`` when the reader already knows it."""
    folded = fold(branch)
    if users is None:  # u<n> of every user message: the steps below all name messages by them
        users = user_ids(branch)
    span = select_span(params.preparation, branch, users)
    # Commands of a span that fell back to pi's compaction were never offered to a pass: recover them here.
    unseen = messages_before_span(branch, folded.judged_up_to, span, users)
    ledger = apply_ledger(
        folded.state, unseen + span, folded.state.span + 1
    )  # LEDGER-5: counters from the fold
    span_users = list(dict.fromkeys(m.user_id for m in span if m.user_id is not None))
    carried = carried_messages(branch, folded.state.carried, span, users)  # FAIL-11: offered whole, first
    takeover = plan_takeover(branch, folded, span, unseen, folded.state.carried)  # TAKEOVER-1: foreign newest
    return _Prepared(
        folded=folded,
        span=span,
        user_ids=span_users,
        ledger=ledger,
        carried=carried,
        takeover=takeover,
        failed_routes=unusable_routes(folded.spans),
    )


def _offered_before_span(prepared: _Prepared) -> int:
    """LOG-18: the carried and taken-over messages the Diff was offered besides the span's own."""
    earlier = len(prepared.takeover.earlier) if prepared.takeover is not None else 0
    return len(prepared.carried) + earlier


def diff_budget_s(pass_budget_s: float) -> float:
    """The Diff's share of the pass budget: what is left once Close and the reply are provided for, so a
    model that runs out the clock still leaves time to close narrative-less instead of falling back."""
    return max(0.1, pass_budget_s - min(15.0, pass_budget_s * 0.2))


@dataclass(frozen=True)
class _Caller:
    """Who the pass's model calls answer to: the shim of its connection, and its credentials' redactor."""

    peer: PiPeer | None
    redactor: Redactor


def _turns_stage(
    params: CompactParams, prepared: _Prepared, world: World, budget: Budget, turn_seconds: float
) -> TurnsStage:
    """Turns mode bound to what it needs beyond the Diff's inputs: the World, the file lists, its budgets."""
    ops = params.preparation.fileOps
    read_files, modified_files = merge_file_lists(
        prepared.folded.state, read=ops.read, written=ops.written, edited=ops.edited
    )
    span_modified = sorted(set(ops.written) | set(ops.edited))
    return TurnsStage(world, read_files, modified_files, span_modified, budget, turn_seconds)


async def _model_stage(
    prepared: _Prepared,
    params: CompactParams,
    plan: RoutePlan,
    settings: Settings,
    access: ModelAccess,
    budget: Budget,
    offload: Offload,
    caller: _Caller,
    turns: TurnsStage | None = None,
) -> StageOutcome:
    """The model stage over the routed model (DIFF-20), under the pass's budget: ``turns`` when given and it
    can run for this span, else the Diff; both are a :class:`ModelStage`. ``plan``: the pass's routes,
    planned once."""
    if not prepared.span:
        return StageOutcome(closed_as="empty", reason=None, route=RouteChoice(configured=plan.configured))
    if not plan.candidates:
        stats = {"kind": "narrative-less", "reason": NO_MODEL, "calls": 0, "accepted": 0, "dropped": 0}
        route = RouteChoice(configured=plan.configured, used=None, why=plan.why)
        return StageOutcome(closed_as="narrative-less", reason=NO_MODEL, stats=stats, route=route)
    inputs = DiffInputs(
        state=prepared.folded.state,
        span=prepared.span,
        commands=prepared.ledger.commands,
        errors=prepared.ledger.errors,
        carried=prepared.carried,
        remembered=prepared.folded.remembered,
        focus=params.customInstructions,
        retry_note_chars=settings.retryNoteChars,
        takeover=prepared.takeover,
        offload=offload,
    )
    # Each candidate's context window sizes its chunks; the summarizer's facts win over the session's.
    windows: dict[str, int | None] = {}
    for facts in (params.summarizer.model if params.summarizer else None, params.session.model):
        if facts is not None:
            windows.setdefault(facts.spec, facts.contextWindow)
    stage: ModelStage = turns if turns is not None else run_diff_stage
    async with access.http_client() as client:
        model = PassModel(
            plan,
            budget=budget,
            client=client,
            access=access,
            context_windows=windows,
            peer=caller.peer,
            redactor=caller.redactor,
            failed_routes=prepared.failed_routes,
        )
        try:
            return await stage(inputs, model)
        except TurnsUnavailable as why:  # the Diff runs in the time left; the notice and the record say why
            code = why.code
            outcome = await run_diff_stage(inputs, model)
    unavailable = {"narrativeMode": "turns-unavailable", "turnsUnavailable": code}
    return replace(outcome, stats=outcome.stats | unavailable, turns_unavailable=code)


async def run_pass(
    params: CompactParams,
    *,
    pass_id: str,
    branch: Sequence[dict[str, Any]] | None = None,
    branch_stats: Mapping[str, Any] | None = None,
    access: ModelAccess | None = None,
    pass_budget_s: float = DEFAULT_PASS_BUDGET_S,
    turn_budget_s: float | None = None,
    progress: PassProgress | None = None,
    users: Mapping[str, str] | None = None,
    settings: Settings | None = None,
    peer: PiPeer | None = None,
    redactor: Redactor | None = None,
    narrative_choices: NarrativeChoices | None = None,
) -> CompactResult:
    """One pass over ``params``; never raises for transcript content, only on bugs or cancellation.

    ``branch`` is the branch read from the session file (:mod:`longhaul_daemon.sessionfile`); without it the
    pass reads the entries the request carried inline. ``turn_budget_s``: turns mode's budget for one turn
    (``serve --turn-budget``), two fifths of ``pass_budget_s`` unless given (TURNS-15). ``progress`` learns
    the span number once the Fold has run, so a pass cut off later still falls back under the number it would
    have had (PASS-16). ``users``: the ``u<n>`` ids of ``branch``'s user messages, when its reader counted
    them already (the session file's index does, so a pass does not go over a long branch for them).
    ``settings``: this pass's ``longhaul.json`` when the caller read it already; read here otherwise.
    ``peer``: the shim of the connection the request came on, for model calls through pi (none without a
    connection). ``redactor``: the pass's credentials, taken out of every model call; made from ``params``
    when not given. ``narrative_choices``: the daemon's book of which stage ``"narrativeMode": "auto"`` runs
    per route.
    """
    entries = list(branch) if branch is not None else list(params.branchEntries or [])
    if settings is None:
        settings = load_settings(params.session.agentDir, params.session.cwd)  # CONFIG-5: re-read every pass
    # PASS-21: big passes do their CPU work in a worker thread; small ones on the loop (read size unknown
    # for an inline branch, so it always takes the thread). Turns mode always takes the thread: it does more
    # per byte (the Digest, every tool output read for values), and a hop is nothing beside its five calls.
    offload = Offload.for_read(branch_stats if branch is not None else None)
    plan = plan_routes(params, settings)
    route = plan.candidates[0].spec if plan.candidates else None  # what "auto" judges: the first tried
    stage = stage_of_pass(settings.narrativeMode, route, narrative_choices)
    if stage == "turns":
        offload = THREADS
    budget = Budget.after(diff_budget_s(pass_budget_s))  # one deadline for every model call of the pass
    caller = _Caller(peer, redactor if redactor is not None else redactor_for_pass(params))

    async def decide(world_taken: Callable[[], Awaitable[World]]) -> _Decided:
        prepared = await offload.run(
            partial(_prepare, params, entries, users if branch is not None else None)
        )
        if progress is not None:
            progress.span = prepared.folded.state.span + 1
        turns = None
        if stage == "turns":  # TURNS-1, or "auto" after the Diff failed this route
            seconds = turn_budget_s if turn_budget_s is not None else pass_budget_s * TURN_SHARE
            turns = _turns_stage(params, prepared, await world_taken(), budget, seconds)
        outcome = await _model_stage(
            prepared, params, plan, settings, access or ModelAccess(), budget, offload, caller, turns
        )
        return prepared, outcome

    (prepared, outcome), world = await decide_beside_world(params.session.cwd, decide)
    said: dict[str, Any] = {}  # what the record adds to the stage's own counts
    if settings.narrativeMode == "auto":
        said["auto"] = stage
        if narrative_choices is not None:
            narrative_choices.record(route, stage=stage, closed_as=outcome.closed_as, reason=outcome.reason)
    if prepared.takeover is not None:
        takeover = prepared.takeover
        picked = sum(1 for m in takeover.earlier if m.picked)
        said["takeover"] = {"earlier": len(takeover.earlier), "picked": picked, "leftOut": takeover.left_out}
    if said:
        outcome = replace(outcome, stats=outcome.stats | said)

    close = _Close(params, prepared, world, outcome, pass_id, branch_stats)
    return await offload.run(close.result)  # Close and render are CPU too (PASS-21)


@dataclass(frozen=True)
class _Close:
    """Everything Close needs once the Diff has decided; :meth:`result` is pure, so it runs in a thread."""

    params: CompactParams
    prepared: _Prepared
    world: World
    outcome: StageOutcome
    pass_id: str
    branch_stats: Mapping[str, Any] | None

    def result(self) -> CompactResult:
        params, prepared, outcome, pass_id = self.params, self.prepared, self.outcome, self.pass_id
        before = prepared.folded.state
        ops = params.preparation.fileOps
        read_files, modified_files = merge_file_lists(
            before, read=ops.read, written=ops.written, edited=ops.edited
        )
        after = close_span(
            before,
            ledger=prepared.ledger,
            world=self.world,
            user_ids=prepared.user_ids,
            read_files=read_files,
            modified_files=modified_files,
            closed_as=outcome.closed_as,
            reason=outcome.reason,
            pass_id=pass_id,
            remembered=prepared.folded.remembered,
            narrative=outcome.narrative,
            events=outcome.events,
            texts=user_texts(prepared.span, prepared.carried),  # the words a narrative-less summary shows
            held=outcome.held,
            lookups=lookup_values(prepared.span),  # code found them, as the ledger: in every close
        )
        # PASS-7: the summary is the rendered state and nothing else; the pass id makes it unique (PASS-9).
        summary = render_summary(after, pass_id=pass_id)
        stats = dict(outcome.stats)
        if outcome.closed_as in ("narrative-less", "chunk-missing"):  # a partial close carries only its held
            # FAIL-11: past 30 carried messages the oldest are left out; the log says how many.
            wanted = set(before.carried) | set(prepared.user_ids)
            stats["carriedLeftOut"] = len(wanted - set(after.carried))
        details = {
            "stateFormat": STATE_FORMAT,
            "compactor": COMPACTOR,
            "passId": pass_id,
            "span": after.span,
            "state": after.model_dump(mode="json"),
        }
        line = {"v": LINE_VERSION, "span": after.span, "calls": outcome.calls, "tokens": outcome.tokens}
        branch = dict(self.branch_stats) if self.branch_stats is not None else {"source": "inline"}
        return CompactResult(
            passId=pass_id,
            span=after.span,
            compaction=Compaction(
                summary=summary,
                firstKeptEntryId=params.preparation.firstKeptEntryId,  # PASS-3: copied, never recomputed
                tokensBefore=params.preparation.tokensBefore,
                details=details,
            ),
            after=AfterEntries(
                spanRecord=span_record(
                    before=before,
                    after=after,
                    world=self.world,
                    outcome=outcome,
                    pass_id=pass_id,
                    user_ids=prepared.user_ids,
                    ledger=prepared.ledger,
                ),
                line=line,
            ),
            notice=notice(after.span, outcome, len(after.carried)),
            diagnostics=PassDiagnostics(
                narrative=stats,
                route=outcome.route,
                branch=branch,
                carried=_offered_before_span(self.prepared) if outcome.calls else 0,  # LOG-18
                rejected_quotes=[quote for chunk in outcome.events for quote in chunk.rejected_quotes],
            ),
        )
