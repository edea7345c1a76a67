"""Rate limiters: upstream's default_rate_limiters_test.go tables, plus the token bucket."""
from __future__ import annotations

import math

import pytest

from kubeplane.client.util.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    WithMaxWaitRateLimiter,
    default_controller_rate_limiter,
)
from kubeplane.utils.clock import FakeClock

MS = 0.001


def _whens(limiter: RateLimiter[str], item: str, n: int) -> list[float]:
    return [limiter.when(item) for _ in range(n)]


def test_item_exponential_failure_rate_limiter() -> None:
    """Upstream: TestItemExponentialFailureRateLimiter"""
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(MS, 1)
    assert _whens(limiter, "one", 5) == pytest.approx([1 * MS, 2 * MS, 4 * MS, 8 * MS, 16 * MS])
    assert limiter.num_requeues("one") == 5
    assert _whens(limiter, "two", 2) == pytest.approx([1 * MS, 2 * MS])
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(1 * MS)


def test_item_exponential_failure_rate_limiter_overflow() -> None:
    """Upstream: TestItemExponentialFailureRateLimiterOverFlow"""
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(MS, 1000)
    _whens(limiter, "one", 5)
    assert limiter.when("one") == pytest.approx(32 * MS)
    _whens(limiter, "overflow1", 1000)
    assert limiter.when("overflow1") == 1000

    limiter = ItemExponentialFailureRateLimiter(60, 1000 * 3600)
    _whens(limiter, "two", 2)
    assert limiter.when("two") == 4 * 60
    _whens(limiter, "overflow2", 2000)         # past 2**1024, where floats overflow
    assert limiter.when("overflow2") == 1000 * 3600


def test_default_controller_backoff_sequence() -> None:
    """5 ms doubling per failure: 5, 10, 20, 40 ... ms, capped at 1000 s on failure 19."""
    limiter: RateLimiter[str] = default_controller_rate_limiter(clock=FakeClock())
    delays = _whens(limiter, "key", 20)
    assert delays[:6] == pytest.approx([0.005, 0.010, 0.020, 0.040, 0.080, 0.160])
    assert delays[17] == pytest.approx(655.36)             # 5 ms * 2**17
    assert delays[18:] == [1000.0, 1000.0]                 # 5 ms * 2**18 = 1310.72 s > cap
    assert limiter.num_requeues("key") == 20
    limiter.forget("key")
    assert limiter.num_requeues("key") == 0
    assert limiter.when("key") == pytest.approx(0.005)


def test_default_controller_overall_bucket_caps_retry_rate() -> None:
    """Burst 100 at 10 qps: the 101st first-failure retry waits on the bucket, not 5 ms."""
    clock = FakeClock()
    limiter: RateLimiter[str] = default_controller_rate_limiter(clock=clock)
    first = [limiter.when(f"item-{i}") for i in range(100)]
    assert first == pytest.approx([0.005] * 100)
    assert limiter.when("item-100") == pytest.approx(0.1)
    assert limiter.when("item-101") == pytest.approx(0.2)


def test_item_fast_slow_rate_limiter() -> None:
    """Upstream: TestItemFastSlowRateLimiter"""
    limiter: ItemFastSlowRateLimiter[str] = ItemFastSlowRateLimiter(5 * MS, 10, 3)
    assert _whens(limiter, "one", 5) == [5 * MS, 5 * MS, 5 * MS, 10, 10]
    assert limiter.num_requeues("one") == 5
    assert _whens(limiter, "two", 2) == [5 * MS, 5 * MS]
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == 5 * MS


def test_max_of_rate_limiter() -> None:
    """Upstream: TestMaxOfRateLimiter"""
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter(
        ItemFastSlowRateLimiter(5 * MS, 3, 3),
        ItemExponentialFailureRateLimiter(MS, 1),
    )
    assert _whens(limiter, "one", 5) == pytest.approx([5 * MS, 5 * MS, 5 * MS, 3, 3])
    assert limiter.num_requeues("one") == 5
    assert _whens(limiter, "two", 2) == pytest.approx([5 * MS, 5 * MS])
    assert limiter.num_requeues("two") == 2
    limiter.forget("one")
    assert limiter.num_requeues("one") == 0
    assert limiter.when("one") == pytest.approx(5 * MS)


class _StepRateLimiter:
    """Upstream's test-only StepRateLimiter: base_delay for `threshold` calls, then max."""

    def __init__(self, base_delay: float, max_delay: float, threshold: int) -> None:
        self.count, self.threshold = 0, threshold
        self.base_delay, self.max_delay = base_delay, max_delay

    def when(self, item: object) -> float:
        self.count += 1
        return self.base_delay if self.count <= self.threshold else self.max_delay

    def num_requeues(self, item: object) -> int:
        return 0

    def forget(self, item: object) -> None:
        pass


def test_with_max_wait_rate_limiter() -> None:
    """Upstream: TestWithMaxWaitRateLimiter"""
    limiter: WithMaxWaitRateLimiter[int] = WithMaxWaitRateLimiter(
        _StepRateLimiter(5 * MS, 1000, 100), 500)
    assert [limiter.when(i) for i in range(100)] == [5 * MS] * 100
    assert [limiter.when(i) for i in range(100, 200)] == [500] * 100


@pytest.mark.parametrize(("qps", "burst", "calls", "expected"), [
    pytest.param(10, 3, 5, [0, 0, 0, 0.1, 0.2], id="burst-then-debt"),
    pytest.param(1, 1, 3, [0, 1, 2], id="burst-1"),
    pytest.param(100, 0, 2, [math.inf, math.inf], id="burst-0-never-fits"),
    pytest.param(math.inf, 0, 2, [0, 0], id="infinite-qps"),
])
def test_bucket_rate_limiter_at_one_instant(qps: float, burst: int, calls: int,
                                            expected: list[float]) -> None:
    limiter: BucketRateLimiter[str] = BucketRateLimiter(qps, burst, clock=FakeClock())
    assert [limiter.when("x") for _ in range(calls)] == pytest.approx(expected)
    assert limiter.num_requeues("x") == 0


def test_bucket_rate_limiter_refills_on_the_clock() -> None:
    # qps 10, burst 100: 102 calls at t=0 -> 100 free, then 0.1 s and 0.2 s (debt 2).
    # 1 s later 10 tokens have come back: the debt of 2 is repaid and 8 are free.
    clock = FakeClock()
    limiter: BucketRateLimiter[str] = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [limiter.when("x") for _ in range(100)] == [0.0] * 100
    assert [limiter.when("x") for _ in range(2)] == pytest.approx([0.1, 0.2])
    clock.step(1)
    assert [limiter.when("x") for _ in range(8)] == [0.0] * 8
    assert limiter.when("x") == pytest.approx(0.1)
    clock.step(3600)                           # refill never exceeds the burst
    assert [limiter.when("x") for _ in range(100)] == [0.0] * 100
    assert limiter.when("x") == pytest.approx(0.1)


def test_bucket_rate_limiter_rejects_non_positive_qps() -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter(0, 1)
