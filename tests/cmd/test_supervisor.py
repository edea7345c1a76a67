"""Supervision of in-process components: restart with back-off, health, crash-loop exit."""
from __future__ import annotations

import asyncio
import logging

import pytest

from kubeplane.apiserver.healthz import handle_root_health
from kubeplane.cmd.supervisor import CrashLoop, Supervisor, SupervisorOptions
from kubeplane.utils.clock import FakeClock


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


class Flaky:
    """A component that records its starts and crashes while `failing`; else runs until cancelled."""

    def __init__(self, clock: FakeClock, failing: bool = True) -> None:
        self.clock, self.failing, self.starts = clock, failing, []

    async def __call__(self) -> None:
        self.starts.append(self.clock.monotonic())
        if self.failing:
            raise RuntimeError("boom")
        await asyncio.Event().wait()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_restarts_with_doubling_backoff_until_a_crash_loop(clock: FakeClock, caplog) -> None:
    """0.8 s doubling: a component that always fails starts at 0, 0.8, 2.4, 5.6 and 12 s, and the
    fifth crash is a crash loop."""
    comp = Flaky(clock)
    sup = Supervisor(clock=clock)
    sup.add("scheduler", comp)
    with caplog.at_level(logging.ERROR, logger="kubeplane.cmd.supervisor"):
        task = asyncio.ensure_future(sup.run())
        await settle()
        for restart_at in (0.8, 2.4, 5.6, 12.0):
            assert not task.done()
            clock.step(restart_at - 0.01 - clock.monotonic())      # not yet: still backing off
            await settle()
            assert comp.starts[-1] < restart_at
            clock.step(0.01)
            await settle()
            assert comp.starts[-1] == pytest.approx(restart_at)
        with pytest.raises(CrashLoop, match="scheduler is crash-looping: 5 crashes in a row"):
            await task
    assert comp.starts == pytest.approx([0, 0.8, 2.4, 5.6, 12.0])
    crashes = [r for r in caplog.records if r.getMessage() == "component crashed"]
    assert len(crashes) == 5                              # one log line per crash ...
    assert all(r.exc_info and "boom" in str(r.exc_info[1]) for r in crashes)   # ... with its traceback
    assert [r.crashes for r in crashes] == [1, 2, 3, 4, 5]


async def test_backoff_is_capped(clock: FakeClock) -> None:
    comp = Flaky(clock)
    sup = Supervisor(clock=clock, options=SupervisorOptions(crash_loop_crashes=100))
    sup.add("kubelet", comp)
    task = asyncio.ensure_future(sup.run())
    await settle()
    for _ in range(9):
        clock.step(30)
        await settle()
    gaps = [b - a for a, b in zip(comp.starts, comp.starts[1:])]
    # 0.8, 1.6, 3.2, 6.4, 12.8, 25.6 then 30 s (steps of 30 s round each gap up to a multiple of 30)
    assert gaps == pytest.approx([30, 30, 30, 30, 30, 30, 30, 30, 30])
    assert [c.restart_in for c in sup.components] == [30.0]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_long_run_forgives_earlier_crashes(clock: FakeClock) -> None:
    """Crashes separated by runs of 2 minutes or more are not a loop; the back-off restarts at 0.8 s."""
    starts: list[float] = []

    async def crashes_after_a_while() -> None:
        starts.append(clock.monotonic())
        await clock.sleep(120)
        raise RuntimeError("late")

    sup = Supervisor(clock=clock)
    c = sup.add("controller-manager", crashes_after_a_while)
    task = asyncio.ensure_future(sup.run())
    await settle()
    for _ in range(8):                      # far more than 5 crashes
        clock.step(120)
        await settle()
        assert c.crashes == 1
        clock.step(0.8)
        await settle()
    assert not task.done()
    assert len(starts) == 9
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_health_check_follows_the_component(clock: FakeClock) -> None:
    comp = Flaky(clock)
    sup = Supervisor(clock=clock)
    c = sup.add("scheduler", comp)
    check = c.health_check()
    assert check.name == "scheduler"
    task = asyncio.ensure_future(sup.run())
    await settle()
    resp = handle_root_health("readyz", [check], {"verbose": ""})
    assert (resp.status, resp.body) == (500, b"[-]scheduler failed: reason withheld\nreadyz check failed\n")
    assert str(check.check()) == "crashed 1 time(s) in a row, last: RuntimeError('boom'); restarting in 0.8s"
    comp.failing = False
    clock.step(0.8)
    await settle()
    assert check.check() is None
    assert handle_root_health("livez", [check], {}).body == b"ok"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_crash_loop_stops_the_other_components(clock: FakeClock) -> None:
    steady = Flaky(clock, failing=False)
    cancelled = asyncio.Event()

    async def steady_component() -> None:
        try:
            await steady()
        finally:
            cancelled.set()

    sup = Supervisor(clock=clock, options=SupervisorOptions(crash_loop_crashes=1))
    sup.add("kubelet", steady_component)
    sup.add("scheduler", Flaky(clock))
    with pytest.raises(CrashLoop) as e:
        await sup.run()
    assert e.value.name == "scheduler"
    assert cancelled.is_set()


async def test_returning_counts_as_a_crash(clock: FakeClock) -> None:
    async def returns() -> None:
        return None

    sup = Supervisor(clock=clock, options=SupervisorOptions(crash_loop_crashes=1))
    c = sup.add("controller-manager", returns)
    with pytest.raises(CrashLoop):
        await sup.run()
    assert c.last_error == "exited"
