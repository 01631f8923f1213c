"""Typed failures of one model call, so the retry loop and the pass decide by class, never by message text.

The tree (its root is in :mod:`longhaul_daemon.errors`)::

    ModelCallError(LonghaulError)   base; carries status, provider code, request id and attempts, never text
    ├── RetryableError              transient: 408/409/429/≥500 (incl. 529), connection, timeout
    │   ├── StreamError             the stream broke or sent an error event (retryable only before any text)
    │   └── ShimConnectionLost      the shim's connection closed while a call through pi waited (via_pi.py)
    ├── FatalError                  retrying cannot help: other 4xx, a malformed or refused reply
    │   ├── QuotaExceeded           a quota or spend-limit 429 (``insufficient_quota``, spend limits)
    │   ├── ReplyTooLarge           the reply passed MAX_REPLY_BYTES; the connection was closed unread
    │   └── UnsupportedApi          the daemon does not speak this ``api``; a router may ask the shim
    └── BudgetExceeded              the pass deadline passed, or the next wait would pass it
        └── RateLimited             a 429 asked for a wait the budget cannot give (``retry-after: 3600``)

A reply cut at the output limit is a result (``stopReason == "length"``), not an error: FAIL-7 needs its text.
Messages hold only the class, HTTP status and provider error *code*: a provider's message may quote the key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from longhaul_daemon.errors import LonghaulError

if TYPE_CHECKING:
    from longhaul_daemon.secrets.redaction import Redactor

__all__ = [
    "BudgetExceeded",
    "FatalError",
    "ModelCallError",
    "QuotaExceeded",
    "RateLimited",
    "ReplyTooLarge",
    "RetryableError",
    "StreamError",
    "UnsupportedApi",
]


class ModelCallError(LonghaulError):
    """A model call failed; ``retryable`` tells the retry loop whether another attempt may help."""

    retryable_by_default: ClassVar[bool] = False
    label: ClassVar[str] = "model call failed"

    def __init__(
        self,
        *,
        status: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
        should_retry: bool | None = None,
    ) -> None:
        self.status = status
        self.code = _safe_code(code)
        self.request_id = _safe_code(request_id)
        self.retry_after = retry_after
        self.should_retry = should_retry
        self.attempts = 0
        self.credential_refused = False  # a 401/403, or a 400 whose message refused the credential
        super().__init__(self.label)

    def redact(self, redactor: Redactor) -> None:
        """Drop ``code``/``request_id`` if a (hostile or buggy) server echoed a credential, or a long piece of
        one, into them."""
        if self.code is not None and redactor.finds(self.code):
            self.code = "redacted"
        if self.request_id is not None and redactor.finds(self.request_id):
            self.request_id = "redacted"

    @property
    def retryable(self) -> bool:
        """Whether the retry loop may try again; a server's ``x-should-retry`` header wins over the class."""
        if self.should_retry is not None:
            return self.should_retry
        return self.retryable_by_default

    def _describe(self) -> str:
        parts = [self.label]
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        if self.code:
            parts.append(self.code)
        if self.request_id:
            parts.append(f"request {self.request_id}")
        return ": ".join(parts[:1]) + (" (" + ", ".join(parts[1:]) + ")" if len(parts) > 1 else "")

    def __str__(self) -> str:
        return self._describe()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, attempts={self.attempts})"


class RetryableError(ModelCallError):
    """A transient failure: rate limit, overload, server error, connection or timeout."""

    retryable_by_default: ClassVar[bool] = True
    label: ClassVar[str] = "model call failed transiently"


class StreamError(RetryableError):
    """The stream carried an error event or ended early; retryable only when no text had arrived."""

    label: ClassVar[str] = "model stream failed"

    def __init__(self, *, got_text: bool, code: str | None = None, request_id: str | None = None) -> None:
        self.got_text = got_text
        super().__init__(code=code, request_id=request_id, should_retry=False if got_text else None)


class FatalError(ModelCallError):
    """Retrying cannot help: a client error, a malformed reply or a refusal."""

    label: ClassVar[str] = "model call failed"


class QuotaExceeded(FatalError):
    """The account's quota or spend limit is used up; a 429 that no wait will cure."""

    label: ClassVar[str] = "model quota exceeded"


class ReplyTooLarge(FatalError):
    """The server kept sending past the reply cap (a model stuck in a loop, or a hostile endpoint).

    Not retried: the same prompt to the same model would likely loop again, and each try costs the cap.
    """

    def __init__(self, *, request_id: str | None = None) -> None:
        super().__init__(code="reply_too_large", request_id=request_id)


class UnsupportedApi(FatalError):
    """The model's ``api`` is not one the daemon speaks; the call may still go through the shim."""

    label: ClassVar[str] = "model api not supported by the daemon"

    def __init__(self, api: str | None) -> None:
        super().__init__(code=api or "none")
        self.api = api


class BudgetExceeded(ModelCallError):
    """The pass deadline passed during the call, or the next retry wait would pass it."""

    label: ClassVar[str] = "model call budget exceeded"


class RateLimited(BudgetExceeded):
    """The provider answered 429 and the wait it asked for (or the backoff) would end past the deadline.

    A budget failure, since waiting would have run the pass out of time, but the provider's, not the
    pass's: the reason codes say ``rate-limited``, and a summarizer that says so hands over to the session
    model like any failed route.
    """

    label: ClassVar[str] = "model call rate limited past the budget"


def _safe_code(value: str | None) -> str | None:
    """Keep a provider code or id only if it looks like an identifier; anything else could be quoted text."""
    if value is None:
        return None
    text = str(value)[:120]
    if text and all(ch.isalnum() or ch in "-_.:" for ch in text):
        return text
    return "unrecognized"
