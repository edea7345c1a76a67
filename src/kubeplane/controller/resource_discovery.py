"""When controllers that walk every resource re-read discovery: every period (upstream's 30 s),
and at once when a CustomResourceDefinition changes what is served.

Upstream's garbage collector and resource quota controller re-read discovery on a timer only
(kube-controller-manager: `garbageCollector.Sync(..., 30*time.Second)`,
`resourceQuotaController.Sync(..., 30*time.Second)`), so a new CRD's objects wait up to half a
minute to be collected or counted. Here a CRD that becomes Established, changes its served
versions or names, or is deleted wakes the re-read at once (an operator's tests need not wait);
the period stays upstream's, for what no CRD event announces (an aggregated API's resources).

A CRD's delete event can arrive before the API server has stopped serving its kinds (both
follow the same write): the resources of a deleted CRD are left out of what discovery gives
until a CRD of that name is seen again.

    trigger = DiscoveryTrigger(factory, clock)
    while True:
        found = trigger.without_deleted(await custom_resources(transport))
        ...
        await trigger.wait()
"""
from __future__ import annotations

import asyncio
from typing import Any, Protocol

from ..api import types
from ..api.resources import ResourceInfo, lookup
from ..client.informers import ResourceInformer
from ..client.tools.cache.listers import GenericLister
from ..client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ..utils.clock import REAL_CLOCK, Clock

# Upstream: the period kube-controller-manager passes to GarbageCollector.Sync and
# ResourceQuotaController.Sync (cmd/kube-controller-manager/app/core.go).
DISCOVERY_SYNC_PERIOD = 30.0

CRDS = ("apiextensions.k8s.io", "v1", "customresourcedefinitions")


def served_state(crd: Any) -> tuple[Any, ...]:
    """What of a CRD decides the resources discovery lists: Established, the group and
    accepted names, the served versions."""
    obj = crd if isinstance(crd, dict) else types.to_dict(crd)
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    established = any(c.get("type") == "Established" and c.get("status") == "True"
                      for c in status.get("conditions") or [])
    names = status.get("acceptedNames") or {}
    versions = tuple((v.get("name"), bool(v.get("served"))) for v in spec.get("versions") or [])
    return established, spec.get("group"), names.get("plural"), names.get("kind"), versions


def _group_plural(crd: Any) -> tuple[str, str]:
    obj = crd if isinstance(crd, dict) else types.to_dict(crd)
    spec = obj.get("spec") or {}
    plural = (spec.get("names") or {}).get("plural") or ""
    return str(spec.get("group") or ""), str(plural)


class InformerSource(Protocol):
    def informer_for(self, group: str, version: str, plural: str) -> ResourceInformer[GenericLister[Any]]:
        """The shared informer of a served resource."""
        ...


class DiscoveryTrigger:
    """Wakes a discovery re-read on CRD changes, or after `period` seconds."""

    def __init__(self, factory: InformerSource | None, clock: Clock = REAL_CLOCK,
                 period: float = DISCOVERY_SYNC_PERIOD) -> None:
        self.clock, self.period = clock, period
        self.wanted = asyncio.Event()
        self.deleted: set[tuple[str, str]] = set()      # (group, plural) of CRDs seen deleted
        if factory is not None and lookup(*CRDS) is not None:
            factory.informer_for(*CRDS).informer().add_event_handler(ResourceEventHandlerFuncs(
                add_func=self.on_add, update_func=self.on_update, delete_func=self.on_delete))

    def on_add(self, crd: Any) -> None:
        self.deleted.discard(_group_plural(crd))
        if served_state(crd)[0]:
            self.wanted.set()

    def on_update(self, old: Any, new: Any) -> None:
        if served_state(old) != served_state(new):
            self.wanted.set()

    def on_delete(self, crd: Any) -> None:
        if isinstance(crd, DeletedFinalStateUnknown):
            crd = crd.obj
        self.deleted.add(_group_plural(crd))
        self.wanted.set()

    def without_deleted(self, found: list[ResourceInfo]) -> list[ResourceInfo]:
        return [ri for ri in found if (ri.group, ri.plural) not in self.deleted]

    async def wait(self) -> None:
        """Until a CRD changed what is served, or the period passed."""
        wake = asyncio.ensure_future(self.wanted.wait())
        sleep = asyncio.ensure_future(self.clock.sleep(self.period))
        try:
            await asyncio.wait((wake, sleep), return_when=asyncio.FIRST_COMPLETED)
        finally:
            wake.cancel()
            sleep.cancel()
        self.wanted.clear()
