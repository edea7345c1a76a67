"""WatchLog wakes only the watchers whose prefix an event falls under."""
from __future__ import annotations

import asyncio

import pytest

from kubeplane.storage import MemoryStorage
from kubeplane.storage.interface import Compacted, KeyValue, LeanKeyValue, WatchEvent
from kubeplane.storage import watch_log
from kubeplane.storage.watch_log import WatchLog


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


async def test_waiters_are_kept_by_resource_and_a_wide_prefix_sees_every_resource() -> None:
    """A write looks only at the waiters of its key's resource (and of prefixes above any
    resource); each still wakes exactly when a key under its prefix is written."""
    s = MemoryStorage()
    log = s._log
    prefixes = ["/registry/a/", "/registry/a/ns1/", "/registry/b/", "/registry/", "/registry/a"]
    watchers = [s.watch(p, 0) for p in prefixes]
    nexts = [asyncio.ensure_future(anext(w)) for w in watchers]
    await asyncio.sleep(0)
    assert sorted(log._waiters) == ["", "/registry/a/", "/registry/b/"]
    await s.create("/registry/a/ns2/x", {"metadata": {"name": "x"}})
    await asyncio.sleep(0)
    assert [n.done() for n in nexts] == [True, False, False, True, True]
    assert [w[0] for w in log._waiters["/registry/a/"]] == ["/registry/a/ns1/"]
    await s.create("/registry/b/y", {"metadata": {"name": "y"}})
    await asyncio.sleep(0)
    assert [n.done() for n in nexts] == [True, False, True, True, True]
    assert "/registry/b/" not in log._waiters
    for w in watchers:
        w.stop()


async def test_stopped_watchers_of_a_resource_nobody_writes_do_not_pile_up() -> None:
    s = MemoryStorage()
    for _ in range(1000):                                    # an informer's watch restarting, say
        w = s.watch("/registry/quiet/", 0)
        nxt = asyncio.ensure_future(anext(w))
        await asyncio.sleep(0)
        w.stop()
        try:
            await nxt
        except StopAsyncIteration:
            pass
    assert len(s._log._waiters["/registry/quiet/"]) <= 32


async def test_changes_reads_only_when_its_prefix_was_written() -> None:
    """changes(): the events under the prefix since the last call, found without scanning the
    writes elsewhere (the armed waiter says none came), and Compacted only if one of its own
    events fell out of the window unread."""
    s = MemoryStorage(history=4)
    await s.create("/registry/lr/ns/a", {"metadata": {"name": "a"}})
    w = s.watch("/registry/lr/", 0)
    assert [ev.kv.key for ev in w.changes()] == ["/registry/lr/ns/a"]
    for i in range(10):                                      # more than the window, all elsewhere
        await s.create(f"/registry/pods/ns/{i}", {"metadata": {"name": f"p{i}"}})
        assert w.changes() == []
    assert w.progress == s.revision
    await s.create("/registry/lr/ns/b", {"metadata": {"name": "b"}})
    await s.create("/registry/pods/ns/x", {"metadata": {"name": "x"}})
    assert [ev.kv.key for ev in w.changes()] == ["/registry/lr/ns/b"]
    assert w.changes() == []
    await s.create("/registry/lr/ns/c", {"metadata": {"name": "c"}})
    for i in range(5):                                       # its own event is pushed out unread
        await s.create(f"/registry/cm/ns/{i}", {"metadata": {"name": f"c{i}"}})
    with pytest.raises(Compacted):
        w.changes()
    w.stop()
    assert w.changes() == []                                 # stopped: nothing, and no waiter armed
    assert not any(not f.done() for b in s._log._waiters.values() for _, f in b)


# --- the byte bound ---------------------------------------------------------------------------

def blob(name: str, size: int) -> dict:
    return {"metadata": {"name": name}, "data": {"x": "x" * size}}


async def test_live_bytes_follow_creates_updates_and_deletes() -> None:
    s = MemoryStorage()
    a = await s.create("/k/a", blob("a", 100))
    b = await s.create("/k/b", blob("b", 50))
    a2 = await s.update("/k/a", blob("a", 300))
    assert s._log.live_bytes == len(a2.value) + len(b.value)
    await s.delete("/k/b")
    assert s._log.live_bytes == len(a2.value) and len(a.value) < len(a2.value)
    s._check_invariants()


async def test_the_newest_event_stays_however_big_and_a_waiting_watcher_keeps_up() -> None:
    # A 10 KB object against a 100-byte floor: while it lives, the budget is 8 x its size;
    # its DELETED event leaves no live data, and the window keeps that event alone.
    s = MemoryStorage(history_bytes=100)
    await s.create("/k/big", blob("big", 10_000))
    await s.update("/k/big", blob("big", 10_001))
    w = s.watch("/k/", s.revision)
    nxt = asyncio.ensure_future(anext(w))
    await asyncio.sleep(0)                                   # waiting on the log
    await s.delete("/k/big")
    assert s.oldest_revision == 2 and s._log.bytes > s._log.budget() == 100
    ev = await asyncio.wait_for(nxt, 5)                      # not Compacted: it was not behind
    assert (ev.type, ev.revision) == ("DELETED", 3)
    s._check_invariants()
    w.stop()


async def test_compaction_releases_the_bytes_it_drops() -> None:
    s = MemoryStorage()
    for i in range(4):
        await s.create(f"/k/{i}", blob(str(i), 1000))
    before = s._log.bytes
    await s.compact(2)
    assert s._log.bytes < before and s._log.evicted_bytes == before - s._log.bytes
    s._check_invariants()


def event(rev: int, key: str, size: int = 10, prev: WatchEvent | None = None) -> WatchEvent:
    kv = KeyValue(key, b"x" * size, {}, rev, rev)
    return WatchEvent("ADDED" if prev is None else "MODIFIED", kv, prev.kv if prev else None, rev)


async def test_skipped_revisions_take_slots_but_no_events() -> None:
    """A store whose counter others share (etcd) appends with gaps: watchers read past them,
    and they count against the capacity like events."""
    log = WatchLog(4)
    log.append(event(1, "/registry/a/1"))
    log.append(event(4, "/registry/a/2"))                  # 2 and 3 were written elsewhere
    assert (log.revision, log.oldest_revision) == (4, 0)
    assert [ev.revision for ev in log.watch("/registry/a/", 0).ready()] == [1, 4]
    log.advance(6)                                         # a progress notification
    assert (log.revision, log.oldest_revision) == (6, 2)   # event 1 left; 2 was a gap
    with pytest.raises(Compacted):
        log.watch("/registry/a/", 1)
    assert [ev.revision for ev in log.watch("/registry/a/", 2).ready()] == [4]
    log.append(event(7, "/registry/a/3"))
    assert log.oldest_revision == 3 and log.bytes == 20
    log.advance(1_000_000)                                 # a jump past the whole ring
    assert (log.oldest_revision, log.bytes, log.evicted_bytes) == (999_996, 0, 30)
    log._check_invariants()


async def test_reset_starts_over_and_every_watcher_relists() -> None:
    log = WatchLog(4)
    log.append(event(1, "/registry/a/1"))
    w = log.watch("/registry/a/", 1)
    nxt = asyncio.ensure_future(anext(w))
    await asyncio.sleep(0)                                 # waiting on the log
    log.reset(9, live_bytes=50)
    with pytest.raises(Compacted):
        await asyncio.wait_for(nxt, 5)
    assert (log.revision, log.oldest_revision, log.bytes, log.live_bytes) == (9, 9, 0, 50)
    assert not log.closed and log.watch("/registry/a/", 9).ready() == []
    log._check_invariants()


# --- replaced versions keep only their bytes -----------------------------------------------

async def test_replaced_versions_keep_only_their_bytes_once_lean_lag_old(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_log, "LEAN_LAG", 3)
    s = MemoryStorage()
    a1 = await s.create("/k/a", blob("a", 10))               # 1
    a2 = await s.update("/k/a", blob("a", 11))               # 2: replaces a1
    await s.create("/k/b", blob("b", 10))                    # 3
    b = await s.delete("/k/b")                               # 4: b has no current version
    assert all(not isinstance(e.kv, LeanKeyValue) for e in s.watch("", 0).ready())   # none is 3 revisions old
    for i in range(4):
        await s.create(f"/k/c{i}", blob(str(i), 10))          # 5..8: revisions up to 5 are leaned
    ev = {e.revision: e for e in s.watch("", 0).ready()}
    assert isinstance(ev[1].kv, LeanKeyValue) and ev[2].prev is ev[1].kv    # one lean copy for both events
    assert not isinstance(ev[2].kv, LeanKeyValue) and ev[2].kv is await s.get("/k/a")   # current: decoded
    assert isinstance(ev[3].kv, LeanKeyValue) and ev[4].prev is ev[3].kv and isinstance(ev[4].kv, LeanKeyValue)
    assert not isinstance(ev[6].kv, LeanKeyValue)                         # not 3 revisions old yet
    # Read back, a lean version decodes to what was stored.
    assert (ev[1].kv.obj, ev[2].prev.obj, ev[4].kv.obj) == (a1.obj, a1.obj, b.obj)
    assert ev[2].kv.obj is a2.obj or ev[2].kv.obj == a2.obj
    s._check_invariants()


async def test_a_restored_history_is_lean_but_for_its_last_revisions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_log, "LEAN_LAG", 2)
    kvs = [KeyValue("/k/a", b'{"v":1}', {"v": 1}, 1, 1), KeyValue("/k/a", b'{"v":2}', {"v": 2}, 1, 2),
           KeyValue("/k/a", b'{"v":3}', {"v": 3}, 1, 3), KeyValue("/k/a", b'{"v":4}', {"v": 4}, 1, 4)]
    log = WatchLog(10)
    log.restore(4, [WatchEvent("ADDED", kvs[0], None, 1)]
                + [WatchEvent("MODIFIED", kvs[i], kvs[i - 1], i + 1) for i in (1, 2, 3)], live_bytes=7)
    ev = {e.revision: e for e in log.watch("", 0).ready()}
    assert isinstance(ev[1].kv, LeanKeyValue) and ev[2].prev is ev[1].kv   # replaced by 2, which is 2 old
    assert not isinstance(ev[2].kv, LeanKeyValue) and not isinstance(ev[3].prev, LeanKeyValue)   # replaced by 3: too recent
    assert [e.kv.obj["v"] for e in ev.values()] == [1, 2, 3, 4]
    log._check_invariants()
