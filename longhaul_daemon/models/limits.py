"""Per-provider concurrency limits, so parallel passes cannot flood one provider into 429s.

One ``anyio.CapacityLimiter`` per provider key (the provider name, or base URL for local servers), created on
first use. Waiting for a slot happens inside the call's budget scope, so it is bounded by the deadline too.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio

__all__ = ["DEFAULT_LIMIT", "ProviderLimits"]

DEFAULT_LIMIT = 4


class ProviderLimits:
    """Hands out the limiter of a provider key; limits per key may be configured, the rest get the default."""

    def __init__(self, default: int = DEFAULT_LIMIT, per_key: Mapping[str, int] | None = None) -> None:
        if default < 1 or any(v < 1 for v in (per_key or {}).values()):
            raise ValueError("concurrency limits must be at least 1")
        self._default = default
        self._per_key = dict(per_key or {})
        self._limiters: dict[str, anyio.CapacityLimiter] = {}

    def limiter(self, key: str) -> anyio.CapacityLimiter:
        found = self._limiters.get(key)
        if found is None:
            found = anyio.CapacityLimiter(self._per_key.get(key, self._default))
            self._limiters[key] = found
        return found

    def in_use(self) -> dict[str, int]:
        """Borrowed slots per key, for the status route."""
        return {key: int(lim.borrowed_tokens) for key, lim in self._limiters.items()}
