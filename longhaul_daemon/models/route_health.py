"""Route health for ``status``: calls, the last error, the last success and latencies of each model route.

The pass records one entry per model call (:class:`~longhaul_daemon.passes.model_calls.PassModel` feeds it
every call's trace); ``status`` reads a snapshot. The book is bounded, since a route is whatever model id a
client names.
"""

from __future__ import annotations

import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from datetime import UTC, datetime

from longhaul_daemon.log.fields import error_class_field, model_spec_field
from longhaul_daemon.protocol import RouteHealth

__all__ = ["LATENCY_WINDOW", "MAX_ROUTES", "OTHER_ROUTES", "RouteHealthBook"]

LATENCY_WINDOW = 200
"""How many recent successful calls per route the percentiles are taken over."""

MAX_ROUTES = 32
"""Routes ``status`` shows one row each, the most recently called; older ones are folded into ``other``."""

OTHER_ROUTES = "(other routes)"
"""The row counting the calls of routes beyond :data:`MAX_ROUTES` (a space: no model spec has one)."""


@dataclass
class _Route:
    calls: int = 0
    last_error_class: str | None = None
    last_success: datetime | None = None
    latencies_ms: deque[float] = field(default_factory=lambda: deque(maxlen=LATENCY_WINDOW))
    via: str | None = None
    via_why: str | None = None


def _percentile(values: list[float], fraction: float) -> int | None:
    """Nearest-rank percentile, rounded to whole milliseconds; ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return round(ordered[rank - 1])


class RouteHealthBook:
    """Per-route counters for the status view: calls, the last error class, the last success, latencies.

    Bounded, because the route is whatever model id a client names: at most ``max_routes`` rows, the most
    recently called, each named in its real shape (:func:`~longhaul_daemon.log.fields.model_spec_field`);
    the calls of the routes that fell out are counted in one :data:`OTHER_ROUTES` row.
    """

    def __init__(self, max_routes: int = MAX_ROUTES) -> None:
        self._routes: OrderedDict[str, _Route] = OrderedDict()
        self._max_routes = max_routes
        self._other = _Route()

    def record(
        self,
        route: str,
        *,
        duration_ms: float,
        error_class: str | None = None,
        now: datetime | None = None,
        via: str | None = None,
        via_why: str | None = None,
    ) -> None:
        """One model call on ``route`` (``provider/modelId``, with any credential already redacted, as a
        call's trace has it): a success unless ``error_class`` is given; ``via`` and ``via_why`` say which
        way it went and why (the row shows the last call's)."""
        name = model_spec_field(route) or ""
        entry = self._routes.get(name)
        if entry is None:
            entry = self._routes[name] = _Route()
            while len(self._routes) > self._max_routes:
                _, dropped = self._routes.popitem(last=False)
                self._other.calls += dropped.calls
        self._routes.move_to_end(name)
        entry.calls += 1
        if via is not None:
            entry.via, entry.via_why = via, via_why
        if error_class is not None:
            entry.last_error_class = error_class_field(error_class)
            return
        entry.last_success = now if now is not None else datetime.now(UTC)
        entry.latencies_ms.append(max(0.0, duration_ms))

    def snapshot(self) -> list[RouteHealth]:
        """Every route kept, sorted by name, then the :data:`OTHER_ROUTES` row when routes fell out."""
        health: list[RouteHealth] = []
        for route in sorted(self._routes):
            entry = self._routes[route]
            latencies = list(entry.latencies_ms)
            success = entry.last_success
            health.append(
                RouteHealth(
                    route=route,
                    lastErrorClass=entry.last_error_class,
                    lastSuccess=None if success is None else success.isoformat(timespec="seconds"),
                    p50Ms=_percentile(latencies, 0.5),
                    p90Ms=_percentile(latencies, 0.9),
                    calls=entry.calls,
                    via=entry.via,
                    viaWhy=entry.via_why,
                )
            )
        if self._other.calls:
            health.append(RouteHealth(route=OTHER_ROUTES, calls=self._other.calls))
        return health
