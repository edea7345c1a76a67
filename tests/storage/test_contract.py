"""The Storage contract (interface.py), run against every backend.

Revisions are counted from `b`, the store's revision before the test writes: 0 for a new memory
or sqlite store, etcd's current revision for an etcd one (etcd's counter is shared by all the
stores of a test session, each under its own prefix).
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest

from kubeplane.storage import (
    Compacted, KeyExists, KeyNotFound, MemoryStorage, RevisionMismatch, Storage, WatchEvent,
)

MakeStore = Callable[..., Awaitable[Storage]]


def check(s: Storage) -> None:
    """Run the backend's invariant checks."""
    assert isinstance(s, MemoryStorage)
    s._check_invariants()

PODS = "/registry/pods/"


def pod(name: str, ns: str = "default", **spec: Any) -> tuple[str, dict[str, Any]]:
    return f"{PODS}{ns}/{name}", {"kind": "Pod", "metadata": {"name": name, "namespace": ns},
                                  "spec": spec}


def rv(obj: dict[str, Any]) -> str:
    return obj["metadata"]["resourceVersion"]


async def take(w: Any, n: int) -> list[WatchEvent]:
    """The next n events (fails instead of hanging if they never come)."""
    return [await asyncio.wait_for(anext(w), 5) for _ in range(n)]


def summary(evs: list[WatchEvent]) -> list[tuple[str, str, int]]:
    return [(e.type, e.kv.key, e.revision) for e in evs]


async def test_create_get_update_delete(store: Storage) -> None:
    key, obj = pod("web-0", image="nginx")
    b = store.revision
    assert await store.get(key) is None

    kv1 = await store.create(key, obj)
    assert (kv1.create_revision, kv1.mod_revision, store.revision) == (b + 1, b + 1, b + 1)
    assert await store.get(key) == kv1

    kv2 = await store.update(key, {**obj, "spec": {"image": "nginx:2"}})
    assert (kv2.create_revision, kv2.mod_revision) == (b + 1, b + 2)
    assert (await store.get(key)).obj["spec"] == {"image": "nginx:2"}

    gone = await store.delete(key)
    assert (gone.create_revision, gone.mod_revision, store.revision) == (b + 1, b + 3, b + 3)
    assert gone.obj["spec"] == {"image": "nginx:2"} and rv(gone.obj) == str(b + 3)
    assert await store.get(key) is None
    check(store)


async def test_errors(store: Storage) -> None:
    key, obj = pod("a")
    b = store.revision
    kv = await store.create(key, obj)
    with pytest.raises(KeyExists):
        await store.create(key, obj)
    with pytest.raises(KeyNotFound):
        await store.update(f"{PODS}default/missing", obj)
    with pytest.raises(KeyNotFound):
        await store.delete(f"{PODS}default/missing")

    kv2 = await store.update(key, obj, expected_revision=kv.mod_revision)
    with pytest.raises(RevisionMismatch):
        await store.update(key, obj, expected_revision=kv.mod_revision)     # stale
    with pytest.raises(RevisionMismatch):
        await store.delete(key, expected_revision=kv.mod_revision)
    assert store.revision == b + 2 and await store.get(key) == kv2   # failures took no revision
    await store.delete(key, expected_revision=kv2.mod_revision)
    assert await store.get(key) is None


async def test_list_by_prefix_sorted_and_count(store: Storage) -> None:
    b = store.revision
    for name, ns in [("b", "default"), ("a", "default"), ("x", "default2"), ("c", "kube-system"),
                     ("z", "default")]:
        await store.create(*pod(name, ns))
    await store.create("/registry/nodes/n1", {"metadata": {"name": "n1"}})

    kvs, at = await store.list(f"{PODS}default/")
    assert [kv.key for kv in kvs] == [f"{PODS}default/{n}" for n in "abz"]
    assert at == store.revision == b + 6
    all_pods, _ = await store.list(PODS)
    assert [kv.key for kv in all_pods] == sorted(kv.key for kv in all_pods) and len(all_pods) == 5
    assert await store.count(f"{PODS}default/") == 3
    assert await store.count(f"{PODS}default2/") == 1
    assert await store.count(PODS) == 5 and await store.count("") == 6
    assert await store.list("/registry/services/") == ([], b + 6)

    await store.delete(f"{PODS}default/a")
    assert await store.count(f"{PODS}default/") == 2
    check(store)


async def test_revisions_strictly_increase(store: Storage) -> None:
    seen = []
    b = store.revision
    for i in range(5):
        key, obj = pod(f"p{i}")
        seen.append((await store.create(key, obj)).mod_revision)
        seen.append((await store.update(key, obj)).mod_revision)
    seen.append((await store.delete(f"{PODS}default/p0")).mod_revision)
    assert seen == list(range(b + 1, b + 12)) and store.revision == b + 11


async def test_resource_version_is_stamped_in_obj_and_bytes(store: Storage) -> None:
    key, obj = pod("a")
    b = store.revision
    kv = await store.create(key, obj)
    assert rv(kv.obj) == str(b + 1) and orjson.loads(kv.value) == kv.obj
    kv2 = await store.update(key, kv.obj)          # handing back the stored dict is safe
    assert rv(kv2.obj) == str(b + 2) and orjson.loads(kv2.value) == kv2.obj
    assert rv(kv.obj) == str(b + 1) and orjson.loads(kv.value) == kv.obj   # old version untouched
    assert "resourceVersion" not in obj["metadata"]                  # caller's dict untouched


async def test_create_stores_the_spec_bytes_it_is_handed(store: Storage) -> None:
    """create's spec_json (orjson.dumps(obj["spec"]), the registry store's encoding of a pod's
    spec) is embedded as it is: the stored bytes are those of encoding the whole object."""
    key, obj = pod("a", containers=[{"name": "c", "image": "é\u2028\x00"}])
    kv = await store.create(key, obj, orjson.dumps(obj["spec"]))
    assert kv.value == orjson.dumps(kv.obj) and kv.obj["spec"] == obj["spec"]
    assert (await store.get(key)).value == kv.value  # type: ignore[union-attr]


async def test_writes_complete_without_yielding(store: Storage) -> None:
    """Each call finishes on its first step: no other task can run inside a write (the
    synchronous backends; etcd's writes are network round trips)."""
    if not type(store).__name__.startswith(("Memory", "Sqlite")):
        pytest.skip("a network store yields")
    def run(coro: Any) -> Any:
        with pytest.raises(StopIteration) as done:
            coro.send(None)
        return done.value.value

    key, obj = pod("a")
    kv = run(store.create(key, obj))
    run(store.update(key, obj, kv.mod_revision))
    assert len(run(store.list(PODS))[0]) == 1
    run(store.delete(key))
    assert run(store.get(key)) is None


async def test_watch_replays_from_past_revision(store: Storage) -> None:
    k1, o1 = pod("a")
    k2, o2 = pod("b")
    b = store.revision
    await store.create(k1, o1)              # 1
    after = store.revision
    await store.create(k2, o2)              # 2
    await store.update(k1, o1)              # 3
    await store.delete(k2)                  # 4
    evs = await take(store.watch(PODS, after), 3)
    assert summary(evs) == [("ADDED", k2, b + 2), ("MODIFIED", k1, b + 3), ("DELETED", k2, b + 4)]
    assert evs[0].prev is None
    assert evs[1].prev is not None and evs[1].prev.mod_revision == b + 1
    assert [e.kv.mod_revision for e in evs] == [b + 2, b + 3, b + 4]


async def test_watch_filters_by_prefix(store: Storage) -> None:
    b = store.revision
    await store.create(*pod("a", "default"))
    await store.create(*pod("b", "default2"))
    await store.create("/registry/nodes/n1", {"metadata": {"name": "n1"}})
    await store.create(*pod("c", "default"))
    evs = await take(store.watch(f"{PODS}default/", b), 2)
    assert [e.kv.key for e in evs] == [f"{PODS}default/a", f"{PODS}default/c"]


async def test_deleted_event_carries_delete_revision(store: Storage) -> None:
    key, obj = pod("a")
    b = store.revision
    created = await store.create(key, obj)
    w = store.watch(PODS, store.revision)
    gone = await store.delete(key)
    (ev,) = await take(w, 1)
    assert ev.type == "DELETED" and ev.revision == b + 2 and ev.kv is gone
    assert ev.kv.mod_revision == b + 2 and rv(ev.kv.obj) == str(b + 2)
    assert b'"resourceVersion":"%d"' % (b + 2) in ev.kv.value
    assert ev.kv.create_revision == b + 1 and ev.prev == created


async def test_watch_from_current_revision_sees_only_future_events(store: Storage) -> None:
    await store.create(*pod("old"))
    w = store.watch(PODS, store.revision)
    pending = asyncio.create_task(anext(w))
    await asyncio.sleep(0)                               # let it start waiting (no time passes)
    assert not pending.done()
    key, obj = pod("new")
    kv = await store.create(key, obj)
    ev = await asyncio.wait_for(pending, 5)
    assert (ev.type, ev.kv.key, ev.revision) == ("ADDED", key, kv.mod_revision)


async def test_watchers_share_event_bytes(store: Storage) -> None:
    watchers = [store.watch(PODS, store.revision) for _ in range(3)]
    await store.create(*pod("a"))
    evs = [(await take(w, 1))[0] for w in watchers]
    assert all(e is evs[0] for e in evs)        # one event object, one encoding


async def test_compacted_after_compact(store: Storage) -> None:
    b = store.revision
    for i in range(6):
        await store.create(*pod(f"p{i}"))
    await store.compact(b + 4)
    assert store.oldest_revision == b + 4
    with pytest.raises(Compacted) as err:
        store.watch(PODS, b + 3)
    assert (err.value.requested, err.value.oldest) == (b + 3, b + 4)
    evs = await take(store.watch(PODS, b + 4), 2)
    assert [e.revision for e in evs] == [b + 5, b + 6]


async def test_compacted_when_history_window_is_exceeded(make_store: MakeStore) -> None:
    store = await make_store(history=4)
    b = store.revision
    for i in range(10):
        await store.create(*pod(f"p{i}"))
    assert store.oldest_revision == b + 6
    with pytest.raises(Compacted):
        store.watch(PODS, b + 5)
    assert [e.revision for e in await take(store.watch(PODS, b + 6), 4)] == [b + 7, b + 8, b + 9, b + 10]


async def test_slow_watcher_falls_out_of_window(make_store: MakeStore) -> None:
    store = await make_store(history=4)
    key, obj = pod("a")
    b = store.revision
    await store.create(key, obj)
    slow = store.watch(PODS, b)
    assert [e.revision for e in await take(slow, 1)] == [b + 1]
    for _ in range(5):                        # revisions 2..6: revision 2 is overwritten
        await store.update(key, obj)
    with pytest.raises(Compacted) as err:
        await anext(slow)
    assert err.value.requested == b + 1 and err.value.oldest == b + 2


async def test_stop_ends_pending_and_later_iteration(store: Storage) -> None:
    w = store.watch(PODS, store.revision)
    pending = asyncio.create_task(anext(w))
    await asyncio.sleep(0)
    w.stop()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, 5)
    await store.create(*pod("a"))
    assert [e async for e in w] == []


async def test_async_for_consumer_receives_stream(store: Storage) -> None:
    b = store.revision
    w = store.watch(PODS, b)
    got: list[int] = []

    async def consume() -> None:
        async for ev in w:
            got.append(ev.revision)
            if len(got) == 3:
                w.stop()

    task = asyncio.create_task(consume())
    for i in range(3):
        await store.create(*pod(f"p{i}"))
        await asyncio.sleep(0)
    await asyncio.wait_for(task, 5)
    assert got == [b + 1, b + 2, b + 3]


async def test_failed_persist_changes_nothing() -> None:
    class Failing(MemoryStorage):
        def _persist(self, ev: WatchEvent) -> None:
            raise OSError("disk full")

    s = Failing()
    with pytest.raises(OSError):
        await s.create(*pod("a"))
    assert s.revision == 0 and await s.get(f"{PODS}default/a") is None
    s._check_invariants()


async def test_close_ends_every_watch(make_store: MakeStore) -> None:
    store = await make_store()
    w = store.watch(PODS, store.revision)
    pending = asyncio.create_task(anext(w))
    await asyncio.sleep(0)                       # a yield, not a wait: let it block on the log
    await store.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(pending, 5)


def newest_within(sizes: dict[int, int], budget: int, revision: int) -> int:
    """The oldest revision of a window holding the newest events whose sizes fit the budget."""
    oldest, total = revision, 0
    while oldest in sizes and total + sizes[oldest] <= budget:
        total += sizes[oldest]
        oldest -= 1
    return oldest


async def test_compacted_when_history_bytes_are_exceeded(make_store: MakeStore) -> None:
    store = await make_store(history_bytes=10_000)
    key, obj = pod("a", blob="x" * 1000)
    b = store.revision
    slow = store.watch(PODS, b)
    sizes = {}
    for i in range(30):
        kv = await (store.create(key, obj) if i == 0 else store.update(key, obj))
        sizes[kv.mod_revision] = len(kv.value)
    # One ~1.1 KB object is the live data: 8 x that is under the 10,000-byte floor.
    oldest = newest_within(sizes, 10_000, store.revision)
    assert b + 15 < oldest < b + 25 and store.oldest_revision == oldest
    with pytest.raises(Compacted) as err:
        store.watch(PODS, oldest - 1)
    assert err.value.oldest == oldest
    assert ([e.revision for e in await take(store.watch(PODS, oldest), b + 30 - oldest)]
            == list(range(oldest + 1, b + 31)))
    with pytest.raises(Compacted) as err:
        await anext(slow)                            # never read: revision 1 is long gone
    assert (err.value.requested, err.value.oldest) == (b, oldest)
    check(store)


async def test_history_bytes_grow_with_the_live_data(make_store: MakeStore) -> None:
    store = await make_store(history_bytes=1000)
    b = store.revision
    sizes = {}
    for i in range(5):                               # 5 objects of ~1.1 KB live: ~44 KB of history
        kv = await store.create(*pod(f"p{i}", blob="x" * 1000))
        sizes[kv.mod_revision] = len(kv.value)
    for _ in range(60):
        key, obj = pod("p0", blob="y" * 1000)
        kv = await store.update(key, obj)
        sizes[kv.mod_revision] = len(kv.value)
    live = sum(len(kv.value) for kv in (await store.list(PODS))[0])
    oldest = newest_within(sizes, 8 * live, store.revision)
    assert b + 20 < oldest < b + 40 and store.oldest_revision == oldest
    check(store)
