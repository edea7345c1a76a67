"""EtcdStorage beyond the shared contract: several API servers on one etcd, a member lost, the
watch cache falling behind etcd's compaction, and what etcd itself holds."""
from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator, Iterator

import orjson
import pytest

from kubeplane.storage import Compacted, KeyExists, RevisionMismatch, StorageError
from kubeplane.storage.etcd import EtcdConfig, EtcdStorage
from kubeplane.testing.etcd import EtcdCluster, etcd_binary

pytestmark = pytest.mark.skipif(etcd_binary() is None, reason="no etcd binary (apt-get install etcd-server)")

PODS = "/registry/pods/"


def pod(name: str) -> tuple[str, dict]:
    return f"{PODS}default/{name}", {"kind": "Pod", "metadata": {"name": name, "namespace": "default"}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdCluster]:
    with EtcdCluster(tmp_path_factory.mktemp("etcd3"), members=3) as c:
        yield c


@pytest.fixture
async def two(cluster: EtcdCluster, tmp_path: pathlib.Path) -> AsyncIterator[tuple[EtcdStorage, EtcdStorage]]:
    """Two API servers' stores on the same etcd prefix."""
    config = cluster.config(prefix=f"/{tmp_path.name}/registry")
    a, b = EtcdStorage(config), EtcdStorage(config)
    await a.start()
    await b.start()
    yield a, b
    await a.close()
    await b.close()


async def test_a_write_through_one_server_is_read_at_once_through_another(two: tuple[EtcdStorage, EtcdStorage]) -> None:
    a, b = two
    key, obj = pod("web")
    w = b.watch(PODS, b.revision)
    kv = await a.create(key, obj)
    assert await b.get(key) == kv                              # no stale read: B waited for its cache
    assert (await b.list(PODS))[0] == [kv] and await b.count(PODS) == 1
    ev = await asyncio.wait_for(anext(w), 5)
    assert (ev.type, ev.kv.mod_revision) == ("ADDED", kv.mod_revision)
    with pytest.raises(KeyExists):
        await b.create(key, obj)
    kv2 = await b.update(key, kv.obj, kv.mod_revision)
    with pytest.raises(RevisionMismatch):                      # A's expectation is stale now
        await a.update(key, kv.obj, kv.mod_revision)
    assert (await a.get(key)).mod_revision == kv2.mod_revision


async def test_etcd_holds_the_object_without_its_resource_version(cluster: EtcdCluster, tmp_path: pathlib.Path) -> None:
    config = cluster.config(prefix=f"/{tmp_path.name}/custom")
    s = EtcdStorage(config)
    await s.start()
    try:
        kv = await s.create(*pod("a"))
        resp = await s._kv.Range(s._rpc.RangeRequest(key=f"/{tmp_path.name}/custom/pods/default/a".encode()))
        (stored,) = resp.kvs
        assert stored.mod_revision == kv.mod_revision == int(kv.obj["metadata"]["resourceVersion"])
        assert "resourceVersion" not in orjson.loads(stored.value)["metadata"]   # upstream stores none
    finally:
        await s.close()


_FAILOVER_ERRORS = ("timed out", "leader", "unavailable", "stream removed", "socket closed")


async def create_through_failover(s: EtcdStorage, key: str, obj: dict) -> None:
    """Create as an API client would while etcd elects a leader: a request that timed out may
    have been applied, so KeyExists after a retry is success. A request in flight on the killed
    member's connection fails with gRPC's "Stream removed"/"Socket closed" (upstream's clientv3
    does not retry a Txn either: the API client sees the error and retries)."""
    for _ in range(100):
        try:
            await asyncio.wait_for(s.create(key, obj), 30)
            return
        except KeyExists:
            return
        except StorageError as e:
            assert any(m in str(e).lower() for m in _FAILOVER_ERRORS), e
            await asyncio.sleep(0.1)
    raise AssertionError(f"{key} was never created")


async def test_the_store_goes_on_when_a_member_dies(cluster: EtcdCluster, tmp_path: pathlib.Path) -> None:
    s = EtcdStorage(cluster.config(prefix=f"/{tmp_path.name}/registry"))
    await s.start()
    try:
        await s.create(*pod("before"))
        cluster.kill(0)
        try:
            for i in range(20):
                await create_through_failover(s, *pod(f"p{i}"))
            assert await s.count(PODS) == 21
        finally:
            cluster.start_member(0)
    finally:
        await s.close()


async def test_a_cache_behind_compaction_relists_and_its_watchers_get_compacted(
        cluster: EtcdCluster, tmp_path: pathlib.Path) -> None:
    config = cluster.config(prefix=f"/{tmp_path.name}/registry")
    behind, writer = EtcdStorage(config), EtcdStorage(config)
    await behind.start()
    await writer.start()
    try:
        await writer.create(*pod("a"))
        await behind.get(f"{PODS}default/a")
        w = behind.watch(PODS, behind.revision)
        assert behind._watch_task is not None
        behind._watch_task.cancel()                          # the cache stops following ...
        await asyncio.gather(behind._watch_task, return_exceptions=True)
        await writer.create(*pod("b"))
        await writer.delete(f"{PODS}default/a")
        await writer.compact(writer.revision)                # ... and etcd forgets what it missed
        behind._watch_task = asyncio.ensure_future(behind._follow(behind.revision))
        with pytest.raises(Compacted):                       # its watchers must relist
            await asyncio.wait_for(anext(w), 10)
        kvs, at = await behind.list(PODS)
        assert [kv.key for kv in kvs] == [f"{PODS}default/b"] and at >= writer.revision
    finally:
        await behind.close()
        await writer.close()


def test_a_server_list_becomes_one_failover_target() -> None:
    from kubeplane.storage.etcd import _target
    assert _target(["https://127.0.0.1:2379", "https://127.0.0.1:22379"]) == (
        "ipv4:127.0.0.1:2379,127.0.0.1:22379", True, "127.0.0.1")
    assert _target(["http://etcd-0:2379"]) == ("etcd-0:2379", False, "etcd-0")
    with pytest.raises(ValueError):
        _target([])
    assert EtcdConfig(["http://x:1"]).prefix == "/registry"


async def test_a_restarted_server_resumes_watches_from_etcds_history(cluster: EtcdCluster, tmp_path: pathlib.Path) -> None:
    config = cluster.config(prefix=f"/{tmp_path.name}/registry")
    first = EtcdStorage(config)
    await first.start()
    a = await first.create(*pod("a"))
    since = a.mod_revision
    b = await first.create(*pod("b"))
    a2 = await first.update(a.key, a.obj)
    gone = await first.delete(b.key)
    await first.close()                                   # the API server restarts
    again = EtcdStorage(config)
    await again.start()
    try:
        evs = await asyncio.wait_for(_take(again.watch(PODS, since), 3), 5)
        assert [(e.type, e.kv.key, e.revision) for e in evs] == [
            ("ADDED", b.key, b.mod_revision), ("MODIFIED", a.key, a2.mod_revision), ("DELETED", b.key, gone.mod_revision)]
        assert evs[1].prev == a and evs[2].prev == b and evs[2].kv == gone
        assert again.oldest_revision < since
    finally:
        await again.close()


async def _take(w: object, n: int) -> list:
    return [await anext(w) for _ in range(n)]  # type: ignore[call-overload]


class _CountingKV:
    """The store's KV stub, counting the calls it makes by method."""

    def __init__(self, kv: object) -> None:
        self.kv, self.calls = kv, {"Range": 0, "Txn": 0}

    def __getattr__(self, name: str) -> object:
        if name in self.calls:
            self.calls[name] += 1
        return getattr(self.kv, name)


async def test_a_read_waiting_for_etcds_revision_is_answered_by_a_write_sent_after_it(
        two: tuple[EtcdStorage, EtcdStorage]) -> None:
    a, b = two
    kv1 = await a.create(*pod("one"))
    counting = _CountingKV(b._kv)
    b._kv = counting
    got, kv2 = await asyncio.gather(b.get(kv1.key), b.create(*pod("two")))   # the read is first
    assert got == kv1                                      # linearizable: A's write is seen
    assert counting.calls == {"Range": 0, "Txn": 1}        # B's transaction told it the revision
    got = await b.get(kv2.key)                             # alone, a read makes its round trip
    assert got == kv2 and counting.calls == {"Range": 1, "Txn": 1}


async def test_a_cancelled_read_leaves_the_others_sharing_its_round_trip_alone(
        two: tuple[EtcdStorage, EtcdStorage]) -> None:
    a, _ = two
    kv = await a.create(*pod("web"))
    first, second = asyncio.ensure_future(a.get(kv.key)), asyncio.ensure_future(a.get(kv.key))
    await asyncio.sleep(0)                                 # both wait for the same round trip
    first.cancel()
    assert await asyncio.wait_for(second, 5) == kv
    assert first.cancelled()
    assert await asyncio.wait_for(a.get(kv.key), 5) == kv  # and the next round trips go on


async def test_an_own_write_enters_the_cache_without_the_watch_unless_another_write_lies_between(
        two: tuple[EtcdStorage, EtcdStorage]) -> None:
    a, b = two
    held: list = []
    a._apply_etcd_event = held.append                      # type: ignore[method-assign]  # A's watch stalls
    kv1 = await asyncio.wait_for(a.create(*pod("one")), 5)  # next after A's cache: applied at once
    kv2 = await b.create(*pod("two"))                      # someone else's revision ...
    third = asyncio.ensure_future(a.create(*pod("three")))
    while not a._own:                                      # ... so A's next write must wait for it
        await asyncio.sleep(0.01)
    assert not third.done() and a.revision == kv1.mod_revision
    del a._apply_etcd_event                                # the watch delivers what it held
    for ev in held:
        a._apply_etcd_event(ev)
    a._advance(a.revision)
    kv3 = await asyncio.wait_for(third, 5)
    assert kv3.mod_revision == kv2.mod_revision + 1
    evs = [a._log.event(r) for r in (kv1.mod_revision, kv2.mod_revision, kv3.mod_revision)]
    assert [(e.type, e.kv.key) for e in evs] == [("ADDED", kv1.key), ("ADDED", kv2.key), ("ADDED", kv3.key)]
    assert [e.kv for e in evs] == [kv1, kv2, kv3] and not a._own
    for ev in held:                                        # the watch's copies of A's own writes
        a._apply_etcd_event(ev)                            # are skipped as already applied
    a._check_invariants()


@pytest.mark.parametrize("in_flight", [1, 2])
async def test_reads_in_a_row_each_find_a_round_trip(two: tuple[EtcdStorage, EtcdStorage], in_flight: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that comes back for more as its round trip ends (before the sender is gone)
    still gets the next one."""
    import kubeplane.storage.etcd as etcd_module
    monkeypatch.setattr(etcd_module, "ROUND_TRIPS", in_flight)
    a, _ = two
    kv = await a.create(*pod("web"))

    async def reader() -> None:
        for _ in range(20):
            assert await a.get(kv.key) == kv

    await asyncio.wait_for(asyncio.gather(*(reader() for _ in range(3))), 10)


async def test_writes_on_the_cached_version_ask_etcd_for_no_previous_value(two: tuple[EtcdStorage, EtcdStorage]) -> None:
    """(Without an expected version, etcd sends the previous one back: the contract's tests.)"""
    a, _ = two
    kv = await a.create(*pod("web"))
    sent: list = []
    txn = a._kv.Txn

    def spy(request: object, **kw: object) -> object:
        sent.append(request)
        return txn(request, **kw)

    a._kv = type("KV", (), {"Txn": staticmethod(spy), "Range": a._kv.Range})()
    kv2 = await a.update(kv.key, kv.obj, kv.mod_revision)
    gone = await a.delete(kv.key, kv2.mod_revision)
    ops = [r.success[0] for r in sent]
    assert not ops[0].request_put.prev_kv and not ops[1].request_delete_range.prev_kv
    assert (kv2.create_revision, gone.create_revision) == (kv.create_revision, kv.create_revision)
    assert gone.obj == {**kv2.obj, "metadata": {**kv2.obj["metadata"], "resourceVersion": str(gone.mod_revision)}}
