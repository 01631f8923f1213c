"""What every pass shares to reach models, kept apart from the pass so the RPC layer loads without it."""

from __future__ import annotations

from dataclasses import dataclass, field

from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.ops.status_view import RouteHealthBook

__all__ = ["ModelAccess"]


@dataclass
class ModelAccess:
    """Daemon-wide: per-provider concurrency limits, the route health ``status`` shows, and the apis whose
    calls go through pi's own provider layer (``model.complete``) instead of the daemon's clients."""

    limits: ProviderLimits = field(default_factory=ProviderLimits)
    health: RouteHealthBook = field(default_factory=RouteHealthBook)
    via_pi_apis: frozenset[str] = frozenset()
