"""Model calls made by the daemon itself (PASS-22): four provider wire formats, retries and budgets.

``complete(request, budget=…, client=…)`` is the entry point; see ``docs/models.md``.
"""

from __future__ import annotations

from longhaul_daemon.models.budget import Budget
from longhaul_daemon.models.call_errors import (
    BudgetExceeded,
    FatalError,
    ModelCallError,
    QuotaExceeded,
    RateLimited,
    RetryableError,
    StreamError,
    UnsupportedApi,
)
from longhaul_daemon.models.call_route import provider_for
from longhaul_daemon.models.client import complete
from longhaul_daemon.models.completion import CallTrace, CompletionResult, Usage
from longhaul_daemon.models.http import make_client
from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.models.request import Compat, Message, ModelRequest, ModelTarget

__all__ = [
    "Budget",
    "BudgetExceeded",
    "CallTrace",
    "Compat",
    "CompletionResult",
    "FatalError",
    "Message",
    "ModelCallError",
    "ModelRequest",
    "ModelTarget",
    "ProviderLimits",
    "QuotaExceeded",
    "RateLimited",
    "RetryableError",
    "StreamError",
    "UnsupportedApi",
    "Usage",
    "complete",
    "make_client",
    "provider_for",
]
