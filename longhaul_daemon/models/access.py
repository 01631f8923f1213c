"""What every pass shares to reach models, kept apart from the pass so the RPC layer loads without it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from longhaul_daemon.models.http import HttpClient, make_client
from longhaul_daemon.models.limits import ProviderLimits
from longhaul_daemon.models.route_health import RouteHealthBook
from longhaul_daemon.models.route_table import DirectRefusals
from longhaul_daemon.models.structured import StructuredMemory

__all__ = ["ModelAccess"]


@dataclass
class ModelAccess:
    """Daemon-wide: per-provider concurrency limits, the route health ``status`` shows, the models whose
    route refused a structured-output schema, those whose route refused tool calls (turns mode), the apis
    whose calls go through pi's own provider layer (``model.complete``) by command (``serve --via-pi``), the
    routes whose direct call the provider refused for its credential (they go through pi from then on), and
    the daemon's one HTTP client."""

    limits: ProviderLimits = field(default_factory=ProviderLimits)
    health: RouteHealthBook = field(default_factory=RouteHealthBook)
    structured: StructuredMemory = field(default_factory=StructuredMemory)
    tools_refused: StructuredMemory = field(default_factory=StructuredMemory)
    via_pi_apis: frozenset[str] = frozenset()
    refusals: DirectRefusals = field(default_factory=DirectRefusals)
    client: HttpClient | None = None  # owned by the daemon's lifecycle; None outside a serving daemon

    @asynccontextmanager
    async def http_client(self) -> AsyncIterator[HttpClient]:
        """The daemon's client, left open for the next pass; without one, a client for this block only.

        Sharing one client keeps its connection pool and SSL context: building them took a third of the
        daemon's CPU when many small passes ran at once.
        """
        if self.client is not None:
            yield self.client
            return
        async with make_client() as client:
            yield client
