"""A delaying queue that asks a RateLimiter how long each re-add should wait.

Upstream: staging/src/k8s.io/client-go/util/workqueue/rate_limiting_queue.go
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol

from kubeplane.utils.clock import REAL_CLOCK, Clock

from .default_rate_limiters import RateLimiter, default_controller_rate_limiter
from .delaying_queue import DelayingInterface, DelayingQueue, DelayingQueueOptions
from .queue import T


class RateLimitingInterface(DelayingInterface[T], Protocol[T]):
    """Upstream: TypedRateLimitingInterface, rate_limiting_queue.go"""

    def add_rate_limited(self, item: T) -> None:
        """add_after(item) by as long as the rate limiter says."""

    def forget(self, item: T) -> None:
        """Stop rate-limiting item; it only clears the limiter, done() is still needed."""

    def num_requeues(self, item: T) -> int:
        """How many times item was re-added through add_rate_limited() since forget()."""


@dataclass(frozen=True, slots=True)
class RateLimitingQueueOptions(Generic[T]):
    name: str = ""
    clock: Clock = REAL_CLOCK                       # tests pass a FakeClock
    # None: a fresh default_controller_rate_limiter() on `clock` (limiters keep state,
    # so one instance must never be shared by two queues).
    rate_limiter: RateLimiter[T] | None = None
    batch_rounds: int = 0                           # see QueueOptions


class RateLimitingQueue(DelayingQueue[T]):
    """A DelayingQueue whose re-adds are spaced by a RateLimiter.

    Remember to call forget() when an item succeeds or is dropped, or its failures are
    tracked forever.
    Upstream: rateLimitingType, NewTypedRateLimitingQueueWithConfig
    """

    def __init__(self, options: RateLimitingQueueOptions[T] = RateLimitingQueueOptions()) -> None:
        super().__init__(DelayingQueueOptions(name=options.name, clock=options.clock,
                                              batch_rounds=options.batch_rounds))
        limiter = options.rate_limiter
        if limiter is None:
            limiter = default_controller_rate_limiter(clock=options.clock)
        self.rate_limiter: RateLimiter[T] = limiter

    def add_rate_limited(self, item: T) -> None:
        """Upstream: AddRateLimited"""
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Upstream: Forget"""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        """Upstream: NumRequeues"""
        return self.rate_limiter.num_requeues(item)


if TYPE_CHECKING:
    from .queue import Interface, Queue

    def _conforms(q: Queue[str], d: DelayingQueue[str], r: RateLimitingQueue[str]) -> tuple[
            Interface[str], DelayingInterface[str], RateLimitingInterface[str]]:
        return q, d, r
