"""Garbage-collector settings for the long-running commands (`up` and the components).

CPython runs a young-generation collection every 700 net container allocations. A control
plane allocates dicts and lists by the million (every decoded object, patch and event) while
holding tens of thousands of long-lived ones, so the default made collections run every few
hundred objects: in benchmarks/density.py the process spent ~17 % of its CPU in them
(available_cpu_s 3.73 → 3.09 s with this). Our objects rarely form cycles; a higher first
threshold keeps cycle collection while letting far fewer collections run.

200,000 rather than 50,000 (session 15, quiet machine, `benchmarks/density.py --idle-nodes 0`,
interleaved, 5 runs against 7, means): the 1,000/100 rolling update 2.42 s / 2.63 CPU s against
2.69 s / 2.88 CPU s, but to available 1.74 CPU s against 1.64 (both phases together 4.37 against
4.52 CPU s); 10,000/1,000 (`--replicas 10000 --nodes 1000`, 2 runs each) available after
17.9 / 16.8 s against 20.9 / 17.7 s, the rolling update 29.9 / 27.4 s against 30.9 / 28.2 s, peak
RSS the same (~810 MB); `benchmarks/gc_creates.py -n 30000` (concurrent) 68.0 against 74.8 us per
create.
At 10,000 pods the collections of the older generations, which the first threshold paces,
took 1.5-2 s of the rolling update's main thread (helper roll10k's probe).
"""
from __future__ import annotations

import gc

YOUNG_THRESHOLD = 200_000


def tune() -> None:
    """Run young collections every 200,000 allocations instead of 700 (older generations as before)."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
