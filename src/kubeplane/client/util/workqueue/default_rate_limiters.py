"""Rate limiters: how long an item waits before add_rate_limited() re-adds it.

All durations are float seconds.
Upstream: staging/src/k8s.io/client-go/util/workqueue/default_rate_limiters.go
"""
from __future__ import annotations

import math
from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from kubeplane.utils.clock import REAL_CLOCK, Clock

from .queue import T

T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[T_contra]):
    """Upstream: TypedRateLimiter, default_rate_limiters.go"""

    def when(self, item: T_contra) -> float:
        """Seconds to wait before re-adding item; records one more failure."""

    def forget(self, item: T_contra) -> None:
        """Stop tracking item (it succeeded or was given up on)."""

    def num_requeues(self, item: T_contra) -> int:
        """Failures recorded for item since the last forget()."""


def default_controller_rate_limiter(*, clock: Clock = REAL_CLOCK) -> RateLimiter[T]:
    """Per-item exponential backoff (5 ms doubling to 1000 s) capped overall at 10 qps.

    The bucket (10 qps, burst 100) only limits retry speed across all items; the
    exponential part is per item. A fresh limiter is needed per queue: both keep state.
    Upstream: DefaultControllerRateLimiter
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(qps=10.0, burst=100, clock=clock),
    )


class BucketRateLimiter(Generic[T]):
    """A token bucket shared by all items: burst tokens, refilled at qps per second.

    Each when() takes a token, going into debt when none is left; the debt is the delay.
    Example: qps 10, burst 100, 102 calls at the same instant -> 100 x 0 s, then 0.1 s
    and 0.2 s. After 1 s with no calls the debt of 2 is repaid and 8 tokens are back.
    Upstream: BucketRateLimiter (over golang.org/x/time/rate Limiter.Reserve().Delay())
    """

    def __init__(self, qps: float, burst: int, *, clock: Clock = REAL_CLOCK) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, got {qps}")
        self._qps = qps
        self._burst = burst
        self._clock = clock
        self._tokens = float(burst)     # rate.NewLimiter starts full
        self._last = clock.monotonic()

    def when(self, item: T) -> float:
        if math.isinf(self._qps):
            return 0.0
        if self._burst < 1:
            return math.inf                 # x/time/rate: a reservation of 1 > burst never fits
        now = self._clock.monotonic()
        elapsed = max(0.0, now - self._last)
        self._tokens = min(float(self._burst), self._tokens + elapsed * self._qps) - 1
        self._last = now
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def num_requeues(self, item: T) -> int:
        return 0

    def forget(self, item: T) -> None:
        pass


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Wait base * 2**failures for an item, capped at max_delay.

    Example: base 5 ms -> 5 ms, 10 ms, 20 ms, 40 ms ...; with max 1000 s the cap is hit
    on the 19th failure (5 ms * 2**18 = 1310.72 s). Giving up is the caller's business.
    Upstream: ItemExponentialFailureRateLimiter
    """

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self._failures: dict[T, int] = {}
        self._base_delay = base_delay
        self._max_delay = max_delay

    def when(self, item: T) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= 1024:                     # 2.0**1024 overflows a float
            return self._max_delay
        return min(self._base_delay * 2.0**exp, self._max_delay)

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)


def default_item_based_rate_limiter() -> RateLimiter[T]:
    """Exponential per-item backoff from 1 ms to 1000 s.

    Upstream: DefaultItemBasedRateLimiter
    """
    return ItemExponentialFailureRateLimiter(0.001, 1000.0)


class ItemFastSlowRateLimiter(Generic[T]):
    """Retry quickly for max_fast_attempts failures, then slowly.

    Upstream: ItemFastSlowRateLimiter
    """

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self._failures: dict[T, int] = {}
        self._fast_delay = fast_delay
        self._slow_delay = slow_delay
        self._max_fast_attempts = max_fast_attempts

    def when(self, item: T) -> float:
        failures = self._failures.get(item, 0) + 1
        self._failures[item] = failures
        return self._fast_delay if failures <= self._max_fast_attempts else self._slow_delay

    def num_requeues(self, item: T) -> int:
        return self._failures.get(item, 0)

    def forget(self, item: T) -> None:
        self._failures.pop(item, None)


class MaxOfRateLimiter(Generic[T]):
    """Ask every limiter and return the longest wait (and the highest requeue count).

    Every limiter's when() is called, so each records the failure. With a token bucket
    the burst can appear exceeded when particular items were delayed longer separately.
    Upstream: MaxOfRateLimiter
    """

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        self._limiters = limiters

    def when(self, item: T) -> float:
        return max((limiter.when(item) for limiter in self._limiters), default=0.0)

    def num_requeues(self, item: T) -> int:
        return max((limiter.num_requeues(item) for limiter in self._limiters), default=0)

    def forget(self, item: T) -> None:
        for limiter in self._limiters:
            limiter.forget(item)


class WithMaxWaitRateLimiter(Generic[T]):
    """Cap another limiter's delay at max_delay.

    Upstream: WithMaxWaitRateLimiter
    """

    def __init__(self, limiter: RateLimiter[T], max_delay: float) -> None:
        self._limiter = limiter
        self._max_delay = max_delay

    def when(self, item: T) -> float:
        return min(self._limiter.when(item), self._max_delay)

    def num_requeues(self, item: T) -> int:
        return self._limiter.num_requeues(item)

    def forget(self, item: T) -> None:
        self._limiter.forget(item)


if TYPE_CHECKING:
    def _conforms(
        a: BucketRateLimiter[str], b: ItemExponentialFailureRateLimiter[str],
        c: ItemFastSlowRateLimiter[str], d: MaxOfRateLimiter[str],
        e: WithMaxWaitRateLimiter[str],
    ) -> list[RateLimiter[str]]:
        return [a, b, c, d, e]
