"""Queue: upstream's queue_test.go re-expressed on asyncio (tasks instead of goroutines)."""
from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Awaitable, Callable

import pytest

from kubeplane.client.util.workqueue import Queue, QueueOptions

from ._helpers import bounded, get, settle

ShutDown = Callable[[Queue[object]], Awaitable[None]]


async def _shut_down(q: Queue[object]) -> None:
    q.shut_down()


async def _shut_down_with_drain(q: Queue[object]) -> None:
    await bounded(q.shut_down_with_drain())


SHUTDOWNS = [pytest.param(_shut_down, id="shut_down"),
             pytest.param(_shut_down_with_drain, id="shut_down_with_drain")]




@pytest.mark.parametrize("shut_down", SHUTDOWNS)
async def test_basic(shut_down: ShutDown) -> None:
    """Upstream: TestBasic. 50 producers, 10 consumers, no item in two workers at once."""
    q: Queue[object] = Queue()
    in_flight: set[object] = set()
    processed: list[object] = []

    async def producer(i: int) -> None:
        for _ in range(50):
            q.add(i)
            await asyncio.sleep(0)

    async def consumer() -> None:
        while True:
            item, quit_ = await get(q)
            assert item != "added after shutdown!"
            if quit_:
                return
            assert item not in in_flight, "item handed to two workers"
            in_flight.add(item)
            await asyncio.sleep(0)             # "processing" spans other tasks' turns
            in_flight.discard(item)
            processed.append(item)
            q.done(item)
            q._check_invariants()

    consumers = [asyncio.create_task(consumer()) for _ in range(10)]
    await bounded(asyncio.gather(*(producer(i) for i in range(50))))
    await bounded(shut_down(q))
    q.add("added after shutdown!")
    await bounded(asyncio.gather(*consumers))
    assert len(q) == 0
    assert set(processed) == set(range(50))


@pytest.mark.parametrize("shut_down", SHUTDOWNS)
async def test_add_while_processing(shut_down: ShutDown) -> None:
    """Upstream: TestAddWhileProcessing. Each worker re-adds an item mid-processing."""
    q: Queue[object] = Queue()
    for i in range(50):
        q.add(i)
    gets: dict[object, int] = {}

    async def consumer() -> None:
        counters: dict[object, int] = {}
        while True:
            item, quit_ = await get(q)
            if quit_:
                return
            gets[item] = gets.get(item, 0) + 1
            counters[item] = counters.get(item, 0) + 1
            if counters[item] < 2:
                q.add(item)                    # dirty while processing: re-queued on done()
            await asyncio.sleep(0)
            q.done(item)

    consumers = [asyncio.create_task(consumer()) for _ in range(10)]
    for _ in range(1000):                      # every re-add must come back: none is lost
        if len(gets) == 50 and all(n >= 2 for n in gets.values()):
            break
        await asyncio.sleep(0)
    assert len(gets) == 50 and all(n >= 2 for n in gets.values())
    await bounded(shut_down(q))
    await bounded(asyncio.gather(*consumers))
    assert len(q) == 0


def test_len() -> None:
    """Upstream: TestLen"""
    q: Queue[str] = Queue()
    q.add("foo")
    assert q.len() == 1
    q.add("bar")
    assert len(q) == 2
    q.add("foo")                               # coalesces: no growth
    assert len(q) == 2


async def test_reinsert() -> None:
    """Upstream: TestReinsert"""
    q: Queue[str] = Queue()
    q.add("foo")
    item, _ = await get(q)
    assert item == "foo"
    q.add(item)                                # back while processing
    assert len(q) == 0                         # ...but not handed out while in flight
    q.done(item)
    again, _ = await get(q)
    assert again == "foo"
    q.done(again)
    assert len(q) == 0


async def test_fifo_order_and_coalescing() -> None:
    q: Queue[str] = Queue()
    for item in ["a", "b", "a", "c", "b"]:
        q.add(item)
    got = [(await get(q))[0] for _ in range(3)]
    assert got == ["a", "b", "c"]
    q._check_invariants()


async def test_get_waits_for_add() -> None:
    q: Queue[str] = Queue()
    getter = asyncio.create_task(q.get())
    await settle()
    assert not getter.done()
    q.add("x")
    assert await bounded(getter) == ("x", False)


async def test_queued_items_are_still_handed_out_after_shut_down() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.shut_down()
    assert q.shutting_down()
    assert await get(q) == ("a", False)
    item, shutdown = await get(q)
    assert shutdown
    assert item is None                        # Go's zero value; callers check shutdown


async def test_shut_down_releases_blocked_getters() -> None:
    q: Queue[str] = Queue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await settle()
    q.shut_down()
    assert [shutdown for _, shutdown in await bounded(asyncio.gather(*getters))] == [True] * 3


async def test_queue_drainage_using_shut_down_with_drain() -> None:
    """Upstream: TestQueueDrainageUsingShutDownWithDrain"""
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    first, _ = await get(q)
    second, _ = await get(q)
    drainer = asyncio.create_task(q.shut_down_with_drain())
    await settle()
    assert (await get(q))[1] is True          # shutdown is visible to workers already
    assert not drainer.done()                  # ...but the drain waits for in-flight items
    q.done(first)
    await settle()
    assert not drainer.done()
    q.done(second)
    await bounded(drainer)


async def test_no_queue_drainage_using_shut_down() -> None:
    """Upstream: TestNoQueueDrainageUsingShutDown. shut_down() does not wait."""
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    await get(q)
    await get(q)
    q.shut_down()
    assert q.shutting_down()


async def test_force_queue_shutdown_using_shut_down() -> None:
    """Upstream: TestForceQueueShutdownUsingShutDown. shut_down() ends a pending drain."""
    q: Queue[str] = Queue()
    q.add("foo")
    q.add("bar")
    await get(q)
    await get(q)
    drainer = asyncio.create_task(q.shut_down_with_drain())
    await settle()
    assert not drainer.done()
    q.shut_down()                              # e.g. a second SIGTERM
    await bounded(drainer)


async def test_queue_drainage_using_shut_down_with_drain_with_dirty_item() -> None:
    """Upstream: TestQueueDrainageUsingShutDownWithDrainWithDirtyItem"""
    q: Queue[str] = Queue()
    q.add("foo")
    gotten, _ = await get(q)
    q.add("foo")                               # dirty while processing
    drainer = asyncio.create_task(q.shut_down_with_drain())
    await settle()
    assert (await get(q))[1] is True
    q.done(gotten)                             # re-queues the dirty item despite shutdown
    again, shutting_down = await get(q)
    assert (again, shutting_down) == ("foo", False)
    q.done(again)
    assert (await get(q))[1] is True
    await bounded(drainer)


async def test_shut_down_with_drain_returns_at_once_when_idle() -> None:
    q: Queue[str] = Queue()
    await bounded(q.shut_down_with_drain())
    assert q.shutting_down()


async def test_done_for_an_item_not_in_processing_is_ignored() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    q.done("a")                                # upstream would queue "a" twice
    q._check_invariants()
    assert len(q) == 1


async def test_garbage_collection() -> None:
    """Upstream: TestGarbageCollection. The queue keeps no reference to finished items."""

    class BigObject:
        data = b"hello"

    q: Queue[object] = Queue()
    c = BigObject()
    ref = weakref.ref(c)
    q.add(c)
    o, _ = await get(q)
    q.done(o)
    del c, o
    gc.collect()
    assert ref() is None


async def test_cancelled_get_does_not_take_an_item() -> None:
    q: Queue[str] = Queue()
    getter = asyncio.create_task(q.get())
    await settle()
    getter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await getter
    q.add("a")
    assert await get(q) == ("a", False)


async def _idle_workers(q: Queue[str], n: int) -> tuple[list[asyncio.Task[tuple[str, bool]]], list[int]]:
    """n workers blocked in get(), and how many times each one woke up (looped in get)."""
    wakes = [0] * n
    real_wait = q._wait_for_work

    async def counting_wait() -> None:
        await real_wait()
        wakes[int(asyncio.current_task().get_name())] += 1      # type: ignore[union-attr]
    q._wait_for_work = counting_wait                             # type: ignore[method-assign]
    getters = [asyncio.create_task(q.get(), name=str(i)) for i in range(n)]
    await settle()
    return getters, wakes


async def test_an_add_wakes_one_idle_worker() -> None:
    """Upstream: Add calls cond.Signal, not Broadcast: one idle worker per ready item, the
    others keep sleeping (here, waking all of them cost each a task switch per pod event)."""
    q: Queue[str] = Queue()
    getters, wakes = await _idle_workers(q, 5)
    q.add("a")
    await settle()
    assert [g.result() for g in getters if g.done()] == [("a", False)]
    assert sum(wakes) == 1
    q.add("b")
    q.add("c")
    await settle()
    assert sorted(g.result()[0] for g in getters if g.done()) == ["a", "b", "c"]
    assert sum(wakes) == 3
    q.done("a")                          # nothing re-queued: no worker wakes
    await settle()
    assert sum(wakes) == 3
    q.shut_down()                        # Broadcast: every worker left returns
    await settle()
    assert all(g.done() for g in getters) and sum(wakes) == 5


async def test_a_woken_worker_cancelled_passes_the_item_on() -> None:
    """A worker woken for an item and cancelled before it ran hands the wake-up on: the
    item is not left behind while another worker sleeps."""
    q: Queue[str] = Queue()
    getters, _ = await _idle_workers(q, 2)
    q.add("a")
    getters[0].cancel()                  # the longest waiting one, the one woken for "a"
    await settle()
    assert getters[0].cancelled()
    assert getters[1].result() == ("a", False)


async def test_a_re_queued_item_wakes_one_worker() -> None:
    q: Queue[str] = Queue()
    q.add("a")
    item, _ = await get(q)
    getters, wakes = await _idle_workers(q, 3)
    q.add("a")                           # dirty while processing: no wake-up yet
    await settle()
    assert sum(wakes) == 0
    q.done("a")
    await settle()
    assert sum(wakes) == 1 and [g.result() for g in getters if g.done()] == [("a", False)]
    q.shut_down()


# --- batch_rounds: idle workers wake a few event-loop rounds after the add --------------------

async def _burst_syncs(batch_rounds: int, burst_rounds: int) -> list[str]:
    """A worker waits; a producer adds "k" once per round for burst_rounds rounds; the items
    the worker took (it "processes" across one round, so a re-add meanwhile re-queues)."""
    q: Queue[str] = Queue(QueueOptions(batch_rounds=batch_rounds))
    taken: list[str] = []

    async def worker() -> None:
        while True:
            item, quit_ = await q.get()
            if quit_:
                return
            taken.append(item)
            await asyncio.sleep(0)
            q.done(item)
            q._check_invariants()

    w = asyncio.create_task(worker())
    await settle()
    for _ in range(burst_rounds):
        q.add("k")
        await asyncio.sleep(0)
    await settle()
    q.shut_down()
    await bounded(w)
    return taken


async def test_batch_rounds_fold_a_burst_of_adds_into_one_item() -> None:
    """Adds made in the rounds before the idle worker wakes coalesce; without batch_rounds the
    worker takes the first add at once and the burst's later adds make it take it again."""
    assert await _burst_syncs(batch_rounds=3, burst_rounds=3) == ["k"]
    assert len(await _burst_syncs(batch_rounds=0, burst_rounds=3)) > 1


async def test_batch_rounds_delay_the_wake_up_by_rounds_only() -> None:
    q: Queue[str] = Queue(QueueOptions(batch_rounds=3))
    getter = asyncio.create_task(q.get())
    await settle()
    q.add("x")
    await asyncio.sleep(0)
    assert not getter.done()                   # woken rounds later, not at once
    assert await bounded(getter) == ("x", False)   # and no clock time needed


async def test_batch_rounds_hold_every_item_for_a_window() -> None:
    """An item re-queued by done() waits for its window as an added one does, even for a worker
    that calls get() at once: two queues woken by one event hand out their items in the order
    the items became ready."""
    q: Queue[str] = Queue(QueueOptions(batch_rounds=3))
    other: Queue[str] = Queue(QueueOptions(batch_rounds=3))
    q.add("a")
    assert await get(q) == ("a", False)
    order: list[str] = []

    async def take(queue: Queue[str], name: str) -> None:
        item, _ = await queue.get()
        order.append(name)
        queue.done(item)

    other.add("b")                             # "b" ready first (a waiting controller's key)
    q.add("a")                                 # while processing: dirty
    await asyncio.sleep(0)
    q.done("a")                                # re-queued one round later
    await bounded(asyncio.gather(take(q, "re-queued a"), take(other, "added b")))
    assert order == ["added b", "re-queued a"]
    q._check_invariants()


def test_batch_rounds_add_outside_a_loop() -> None:
    q: Queue[str] = Queue(QueueOptions(batch_rounds=3))
    q.add("x")
    assert q.len() == 1


async def test_batch_rounds_shut_down_releases_waiters_at_once() -> None:
    q: Queue[str] = Queue(QueueOptions(batch_rounds=1000))
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await settle()
    q.add("a")
    q.shut_down()
    results = await bounded(asyncio.gather(*getters))
    assert sorted(results, key=str) == sorted([("a", False), (None, True), (None, True)], key=str)


@pytest.mark.parametrize("shut_down", SHUTDOWNS)
async def test_basic_with_batch_rounds(shut_down: ShutDown) -> None:
    """TestBasic's invariants hold with delayed wake-ups: every item is processed, none twice at once."""
    q: Queue[object] = Queue(QueueOptions(batch_rounds=2))
    in_flight: set[object] = set()
    processed: set[object] = set()

    async def producer(i: int) -> None:
        for _ in range(20):
            q.add(i)
            await asyncio.sleep(0)

    async def consumer() -> None:
        while True:
            item, quit_ = await get(q)
            if quit_:
                return
            assert item not in in_flight, "item handed to two workers"
            in_flight.add(item)
            await asyncio.sleep(0)
            in_flight.discard(item)
            processed.add(item)
            q.done(item)
            q._check_invariants()

    consumers = [asyncio.create_task(consumer()) for _ in range(5)]
    await bounded(asyncio.gather(*(producer(i) for i in range(20))))
    await settle()
    await bounded(shut_down(q))
    await bounded(asyncio.gather(*consumers))
    assert processed == set(range(20))
