"""The collector policy of the long-running commands: young collections every 50,000
allocations, no middle-generation ones, a full collection on the loop once the heap doubled."""
from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator

import pytest

from kubeplane.utils import gc_tuning
from kubeplane.utils.gc_tuning import FullCollections


@pytest.fixture
def restore_gc() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    if gc_tuning.FULL in gc.callbacks:
        gc.callbacks.remove(gc_tuning.FULL)
    gc_tuning.FULL.loop = None


def young(full: FullCollections, n: int) -> None:
    for _ in range(n):
        full("stop", {"generation": 0, "collected": 0, "uncollectable": 0})


async def test_a_full_collection_runs_on_the_loop_once_the_heap_doubled() -> None:
    full = FullCollections()
    full.loop = asyncio.get_running_loop()
    full.live_after_full = 3_000_000            # above the minimum growth
    young(full, 59)                             # 2.95M new objects: not yet
    await asyncio.sleep(0)
    assert (full.count, full.pending) == (0, False)
    young(full, 5)                              # 3M reached: one collection, asked for once
    assert full.pending
    await asyncio.sleep(0)
    assert (full.count, full.pending, full.young_since_full) == (1, False, 0)
    assert 0 < full.live_after_full < 3_000_000   # what this test process really holds


async def test_small_heaps_wait_for_the_minimum_growth_and_older_generations_are_ignored() -> None:
    full = FullCollections()
    full.loop = asyncio.get_running_loop()
    full.live_after_full = 10
    young(full, gc_tuning.FULL_COLLECTION_MIN_GROWTH // gc_tuning.YOUNG_THRESHOLD - 1)
    full("stop", {"generation": 2, "collected": 0, "uncollectable": 0})
    full("start", {"generation": 0, "collected": 0, "uncollectable": 0})
    await asyncio.sleep(0)
    assert full.count == 0 and not full.pending
    young(full, 1)
    await asyncio.sleep(0)
    assert full.count == 1


def test_without_a_loop_nothing_is_scheduled() -> None:
    full = FullCollections()
    young(full, 1000)
    assert (full.young_since_full, full.pending, full.count) == (0, False, 0)


async def test_collect_fully_on_turns_the_older_generations_off(restore_gc: None) -> None:
    gc_tuning.tune()
    assert gc.get_threshold()[0] == gc_tuning.YOUNG_THRESHOLD
    gc_tuning.collect_fully_on(asyncio.get_running_loop())
    assert gc.get_threshold() == (gc_tuning.YOUNG_THRESHOLD, gc_tuning.NEVER, gc_tuning.NEVER)
    assert gc.callbacks.count(gc_tuning.FULL) == 1
    gc_tuning.collect_fully_on(asyncio.get_running_loop())
    assert gc.callbacks.count(gc_tuning.FULL) == 1
