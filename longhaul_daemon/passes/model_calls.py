"""The pass's model: the route plan, the pass budget, traces and route health behind the Diff's one interface.

The Diff asks for calls; this module decides where they go. The routed summarizer is tried first; a call on it
that fails for any reason but the budget moves the rest of the pass to the session's own model, and the reason
is kept for the ``compaction`` record's ``route`` (FAIL-9, DIFF-20). Output budgets follow DIFF-19 and FAIL-7.
Every call's trace (counts only) is kept for the record (FAIL-17) and feeds the route health ``status`` shows.

Every call asks for the answer schema as structured output where the route allows it, remembers a route
that refuses it daemon-wide (:mod:`longhaul_daemon.models.structured`), and ends a stream at the first
answer-shaped object. Which models already gave a reply with no usable answer in this session is
read from the span records on the branch (:func:`unusable_routes`) and written into this pass's record
(:data:`UNUSABLE_KEY`), so that memory lives in the transcript, not in the daemon.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from longhaul_daemon.models.access import ModelAccess
from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.call_errors import BudgetExceeded, FatalError, ModelCallError, RateLimited
from longhaul_daemon.models.call_route import wire_chars
from longhaul_daemon.models.client import complete
from longhaul_daemon.models.completion import CallTrace, CompletionResult, Usage
from longhaul_daemon.models.http import HttpClient
from longhaul_daemon.models.request import Message, ModelRequest, ModelTarget
from longhaul_daemon.models.routing import RouteCandidate, RoutePlan
from longhaul_daemon.models.structured import OutputSchema, is_schema_refusal
from longhaul_daemon.models.tool_calls import ToolChoice, ToolSpec
from longhaul_daemon.models.via_pi import TOOLS_NOT_CARRIED, PiPeer
from longhaul_daemon.passes.answers.extract import answer_shaped, answer_with_prose
from longhaul_daemon.passes.answers.schema import ANSWER_SCHEMA
from longhaul_daemon.passes.fold import SpanInfo
from longhaul_daemon.passes.stage_outcome import TurnsUnavailable
from longhaul_daemon.secrets.redaction import EMPTY, Redactor

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "FIRST_OUTPUT_BUDGET",
    "RAISED_FLOOR",
    "UNUSABLE_KEY",
    "ModelAccess",
    "PassModel",
    "first_budget",
    "raised_budget",
    "unusable_routes",
]

# DIFF-19's proposed flat budget. The Diff now sizes each chunk's budget (diff/planning.py); this stays the
# output reservation a caller with no chunk at hand assumes (bench/pass_bench.py sizes its prompts by it).
FIRST_OUTPUT_BUDGET = 4096
UNUSABLE_KEY = "unusableReplies"  # span record: {"provider/model": replies with no usable answer}
RAISED_FLOOR = 8192  # FAIL-7: a raised budget is never below this
DEFAULT_CONTEXT_WINDOW = 128_000  # when pi does not say; most current models offer at least this
_PROMPT_MARGIN = 1024  # tokens kept free for the provider's own framing and our estimate's error


def first_budget(need: int, max_tokens: int | None) -> int:
    """DIFF-19: what the chunk's answer can need (``need``, at least its floor), capped at ``maxTokens``."""
    return min(need, max_tokens) if max_tokens else need


def unusable_routes(spans: Iterable[SpanInfo]) -> frozenset[str]:
    """The models that gave a reply with no usable answer in an earlier pass on this branch, read from the
    span records the fold read for its spans."""
    found: set[str] = set()
    for span in spans:
        counts = span.record.get(UNUSABLE_KEY) if span.record is not None else None
        if isinstance(counts, Mapping):
            found.update(k for k, n in counts.items() if isinstance(k, str) and type(n) is int and n > 0)
    return frozenset(found)


def raised_budget(previous: int, max_tokens: int | None) -> int | None:
    """FAIL-7: twice the previous budget, at least 8,192, at most ``maxTokens``; None when already there."""
    if max_tokens and previous >= max_tokens:
        return None
    raised = max(2 * previous, RAISED_FLOOR)
    return min(raised, max_tokens) if max_tokens else raised


class PassModel:
    """The :class:`~longhaul_daemon.passes.diff.diff_stage.DiffModel` of one pass. ``peer`` is the shim of the
    pass's connection (calls through pi need it), ``redactor`` the pass's credentials, which every call
    takes out of what it sends and receives."""

    def __init__(
        self,
        plan: RoutePlan,
        *,
        budget: Budget,
        client: HttpClient,
        access: ModelAccess,
        context_windows: Mapping[str, int | None],
        peer: PiPeer | None = None,
        redactor: Redactor = EMPTY,
        failed_routes: frozenset[str] = frozenset(),
    ) -> None:
        self._plan = plan
        self._budget = budget
        self._client = client
        self._access = access
        self._windows = context_windows
        self._peer = peer
        self._redactor = redactor
        self._index = 0
        self.why: str | None = plan.why
        self.traces: list[CallTrace] = []
        self._failed = failed_routes  # from the transcript: earlier passes of this session
        self.unusable: Counter[str] = Counter()  # this pass, by model spec

    @property
    def current(self) -> RouteCandidate | None:
        """The route being tried now, or None once every route has failed."""
        candidates = self._plan.candidates
        return candidates[self._index] if self._index < len(candidates) else None

    @property
    def configured(self) -> str | None:
        """The summarizer ``longhaul.json`` names, whether or not the pass could use it."""
        return self._plan.configured

    @property
    def used(self) -> str | None:
        """The spec of the model the pass ended on (the one that answered, or the last one tried)."""
        return self.current.spec if self.current is not None else None

    def _max_tokens(self) -> int | None:
        return self.current.target.max_tokens if self.current is not None else None

    def first_budget(self, need: int) -> int:
        """The output budget of a first try, within the current model's limit."""
        return first_budget(need, self._max_tokens())

    def raised_budget(self, previous: int) -> int | None:
        """A larger budget after a cut-off answer, or None when the limit is reached."""
        return raised_budget(previous, self._max_tokens())

    def input_tokens(self, output_budget: int) -> int:
        """The prompt tokens the current model's window leaves beside ``output_budget``."""
        spec = self.current.spec if self.current is not None else ""
        window = self._windows.get(spec) or DEFAULT_CONTEXT_WINDOW
        return max(1024, window - output_budget - _PROMPT_MARGIN)

    def failed_before(self) -> bool:
        """Whether the model in use failed earlier, in this pass or an earlier one of the session."""
        spec = self.used
        return spec is not None and (spec in self._failed or self.unusable[spec] > 0)

    def note_unusable(self) -> None:
        """Count an unusable answer against the model in use."""
        if self.used is not None:
            self.unusable[self.used] += 1

    def _record(self, trace: CallTrace) -> None:
        self.traces.append(trace)
        self._access.health.record(
            trace.model,
            duration_ms=trace.duration_ms,
            error_class=trace.error,
            via=trace.via,
            via_why=trace.via_why,
        )

    async def call(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema | None = None,
    ) -> CompletionResult:
        """One model call, moving to the next route when a route fails; raises when none is left."""
        while True:
            candidate = self.current
            if candidate is None:  # the pass checks for a model before the Diff; this guards misuse
                raise FatalError(code="no-model")
            cap = candidate.target.max_tokens
            request = ModelRequest(
                target=candidate.target,
                system=system,
                messages=tuple(messages),
                max_output_tokens=min(max_output_tokens, cap) if cap else max_output_tokens,
                reasoning="off",  # DIFF-18: as little reasoning as the model allows
                kind=kind,
                output_schema=schema or ANSWER_SCHEMA,  # structured output where the route takes it
                stop_at_object=answer_shaped,  # and a looping model is not paid for past its answer
                cut_at_repeat=answer_with_prose,  # nor for a list item it writes again and again
            )
            try:
                return await self._complete(request, self._budget)
            except RateLimited as error:  # the provider will not take calls in time: like a failed route
                self._next_route(candidate, error)
            except BudgetExceeded:
                raise
            except ModelCallError as error:
                self._next_route(candidate, error)

    def _next_route(self, candidate: RouteCandidate, error: ModelCallError) -> None:
        """FAIL-9: a failed summarizer route hands the rest of the pass to the session's own model."""
        if candidate.name != "summarizer" or self._index + 1 >= len(self._plan.candidates):
            raise error
        self.why = f"failed:{type(error).__name__}"
        self._index += 1

    async def _complete(self, request: ModelRequest, budget: Budget) -> CompletionResult:
        return await complete(
            request,
            budget=budget,
            client=self._client,
            limits=self._access.limits,
            on_trace=self._record,
            peer=self._peer,
            via_pi_apis=self._access.via_pi_apis,
            structured=self._access.structured,
            refusals=self._access.refusals,
            redactor=self._redactor,
        )

    # --- turns mode (TURNS-7) ---

    def turn_budget(self, need: int) -> int:
        """The output budget of one turn in turns mode, within the current model's limit."""
        return first_budget(need, self._max_tokens())

    def _turn_request(
        self,
        target: ModelTarget,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema,
        tools: tuple[ToolSpec, ...],
        tool_choice: ToolChoice,
        stop_at: Callable[[dict[str, Any]], bool] | None = None,
    ) -> ModelRequest:
        cap = target.max_tokens
        return ModelRequest(
            target=target,
            system=system,
            messages=tuple(messages),
            max_output_tokens=min(max_output_tokens, cap) if cap else max_output_tokens,
            reasoning="off",
            kind=kind,
            output_schema=schema,
            stop_at_object=stop_at,
            tools=tools,
            tool_choice=tool_choice,
        )

    def request_chars(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        schema: OutputSchema,
        tools: tuple[ToolSpec, ...],
        tool_choice: ToolChoice,
        max_output_tokens: int,
    ) -> int:
        """The characters a turn's call would put on the wire to the model now called (0: none left)."""
        candidate = self.current
        if candidate is None or not messages:
            return 0
        request = self._turn_request(
            candidate.target,
            system,
            messages,
            kind="size",
            max_output_tokens=max_output_tokens,
            schema=schema,
            tools=tools,
            tool_choice=tool_choice,
        )
        return wire_chars(
            request, peer=self._peer, via_pi_apis=self._access.via_pi_apis, refusals=self._access.refusals
        )

    async def converse(
        self,
        system: str,
        messages: Sequence[Message],
        *,
        kind: str,
        max_output_tokens: int,
        schema: OutputSchema,
        tools: tuple[ToolSpec, ...],
        tool_choice: ToolChoice,
        stop_at: Callable[[dict[str, Any]], bool],
        budget: Budget,
    ) -> CompletionResult:
        """One call of a turns-mode conversation, with the offered tools, under the turn's ``budget``.

        Raises :class:`~longhaul_daemon.passes.stage_outcome.TurnsUnavailable` when the route cannot carry
        the tools: a shim that dropped them, or a route that refuses them (remembered daemon-wide, as a
        refused schema is). A refusal is a 400 or 422 to the conversation's first call that the same call
        without tools does not get; that one extra call is made once per model in the daemon's life.
        """
        while True:
            candidate = self.current
            if candidate is None:
                raise FatalError(code="no-model")
            target = candidate.target
            key = (target.api, target.base_url, target.model_id)
            if tools and self._access.tools_refused.refuses(*key):
                raise TurnsUnavailable("tools-refused")
            request = self._turn_request(
                target,
                system,
                messages,
                kind=kind,
                max_output_tokens=max_output_tokens,
                schema=schema,
                tools=tools,
                tool_choice=tool_choice,
                stop_at=stop_at,
            )
            try:
                return await self._complete(request, budget)
            except RateLimited as error:
                self._next_route(candidate, error)
            except BudgetExceeded:
                raise
            except FatalError as error:
                if error.code == TOOLS_NOT_CARRIED:
                    raise TurnsUnavailable("tools-not-carried") from None
                await self._probe_tools(request, budget, error)
                self._next_route(candidate, error)
            except ModelCallError as error:
                self._next_route(candidate, error)

    async def _probe_tools(self, request: ModelRequest, budget: Budget, error: ModelCallError) -> None:
        """Whether a refused first call was refused for its tools: the same call without them decides."""
        first = not any(m.tool_calls or m.tool_results for m in request.messages)
        if not request.tools or not first or not is_schema_refusal(error):
            return
        plain = replace(request, tools=(), tool_choice="auto", kind=f"{request.kind}-without-tools")
        try:
            await self._complete(plain, budget)
        except ModelCallError:
            return  # refused without the tools too: the request was at fault, not the tools
        target = request.target
        self._access.tools_refused.remember(target.api, target.base_url, target.model_id)
        raise TurnsUnavailable("tools-refused")

    def call_stats(self, diff_ms: int) -> dict[str, Any]:
        """What the pass's calls cost and how they went, as counts: the part of ``narrative`` both modes
        share (FAIL-17)."""
        usage = sum((t.usage for t in self.traces), Usage())
        reasoning = next((t.reasoning for t in self.traces if t.reasoning), None)
        return {
            "calls": len(self.traces),
            "callKinds": dict(Counter(t.kind for t in self.traces)),
            "outputBudgets": [t.output_budget for t in self.traces],
            "errors": [t.error for t in self.traces if t.error],
            "usage": usage.as_dict(),
            "timings": {"diffMs": diff_ms, "callsMs": sum(t.duration_ms for t in self.traces)},
            "reasoning": reasoning,
            "structured": dict(Counter(t.structured or "none" for t in self.traces)),
            "structuredSkipped": dict(Counter(t.structured_skip for t in self.traces if t.structured_skip)),
            "stoppedEarly": sum(1 for t in self.traces if t.stopped_early),
            "via": dict(Counter(t.via for t in self.traces)),
            "viaWhy": dict(Counter(f"{t.via}:{t.via_why}" for t in self.traces if t.via_why)),
            "unusable": sum(self.unusable.values()),
        }

    def tokens(self) -> int:
        """Input plus output tokens of every call of this pass."""
        return sum(t.usage.input + t.usage.output for t in self.traces)
