"""FakeClock: sleepers block until the test steps time, and wake in deadline order."""
from __future__ import annotations

import asyncio

import pytest

from kubeplane.utils.clock import REAL_CLOCK, Clock, FakeClock


async def _settle() -> None:
    """Let every runnable task run until it blocks again (no wall-clock time passes)."""
    for _ in range(5):
        await asyncio.sleep(0)


def test_fake_clock_conforms_to_clock_protocol() -> None:
    clocks: list[Clock] = [FakeClock(), REAL_CLOCK]
    assert all(callable(c.sleep) for c in clocks)


def test_step_moves_now_and_monotonic_together() -> None:
    clock = FakeClock(start=1000.0)
    assert (clock.now(), clock.monotonic()) == (1000.0, 0.0)
    clock.step(1.5)
    assert (clock.now(), clock.monotonic()) == (1001.5, 1.5)
    clock.set_time(1010.0)
    assert (clock.now(), clock.monotonic()) == (1010.0, 10.0)


async def test_sleep_blocks_until_step_reaches_deadline() -> None:
    clock = FakeClock()
    sleeper = asyncio.create_task(clock.sleep(10))
    await _settle()
    assert clock.has_waiters()
    clock.step(9.999)
    await _settle()
    assert not sleeper.done()
    clock.step(0.001)
    await _settle()
    assert sleeper.done()
    assert not clock.has_waiters()


async def test_sleepers_wake_in_deadline_order_not_start_order() -> None:
    clock = FakeClock()
    woke: list[str] = []

    async def nap(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.create_task(nap(n, s)) for n, s in [("c", 3), ("a", 1), ("b", 2), ("a2", 1)]]
    await _settle()
    clock.step(5)                       # all due at once: woken by deadline, ties by start
    await asyncio.gather(*tasks)
    assert woke == ["a", "a2", "b", "c"]


async def test_set_time_wakes_due_sleepers_and_going_back_wakes_none() -> None:
    clock = FakeClock(start=100.0)
    sleeper = asyncio.create_task(clock.sleep(5))
    await _settle()
    clock.set_time(90.0)
    await _settle()
    assert not sleeper.done()
    clock.set_time(110.0)               # 10 s after the back-step: deadline at 105 has passed
    await _settle()
    assert sleeper.done()


async def test_cancelled_sleeper_is_not_a_waiter() -> None:
    clock = FakeClock()
    sleeper = asyncio.create_task(clock.sleep(1))
    await _settle()
    sleeper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sleeper
    assert not clock.has_waiters()
    clock.step(2)                       # must not try to resolve the cancelled future


async def test_non_positive_sleep_returns_without_a_step() -> None:
    clock = FakeClock()
    await asyncio.wait_for(clock.sleep(0), timeout=5)
    await asyncio.wait_for(clock.sleep(-1), timeout=5)
    assert not clock.has_waiters()


async def test_float_steps_reach_a_float_deadline() -> None:
    # The deadline is 0.30000000000000004, just past a step of 0.3; the 1 ns tolerance
    # makes the sleeper wake as the test author meant.
    clock = FakeClock()
    sleeper = asyncio.create_task(clock.sleep(0.1 + 0.2))
    await _settle()
    clock.step(0.3)
    await _settle()
    assert sleeper.done()


async def test_after_func_runs_once_the_clock_reaches_it_and_not_after_cancel() -> None:
    """Upstream: FakeClock.AfterFunc — fires in deadline order at the step that reaches it."""
    clock = FakeClock()
    fired: list[str] = []
    clock.after_func(2, fired.append, "b")
    clock.after_func(1, fired.append, "a")
    cancelled = clock.after_func(1, fired.append, "never")
    clock.after_func(0, fired.append, "now")
    cancelled.cancel()
    await _settle()
    assert fired == ["now"] and clock.has_waiters()
    clock.step(1)
    await _settle()
    assert fired == ["now", "a"]
    clock.step(1)
    await _settle()
    assert fired == ["now", "a", "b"] and not clock.has_waiters()


async def test_real_clock_after_func_is_a_loop_timer() -> None:
    done = asyncio.Event()
    timer = REAL_CLOCK.after_func(0.001, done.set)
    await asyncio.wait_for(done.wait(), 5)
    assert isinstance(timer, asyncio.TimerHandle)


def test_rfc3339_micro_rounds_as_datetime_does() -> None:
    """The cached-seconds formatter gives datetime's text, rounding half to even into the
    next second."""
    import datetime as dt
    import random

    from kubeplane.utils.clock import rfc3339_micro

    def reference(ts: float) -> str:
        return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    assert rfc3339_micro(1600000000.0) == "2020-09-13T12:26:40.000000Z"
    assert rfc3339_micro(1600000000.9999996) == "2020-09-13T12:26:41.000000Z"    # carries
    assert rfc3339_micro(-1.5) == reference(-1.5)
    r = random.Random(7)
    for _ in range(20000):
        ts = r.randrange(0, 4 * 10**9) + r.randrange(0, 10**6 + 1) / 1e6 + r.choice((0.0, 5e-7, -5e-7))
        assert rfc3339_micro(ts) == reference(ts), ts
