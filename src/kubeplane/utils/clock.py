"""Injected time: components take a Clock so tests can drive a fake one instead of sleeping."""
from __future__ import annotations

import asyncio
import datetime as dt
import functools
import time
from typing import Any, Callable, Protocol


class Timer(Protocol):
    def cancel(self) -> Any:
        """Stop the timer; its function will not run (no-op once it has run)."""


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (wall clock, for timestamps)."""

    def monotonic(self) -> float:
        """Seconds on a monotonic clock (for durations and deadlines)."""

    async def sleep(self, seconds: float) -> None:
        """Wait for seconds of this clock's time."""

    def after_func(self, seconds: float, fn: Callable[..., None], *args: Any) -> Timer:
        """Call fn(*args) on the event loop after seconds of this clock's time.
        Upstream: Clock.AfterFunc (k8s.io/utils/clock)"""


class RealClock:
    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def after_func(self, seconds: float, fn: Callable[..., None], *args: Any) -> Timer:
        # A plain loop timer: a task sleeping per timer costs about three times as much.
        return asyncio.get_running_loop().call_later(seconds, fn, *args)


REAL_CLOCK = RealClock()


@functools.lru_cache(maxsize=64)
def _rfc3339_seconds(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339(ts: float) -> str:
    """metav1.Time's JSON form: second precision, UTC, trailing Z (cached: writes share seconds)."""
    return _rfc3339_seconds(int(ts))


def rfc3339_micro(ts: float) -> str:
    """metav1.MicroTime's JSON form: microsecond precision (rounded half to even, as
    datetime.fromtimestamp rounds). The seconds come from rfc3339's cache: every Lease
    renewal formats one, and strftime costs ~5 us and a stat of /etc/localtime (glibc's tzset)."""
    if ts < 0:
        return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    seconds = int(ts)
    us = round((ts - seconds) * 1e6)
    if us >= 1_000_000:
        seconds, us = seconds + 1, us - 1_000_000
    return f"{_rfc3339_seconds(seconds)[:-1]}.{us:06d}Z"


def parse_rfc3339(s: str) -> float:
    """Parse a metav1.Time / MicroTime string to epoch seconds."""
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


class FakeClock:
    """A Clock whose time stands still until the test moves it with step() or set_time().

    sleep() parks the caller on a future; step()/set_time() resolve, in deadline order
    (ties in the order the sleeps started), every future whose deadline has been reached.
    The woken tasks run at the test's next await, so a test typically does
    ``clock.step(1); await asyncio.sleep(0)``. has_waiters() tells a test that a task is
    parked, which is how it knows a sleep has begun before it steps past the deadline.

    now() starts at `start` (epoch seconds) and monotonic() at 0.0; both move together.
    Monotonic readings stay small so float sums like 0.1 + 0.2 stay within nanoseconds
    of the intended instant. Deadlines within 1 ns of the current time count as
    reached, because float seconds cannot hold upstream's exact integer nanoseconds.
    Unlike upstream, sleep(d) with d <= 0 returns at once instead of waiting for a step.

    Upstream: FakeClock, k8s.io/utils/clock/testing/fake_clock.go
    """

    _TOLERANCE = 1e-9   # seconds

    def __init__(self, start: float = 1_600_000_000.0) -> None:
        self._wall = start
        self._mono = 0.0
        self._seq = 0
        # (deadline on the monotonic clock, start order, future to resolve)
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._wall

    def monotonic(self) -> float:
        return self._mono

    async def sleep(self, seconds: float) -> None:
        """Wait until step()/set_time() moves the clock at least `seconds` ahead."""
        if seconds <= self._TOLERANCE:
            await asyncio.sleep(0)      # still a checkpoint, like asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._seq += 1
        waiter = (self._mono + seconds, self._seq, fut)
        self._waiters.append(waiter)
        try:
            await fut
        finally:
            if waiter in self._waiters:  # cancelled before its deadline
                self._waiters.remove(waiter)

    def after_func(self, seconds: float, fn: Callable[..., None], *args: Any) -> Timer:
        """fn(*args) runs at the loop turn after a step() reaches the deadline, as a task
        sleeping `seconds` would go on. Upstream: FakeClock.AfterFunc"""
        loop = asyncio.get_running_loop()
        if seconds <= self._TOLERANCE:
            return loop.call_soon(fn, *args)
        fut: asyncio.Future[None] = loop.create_future()
        self._seq += 1
        waiter = (self._mono + seconds, self._seq, fut)
        self._waiters.append(waiter)

        def fire(f: asyncio.Future[None]) -> None:
            if f.cancelled():
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
            else:
                fn(*args)
        fut.add_done_callback(fire)
        return fut

    def step(self, seconds: float) -> None:
        """Move time forward by seconds and wake every sleeper whose deadline passed.

        Upstream: FakeClock.Step
        """
        self._wall += seconds
        self._mono += seconds
        self._wake_due()

    def set_time(self, t: float) -> None:
        """Set now() to t (moving monotonic() by the same amount) and wake due sleepers.

        Going backwards is allowed, as upstream, and wakes nobody.
        Upstream: FakeClock.SetTime
        """
        self.step(t - self._wall)

    def has_waiters(self) -> bool:
        """Whether some task is parked in sleep().

        Upstream: FakeClock.HasWaiters
        """
        return any(not fut.done() for _, _, fut in self._waiters)

    def _wake_due(self) -> None:
        due = sorted(w for w in self._waiters if w[0] <= self._mono + self._TOLERANCE)
        for waiter in due:
            self._waiters.remove(waiter)
            fut = waiter[2]
            if not fut.done():
                fut.set_result(None)
