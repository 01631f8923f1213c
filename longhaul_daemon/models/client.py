"""``complete()``: one model call with provider choice, retries, budget, concurrency limit and a trace.

The pass calls this and nothing below it. It never logs or raises text from the prompt, the reply or the
provider's error message, and the API key travels only inside the request object. A call goes directly only
on a route the daemon builds exactly as pi would (:mod:`.route_table`); every other call goes to the shim as
``model.complete`` (:mod:`.via_pi`), under the same policy. A request with an output schema is sent
structured where the route allows it (:mod:`.structured`), and a stream can be ended at the first whole JSON
object the caller wants (:mod:`.stream_watch`), whichever way it goes. Requests leave and replies arrive with
every credential of the pass taken out (:mod:`.scrubbing`), on both routes. Which way a call goes is decided
in :mod:`.call_route`.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal

import anyio
import structlog

from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.call_errors import BudgetExceeded, FatalError, ModelCallError, UnsupportedApi
from longhaul_daemon.models.call_route import provider_for, route_for
from longhaul_daemon.models.completion import CallTrace, CompletionResult
from longhaul_daemon.models.http import HttpClient, PreparedCall, post_json, stream_sse
from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.models.providers import Provider
from longhaul_daemon.models.request import ModelRequest
from longhaul_daemon.models.retry import MAX_ATTEMPTS, run_with_retries
from longhaul_daemon.models.route_table import DirectRefusals, RouteChoice
from longhaul_daemon.models.scrubbing import scrubbed_reply, scrubbed_request
from longhaul_daemon.models.stream_watch import StreamWatch
from longhaul_daemon.models.structured import StructuredMemory, is_schema_refusal
from longhaul_daemon.models.via_pi import PiPeer, exchange_via_pi, pi_call, recorded_reasoning
from longhaul_daemon.offload import INLINE_BYTES, THREADS
from longhaul_daemon.secrets.redaction import EMPTY, Redactor

__all__ = ["complete"]


def _log() -> Any:
    """A fresh proxy per use, so a logger cached by an earlier ``structlog.configure`` never goes stale."""
    return structlog.get_logger("longhaul.models")


TraceSink = Callable[[CallTrace], None]


def _redactor_for(request: ModelRequest, pass_redactor: Redactor) -> Redactor:
    """The pass's redactor (both routes' credentials) joined with the called model's own."""
    return pass_redactor.union(Redactor(request.target.secrets()))


@dataclass(frozen=True)
class _Exchange:
    """One logical call made ready: how to run an attempt, and what its trace says about the call."""

    run: Callable[[], Awaitable[CompletionResult]]
    api: str
    via: Literal["daemon", "pi"]
    via_why: str
    reasoning: str | None
    structured: str | None
    structured_skip: str | None


def _prepare(
    request: ModelRequest, client: HttpClient, peer: PiPeer | None, choice: RouteChoice
) -> _Exchange:
    target = request.target
    if choice.via == "pi":
        if peer is None:  # only without a shim: nobody may send this credential but pi
            raise UnsupportedApi(target.api) if choice.why == "pi-only-api" else FatalError(code="needs-pi")
        pi_peer = peer
        call = pi_call(request)
        return _Exchange(
            run=lambda: exchange_via_pi(pi_peer, request, call),
            api=target.api or "none",
            via="pi",
            via_why=choice.why,
            reasoning=recorded_reasoning(request),
            structured=call.structured,
            structured_skip=call.structured_skip,
        )
    provider = provider_for(target.api)
    prepared, reasoning = provider.prepare(request)
    if not all(name.isascii() and value.isascii() for name, value in prepared.headers.items()):
        # A key or header value from pi's models.json that HTTP cannot carry: no attempt can succeed,
        # and httpx would raise a UnicodeEncodeError no retry loop knows (found by the socket fuzzer).
        raise FatalError(code="unsendable-header")
    stop_at = request.stop_at_object if prepared.stream else None
    cut_at = request.cut_at_repeat if prepared.stream else None
    return _Exchange(
        run=lambda: _exchange(client, provider, prepared, stop_at, cut_at),
        api=provider.api,
        via="daemon",
        via_why=choice.why,
        reasoning=reasoning,
        structured=prepared.structured,
        structured_skip=prepared.structured_skip or request.structured_off,
    )


async def complete(
    request: ModelRequest,
    *,
    budget: Budget,
    client: HttpClient,
    limits: ProviderLimits | None = None,
    on_trace: TraceSink | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    rand: Callable[[], float] = random.random,
    peer: PiPeer | None = None,
    via_pi_apis: Collection[str] = (),
    structured: StructuredMemory | None = None,
    refusals: DirectRefusals | None = None,
    redactor: Redactor = EMPTY,
) -> CompletionResult:
    """Call the model of ``request`` until it answers, fails fatally, or the budget or attempts run out.

    Raises a ``ModelCallError`` subclass when it gives up (``UnsupportedApi`` before any I/O). A reply cut at
    the output limit is returned, not raised (``stop_reason == "length"``). ``on_trace`` gets one
    ``CallTrace`` per call, also on failure and cancellation.

    With ``peer`` (the shim of the pass's connection), the call goes where :func:`route_for` says: the
    daemon's own client only on a proven direct route, else through pi (PASS-22). A direct call the provider
    refuses for its credential (401, 403, or a 400 that says so) is made again through pi at once, under the
    same budget, and with ``refusals`` the route goes through pi from then on. Without a peer, an api the
    daemon does not speak raises ``UnsupportedApi``.

    With ``structured`` (the daemon's memory of routes that refuse a schema), a request's output schema is
    left out for a model known to refuse it, and a 400 or 422 to a call that carried one is answered by the
    same call without it; the refusal is remembered unless that call gets a 400 or 422 too
    (:mod:`.structured`). Each of the two calls has its own trace.

    ``redactor`` holds the pass's credentials (both routes'); with the called model's own, they are taken
    out of the request before it leaves and out of the reply, the errors and the trace before anyone reads
    them.
    """
    redactor = _redactor_for(request, redactor)
    # every text of the request, whoever wrote it (transcript, model, error text), before it leaves
    request = scrubbed_request(request, redactor)
    target = request.target
    key = (target.api, target.base_url, target.model_id)
    if structured is not None and request.schema_to_send is not None and structured.refuses(*key):
        request = replace(request, structured_off="refused")

    async def call(req: ModelRequest, exchange: _Exchange) -> CompletionResult:
        return await _complete(
            req,
            exchange,
            budget=budget,
            limits=limits,
            on_trace=on_trace,
            max_attempts=max_attempts,
            sleep=sleep,
            rand=rand,
            redactor=redactor,
        )

    async def on_route(choice: RouteChoice) -> CompletionResult:
        first = _prepare(request, client, peer, choice)
        try:
            return await call(request, first)
        except ModelCallError as error:
            if structured is None or first.structured is None or not is_schema_refusal(error):
                raise
        plain = replace(request, structured_off="refused")
        try:
            result = await call(plain, _prepare(plain, client, peer, choice))
        except ModelCallError as error:
            if not is_schema_refusal(error):
                structured.remember(*key)  # the call got past the request check once the schema was gone
            raise
        structured.remember(*key)
        return result

    choice = route_for(target, peer=peer, via_pi_apis=via_pi_apis, refusals=refusals)
    try:
        return await on_route(choice)
    except ModelCallError as error:
        if choice.via != "daemon" or peer is None or not error.credential_refused or error.status is None:
            raise
        status = error.status
    if refusals is not None:
        refusals.remember(target.provider, target.api, target.base_url, status)
    return await on_route(RouteChoice("pi", f"refused-{status}"))


async def _complete(
    request: ModelRequest,
    exchange: _Exchange,
    *,
    budget: Budget,
    limits: ProviderLimits | None,
    on_trace: TraceSink | None,
    max_attempts: int,
    sleep: Callable[[float], Awaitable[None]],
    rand: Callable[[], float],
    redactor: Redactor,
) -> CompletionResult:
    """One logical call: attempts under the retry policy, the budget and the concurrency limit, one trace.

    ``redactor``: the pass's and this target's credentials, so neither the answer nor an error's code or
    request id, nor the trace (the log line, the record, route health) carries one or a long piece of one.
    """
    target = request.target
    api, via = exchange.api, exchange.via
    trace = CallTrace(
        kind=request.kind,
        api=api,
        model=redactor.text(f"{target.provider}/{target.model_id}"),
        output_budget=request.max_output_tokens,
        reasoning=exchange.reasoning,
        via=via,
        via_why=exchange.via_why,
        structured=exchange.structured,
        structured_skip=exchange.structured_skip,
    )
    limiter = limits.limiter(target.limit_key, provider=target.provider) if limits is not None else None
    started = budget.now()

    async def attempt(number: int) -> CompletionResult:
        trace.attempts = number
        result: CompletionResult | None = None
        try:
            with budget.scope():
                if limiter is None:
                    result = await exchange.run()
                else:
                    async with limiter:
                        result = await exchange.run()
        except TimeoutError:
            raise BudgetExceeded() from None
        if result is None:  # fail_after raises rather than swallows; this satisfies the type checker
            raise BudgetExceeded()
        return result

    def on_failure(number: int, error: ModelCallError) -> None:
        error.redact(redactor)
        _log().info(
            "model_call_attempt_failed",
            api=api,
            via=via,
            attempt=number,
            error=type(error).__name__,
            status=error.status,
            code=error.code,
            retryable=error.retryable,
            request_id=error.request_id,
        )

    try:
        result, attempts = await run_with_retries(
            attempt, budget=budget, max_attempts=max_attempts, sleep=sleep, rand=rand, on_failure=on_failure
        )
    except ModelCallError as error:
        error.redact(redactor)
        _finish(trace, started, budget, error=error)
        _emit(trace, on_trace)
        raise
    except BaseException as other:
        cancelled = isinstance(other, anyio.get_cancelled_exc_class())
        _finish(trace, started, budget, other="Cancelled" if cancelled else type(other).__name__)
        _emit(trace, on_trace)
        raise
    # before the Diff reads or cuts it, and before a call's id, name or arguments are sent anywhere again;
    # a reply far larger than any prompt, or one with calls (whose arguments may be anything), in a thread
    scrub = partial(scrubbed_reply, result, redactor)
    big = len(result.text) >= INLINE_BYTES or bool(result.tool_calls)
    result = await THREADS.run(scrub) if big else scrub()
    trace.attempts = attempts
    trace.usage = result.usage
    trace.request_id = result.request_id
    trace.stop_reason = result.stop_reason
    trace.stopped_early = result.stopped_early
    trace.tool_calls = len(result.tool_calls)
    _finish(trace, started, budget)
    _emit(trace, on_trace)
    return result


async def _exchange(
    client: HttpClient,
    provider: Provider,
    call: PreparedCall,
    stop_at: Callable[[dict[str, Any]], bool] | None = None,
    cut_at: Callable[[dict[str, Any]], bool] | None = None,
) -> CompletionResult:
    """One HTTP attempt, streamed or not; errors keep the request id of the reply that carried them.

    With ``stop_at`` (and ``cut_at``), a stream is ended where :class:`~.stream_watch.StreamWatch` says:
    leaving the stream closes the connection, so the server stops generating what nobody reads.
    """
    if not call.stream:
        body, request_id = await post_json(client, call)
        try:
            result = provider.parse(body, call)
        except ModelCallError as error:
            error.request_id = error.request_id or request_id
            raise
        return replace(result, request_id=request_id)
    watch = StreamWatch(stop_at, cut_at) if stop_at is not None else None
    async with stream_sse(client, call) as (request_id, events):
        state = provider.new_stream(call)
        try:
            async for event in events:
                # an event far larger than a delta (a hostile 10 MB argument) is decoded off the loop
                big = len(event.data) >= INLINE_BYTES
                piece = await THREADS.run(partial(state.feed, event)) if big else state.feed(event)
                if watch is not None and piece and watch.feed(piece):
                    result = watch.result(state.partial())
                    break
            else:
                result = state.finish()
        except ModelCallError as error:
            error.request_id = error.request_id or request_id
            raise
    return replace(result, request_id=request_id)


def _finish(
    trace: CallTrace,
    started: float,
    budget: Budget,
    *,
    error: ModelCallError | None = None,
    other: str | None = None,
) -> None:
    trace.duration_ms = max(0, round((budget.now() - started) * 1000))
    if error is not None:
        trace.error = type(error).__name__
        trace.error_code = error.code
        trace.attempts = max(trace.attempts, error.attempts)
        trace.request_id = error.request_id
    else:
        trace.error = other


def _emit(trace: CallTrace, sink: TraceSink | None) -> None:
    _log().info("model_call", **trace.as_dict())
    if sink is not None:
        sink(trace)
