"""Helpers for the kubelet tests (importable from test modules)."""
from __future__ import annotations

import asyncio

from kubeplane.utils.clock import FakeClock


async def settle(rounds: int = 120) -> None:
    """Let every runnable task run (the in-process API server answers within a few turns)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float, step: float = 0.5) -> None:
    """Move the fake clock forward in steps, letting tasks run after each one."""
    await settle()
    n = max(1, round(seconds / step))
    for _ in range(n):
        clock.step(seconds / n)
        await settle()


