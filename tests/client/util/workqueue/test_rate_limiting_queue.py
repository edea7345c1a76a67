"""RateLimitingQueue: upstream's rate_limiting_queue_test.go, and a controller worker loop."""
from __future__ import annotations

import asyncio

import pytest

from kubeplane.client.util.workqueue import (
    ItemExponentialFailureRateLimiter,
    RateLimitingQueue,
    RateLimitingQueueOptions,
)
from kubeplane.utils.clock import FakeClock

from ._helpers import bounded, settle

MS = 0.001


def _delay_of(q: RateLimitingQueue[str], clock: FakeClock, item: str) -> float:
    return q._waiting_by_item[item][0] - clock.monotonic()


def test_rate_limiting_queue() -> None:
    """Upstream: TestRateLimitingQueue. add_rate_limited waits as long as the limiter says."""
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(MS, 1)))
    q.add_rate_limited("one")
    assert _delay_of(q, clock, "one") == pytest.approx(1 * MS)
    q.add_rate_limited("one")                  # later deadline: the 1 ms entry stays
    assert _delay_of(q, clock, "one") == pytest.approx(1 * MS)
    assert q.num_requeues("one") == 2
    q.add_rate_limited("two")
    assert _delay_of(q, clock, "two") == pytest.approx(1 * MS)
    q.forget("one")
    assert q.num_requeues("one") == 0
    clock.step(1 * MS)
    assert len(q) == 2                         # both due; "two" was waiting 1 ms too
    q.add_rate_limited("one")
    q.add_rate_limited("two")
    assert q._num_waiting() == 2
    assert _delay_of(q, clock, "one") == pytest.approx(1 * MS)    # forgotten: starts over
    assert _delay_of(q, clock, "two") == pytest.approx(2 * MS)
    q._check_invariants()


def test_default_options_build_a_fresh_controller_limiter_per_queue() -> None:
    clock = FakeClock()
    a: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name="a", clock=clock))
    b: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name="b", clock=clock))
    assert a.rate_limiter is not b.rate_limiter
    a.add_rate_limited("k")
    a.add_rate_limited("k")
    assert (a.num_requeues("k"), b.num_requeues("k")) == (2, 0)
    assert a.name == "a"


MAX_RETRIES = 5


class _Worker:
    """The worker shape from STYLE.md rules 6 and 9, on a failing sync handler."""

    def __init__(self, q: RateLimitingQueue[str], failures_before_success: int) -> None:
        self.queue = q
        self.failures_left = failures_before_success
        self.synced: list[str] = []
        self.dropped: list[str] = []

    async def sync_handler(self, key: str) -> None:
        self.synced.append(key)
        if self.failures_left:
            self.failures_left -= 1
            raise RuntimeError("sync failed")

    def handle_err(self, err: Exception | None, key: str) -> None:
        if err is None:
            self.queue.forget(key)
        elif self.queue.num_requeues(key) < MAX_RETRIES:
            self.queue.add_rate_limited(key)
        else:
            self.dropped.append(key)
            self.queue.forget(key)

    async def process_next_work_item(self) -> bool:
        key, shutdown = await self.queue.get()
        if shutdown:
            return False
        try:
            try:
                await self.sync_handler(key)
            except Exception as err:
                self.handle_err(err, key)
            else:
                self.handle_err(None, key)
        finally:
            self.queue.done(key)
        return True

    async def run(self) -> None:
        while await self.process_next_work_item():
            pass




async def test_worker_retries_with_exponential_backoff_then_succeeds() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(clock=clock))
    worker = _Worker(q, failures_before_success=3)
    task = asyncio.create_task(worker.run())
    q.add("default/web")
    await settle()
    assert worker.synced == ["default/web"]
    # Retries come after 5 ms, then 10 ms, then 20 ms: nothing happens a hair before each.
    for n, delay in enumerate((0.005, 0.010, 0.020), start=1):
        clock.step(delay - 1e-4)
        await settle()
        assert len(worker.synced) == n
        clock.step(1e-4)
        await settle()
        assert len(worker.synced) == n + 1
    assert worker.synced == ["default/web"] * 4
    assert q.num_requeues("default/web") == 0          # success forgot the failures
    q.shut_down()
    await bounded(task)
    q._check_invariants()


async def test_worker_drops_key_after_max_retries() -> None:
    clock = FakeClock()
    q: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(clock=clock))
    worker = _Worker(q, failures_before_success=100)
    task = asyncio.create_task(worker.run())
    q.add("default/web")
    await settle()
    for _ in range(MAX_RETRIES):
        clock.step(1)                              # longer than any of the first backoffs
        await settle()
    assert len(worker.synced) == 1 + MAX_RETRIES
    assert worker.dropped == ["default/web"]
    assert q.num_requeues("default/web") == 0
    clock.step(1000)
    await settle()
    assert len(worker.synced) == 1 + MAX_RETRIES       # dropped: never retried again
    await bounded(q.shut_down_with_drain())
    await bounded(task)
