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

import asyncio
import logging
from typing import Any, Awaitable, Callable, Coroutine, Iterable, TypeVar

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


async def run_workers(queue: Any, informers: Iterable[Any], worker: Callable[[], Coroutine[Any, Any, None]],
                      workers: int = 1) -> None:
    """Wait for the informers to sync (the caller starts them), then run `workers` workers until
    cancelled; the queue is shut down on the way out. Upstream: a controller's Run."""
    try:
        for informer in informers:
            await informer.wait_synced()
        async with asyncio.TaskGroup() as tg:
            for _ in range(workers):
                tg.create_task(worker())
    finally:
        queue.shut_down()


def forget_or_retry(queue: Any, log: logging.Logger, err: Exception | None, key: Any) -> None:
    """The usual error handler: forget the key's failures on success, else log and retry it
    with back-off. Upstream: processNextWorkItem's utilruntime.HandleError + AddRateLimited."""
    if err is None:
        queue.forget(key)
        return
    log.warning("syncing %r failed: %s", key, err)
    queue.add_rate_limited(key)


def retry_or_drop(queue: Any, key: Any, err: Exception | None, max_retries: int, on_retry: Callable[[], None],
                  on_drop: Callable[[], None]) -> None:
    """An error handler with a retry budget: forget the key on success; retry it with back-off
    (on_retry logs why) while it has failed fewer than max_retries times; else drop it (on_drop
    logs that). Upstream: the handleErr of the endpoint controllers."""
    if err is None:
        queue.forget(key)
    elif queue.num_requeues(key) < max_retries:
        on_retry()
        queue.add_rate_limited(key)
    else:
        on_drop()
        queue.forget(key)
