"""The basic work queue: fair, stingy, many producers and consumers, shutdown.

Upstream: staging/src/k8s.io/client-go/util/workqueue/queue.go
"""
from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, cast

from kubeplane.utils.clock import REAL_CLOCK, Clock

from .metrics import Metered, metrics_for

T = TypeVar("T", bound=Hashable)


class Interface(Protocol[T]):
    """What every work queue offers.

    Upstream: TypedInterface, queue.go
    """

    def add(self, item: T) -> None:
        """Mark item as needing processing; repeated adds before processing coalesce."""

    def len(self) -> int:
        """Items waiting for get(), for information only (never gate add/get on it)."""

    async def get(self) -> tuple[T, bool]:
        """Wait for an item; (item, False), or (None, True) once shut down and empty."""

    def done(self, item: T) -> None:
        """Finish processing item; re-queues it if it was added again meanwhile."""

    def shut_down(self) -> None:
        """Ignore further adds and release every waiting get() once the queue is empty."""

    async def shut_down_with_drain(self) -> None:
        """Like shut_down(), then wait until every item handed out has been done()."""

    def shutting_down(self) -> bool:
        """Whether shut_down() or shut_down_with_drain() has been called."""


@dataclass(frozen=True, slots=True)
class QueueOptions:
    name: str = ""      # for logs, repr and metrics: only named queues are metered, as upstream
    clock: Clock = REAL_CLOCK    # for the metrics' durations
    # An item that becomes ready is handed out this many event-loop rounds later, with the
    # items that became ready meanwhile (0: at once). See Queue: `batch_rounds`.
    batch_rounds: int = 0


class Queue(Generic[T]):
    """FIFO that never hands one item to two workers and coalesces repeated adds.

    _queue: items ready for get(), in order.  _dirty: items needing processing.
    _processing: items returned by get() and not yet done().
    Invariant: every item in _queue is in _dirty and not in _processing; an item may be
    in both _processing and _dirty (re-added mid-processing), and done() re-queues it.
    Consequences: no duplicates in _queue, at most one worker per item, no lost re-adds.

    Mutations are plain methods: they run atomically on the event loop, so no locks.
    Only get() and shut_down_with_drain() wait. A get() sleeps on a future of its own in
    `_waiters`: an item made ready wakes one of them (_signal, upstream's cond.Signal), shutdown
    wakes all (_broadcast); every waiter re-checks state when it wakes. Waking every idle
    worker per add and per done (an Event) cost each of a controller's 5-20 idle workers a
    task switch and a fresh wait per pod event. shut_down_with_drain() sleeps on `_changed`.

    batch_rounds (QueueOptions) > 0: an item that becomes ready (added, or re-queued by done())
    opens a window of that many event-loop rounds (call_soon hops, no timer) during which no
    item is handed out; when it closes the workers are woken. So the events already in flight
    in other tasks (a watch batch being decoded, the other informers of the same write) are
    added first and coalesce with it: in Go the informers' goroutines keep delivering while a
    worker wakes, and a busy controller-manager folds a burst of pod events into one sync; here,
    without it, a worker runs as soon as the first event's handler returns. Adds during a window
    join it without extending it, so a steady stream of adds cannot hold items back. Every
    item waits for a window, a re-queued one too: two controllers woken by the same event (the
    ReplicaSet controller by a scale-down, the Deployment controller finishing the sync that
    wrote it) then react in the order they would without windows. Off by default.

    Upstream: Typed, queue.go
    """

    def __init__(self, options: QueueOptions = QueueOptions()) -> None:
        self.name = options.name
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._shutting_down = False
        self._drain = False
        self._changed = asyncio.Event()
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._metered = Metered(metrics_for(self.name, self), options.clock) if self.name else None
        self._batch_rounds = options.batch_rounds
        self._wake_pending = False         # a delayed _broadcast is on its way (batch_rounds)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} len={len(self._queue)}>"

    def add(self, item: T) -> None:
        """Mark item as needing processing.

        Upstream: Add
        """
        self._promote_ready()
        self._add(item)

    def len(self) -> int:
        """Return the number of items waiting for get(), for informational purposes only.

        Upstream: Len
        """
        self._promote_ready()
        return len(self._queue)

    __len__ = len

    async def get(self) -> tuple[T, bool]:
        """Wait until an item can be processed; the caller must call done(item) after.

        Returns (item, False), or (None, True) when the queue is shut down and empty:
        the worker should then exit. Items queued before shutdown are still handed out.
        Upstream: Get
        """
        while True:
            self._promote_ready()
            if self._queue and (not self._wake_pending or self._shutting_down):
                break                  # (batch_rounds: no item leaves while a window is open)
            if self._shutting_down:
                return cast(T, None), True    # Go's zero value; callers check shutdown first
            await self._wait_for_work()
        item = self._queue.popleft()
        self._processing.add(item)
        self._dirty.discard(item)
        if self._metered is not None:
            self._metered.get(item)
        return item, False

    def done(self, item: T) -> None:
        """Mark item as processed; if it was re-added meanwhile, queue it again.

        done() for an item that is not being processed is ignored: upstream would queue
        a dirty item a second time and break the invariant.
        Upstream: Done
        """
        self._promote_ready()
        if item not in self._processing:
            return
        if self._metered is not None:
            self._metered.done(item)
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._wake()
        if not self._processing and self._drain:
            self._broadcast()          # shut_down_with_drain() is waiting for this

    def shut_down(self) -> None:
        """Ignore new items and tell workers to exit once the queue is empty.

        Also releases a pending shut_down_with_drain() without waiting for the drain.
        Upstream: ShutDown
        """
        self._drain = False
        self._shutting_down = True
        self._broadcast()

    async def shut_down_with_drain(self) -> None:
        """Ignore new items, then wait until every handed-out item has been done().

        Workers must keep calling done() after shutdown starts, or this waits forever;
        calling shut_down() meanwhile makes it return at once.
        Upstream: ShutDownWithDrain
        """
        self._drain = True
        self._shutting_down = True
        self._broadcast()
        while self._processing and self._drain:
            await self._changed.wait()

    def shutting_down(self) -> bool:
        """Upstream: ShuttingDown"""
        return self._shutting_down

    def _add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if self._metered is not None:
            self._metered.add(item)
        if item in self._processing:
            return                     # done() will re-queue it
        self._queue.append(item)
        self._wake()

    def _promote_ready(self) -> None:
        """Hook for DelayingQueue: move items whose delay has elapsed into the queue."""

    async def _wait_for_work(self) -> None:
        """Wait until something may have changed; get() re-checks after every wake-up."""
        waiter = self._waiter()
        try:
            await waiter
        except asyncio.CancelledError:
            self._pass_on(waiter)
            raise

    def _waiter(self) -> asyncio.Future[None]:
        """A future that _signal or _broadcast will complete, queued behind earlier ones."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        return waiter

    def _pass_on(self, waiter: asyncio.Future[None]) -> None:
        """A waiter given up (its get() cancelled, or woken by a timer): a wake-up it was
        given goes to another worker; one it was not given will not come."""
        if not waiter.done():
            waiter.cancel()
        elif not waiter.cancelled():
            self._signal()

    def _signal(self) -> None:
        """Wake the longest-waiting get(). Upstream: cond.Signal"""
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _broadcast(self) -> None:
        """Wake every waiting get() and shut_down_with_drain(). Upstream: cond.Broadcast"""
        waiters, self._waiters = self._waiters, deque()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._changed.set()
        self._changed = asyncio.Event()

    def _wake(self) -> None:
        """Wake a waiting worker for a newly ready item: now, or batch_rounds rounds on."""
        if self._batch_rounds <= 0:
            self._signal()
            return
        if self._wake_pending:
            return                     # the pending wake-up covers this item too
        loop = asyncio._get_running_loop()
        if loop is None:               # added from outside a loop (a test's setup)
            self._broadcast()
            return
        self._wake_pending = True
        loop.call_soon(self._wake_after, self._batch_rounds - 1, loop)

    def _wake_after(self, rounds: int, loop: asyncio.AbstractEventLoop) -> None:
        if rounds > 0:
            loop.call_soon(self._wake_after, rounds - 1, loop)
            return
        self._wake_pending = False
        for _ in range(min(len(self._queue), len(self._waiters))):
            self._signal()             # a worker for each item the window gathered

    def metric_depth(self) -> int:
        """Items added and not yet handed out: upstream's depth gauge (adds minus gets)."""
        return len(self._dirty)

    def processing_times(self) -> list[float]:
        """Seconds each item being processed has been, for the unfinished-work gauges."""
        if self._metered is None:
            return []
        now = self._metered.now()
        return [now - t for t in self._metered.processing_start.values()]

    def _check_invariants(self) -> None:
        assert len(set(self._queue)) == len(self._queue), "duplicate in _queue"
        assert all(i in self._dirty and i not in self._processing for i in self._queue)
        # A dirty item is either waiting in _queue or being processed (and re-queued on done).
        assert all(i in self._processing or i in self._queue for i in self._dirty)
        assert not self._drain or self._shutting_down
