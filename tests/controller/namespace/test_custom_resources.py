"""The namespace controller deletes custom objects too: their kinds are read from discovery on
every sync (upstream's deleter calls discovery each time), so a CRD created just before the
namespace is deleted is covered."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubeplane.api import errors
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.metadata import MetadataClient, custom_resources
from kubeplane.controller.namespace import NamespaceController
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

from .test_namespace_controller import eventually

NS = "team-a"
GROUP = "stable.example.com"
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": f"widgets.{GROUP}"},
       "spec": {"group": GROUP, "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object",
                                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClientset, NamespaceController, FakeClock]]:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    nc = NamespaceController(cs, factory.core_v1().namespaces(), clock=clock, workers=2)
    factory.start()
    task = asyncio.create_task(nc.run())
    await factory.wait_for_cache_sync()
    try:
        yield cs, nc, clock
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await factory.shutdown()
        await cs.close()


async def widgets_client(cs: FakeClientset) -> MetadataClient | None:
    ri = next((r for r in await custom_resources(cs.transport) if r.plural == "widgets"), None)
    return MetadataClient(cs.transport, ri, NS) if ri else None


async def test_deleting_a_namespace_deletes_its_custom_objects(
        env: tuple[FakeClientset, NamespaceController, FakeClock]) -> None:
    cs, nc, clock = env
    await cs.seed(CRD)
    widgets = await eventually(lambda: widgets_client(cs), "the CRD's kind to be served")
    await cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
                  {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": NS}},
                  {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "w2", "namespace": NS}},
                  {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": {"name": "kept", "namespace": "default"}})
    assert len((await widgets.list()).items) == 2
    await cs.core_v1().namespaces().delete(NS)

    async def queued() -> bool:
        return nc.queue._num_waiting() > 0
    await eventually(queued, "the namespace to be queued after the grace period")
    clock.step(5.0)

    async def empty() -> bool:
        return not (await widgets.list()).items
    await eventually(empty, "the namespace's widgets to be deleted")

    async def ns_gone() -> bool:
        if nc.queue._num_waiting():       # the conditions written re-queue it after the grace period
            clock.step(5.0)
        try:
            await cs.core_v1().namespaces().get(NS)
        except errors.NotFound:
            return True
        return False
    await eventually(ns_gone, "the namespace to be finalized")
    assert any(a.verb == "deletecollection" and a.resource == "widgets" and a.namespace == NS for a in cs.actions)
    kept = MetadataClient(cs.transport, widgets.ri, "default")
    assert (await kept.get("kept")).metadata.name == "kept"        # other namespaces untouched
