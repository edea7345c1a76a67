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


async def create_through_failover(s: EtcdStorage, key: str, obj: dict) -> None:
    """Create as an API client would while etcd elects a leader: a request that timed out may
    have been applied, so KeyExists after a retry is success."""
    for _ in range(100):
        try:
            await asyncio.wait_for(s.create(key, obj), 30)
            return
        except KeyExists:
            return
        except StorageError as e:
            assert "timed out" in str(e) or "leader" in str(e) or "unavailable" in str(e).lower(), e
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
