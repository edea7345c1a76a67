"""process_next_work_item: one turn of a controller worker over a work queue.

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

Every upstream controller's processNextWorkItem has this shape: take a key (False once the queue
shuts down), sync it, tell the error handler how it went (err None on success: usually
queue.forget), and mark the key done whatever happened, so a key re-added meanwhile is handed
out again. An exception from sync never ends the worker; cancellation still does.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, TypeVar

T = TypeVar("T")


async def process_next_work_item(queue: Any, sync: Callable[[T], Awaitable[None]],
                                 handle_err: Callable[[Exception | None, T], None]) -> bool:
    """Upstream: processNextWorkItem (the common part of every controller's)."""
    key, shutdown = await queue.get()
    if shutdown:
        return False
    try:
        try:
            await sync(key)
        except Exception as err:
            handle_err(err, key)
        else:
            handle_err(None, key)
    finally:
        queue.done(key)
    return True
