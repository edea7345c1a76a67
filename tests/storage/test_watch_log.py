"""WatchLog wakes only the watchers whose prefix an event falls under."""
from __future__ import annotations

import asyncio

from kubeplane.storage import MemoryStorage


async def test_a_waiting_watcher_sleeps_through_other_prefixes_and_never_falls_behind() -> None:
    s = MemoryStorage(history=4)
    w = s.watch("/registry/a/", 0)
    nxt = asyncio.ensure_future(anext(w))
    await asyncio.sleep(0)                                   # now waiting on the log
    for i in range(10):                                      # more than the window, all elsewhere
        await s.create(f"/registry/b/{i}", {"metadata": {"name": f"b{i}"}})
        await asyncio.sleep(0)
        assert not nxt.done()
    assert w.progress == s.revision == 10                    # nothing of its own is unread
    await s.create("/registry/a/x", {"metadata": {"name": "x"}})
    ev = await asyncio.wait_for(nxt, 5)                      # no Compacted: the gap was not its
    assert ev.kv.key == "/registry/a/x" and ev.revision == 11
    w.stop()


async def test_stop_while_waiting_brings_progress_up_to_date() -> None:
    s = MemoryStorage()
    w = s.watch("/registry/a/", 0)
    nxt = asyncio.ensure_future(anext(w))
    await asyncio.sleep(0)
    await s.create("/registry/b/1", {"metadata": {"name": "b"}})
    w.stop()
    try:
        await asyncio.wait_for(nxt, 5)
    except StopAsyncIteration:
        pass
    assert w.progress == 1
