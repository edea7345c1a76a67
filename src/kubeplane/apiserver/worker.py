"""The worker thread: where a big request's CPU work runs, so the event loop goes on serving.

handlers.common.is_heavy decides which requests (OFFLOAD_BYTES); the handlers and the generic
store (registry/store.py) hand such work over with in_worker.
"""
from __future__ import annotations

import asyncio
import functools
import gc
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

# One thread: these steps hold the GIL anyway, and with more threads the loop would wait behind each.
_worker = ThreadPoolExecutor(1, thread_name_prefix="kubeplane-decode")


async def in_worker(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) in the worker thread. fn must only touch the request's own data (and read
    stored objects, which nobody mutates). Callers branch on is_heavy themselves: a light
    request calls fn directly, without even a coroutine in between."""
    return await asyncio.get_running_loop().run_in_executor(_worker, functools.partial(_gc_paused, fn, *args))


def _gc_paused(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) with the cyclic garbage collector paused. A big body allocates a million
    objects, none in a cycle; every few thousand of them the collector would run, and a full
    collection walks the whole heap holding the GIL: 40-60 ms during which the loop cannot
    run, several times per request (measured in benchmarks/hostile_bench.py). One worker, so
    pauses never overlap; the loop's own garbage waits a few hundred ms at most."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return fn(*args)
    finally:
        if enabled:
            gc.enable()
