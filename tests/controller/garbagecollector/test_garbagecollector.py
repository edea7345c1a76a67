"""The garbage collector against a real in-process API server (FakeClientset) with informers.

Each test builds the owner graph the way controllers would (pods carrying ownerReferences to a
ReplicaSet), deletes the owner with one propagation policy, and polls with a deadline for the
end state; the recorded API calls show which writes the collector made.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.garbagecollector import GarbageCollector, monitored_resources
from kubeplane.controller.garbagecollector.graph import ReferenceCache, ObjectReference
from kubeplane.controller.garbagecollector.graph_builder import (
    deletion_starts_with_finalizer, references_diffs,
)
from kubeplane.controller.garbagecollector.operations import (
    RESTMappingError, api_resource, generate_delete_owner_ref_strategic_merge_bytes,
)
from kubeplane.api.types import meta_v1

NS = "default"
DEADLINE = 5.0


async def eventually(check: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    """Poll an async check until it returns something truthy, or fail after timeout seconds."""
    end = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClientset, GarbageCollector]]:
    cs = await FakeClientset.new()
    factory = SharedInformerFactory(cs)
    gc = GarbageCollector(cs, factory, workers=4)
    task = asyncio.create_task(gc.run())
    await factory.wait_for_cache_sync()
    try:
        yield cs, gc
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.shutdown()


def rs_body(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": 3, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def owner_ref(obj: Any, *, block: bool = True, controller: bool = True) -> dict[str, Any]:
    return {"apiVersion": obj.api_version, "kind": obj.kind, "name": obj.metadata.name, "uid": obj.metadata.uid,
            "controller": controller, "blockOwnerDeletion": block}


def pod_body(name: str, owners: list[dict[str, Any]], node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node:
        spec["nodeName"] = node       # a pod on a node is deleted gracefully: it lingers, marked
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "ownerReferences": owners}, "spec": spec}


async def make_rs_with_pods(cs: FakeClientset, n: int = 3, *, node: str = "", block: bool = True) -> Any:
    rs = (await cs.seed(rs_body("web")))[0]
    await cs.seed(*(pod_body(f"web-{i}", [owner_ref(rs, block=block)], node) for i in range(n)))
    cs.clear_actions()
    return rs


async def pods(cs: FakeClientset) -> list[Any]:
    return (await cs.core_v1().pods(NS).list()).items


async def get_or_none(client: Any, name: str) -> Any:
    try:
        return await client.get(name)
    except errors.NotFound:
        return None


def gc_writes(cs: FakeClientset) -> list[Any]:
    return [a for a in cs.actions if a.verb in ("delete", "patch", "update", "create")]


# --- background ----------------------------------------------------------------------------------

async def test_background_deletes_dependents(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, gc = env
    rs = await make_rs_with_pods(cs)
    cs.fail_on("delete", "pods", errors.InternalError("etcd hiccup"), times=1)   # retried by the queue
    await cs.apps_v1().replicasets(NS).delete("web", propagation_policy="Background")
    await eventually(lambda: _empty(pods(cs)), "pods to be collected")
    deletes = [a for a in cs.actions if a.verb == "delete" and a.resource == "pods"]
    assert sorted({a.name for a in deletes}) == ["web-0", "web-1", "web-2"]
    assert len(deletes) == 4                                    # one failed and was retried
    for a in deletes:
        assert a.body["propagationPolicy"] == "Background"
        assert a.body["preconditions"]["uid"]                   # never deletes a same-named successor
    assert rs.metadata.uid not in gc.dependency_graph_builder.uid_to_node


async def _empty(coro: Any) -> bool:
    return not await coro


async def test_owner_uid_that_never_existed(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, _ = env
    ghost = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ghost",
             "uid": "00000000-0000-0000-0000-000000000001", "controller": True, "blockOwnerDeletion": True}
    await cs.seed(pod_body("orphaned", [ghost]))
    await eventually(lambda: _empty(pods(cs)), "the pod of a never-existing owner to be collected")
    # the owner was verified absent with a live GET by name before the pod was deleted
    gets = [a for a in cs.actions if a.verb == "get" and a.resource == "replicasets"]
    assert [a.name for a in gets][:1] == ["ghost"]


async def test_owner_name_reused_with_other_uid_counts_as_absent(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, _ = env
    rs = (await cs.seed(rs_body("web")))[0]
    stale = owner_ref(rs) | {"uid": "00000000-0000-0000-0000-000000000002"}
    await cs.seed(pod_body("stale", [stale]), pod_body("live", [owner_ref(rs)]))
    await eventually(lambda: _names_are(pods(cs), ["live"]), "only the pod of the live owner to remain")
    assert await get_or_none(cs.apps_v1().replicasets(NS), "web") is not None


async def _names_are(coro: Any, names: list[str]) -> bool:
    return sorted(o.metadata.name for o in await coro) == names


async def test_dependent_with_two_owners_keeps_the_remaining_one(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, _ = env
    a = (await cs.seed(rs_body("a")))[0]
    b = (await cs.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": NS}}))[0]
    await cs.seed(pod_body("shared", [owner_ref(a), owner_ref(b, controller=False)]))
    await cs.apps_v1().replicasets(NS).delete("a", propagation_policy="Background")

    async def only_b() -> bool:
        pod = await get_or_none(cs.core_v1().pods(NS), "shared")
        assert pod is not None, "the pod still has a live owner and must not be collected"
        return [r.uid for r in pod.metadata.owner_references or []] == [b.metadata.uid]

    await eventually(only_b, "the dangling reference to be patched away")
    patches = [x for x in cs.actions if x.verb == "patch" and x.resource == "pods"]
    assert patches[0].body["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": a.metadata.uid}]
    assert not [x for x in cs.actions if x.verb == "delete" and x.resource == "pods"]


# --- foreground ----------------------------------------------------------------------------------

async def test_foreground_waits_for_blocking_dependents(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, _ = env
    await make_rs_with_pods(cs, node="node-1")
    cs.fail_on("patch", "replicasets", errors.Conflict("apps", "replicasets", "web", "changed"), times=1)
    rs_client, pod_client = cs.apps_v1().replicasets(NS), cs.core_v1().pods(NS)
    await rs_client.delete("web", propagation_policy="Foreground")

    async def all_terminating() -> bool:
        ps = await pods(cs)
        return len(ps) == 3 and all(p.metadata.deletion_timestamp for p in ps)

    await eventually(all_terminating, "the GC to delete every pod")
    rs = await rs_client.get("web")           # the owner waits for its blocking dependents
    assert rs.metadata.deletion_timestamp and rs.metadata.finalizers == ["foregroundDeletion"]

    for p in await pods(cs):                  # the kubelet's final delete
        await pod_client.delete(p.metadata.name, grace_period_seconds=0)
    await eventually(lambda: _gone(rs_client, "web"), "the ReplicaSet to be deleted after its pods")
    patch = [a for a in cs.actions if a.verb == "patch" and a.resource == "replicasets"][-1]
    assert patch.body["metadata"]["finalizers"] is None and patch.body["metadata"]["resourceVersion"]


async def _gone(client: Any, name: str) -> bool:
    return await get_or_none(client, name) is None


async def test_foreground_does_not_wait_for_non_blocking_dependents(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, _ = env
    await make_rs_with_pods(cs, n=2, node="node-1", block=False)
    rs_client = cs.apps_v1().replicasets(NS)
    await rs_client.delete("web", propagation_policy="Foreground")
    await eventually(lambda: _gone(rs_client, "web"), "the ReplicaSet to be deleted")
    await eventually(lambda: _all_terminating(pods(cs)), "its pods to be deleted too")


async def _all_terminating(coro: Any) -> bool:
    ps = await coro
    return bool(ps) and all(p.metadata.deletion_timestamp for p in ps)


async def test_foreground_chain_deployment_rs_pods(env: tuple[FakeClientset, GarbageCollector]) -> None:
    """An owner in foreground deletion deletes a dependent that has dependents in the
    foreground too, so the whole chain goes bottom-up."""
    cs, _ = env
    d = (await cs.seed({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": NS},
                        "spec": rs_body("web")["spec"]}))[0]
    body = rs_body("web")
    body["metadata"]["ownerReferences"] = [owner_ref(d)]
    rs = (await cs.seed(body))[0]
    await cs.seed(*(pod_body(f"web-{i}", [owner_ref(rs)]) for i in range(2)))
    cs.clear_actions()
    await cs.apps_v1().deployments(NS).delete("d", propagation_policy="Foreground")
    await eventually(lambda: _gone(cs.apps_v1().deployments(NS), "d"), "the Deployment to go")
    assert await get_or_none(cs.apps_v1().replicasets(NS), "web") is None
    assert await pods(cs) == []
    rs_delete = [a for a in cs.actions if a.verb == "delete" and a.resource == "replicasets"]
    assert rs_delete[0].body["propagationPolicy"] == "Foreground"


# --- orphan --------------------------------------------------------------------------------------

async def test_orphan_removes_owner_reference(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, _ = env
    rs = await make_rs_with_pods(cs)
    await cs.apps_v1().replicasets(NS).delete("web", propagation_policy="Orphan")
    await eventually(lambda: _gone(cs.apps_v1().replicasets(NS), "web"), "the ReplicaSet to go")
    ps = await pods(cs)
    assert len(ps) == 3
    assert all(not p.metadata.owner_references for p in ps)
    patches = [a for a in cs.actions if a.verb == "patch" and a.resource == "pods"]
    assert len(patches) == 3
    assert patches[0].body["metadata"]["ownerReferences"] == [{"$patch": "delete", "uid": rs.metadata.uid}]
    # the orphan finalizer goes only after every dependent was patched
    last_pod_patch = max(i for i, a in enumerate(cs.actions) if a.verb == "patch" and a.resource == "pods")
    rs_patch = next(i for i, a in enumerate(cs.actions) if a.verb == "patch" and a.resource == "replicasets")
    assert rs_patch > last_pod_patch


async def test_unrelated_objects_are_left_alone(env: tuple[FakeClientset, GarbageCollector]) -> None:
    cs, gc = env
    await make_rs_with_pods(cs)
    await cs.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": NS}})
    await eventually(lambda: _quiet(gc), "the queues to drain")
    assert gc_writes(cs) == []


async def _quiet(gc: GarbageCollector) -> bool:
    return gc.is_synced() and gc.attempt_to_delete.len() == 0 and not gc.attempt_to_delete._processing


# --- pure helpers --------------------------------------------------------------------------------

def ref(uid: str, block: bool | None = None) -> meta_v1.OwnerReference:
    return meta_v1.OwnerReference(api_version="v1", kind="ConfigMap", name=uid, uid=uid, block_owner_deletion=block)


def test_references_diffs() -> None:
    added, removed, changed = references_diffs([ref("a"), ref("b", True)], [ref("b", False), ref("c")])
    assert [r.uid for r in added] == ["c"]
    assert [r.uid for r in removed] == ["a"]
    assert [(o.block_owner_deletion, n.block_owner_deletion) for o, n in changed] == [(True, False)]
    assert references_diffs([ref("a")], [ref("a")]) == ([], [], [])


@pytest.mark.parametrize("old, new, expected", [
    (None, ("t", ["orphan"]), True),                  # added already being deleted
    ((None, []), ("t", ["orphan"]), True),            # the deletion starts now
    ((None, ["orphan"]), ("t", ["orphan"]), True),    # finalizer was set before deletion
    (("t", []), ("t", ["orphan"]), True),             # finalizer added during deletion
    (("t", ["orphan"]), ("t", ["orphan"]), False),    # already seen
    (None, (None, ["orphan"]), False),                # not being deleted
    (None, ("t", ["foregroundDeletion"]), False),     # another finalizer
])
def test_deletion_starts_with_finalizer(old: Any, new: Any, expected: bool) -> None:
    def meta(x: Any) -> Any:
        return None if x is None else meta_v1.ObjectMeta(deletion_timestamp=x[0], finalizers=x[1])
    assert deletion_starts_with_finalizer(meta(old), meta(new), "orphan") is expected


def test_delete_owner_ref_patch_shape() -> None:
    assert generate_delete_owner_ref_strategic_merge_bytes("dep", ["o1", "o2"]) == {"metadata": {
        "uid": "dep", "ownerReferences": [{"$patch": "delete", "uid": "o1"}, {"$patch": "delete", "uid": "o2"}]}}


def test_api_resource_and_monitored_resources() -> None:
    assert api_resource("apps/v1", "ReplicaSet").plural == "replicasets"
    assert api_resource("v1", "Pod").plural == "pods"
    with pytest.raises(RESTMappingError):
        api_resource("example.com/v1", "Widget")
    with pytest.raises(RESTMappingError):
        api_resource("apps/v1beta1", "ReplicaSet")
    plurals = {(r.group, r.plural) for r in monitored_resources()}
    assert {("", "pods"), ("apps", "replicasets"), ("apps", "deployments"), ("", "configmaps"), ("", "secrets"),
            ("", "services"), ("", "serviceaccounts"), ("coordination.k8s.io", "leases")} <= plurals
    assert ("", "events") not in plurals and ("events.k8s.io", "events") not in plurals


def test_reference_cache_is_lru() -> None:
    cache = ReferenceCache(2)
    a, b, c = (ObjectReference("v1", "Pod", n, n) for n in "abc")
    cache.add(a)
    cache.add(b)
    assert cache.has(a)          # touches a: b is now the least recently used
    cache.add(c)
    assert cache.has(a) and cache.has(c) and not cache.has(b)
