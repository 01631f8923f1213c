"""Per-provider concurrency limits, so parallel passes cannot flood one provider into 429 replies.

One ``anyio.CapacityLimiter`` per provider key (the provider name plus its base URL, see
``ModelTarget.limit_key``), created on first use and shared by every pass of the daemon. How many calls each
may run is the daemon's own setting, since the limit is shared by every session (``longhaul-daemon serve
--concurrency KEY=N``, or ``$LONGHAUL_CONCURRENCY``): an entry for the exact key wins, then one for the
provider name, then ``"default"``, then :data:`DEFAULT_LIMIT`. :meth:`ProviderLimits.configure` resizes
the limiters already made: a wider limit lets waiting calls in at once, a narrower one lets calls already
running finish and holds new ones until the count is under it. Waiting for a slot happens inside the
call's budget scope, so it is bounded by the deadline too.
"""

from __future__ import annotations

from collections.abc import Mapping

import anyio

__all__ = ["DEFAULT_KEY", "DEFAULT_LIMIT", "ProviderLimits"]

DEFAULT_LIMIT = 4
DEFAULT_KEY = "default"  # the ``concurrency`` entry that applies to every provider without its own


class ProviderLimits:
    """Hands out the limiter of a provider key, sized by the configured limits."""

    def __init__(self, default: int = DEFAULT_LIMIT, per_provider: Mapping[str, int] | None = None) -> None:
        self._limiters: dict[str, tuple[str | None, anyio.CapacityLimiter]] = {}
        self._default = DEFAULT_LIMIT
        self._per_provider: dict[str, int] = {}
        self.configure({DEFAULT_KEY: default, **(per_provider or {})})

    def configure(self, limits: Mapping[str, int]) -> None:
        """Apply ``concurrency`` entries (key -> calls at once); keys left out fall back to the default.

        The values come validated from the command line; a value below 1 is a bug, not a setting, so it
        raises instead of being skipped.
        """
        if any(value < 1 for value in limits.values()):
            raise ValueError("concurrency limits must be at least 1")
        default = limits.get(DEFAULT_KEY, DEFAULT_LIMIT)
        per_provider = {key: value for key, value in limits.items() if key != DEFAULT_KEY}
        if default == self._default and per_provider == self._per_provider:
            return  # the usual case: every pass re-reads the same file
        self._default, self._per_provider = default, per_provider
        for key, (provider, limiter) in self._limiters.items():
            wanted = self.limit_for(key, provider)
            if limiter.total_tokens != wanted:
                limiter.total_tokens = wanted

    def limit_for(self, key: str, provider: str | None = None) -> int:
        """The configured limit of ``key``: the exact key's entry, the provider's, else the default."""
        found = self._per_provider.get(key)
        if found is None and provider is not None:
            found = self._per_provider.get(provider)
        return self._default if found is None else found

    def limiter(self, key: str, *, provider: str | None = None) -> anyio.CapacityLimiter:
        """The limiter of ``key`` (made on first use); ``provider`` lets a per-provider entry apply."""
        found = self._limiters.get(key)
        if found is None:
            found = (provider, anyio.CapacityLimiter(self.limit_for(key, provider)))
            self._limiters[key] = found
        return found[1]
