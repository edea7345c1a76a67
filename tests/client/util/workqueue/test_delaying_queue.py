"""DelayingQueue: upstream's delaying_queue_test.go on a FakeClock, plus worker wake-ups."""
from __future__ import annotations

import asyncio

from kubeplane.client.util.workqueue import DelayingQueue, DelayingQueueOptions
from kubeplane.utils.clock import FakeClock

from ._helpers import bounded, get, settle


def _queue(clock: FakeClock) -> DelayingQueue[str]:
    return DelayingQueue(DelayingQueueOptions(name="test", clock=clock))




async def test_simple_queue() -> None:
    """Upstream: TestSimpleQueue"""
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 0.050)
    assert q._num_waiting() == 1
    assert len(q) == 0
    clock.step(0.060)
    assert len(q) == 1
    assert q._num_waiting() == 0
    item, _ = await get(q)
    q.done(item)
    clock.step(10)                             # past upstream's 10 s heartbeat
    assert len(q) == 0
    q._check_invariants()


async def test_deduping() -> None:
    """Upstream: TestDeduping. A later add_after for a waiting item is ignored; an
    earlier one wins."""
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 0.050)
    q.add_after("foo", 0.070)
    assert q._num_waiting() == 1
    assert len(q) == 0
    clock.step(0.060)                          # past the first deadline
    assert len(q) == 1
    assert q._num_waiting() == 0
    item, _ = await get(q)
    q.done(item)
    clock.step(0.020)                          # past the second add: it was dropped
    assert len(q) == 0

    q.add_after("foo", 0.050)
    q.add_after("foo", 0.030)                  # this time the earlier overrides
    assert q._num_waiting() == 1
    assert len(q) == 0
    clock.step(0.040)
    assert len(q) == 1
    assert q._num_waiting() == 0
    item, _ = await get(q)
    q.done(item)
    clock.step(0.020)                          # past the superseded 50 ms entry
    assert len(q) == 0
    q._check_invariants()


async def test_add_two_fire_early() -> None:
    """Upstream: TestAddTwoFireEarly"""
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 1)
    q.add_after("bar", 0.050)
    assert q._num_waiting() == 2
    assert len(q) == 0
    clock.step(0.060)
    assert len(q) == 1
    assert q._num_waiting() == 1
    assert await get(q) == ("bar", False)
    q.add_after("baz", 2)
    clock.step(1)
    assert len(q) == 1
    assert q._num_waiting() == 1
    assert await get(q) == ("foo", False)
    clock.step(2)
    assert len(q) == 1
    assert q._num_waiting() == 0
    assert await get(q) == ("baz", False)


async def test_copy_shifting() -> None:
    """Upstream: TestCopyShifting. Items enter the queue in ready-time order."""
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 1)
    q.add_after("bar", 0.500)
    q.add_after("baz", 0.250)
    assert q._num_waiting() == 3
    assert len(q) == 0
    clock.step(2)
    assert len(q) == 3
    assert q._num_waiting() == 0
    assert [(await get(q))[0] for _ in range(3)] == ["baz", "bar", "foo"]


async def test_non_positive_delay_adds_at_once() -> None:
    q = _queue(FakeClock())
    q.add_after("now", 0)
    q.add_after("past", -1)
    assert len(q) == 2
    assert q._num_waiting() == 0


async def test_due_item_enters_before_a_later_direct_add() -> None:
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("delayed", 1)
    clock.step(1)
    q.add("direct")                            # upstream's loop would have added "delayed" already
    assert [(await get(q))[0] for _ in range(2)] == ["delayed", "direct"]


async def test_blocked_get_wakes_when_clock_reaches_ready_time() -> None:
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 5)
    getter = asyncio.create_task(q.get())
    await settle()
    assert clock.has_waiters()                 # the worker sleeps on the clock, not a busy loop
    clock.step(4.9)
    await settle()
    assert not getter.done()
    clock.step(0.1)
    assert await bounded(getter) == ("foo", False)
    await settle()
    assert not clock.has_waiters()             # the losing waits were cancelled


async def test_earlier_add_after_reschedules_a_sleeping_get() -> None:
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("late", 10)
    getter = asyncio.create_task(q.get())
    await settle()
    q.add_after("early", 1)                    # the getter must now wake at t=1, not t=10
    await settle()
    clock.step(1)
    assert await bounded(getter) == ("early", False)


async def test_step_before_the_getter_sleeps_is_not_missed() -> None:
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 1)
    getter = asyncio.create_task(q.get())
    clock.step(1)                              # the getter has not even started yet
    assert await bounded(getter) == ("foo", False)


async def test_float_rounding_does_not_strand_an_item() -> None:
    # Ready at 0.30000000000000004, clock stepped to 0.3: float noise, not a real delay.
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 0.1 + 0.2)
    getter = asyncio.create_task(q.get())
    await settle()
    clock.step(0.3)
    assert await bounded(getter) == ("foo", False)


async def test_shut_down_drops_waiting_items_and_ignores_add_after() -> None:
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("due", 1)
    q.add_after("waiting", 5)
    clock.step(1)
    q.shut_down()                              # "due" was already due: it made it in
    q.add_after("late", 1)
    assert q._num_waiting() == 0
    clock.step(10)
    assert await get(q) == ("due", False)
    assert (await get(q))[1] is True
    q._check_invariants()


async def test_shut_down_releases_a_getter_sleeping_on_the_clock() -> None:
    clock = FakeClock()
    q = _queue(clock)
    q.add_after("foo", 5)
    getter = asyncio.create_task(q.get())
    await settle()
    q.shut_down()
    assert (await bounded(getter))[1] is True
