"""Object-count quotas on custom resources (`count/widgets.stable.example.com`), as upstream's
generic evaluators: the admission plugin charges each create and refuses one over the quota
with upstream's message; the controller learns the resource from discovery (at once, from the
CRD's events), counts it, and gives usage back when an object is deleted (its metadata
informer's delete event), without waiting for the full recalculation."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.metadata import MetadataClient, custom_resources
from kubeplane.controller.resourcequota import ResourceQuotaController
from kubeplane.controller.resourcequota.resource_quota_monitor import quotable
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock


NS = "default"
GROUP = "stable.example.com"
COUNT = f"count/widgets.{GROUP}"


def crd(plural: str, kind: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "x-kubernetes-preserve-unknown-fields": True}}}]}}


async def eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def widget(name: str) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": name, "namespace": NS}}


QUOTA = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "objects", "namespace": NS},
         "spec": {"hard": {COUNT: "2", "count/gadgets.stable.example.com": "5"}}}


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClientset, ResourceQuotaController]]:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    rqc = ResourceQuotaController(factory.core_v1().resourcequotas(), factory, cs, clock=clock)
    factory.start()
    task = asyncio.create_task(rqc.run())
    try:
        yield cs, rqc
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.shutdown()
        await cs.close()


async def used(cs: FakeClientset) -> dict[str, str]:
    rq = await cs.core_v1().resourcequotas(NS).get("objects")
    return dict((rq.status.used if rq.status else None) or {})


async def test_custom_objects_are_counted_charged_and_given_back(env: Any) -> None:
    cs, rqc = env
    await cs.seed(crd("widgets", "Widget"))
    await eventually(lambda: _v(("stable.example.com", "widgets") in rqc.monitor.runtime), "widgets monitored")
    ri = rqc.custom[(GROUP, "widgets")]
    await MetadataClient(cs.transport, ri, NS).create(widget("before"))

    await cs.seed(QUOTA)

    async def used_is(want: dict[str, str]) -> bool:
        return await used(cs) == want
    # the gadgets' CRD does not exist: counted as 0, as upstream counts a resource it cannot list
    await eventually(lambda: used_is({COUNT: "1", "count/gadgets.stable.example.com": "0"}), "the first count")

    widgets = MetadataClient(cs.transport, ri, NS)
    await widgets.create(widget("w1"))              # admission charges it
    assert (await used(cs))[COUNT] == "2"
    with pytest.raises(errors.Forbidden) as e:
        await widgets.create(widget("w2"))
    assert e.value.message == ('widgets.stable.example.com "w2" is forbidden: exceeded quota: objects, requested: '
                               f"{COUNT}=1, used: {COUNT}=2, limited: {COUNT}=2")

    await widgets.delete("before")                  # the monitor's delete event: usage given back
    await eventually(lambda: used_is({COUNT: "1", "count/gadgets.stable.example.com": "0"}), "usage given back")
    await widgets.create(widget("w2"))


async def test_quotable_custom_resources_are_namespaced_with_the_four_verbs(env: Any) -> None:
    cs, _ = env
    cluster = crd("clusterthings", "ClusterThing")
    cluster["spec"]["scope"] = "Cluster"
    await cs.seed(crd("widgets", "Widget"), cluster)

    async def both() -> Any:
        found = {ri.plural: ri for ri in await custom_resources(cs.transport)}
        return found if {"widgets", "clusterthings"} <= set(found) else None
    found = await eventually(both, "both kinds served")
    assert quotable(found["widgets"]) and not quotable(found["clusterthings"])


async def _v(value: Any) -> Any:
    return value
