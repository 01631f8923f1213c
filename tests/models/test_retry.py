"""Retry classification, server waits, backoff, and the budget-aware loop, without a network."""

from __future__ import annotations

import email.utils

import anyio
import anyio.lowlevel
import pytest

from longhaul_daemon.models import Budget, BudgetExceeded, FatalError, QuotaExceeded, RetryableError
from longhaul_daemon.models.call_errors import ModelCallError
from longhaul_daemon.models.retry import backoff, error_for_status, retry_after_seconds, run_with_retries


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_retryable_statuses(status: int) -> None:
    error = error_for_status(status, {}, None, None)
    assert isinstance(error, RetryableError)
    assert error.retryable


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
def test_other_4xx_are_fatal(status: int) -> None:
    error = error_for_status(status, {}, {"error": {"type": "invalid_request_error"}}, "req_1")
    assert isinstance(error, FatalError)
    assert not error.retryable
    assert (error.code, error.request_id) == ("invalid_request_error", "req_1")


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"type": "insufficient_quota", "code": "insufficient_quota"}},
        {
            "type": "error",
            "error": {"type": "rate_limit_error", "details": {"error_code": "enforced_spend_limit_reached"}},
        },
    ],
)
def test_quota_429s_are_fatal(body: object) -> None:
    assert isinstance(error_for_status(429, {}, body, None), QuotaExceeded)
    assert not error_for_status(429, {}, body, None).retryable


def test_should_retry_header_overrides_both_ways() -> None:
    assert not error_for_status(503, {"x-should-retry": "false"}, None, None).retryable
    assert error_for_status(400, {"X-Should-Retry": "true"}, None, None).retryable
    assert error_for_status(503, {"x-should-retry": "maybe"}, None, None).retryable


def test_retry_after_sources_in_order() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({"Retry-After": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "soon", "retry-after": "2"}) == 2.0
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=1_000_000.0) == 30.0
    assert retry_after_seconds({"retry-after": "not a date"}) is None
    assert retry_after_seconds({"retry-after": "-3"}) is None
    assert retry_after_seconds({}) is None


def test_backoff_matches_the_sdks() -> None:
    assert [backoff(n, 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]
    assert backoff(0, 1.0) == 0.375


def test_budget_with_injected_clock() -> None:
    clock = Clock()
    budget = Budget.after(10, clock=clock)
    assert budget.remaining() == 10
    assert budget.fits(9.9) and not budget.fits(10)
    clock.now += 11
    assert budget.remaining() == 0
    with pytest.raises(BudgetExceeded):
        budget.scope()


@pytest.mark.anyio
async def test_loop_gives_up_after_four_attempts() -> None:
    calls: list[int] = []
    waits: list[float] = []

    async def attempt(number: int) -> str:
        calls.append(number)
        raise RetryableError(status=503)

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with anyio.fail_after(5), pytest.raises(RetryableError) as caught:
        await run_with_retries(attempt, budget=Budget.after(60), sleep=sleep, rand=lambda: 0.0)
    assert calls == [1, 2, 3, 4]
    assert waits == [0.5, 1.0, 2.0]
    assert caught.value.attempts == 4


@pytest.mark.anyio
async def test_loop_does_not_start_a_wait_past_the_deadline() -> None:
    clock = Clock()
    waits: list[float] = []

    async def attempt(number: int) -> str:
        clock.now += 1
        raise RetryableError(status=429, retry_after=60.0)

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    with anyio.fail_after(5), pytest.raises(BudgetExceeded) as caught:
        await run_with_retries(attempt, budget=Budget.after(5, clock=clock), sleep=sleep)
    assert waits == []
    assert caught.value.attempts == 1
    assert isinstance(caught.value.__cause__, RetryableError)


@pytest.mark.anyio
async def test_loop_returns_result_and_attempt_count() -> None:
    async def attempt(number: int) -> str:
        if number < 3:
            raise RetryableError(code="timeout")
        return "done"

    async def sleep(seconds: float) -> None:
        await anyio.lowlevel.checkpoint()

    with anyio.fail_after(5):
        assert await run_with_retries(attempt, budget=Budget.after(60), sleep=sleep) == ("done", 3)


def test_error_text_has_no_provider_message() -> None:
    error = error_for_status(
        401, {}, {"error": {"message": "Incorrect API key provided: sk-abc", "code": "x y"}}, None
    )
    assert "sk-abc" not in str(error)
    assert error.code == "unrecognized"
    assert str(error) == "model call failed (HTTP 401, unrecognized)"
    assert repr(error) == "FatalError(status=401, code='unrecognized', attempts=0)"
    assert isinstance(error, ModelCallError)
