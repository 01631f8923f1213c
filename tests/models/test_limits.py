"""Per-provider limits: which entry sizes a limiter, and what a new configuration does to limiters in use."""

from __future__ import annotations

import anyio
import pytest

from longhaul_daemon.models.limits import DEFAULT_LIMIT, ProviderLimits

pytestmark = pytest.mark.anyio


def test_the_most_specific_entry_sizes_a_limiter() -> None:
    limits = ProviderLimits()
    limits.configure({"default": 6, "anthropic": 2, "anthropic@https://proxy.example/v1": 1})
    assert limits.limiter("anthropic@https://proxy.example/v1", provider="anthropic").total_tokens == 1
    assert limits.limiter("anthropic@https://api.anthropic.com", provider="anthropic").total_tokens == 2
    assert limits.limiter("openai@https://api.openai.com/v1", provider="openai").total_tokens == 6
    limits.configure({})
    assert limits.limit_for("openai@https://api.openai.com/v1", "openai") == DEFAULT_LIMIT


def test_a_new_configuration_resizes_the_limiters_already_made() -> None:
    limits = ProviderLimits()
    fast = limits.limiter("fast@u", provider="fast")
    slow = limits.limiter("slow@u", provider="slow")
    limits.configure({"default": 3, "slow": 1})
    assert (fast.total_tokens, slow.total_tokens) == (3, 1)
    limits.configure({"slow": 2})
    assert (fast.total_tokens, slow.total_tokens) == (DEFAULT_LIMIT, 2)


async def test_widening_a_limit_lets_a_waiting_call_in_while_the_first_still_runs() -> None:
    limits = ProviderLimits(default=1)
    limiter = limits.limiter("p@u", provider="p")
    order: list[str] = []
    first_done = anyio.Event()

    async def call(name: str, finished: anyio.Event | None) -> None:
        async with limiter:
            order.append(f"{name} in")
            if finished is not None:
                await finished.wait()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(call, "first", first_done)
            while not order:  # noqa: ASYNC110 - the limiter has no event to wait on
                await anyio.sleep(0.01)
            group.start_soon(call, "second", None)
            while limiter.statistics().tasks_waiting < 1:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            limits.configure({"default": 2})
            while len(order) < 2:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            first_done.set()
    assert order == ["first in", "second in"]


def test_a_limit_below_one_is_a_bug_not_a_setting() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ProviderLimits().configure({"default": 0})
