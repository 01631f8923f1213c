"""``complete()``: one model call with provider choice, retries, budget, concurrency limit and a trace.

The pass calls this and nothing below it. It never logs or raises text from the prompt, the reply or the
provider's error message, and the API key travels only inside the request object. A call the daemon cannot or
is told not to make itself goes to the shim as ``model.complete`` (:mod:`.via_pi`), under the same policy.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Collection
from dataclasses import replace
from typing import Any, Literal

import anyio
import structlog

from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.errors import BudgetExceeded, FatalError, ModelCallError, UnsupportedApi
from longhaul_daemon.models.http import HttpClient, PreparedCall, post_json, stream_sse
from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.models.providers import PROVIDERS, Provider
from longhaul_daemon.models.request import ModelRequest
from longhaul_daemon.models.result import CallTrace, CompletionResult
from longhaul_daemon.models.retry import MAX_ATTEMPTS, run_with_retries
from longhaul_daemon.models.via_pi import PiPeer, exchange_via_pi, recorded_reasoning
from longhaul_daemon.secrets.redaction import Redactor
from longhaul_daemon.secrets.redaction import current as current_redactor

__all__ = ["complete", "goes_through_pi", "provider_for"]


def _log() -> Any:
    """A fresh proxy per use, so a logger cached by an earlier ``structlog.configure`` never goes stale."""
    return structlog.get_logger("longhaul.models")


TraceSink = Callable[[CallTrace], None]


def provider_for(api: str | None) -> Provider:
    """The wire format for pi's ``api`` name; ``UnsupportedApi`` when the daemon does not speak it."""
    provider = PROVIDERS.get(api or "")
    if provider is None:
        raise UnsupportedApi(api)
    return provider


def goes_through_pi(api: str | None, *, peer: PiPeer | None, via_pi_apis: Collection[str] = ()) -> bool:
    """Whether a call on ``api`` goes to the shim: only with a peer, and when told to or the daemon cannot."""
    return peer is not None and (api in via_pi_apis or (api or "") not in PROVIDERS)


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
) -> CompletionResult:
    """Call the model of ``request`` until it answers, fails fatally, or the budget or attempts run out.

    Raises a ``ModelCallError`` subclass when it gives up (``UnsupportedApi`` before any I/O). A reply cut at
    the output limit is returned, not raised (``stop_reason == "length"``). ``on_trace`` gets one
    ``CallTrace`` per call, also on failure and cancellation.

    With ``peer`` (the shim of the pass's connection), an api in ``via_pi_apis`` or one the daemon does not
    speak goes through pi (PASS-22); without one, an api the daemon does not speak raises ``UnsupportedApi``.
    """
    target = request.target
    exchange: Callable[[], Awaitable[CompletionResult]]
    via: Literal["daemon", "pi"]
    if peer is not None and goes_through_pi(target.api, peer=peer, via_pi_apis=via_pi_apis):
        api, reasoning, via = target.api or "none", recorded_reasoning(request), "pi"
        pi_peer = peer

        def exchange() -> Awaitable[CompletionResult]:
            return exchange_via_pi(pi_peer, request)

    else:
        provider = provider_for(target.api)
        call, reasoning = provider.prepare(request)
        api, via = provider.api, "daemon"
        if not all(name.isascii() and value.isascii() for name, value in call.headers.items()):
            # A key or header value from pi's models.json that HTTP cannot carry: no attempt can succeed,
            # and httpx would raise a UnicodeEncodeError no retry loop knows (found by the socket fuzzer).
            raise FatalError(code="unsendable-header")

        def exchange() -> Awaitable[CompletionResult]:
            return _exchange(client, provider, call)

    trace = CallTrace(
        kind=request.kind,
        api=api,
        model=f"{target.provider}/{target.model_id}",
        output_budget=request.max_output_tokens,
        reasoning=reasoning,
        via=via,
    )
    limiter = limits.limiter(target.limit_key, provider=target.provider) if limits is not None else None
    started = budget.now()

    async def attempt(number: int) -> CompletionResult:
        trace.attempts = number
        result: CompletionResult | None = None
        try:
            with budget.scope():
                if limiter is None:
                    result = await exchange()
                else:
                    async with limiter:
                        result = await exchange()
        except TimeoutError:
            raise BudgetExceeded() from None
        if result is None:  # fail_after raises rather than swallows; this satisfies the type checker
            raise BudgetExceeded()
        return result

    # The pass's redactor (both models' credentials) and this target's own, so neither the answer nor an
    # error's code or request id carries a credential or a long piece of one into the Diff, a trace or a log.
    redactor = current_redactor().union(Redactor(target.secrets()))

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
    if result.request_id is not None and redactor.finds(result.request_id):
        result = replace(result, request_id="redacted")
    result = replace(result, text=redactor.text(result.text))  # before the Diff reads or cuts it
    trace.attempts = attempts
    trace.usage = result.usage
    trace.request_id = result.request_id
    trace.stop_reason = result.stop_reason
    _finish(trace, started, budget)
    _emit(trace, on_trace)
    return result


async def _exchange(client: HttpClient, provider: Provider, call: PreparedCall) -> CompletionResult:
    """One HTTP attempt, streamed or not; errors keep the request id of the reply that carried them."""
    if not call.stream:
        body, request_id = await post_json(client, call)
        try:
            result = provider.parse(body)
        except ModelCallError as error:
            error.request_id = error.request_id or request_id
            raise
        return replace(result, request_id=request_id)
    async with stream_sse(client, call) as (request_id, events):
        state = provider.new_stream()
        try:
            async for event in events:
                state.feed(event)
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
