"""Runs a pass's deciding steps while git takes the World, so neither waits for the other (PASS-2)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from longhaul_daemon.passes.world import take_world
from longhaul_daemon.state.model import World

__all__ = ["decide_beside_world"]

Decided = TypeVar("Decided")


async def decide_beside_world(
    cwd: str, decide: Callable[[Callable[[], Awaitable[World]]], Awaitable[Decided]]
) -> tuple[Decided, World]:
    """``decide`` (Fold, Ledger, the Diff) while git takes the World (PASS-2); its errors leave unwrapped."""
    taken, worlds, decided, failed = anyio.Event(), list[World](), list[Decided](), list[Exception]()

    async def snapshot() -> None:
        worlds.append(await take_world(cwd))
        taken.set()

    async def world_taken() -> World:  # turns mode shows the model the World
        await taken.wait()
        return worlds[0]

    async with anyio.create_task_group() as group:
        group.start_soon(snapshot)
        try:
            decided.append(await decide(world_taken))
        except Exception as error:
            failed.append(error)
            group.cancel_scope.cancel()
    if failed:
        raise failed[0]
    return decided[0], worlds[0]
