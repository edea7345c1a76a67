"""parallelize_until: every item once, never more than `workers` at a time, errors raised."""
from __future__ import annotations

import asyncio

import pytest

from kubeplane.client.util.workqueue.parallelizer import parallelize_until


async def test_every_item_runs_once_with_bounded_concurrency() -> None:
    running, peak, seen = 0, 0, []

    async def fn(i: int) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        seen.append(i)
        running -= 1

    await parallelize_until(3, range(20), fn)
    assert sorted(seen) == list(range(20)) and peak == 3


async def test_an_error_is_raised_after_the_others_finish() -> None:
    seen = []

    async def fn(i: int) -> None:
        await asyncio.sleep(0)
        if i == 1:
            raise ValueError("boom")
        seen.append(i)

    with pytest.raises(ValueError, match="boom"):
        await parallelize_until(2, range(6), fn)
    assert 1 not in seen and len(seen) == 5
