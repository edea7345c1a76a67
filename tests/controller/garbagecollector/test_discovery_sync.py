"""What the collector (and the namespace deleter, the quota controller) learn from discovery:
every custom resource in the most preferred version serving it (upstream's
ServerPreferredResources, so a resource only a less preferred version serves is there too),
custom kinds in a built-in group-version, and the re-read woken by CRD events with upstream's
30 s period otherwise (controller/resource_discovery.py)."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.metadata import custom_resources
from kubeplane.controller.garbagecollector import GarbageCollector
from kubeplane.controller.garbagecollector.garbagecollector import SYNC_PERIOD
from kubeplane.controller.resource_discovery import DiscoveryTrigger, served_state
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

from .test_custom_resources import eventually

GROUP = "stable.example.com"


def crd(plural: str, kind: str, versions: tuple[str, ...], group: str = GROUP, storage: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"{plural}.{group}"}
    if group.endswith(".k8s.io"):
        meta["annotations"] = {"api-approved.kubernetes.io": "unapproved, testing only"}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta,
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": v, "served": True, "storage": v == (storage or versions[0]),
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}
                                  for v in versions]}}


async def discovered(cs: FakeClientset) -> dict[str, str]:
    return {f"{ri.plural}.{ri.group}": ri.version for ri in await custom_resources(cs.transport)}


@pytest.fixture
async def cs() -> AsyncIterator[FakeClientset]:
    cs = await FakeClientset.new()
    try:
        yield cs
    finally:
        await cs.close()


async def test_the_built_in_kinds_are_not_custom_resources(cs: FakeClientset) -> None:
    assert await custom_resources(cs.transport) == []


async def test_a_resource_only_a_less_preferred_version_serves_is_discovered(cs: FakeClientset) -> None:
    await cs.seed(crd("widgets", "Widget", ("v2", "v1")), crd("gadgets", "Gadget", ("v1",)))

    async def both() -> Any:
        found = await discovered(cs)
        return found if {"widgets.stable.example.com", "gadgets.stable.example.com"} <= set(found) else None
    found = await eventually(both, "both kinds in discovery")
    group = {g["name"]: g for g in orjson.loads((await cs.transport.request("GET", "/apis")).body)["groups"]}[GROUP]
    preferred = group["preferredVersion"]["version"]
    assert found["widgets.stable.example.com"] == preferred
    assert found["gadgets.stable.example.com"] == "v1"


async def test_a_custom_kind_in_a_built_in_group_version_is_discovered(cs: FakeClientset) -> None:
    await cs.seed(crd("probes", "Probe", ("v1",), group="networking.k8s.io"))

    async def listed() -> Any:
        return (await discovered(cs)).get("probes.networking.k8s.io")
    assert await eventually(listed, "probes in networking.k8s.io/v1") == "v1"
    assert "ingresses.networking.k8s.io" not in await discovered(cs)        # the built-in table's


def test_the_period_is_upstreams() -> None:
    assert SYNC_PERIOD == 30.0


def test_served_state_changes_with_what_discovery_lists() -> None:
    c = crd("widgets", "Widget", ("v1",))
    c["status"] = {"acceptedNames": {"plural": "widgets", "kind": "Widget"},
                   "conditions": [{"type": "NamesAccepted", "status": "True"}]}
    before = served_state(c)
    c["status"]["conditions"].append({"type": "Established", "status": "True"})
    assert served_state(c) != before and served_state(c)[0]
    established = served_state(c)
    c["spec"]["versions"][0]["served"] = False
    assert served_state(c) != established
    c["metadata"]["labels"] = {"a": "b"}
    assert served_state(c) == served_state(c)


async def test_the_collector_follows_crds_without_waiting_for_the_period() -> None:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    gc = GarbageCollector(cs, factory, clock=clock, workers=1)
    task = asyncio.create_task(gc.run())
    monitors = gc.dependency_graph_builder.runtime_monitors
    try:
        await factory.wait_for_cache_sync()
        await cs.seed(crd("widgets", "Widget", ("v1",)))
        await eventually(lambda: _v(("stable.example.com", "v1", "widgets") in monitors), "widgets monitored")
        assert gc.api_resource("stable.example.com/v1", "Widget").plural == "widgets"

        await cs.apiextensions_v1().customresourcedefinitions().delete("widgets.stable.example.com")
        await eventually(lambda: _v(not monitors), "widgets no longer monitored")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.shutdown()
        await cs.close()


async def test_the_trigger_waits_for_the_period_without_crd_events() -> None:
    clock = FakeClock()
    trigger = DiscoveryTrigger(None, clock, period=30.0)
    waiting = asyncio.create_task(trigger.wait())
    while not clock.has_waiters():
        await asyncio.sleep(0)
    clock.step(29.0)
    await asyncio.sleep(0)
    assert not waiting.done()
    clock.step(1.0)
    await asyncio.wait_for(waiting, 1.0)
    waiting = asyncio.create_task(trigger.wait())
    trigger.on_delete(crd("widgets", "Widget", ("v1",)))
    await asyncio.wait_for(waiting, 1.0)
    assert trigger.deleted == {(GROUP, "widgets")}


async def _v(value: Any) -> Any:
    return value


async def test_a_custom_kind_in_a_built_in_group_version_is_collected_with_its_owner() -> None:
    from kubeplane.client.metadata import MetadataClient

    from .test_custom_resources import deployment, gone, ref
    cs = await FakeClientset.new()
    factory = SharedInformerFactory(cs)
    gc = GarbageCollector(cs, factory, workers=2)
    task = asyncio.create_task(gc.run())
    try:
        await factory.wait_for_cache_sync()
        await cs.seed(crd("probes", "Probe", ("v1",), group="networking.k8s.io"))
        monitors = gc.dependency_graph_builder.runtime_monitors
        await eventually(lambda: _v(("networking.k8s.io", "v1", "probes") in monitors), "probes monitored")
        ri = gc.rest_mapper[("networking.k8s.io", "Probe")]
        (d,) = await cs.seed(deployment("web"))
        probes = MetadataClient(cs.transport, ri, "default")
        await probes.create({"apiVersion": "networking.k8s.io/v1", "kind": "Probe", "metadata": {
            "name": "p1", "namespace": "default", "ownerReferences": [ref("apps/v1", "Deployment", d)]}})
        await cs.apps_v1().deployments("default").delete("web", propagation_policy="Background")
        await eventually(lambda: gone(probes, "p1"), "the probe collected")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.shutdown()
        await cs.close()
