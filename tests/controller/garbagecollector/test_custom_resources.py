"""The garbage collector and custom resources: kinds learnt from discovery (GarbageCollector.sync),
cascading both ways between a Deployment and custom objects in every propagation mode.

Custom objects take no strategic merge patch (415): removing an ownerReference from one goes
by the JSON merge patch fallback, pinned to the resourceVersion read (upstream's patch.go).
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.api.resources import ResourceInfo
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.metadata import MetadataClient, custom_resources
from kubeplane.controller.garbagecollector import GarbageCollector
from kubeplane.testing.fake import FakeClientset

NS = "default"
GROUP = "stable.example.com"


async def eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def crd(plural: str = "widgets", kind: str = "Widget", scope: str = "Namespaced") -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {
                                       "type": "object",
                                       "properties": {"spec": {"type": "object",
                                                               "x-kubernetes-preserve-unknown-fields": True}}}}}]}}


async def served(cs: FakeClientset, plural: str) -> ResourceInfo | None:
    return next((ri for ri in await custom_resources(cs.transport) if ri.plural == plural), None)


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClientset, GarbageCollector, MetadataClient]]:
    cs = await FakeClientset.new()
    await cs.seed(crd())
    ri = await eventually(lambda: served(cs, "widgets"), "the CRD's kind to be served")
    factory = SharedInformerFactory(cs)
    gc = GarbageCollector(cs, factory, workers=4, sync_period=0.05)
    task = asyncio.create_task(gc.run())
    await factory.wait_for_cache_sync()
    await eventually(lambda: _async(gc.is_synced() and bool(gc.dependency_graph_builder.runtime_monitors)),
                     "the collector to monitor widgets")
    try:
        yield cs, gc, MetadataClient(cs.transport, ri, NS)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.shutdown()
        await cs.close()


async def _async(v: Any) -> Any:
    return v


def deployment(name: str, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    labels = {"app": name}
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def widget(name: str, owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": meta, "spec": {"size": 1}}


def ref(api_version: str, kind: str, obj: Any, block: bool = True) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": obj.metadata.name, "uid": obj.metadata.uid,
            "controller": True, "blockOwnerDeletion": block}


async def gone(client: Any, name: str) -> bool:
    try:
        await client.get(name)
    except errors.NotFound:
        return True
    return False


# --- custom objects owned by a Deployment --------------------------------------------------------

async def test_background_collects_custom_objects_of_a_deleted_deployment(env: Any) -> None:
    cs, _, widgets = env
    (d,) = await cs.seed(deployment("web"))
    await cs.seed(widget("w1", [ref("apps/v1", "Deployment", d)]), widget("w2", [ref("apps/v1", "Deployment", d)]))
    await cs.apps_v1().deployments(NS).delete("web", propagation_policy="Background")
    await eventually(lambda: gone(widgets, "w1"), "w1 to be collected")
    await eventually(lambda: gone(widgets, "w2"), "w2 to be collected")
    deletes = [a for a in cs.actions if a.verb == "delete" and a.resource == "widgets"]
    assert sorted(a.name for a in deletes) == ["w1", "w2"]
    assert all(a.body["preconditions"]["uid"] for a in deletes)


async def test_foreground_deployment_waits_for_its_custom_objects(env: Any) -> None:
    cs, _, widgets = env
    (d,) = await cs.seed(deployment("web"))
    await cs.seed(widget("w1", [ref("apps/v1", "Deployment", d)]))
    await cs.apps_v1().deployments(NS).delete("web", propagation_policy="Foreground")
    await eventually(lambda: gone(widgets, "w1"), "the blocking widget to be deleted")
    await eventually(lambda: gone(cs.apps_v1().deployments(NS), "web"), "the deployment to go once w1 is gone")
    # the owner's foregroundDeletion finalizer was removed by the collector
    assert [a for a in cs.actions if a.verb == "patch" and a.resource == "deployments"]


async def test_orphan_keeps_custom_objects_and_removes_the_reference_by_merge_patch(env: Any) -> None:
    cs, _, widgets = env
    (d,) = await cs.seed(deployment("web"))
    (other,) = await cs.seed(deployment("other"))
    owners = [ref("apps/v1", "Deployment", d), ref("apps/v1", "Deployment", other, block=False) | {"controller": False}]
    await cs.seed(widget("w1", owners))
    await cs.apps_v1().deployments(NS).delete("web", propagation_policy="Orphan")
    await eventually(lambda: gone(cs.apps_v1().deployments(NS), "web"), "the deployment to be deleted")
    w1 = await widgets.get("w1")
    assert [r.uid for r in w1.metadata.owner_references] == [other.metadata.uid]
    patches = [a for a in cs.actions if a.verb == "patch" and a.resource == "widgets"]
    # a strategic merge patch first (answered 415), then the JSON merge patch
    assert patches[-1].body["metadata"]["ownerReferences"][0]["uid"] == other.metadata.uid
    assert patches[-1].body["metadata"]["resourceVersion"]


# --- a Deployment owned by a custom object -------------------------------------------------------

async def test_background_collects_a_deployment_owned_by_a_deleted_custom_object(env: Any) -> None:
    cs, _, widgets = env
    (w,) = await cs.seed(widget("owner"))
    await cs.seed(deployment("web", [ref(f"{GROUP}/v1", "Widget", w)]))
    await widgets.delete("owner", propagation_policy="Background")
    await eventually(lambda: gone(cs.apps_v1().deployments(NS), "web"), "the deployment to be collected")


async def test_foreground_custom_object_waits_for_its_deployment(env: Any) -> None:
    cs, _, widgets = env
    (w,) = await cs.seed(widget("owner"))
    await cs.seed(deployment("web", [ref(f"{GROUP}/v1", "Widget", w)]))
    await widgets.delete("owner", propagation_policy="Foreground")
    await eventually(lambda: gone(cs.apps_v1().deployments(NS), "web"), "the deployment to be deleted first")
    await eventually(lambda: gone(widgets, "owner"), "the widget to go once its finalizer is removed")
    finalizer_patches = [a for a in cs.actions if a.verb == "patch" and a.resource == "widgets"]
    assert finalizer_patches and "finalizers" in finalizer_patches[-1].body["metadata"]


async def test_orphan_custom_object_leaves_its_deployment(env: Any) -> None:
    cs, _, widgets = env
    (w,) = await cs.seed(widget("owner"))
    await cs.seed(deployment("web", [ref(f"{GROUP}/v1", "Widget", w)]))
    await widgets.delete("owner", propagation_policy="Orphan")
    await eventually(lambda: gone(widgets, "owner"), "the widget to be deleted")
    d = await cs.apps_v1().deployments(NS).get("web")
    assert not d.metadata.owner_references


async def test_dependent_of_a_custom_owner_that_never_existed_is_collected(env: Any) -> None:
    cs, _, _ = env
    ghost = {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "name": "ghost",
             "uid": "00000000-0000-0000-0000-000000000001", "controller": True, "blockOwnerDeletion": True}
    await cs.seed(deployment("web", [ghost]))
    await eventually(lambda: gone(cs.apps_v1().deployments(NS), "web"), "the orphaned deployment to be collected")


# --- discovery ------------------------------------------------------------------------------------

async def test_a_kind_created_later_is_monitored_and_a_deleted_one_dropped(env: Any) -> None:
    cs, gc, _ = env
    monitors = gc.dependency_graph_builder.runtime_monitors
    assert set(monitors) == {(GROUP, "v1", "widgets")}
    await cs.seed(crd("gadgets", "Gadget", scope="Cluster"))
    await eventually(lambda: _async((GROUP, "v1", "gadgets") in monitors), "gadgets to be monitored")
    assert gc.api_resource(f"{GROUP}/v1", "Gadget").namespaced is False
    await cs.apiextensions_v1().customresourcedefinitions().delete(f"gadgets.{GROUP}")
    await eventually(lambda: _async((GROUP, "v1", "gadgets") not in monitors), "gadgets to be dropped")
