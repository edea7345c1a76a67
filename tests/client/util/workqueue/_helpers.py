"""Shared test helpers: bounded waits so a regression fails fast instead of hanging."""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from kubeplane.client.util.workqueue import Interface

R = TypeVar("R")
T = TypeVar("T")

TIMEOUT = 5.0   # only reached when something is broken; passing tests never wait


async def bounded(aw: Awaitable[R]) -> R:
    """Await aw, failing the test instead of hanging if it never completes."""
    return await asyncio.wait_for(aw, timeout=TIMEOUT)


async def get(q: Interface[T]) -> tuple[T, bool]:
    return await bounded(q.get())


async def settle() -> None:
    """Let every runnable task run until it blocks again (no wall-clock time passes)."""
    for _ in range(10):
        await asyncio.sleep(0)
