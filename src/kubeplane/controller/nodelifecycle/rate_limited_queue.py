"""The per-zone queue of nodes waiting for a NoExecute taint, drained at a limited rate.

Tainting a node evicts all its pods, so the controller taints at most node_eviction_rate
nodes per second per zone (burst 1), and stops altogether when a whole cluster looks dead
(more likely the control plane lost its network than every node died).

Upstream: pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go, and the token bucket of
client-go util/flowcontrol/throttle.go
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable

from ...utils.clock import Clock

log = logging.getLogger(__name__)

# Seconds between passes over the tainting queues. Upstream: NodeEvictionPeriod (100 ms).
NODE_EVICTION_PERIOD = 0.1
# Tokens a zone's limiter holds at most. Upstream: EvictionRateLimiterBurst.
EVICTION_RATE_LIMITER_BURST = 1


class TokenBucketRateLimiter:
    """qps tokens per second, at most burst held; starts full. qps <= 0 never accepts.

    Example: qps 0.1, burst 1 -> the first try_accept() passes, the next one passes 10 s later.
    Upstream: flowcontrol.NewTokenBucketRateLimiter / NewFakeNeverRateLimiter
    """

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self._qps, self._burst, self._clock = qps, burst, clock
        self._tokens = float(burst) if qps > 0 else 0.0
        self._last = clock.monotonic()

    def qps(self) -> float:
        return self._qps if self._qps > 0 else 0.0

    def try_accept(self) -> bool:
        if self._qps <= 0:
            return False
        now = self._clock.monotonic()
        self._tokens = min(float(self._burst), self._tokens + (now - self._last) * self._qps)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


@dataclass(order=True)
class TimedValue:
    """A node waiting in a queue. Upstream: TimedValue"""

    process_at: float                                   # clock.now() seconds
    seq: int
    value: str = field(compare=False)
    uid: str = field(compare=False)
    added_at: float = field(compare=False)


class UniqueQueue:
    """A queue ordered by process_at that holds each value at most once.

    Invariant: every value in the queue is in `set`; `set` may also hold values removed from
    the queue by remove_from_queue() (already processed): they cannot be added again until
    remove() forgets them.
    Upstream: UniqueQueue
    """

    def __init__(self) -> None:
        self.queue: list[TimedValue] = []
        self.set: set[str] = set()

    def add(self, value: TimedValue) -> bool:
        if value.value in self.set:
            return False
        self.set.add(value.value)
        self.queue.append(value)
        self.queue.sort()
        return True

    def replace(self, value: TimedValue) -> bool:
        for i, v in enumerate(self.queue):
            if v.value == value.value:
                self.queue[i] = value
                self.queue.sort()
                return True
        return False

    def remove_from_queue(self, value: str) -> bool:
        """Take value out of the queue but remember it (it may not be added again)."""
        for i, v in enumerate(self.queue):
            if v.value == value:
                del self.queue[i]
                return True
        return False

    def remove(self, value: str) -> bool:
        """Forget value entirely; True if it was known."""
        if value not in self.set:
            return False
        self.set.discard(value)
        self.remove_from_queue(value)
        return True

    def head(self) -> TimedValue | None:
        return self.queue[0] if self.queue else None


ActionFunc = Callable[[TimedValue], Awaitable[tuple[bool, float]]]


class RateLimitedTimedQueue:
    """A UniqueQueue drained by try() no faster than its limiter allows. Upstream: RateLimitedTimedQueue"""

    def __init__(self, limiter: TokenBucketRateLimiter, clock: Clock) -> None:
        self.queue = UniqueQueue()
        self.limiter = limiter
        self.clock = clock
        self._seq = itertools.count()

    async def try_(self, fn: ActionFunc) -> None:
        """Process due heads while the limiter allows: fn returns (done, retry_after_seconds).

        Done values leave the queue but stay remembered; others are retried retry_after (+1 ns
        as upstream, which adds 1 to the nanoseconds) later. Upstream: RateLimitedTimedQueue.Try
        """
        val = self.queue.head()
        while val is not None:
            if not self.limiter.try_accept():
                log.debug("Try rate limited", extra={"value": val.value})
                break
            now = self.clock.now()
            if now < val.process_at:
                break
            done, wait = await fn(val)
            if not done:
                val.process_at = now + wait + 1e-9
                self.queue.replace(val)
            else:
                self.queue.remove_from_queue(val.value)
            val = self.queue.head()

    def add(self, value: str, uid: str) -> bool:
        """Queue value to be processed now, unless it is already known. Upstream: Add"""
        now = self.clock.now()
        return self.queue.add(TimedValue(process_at=now, seq=next(self._seq), value=value, uid=uid, added_at=now))

    def remove(self, value: str) -> bool:
        """Forget value; True if it was known. Upstream: Remove"""
        return self.queue.remove(value)

    def swap_limiter(self, new_qps: float) -> None:
        """Switch to new_qps (<= 0: stop). If the old bucket is empty the new one starts empty
        too, so a swap cannot grant an extra burst. Upstream: SwapLimiter
        """
        if self.limiter.qps() == new_qps:
            return
        new = TokenBucketRateLimiter(new_qps, EVICTION_RATE_LIMITER_BURST, self.clock)
        if new_qps > 0 and not self.limiter.try_accept():
            new.try_accept()
        self.limiter = new
