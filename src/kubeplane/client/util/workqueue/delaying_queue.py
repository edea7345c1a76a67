"""A work queue that can add an item later, so failures are retried without a hot loop.

Upstream: staging/src/k8s.io/client-go/util/workqueue/delaying_queue.go
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass
from typing import Protocol

from kubeplane.utils.clock import REAL_CLOCK, Clock

from .queue import Interface, Queue, QueueOptions, T

# An item counts as ready when its ready time is at most this far in the future. Float
# seconds cannot reproduce upstream's exact nanoseconds: with a fake clock,
# 0.1 + 0.2 steps land 4e-17 s short of a 0.3 s deadline. The slack is larger than
# FakeClock's 1 ns tolerance, so a not-yet-ready item always means a real sleep.
_READY_SLACK = 1e-6


class DelayingInterface(Interface[T], Protocol[T]):
    """Upstream: TypedDelayingInterface, delaying_queue.go"""

    def add_after(self, item: T, seconds: float) -> None:
        """Add item once seconds have passed on the queue's clock (at once if <= 0)."""


@dataclass(frozen=True, slots=True)
class DelayingQueueOptions:
    name: str = ""
    clock: Clock = REAL_CLOCK       # tests pass a FakeClock
    batch_rounds: int = 0           # see QueueOptions


class DelayingQueue(Queue[T]):
    """A Queue plus add_after(); waiting items sit in a heap keyed by ready time.

    _waiting: heap of (ready_at, seq, item); seq breaks ties in add order and keeps
    items themselves from ever being compared.
    _waiting_by_item: the live (ready_at, seq) of each waiting item. A heap entry that
    differs is stale (the item was re-added with an earlier time) and is skipped when
    popped, which stands in for upstream's heap.Fix.
    Invariant: every value of _waiting_by_item is the key of exactly one heap entry for
    that item; nothing waits once the queue is shutting down.

    Upstream runs a goroutine that moves due items into the queue. Here every operation
    (add, get, len, done, add_after) first moves due items in, in ready-time order, and
    a get() with nothing to return also sleeps on the clock until the earliest ready
    time. The effect is the same: a due item is in the queue by the time anyone looks.

    Upstream: delayingType, delaying_queue.go
    """

    def __init__(self, options: DelayingQueueOptions = DelayingQueueOptions()) -> None:
        super().__init__(QueueOptions(name=options.name, clock=options.clock, batch_rounds=options.batch_rounds))
        self._clock = options.clock
        self._waiting: list[tuple[float, int, T]] = []
        self._waiting_by_item: dict[T, tuple[float, int]] = {}
        self._seq = itertools.count()

    def add_after(self, item: T, seconds: float) -> None:
        """Add item to the queue after seconds; an earlier pending add_after wins.

        Upstream: AddAfter (and insert, for the earlier-wins rule)
        """
        if self._shutting_down:
            return
        if self._metered is not None:
            self._metered.m.retries += 1        # upstream counts every AddAfter as a retry
        self._promote_ready()
        if seconds <= 0:
            self._add(item)
            return
        ready_at = self._clock.monotonic() + seconds
        existing = self._waiting_by_item.get(item)
        if existing is not None and existing[0] <= ready_at:
            return
        key = (ready_at, next(self._seq))
        self._waiting_by_item[item] = key
        heapq.heappush(self._waiting, (*key, item))
        self._signal()                 # a sleeping get() may need an earlier wake-up

    def shut_down(self) -> None:
        """Upstream: ShutDown (which also stops the waiting loop, dropping waiting items)"""
        self._stop_waiting()
        super().shut_down()

    async def shut_down_with_drain(self) -> None:
        """Upstream: ShutDownWithDrain (the waiting loop exits once shutting down)"""
        self._stop_waiting()
        await super().shut_down_with_drain()

    def _stop_waiting(self) -> None:
        self._promote_ready()          # upstream's loop would already have added due items
        self._waiting.clear()
        self._waiting_by_item.clear()

    def _promote_ready(self) -> None:
        if not self._waiting:
            return
        now = self._clock.monotonic() + _READY_SLACK
        while self._waiting and self._waiting[0][0] <= now:
            ready_at, seq, item = heapq.heappop(self._waiting)
            if self._waiting_by_item.get(item) == (ready_at, seq):
                del self._waiting_by_item[item]
                self._add(item)

    def _next_ready_at(self) -> float | None:
        while self._waiting:
            ready_at, seq, item = self._waiting[0]
            if self._waiting_by_item.get(item) == (ready_at, seq):
                return ready_at
            heapq.heappop(self._waiting)     # stale entry
        return None

    async def _wait_for_work(self) -> None:
        """Wait for a change to the queue or for the earliest waiting item to be due."""
        ready_at = self._next_ready_at()
        if ready_at is None:
            await super()._wait_for_work()
            return
        waiter = self._waiter()
        due = asyncio.ensure_future(self._sleep_until(ready_at))
        try:
            await asyncio.wait((waiter, due), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            self._pass_on(waiter)
            raise
        finally:
            due.cancel()
        if not waiter.done():
            waiter.cancel()            # woken by the timer: no longer a waiter

    async def _sleep_until(self, deadline: float) -> None:
        # Re-read the clock when the task starts: a fake clock may have stepped between
        # scheduling this task and its first run.
        await self._clock.sleep(deadline - self._clock.monotonic())

    def _num_waiting(self) -> int:
        """Items waiting for their delay (upstream's waitingForDepth gauge)."""
        return len(self._waiting_by_item)

    def _check_invariants(self) -> None:
        super()._check_invariants()
        item_by_key = {(r, s): i for r, s, i in self._waiting}     # seq makes keys unique
        assert all(item_by_key.get(k) == i for i, k in self._waiting_by_item.items())
        assert not self._shutting_down or not self._waiting_by_item
