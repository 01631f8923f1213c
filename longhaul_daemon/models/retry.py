"""Retry classification and the budgeted retry loop, shaped like the official SDKs but stricter on quotas.

The SDKs retry 408/409/429/≥500 and transport errors, honour ``x-should-retry`` and the server's
``retry-after(-ms)``, and back off ``min(0.5·2^n, 8)·(1−0.25·rand)``. We add: a quota 429 is fatal, and a
wait that would end past the pass deadline is not started (``BudgetExceeded``, or ``RateLimited`` when a 429
asked for it), so the caller can fall back.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import anyio

from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.call_errors import (
    BudgetExceeded,
    FatalError,
    ModelCallError,
    QuotaExceeded,
    RateLimited,
    RetryableError,
)
from longhaul_daemon.models.route_table import is_auth_refusal_text

__all__ = [
    "MAX_ATTEMPTS",
    "backoff",
    "error_for_status",
    "retry_after_seconds",
    "run_with_retries",
]

T = TypeVar("T")

MAX_ATTEMPTS = 4
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_CREDENTIAL_STATUS = frozenset({401, 403})
_QUOTA_CODES = frozenset(
    {
        "insufficient_quota",
        "enforced_spend_limit_reached",
        "spend_limit_reached",
        "billing_hard_limit_reached",
        "quota_per_day_exhausted",
    }
)


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The server's wait: ``retry-after-ms``, else ``retry-after`` as seconds, else as an HTTP date."""
    lowered = {k.lower(): v for k, v in headers.items()}
    ms = lowered.get("retry-after-ms")
    if ms is not None:
        try:
            value = float(ms) / 1000.0
            if value >= 0:
                return value
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        seconds = float(raw)
        return seconds if seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def backoff(retry_index: int, rand: float) -> float:
    """The SDKs' backoff for the n-th retry (0-based): ``min(0.5·2^n, 8)·(1 − 0.25·rand)``."""
    return min(0.5 * 2.0**retry_index, 8.0) * (1.0 - 0.25 * rand)


def _should_retry_header(headers: Mapping[str, str]) -> bool | None:
    value = {k.lower(): v for k, v in headers.items()}.get("x-should-retry")
    if value == "true":
        return True
    if value == "false":
        return False
    return None


def _error_code(body: Any) -> str | None:
    """The provider's machine-readable error code, from the shapes OpenAI, Anthropic and Google use."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if not isinstance(error, dict):
        return None
    details = error.get("details")
    if isinstance(details, dict) and isinstance(details.get("error_code"), str):
        return str(details["error_code"])
    if isinstance(details, list) and _google_daily_quota(details):
        return "quota_per_day_exhausted"
    for key in ("code", "type", "status"):
        value = error.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _google_daily_quota(details: list[Any]) -> bool:
    """Gemini sends every 429 as RESOURCE_EXHAUSTED; only a per-day ``QuotaFailure`` will not pass in time."""
    for detail in details:
        if not isinstance(detail, dict) or not str(detail.get("@type", "")).endswith("QuotaFailure"):
            continue
        for violation in detail.get("violations") or []:
            if isinstance(violation, dict) and "PerDay" in str(violation.get("quotaId", "")):
                return True
    return False


def error_for_status(
    status: int, headers: Mapping[str, str], body: Any, request_id: str | None
) -> ModelCallError:
    """Classify a non-2xx reply exactly once, so every provider retries by the same rules."""
    code = _error_code(body)
    should_retry = _should_retry_header(headers)
    wait = retry_after_seconds(headers)
    common: dict[str, Any] = {"status": status, "code": code, "request_id": request_id, "retry_after": wait}
    if status == 429 and code in _QUOTA_CODES:
        return QuotaExceeded(**common, should_retry=should_retry if should_retry is True else None)
    if status in _RETRYABLE_STATUS or status >= 500:
        return RetryableError(**common, should_retry=should_retry)
    error = FatalError(**common, should_retry=should_retry)
    error.credential_refused = status in _CREDENTIAL_STATUS or (
        status == 400 and is_auth_refusal_text(_error_message(body))
    )
    return error


def _error_message(body: Any) -> str:
    """The provider's error message, only to be read for a refused credential and never kept."""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


async def run_with_retries(
    attempt: Callable[[int], Awaitable[T]],
    *,
    budget: Budget,
    max_attempts: int = MAX_ATTEMPTS,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    rand: Callable[[], float] = random.random,
    on_failure: Callable[[int, ModelCallError], None] | None = None,
) -> tuple[T, int]:
    """Run ``attempt(n)`` (n = 1, 2, …) until it succeeds, fails fatally, runs out of attempts or budget.

    Returns the result and the number of attempts made; the error raised carries ``attempts`` too.
    """
    number = 0
    while True:
        number += 1
        try:
            return await attempt(number), number
        except ModelCallError as error:
            error.attempts = number
            if on_failure is not None:
                on_failure(number, error)
            if not error.retryable or number >= max_attempts:
                raise
            wait = error.retry_after if error.retry_after is not None else backoff(number - 1, rand())
            if not budget.fits(wait):
                kind = RateLimited if error.status == 429 else BudgetExceeded
                exceeded = kind(status=error.status, code=error.code, request_id=error.request_id)
                exceeded.attempts = number
                raise exceeded from error
            await sleep(wait)
