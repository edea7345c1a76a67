"""parallelize_until: run fn over items with a fixed number of workers.

    await parallelize_until(8, nodes, update_node)

Workers pull the next item from one shared iterator, so 1,000 items cost 8 tasks, not 1,000
(creating a task per item was a visible share of an idle 1,000-node control plane), and an item
whose fn never suspends runs inline within its worker. Upstream: ParallelizeUntil
(client-go/util/workqueue/parallelizer.go).
"""
from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Iterable, TypeVar

T = TypeVar("T")


async def parallelize_until(workers: int, items: Iterable[T], fn: Callable[[T], Awaitable[None]]) -> None:
    """Await fn(item) for every item, at most `workers` at a time; the first error is raised
    once every worker has stopped (each stops at its first error, as the rest run on)."""
    it = iter(items)

    async def worker() -> None:
        for item in it:
            await fn(item)

    results = await asyncio.gather(*(worker() for _ in range(max(1, workers))), return_exceptions=True)
    for r in results:
        if isinstance(r, BaseException):
            raise r
