"""Garbage-collector settings for the long-running commands (`up` and the components).

CPython runs a young-generation collection every 700 net container allocations. A control
plane allocates dicts and lists by the million (every decoded object, patch and event) while
holding tens of thousands of long-lived ones, so the default made collections run every few
hundred objects: in benchmarks/density.py the process spent ~17 % of its CPU in them
(available_cpu_s 3.73 → 3.09 s with this). Our objects rarely form cycles; a higher first
threshold keeps cycle collection while letting far fewer collections run.

The older generations cost more than the young one. CPython collects the middle generation
every 10 young collections and the whole heap whenever it has grown by a quarter; each
traverses every stored object again (a pod is ~40 dicts and lists), with pauses that grow with
the heap (240 ms and 620 ms with 60,000 pods in `benchmarks/api_bench.py`), and in the pod
create benchmark none of them found a single cycle to free: 26 of 33 µs of collector time per
pod create, 20 % of the server's CPU. So once the process runs its event loop
(`collect_fully_on`), the older generations are left to us: no middle-generation collections,
and a full collection (scheduled on the loop: a collector callback cannot start one) only
when the young collections since the last one have added as many objects as it left alive
(and at least FULL_COLLECTION_MIN_GROWTH): amortised one traversal per long-lived object,
none while the heap is steady, and cyclic garbage (rare: a closed connection's objects) never
more than the live heap.

(gc.freeze() after each young collection was tried first: the same collector savings, but
every pod create then cost ~20 µs more outside the collector, for reasons we did not pin down.)
"""
from __future__ import annotations

import asyncio
import gc
from typing import Any

YOUNG_THRESHOLD = 50_000
NEVER = 1 << 30                             # a collection threshold no count reaches
FULL_COLLECTION_MIN_GROWTH = 1_000_000      # objects; a full collection of 1M takes ~0.3 s


class FullCollections:
    """The gc callback that counts young collections and schedules a full one when due."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.live_after_full = 0             # objects tracked after the last full collection
        self.young_since_full = 0
        self.pending = False
        self.count = 0                       # full collections run (metrics, tests)

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase != "stop" or info["generation"] != 0 or self.loop is None:
            return
        self.young_since_full += 1
        grown = self.young_since_full * YOUNG_THRESHOLD
        if not self.pending and grown >= max(self.live_after_full, FULL_COLLECTION_MIN_GROWTH):
            self.pending = True
            try:
                self.loop.call_soon_threadsafe(self.collect)
            except RuntimeError:              # the loop is closed: the process is ending
                self.loop = None

    def collect(self) -> None:
        gc.collect()
        self.live_after_full = len(gc.get_objects())
        self.young_since_full = 0
        self.pending = False
        self.count += 1


FULL = FullCollections()


def tune() -> None:
    """Run young collections every 50,000 allocations instead of 700 (older generations as before)."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def collect_fully_on(loop: asyncio.AbstractEventLoop) -> None:
    """From now on, no middle-generation collections, and full ones run on this loop when the
    heap has doubled (see the module docstring)."""
    FULL.loop = loop
    FULL.live_after_full = len(gc.get_objects())
    gc.set_threshold(YOUNG_THRESHOLD, NEVER, NEVER)
    if FULL not in gc.callbacks:
        gc.callbacks.append(FULL)
