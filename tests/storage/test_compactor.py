"""The compactor compacts to the revision of the previous tick, on a fake clock."""
from __future__ import annotations

import asyncio
import logging

import pytest

from kubeplane.storage import Compacted, MemoryStorage, StorageError, run_compactor
from kubeplane.utils.clock import FakeClock

INTERVAL = 300.0


async def parked(clock: FakeClock) -> None:
    """Wait (without time passing) until the compactor sleeps on the clock."""
    for _ in range(100):
        if clock.has_waiters():
            return
        await asyncio.sleep(0)
    raise AssertionError("the compactor never slept on the clock")


async def tick(clock: FakeClock) -> None:
    """One interval passes; return once the compactor has done its tick and sleeps again."""
    await parked(clock)
    clock.step(INTERVAL)
    await asyncio.sleep(0)
    await parked(clock)


async def write(s: MemoryStorage, n: int) -> None:
    for _ in range(n):
        await s.create(f"/k/{s.revision + 1}", {"metadata": {"name": str(s.revision + 1)}})


async def test_each_tick_compacts_to_the_revision_of_the_previous_one() -> None:
    s, clock = MemoryStorage(), FakeClock()
    task = asyncio.create_task(run_compactor(s, INTERVAL, clock=clock))
    await write(s, 3)
    await tick(clock)                       # the first tick only remembers revision 3
    assert s.oldest_revision == 0
    await write(s, 2)
    await tick(clock)                       # compacts to 3, remembers 5
    assert s.oldest_revision == 3
    with pytest.raises(Compacted) as err:
        s.watch("/k/", 2)
    assert (err.value.requested, err.value.oldest) == (2, 3)
    assert [ev.revision for ev in s.watch("/k/", 3).ready()] == [4, 5]
    await tick(clock)                       # nothing written since: compacts to 5, the current one
    assert s.oldest_revision == s.revision == 5
    assert s.watch("/k/", 5).ready() == []  # a watch from now still starts
    task.cancel()


async def test_zero_disables_compaction() -> None:
    s = MemoryStorage()
    await write(s, 2)
    await asyncio.wait_for(run_compactor(s, 0, clock=FakeClock()), 5)   # returns at once
    assert s.oldest_revision == 0


async def test_a_failed_compaction_is_logged_and_retried_at_the_next_tick(caplog: pytest.LogCaptureFixture) -> None:
    class Flaky(MemoryStorage):
        def __init__(self) -> None:
            super().__init__()
            self.calls: list[int] = []

        async def compact(self, revision: int) -> None:
            self.calls.append(revision)
            if len(self.calls) == 1:
                raise StorageError("storage failed: disk I/O error")
            await super().compact(revision)

    s, clock = Flaky(), FakeClock()
    task = asyncio.create_task(run_compactor(s, INTERVAL, clock=clock))
    await write(s, 2)
    await tick(clock)
    await write(s, 2)
    with caplog.at_level(logging.ERROR):
        await tick(clock)                   # compact(2) fails
    assert "compaction to revision 2 failed" in caplog.text and s.oldest_revision == 0
    await tick(clock)                       # the same revision again, as upstream
    assert s.calls == [2, 2] and s.oldest_revision == 2
    task.cancel()
