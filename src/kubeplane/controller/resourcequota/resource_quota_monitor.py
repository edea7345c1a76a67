"""Watches the resources whose objects give quota usage back, and says when one did.

A deleted object always does; an update does when it stops being charged: a pod turning
terminal (or running out of its deletion grace period), a service no longer NodePort or
LoadBalancer, a PVC whose allocated storage changed. Upstream watches every quotable resource
(for `count/<resource>`); here the core kinds with usage beyond a count, the legacy count
aliases, and every custom resource discovery lists (`count/widgets.example.com`: a metadata
informer each, kept in step with discovery by `sync_monitors`) are watched; other built-in
`count/` resources are corrected by the periodic full recalculation. The watched resources'
caches also serve the usage calculation.

Upstream: QuotaMonitor and SyncMonitors (pkg/controller/resourcequota/resource_quota_monitor.go),
GetQuotableResources (resource_quota_controller.go) and DefaultUpdateFilter
(pkg/quota/v1/install/update_filter.go).
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from ...api import types
from ...api.resources import ResourceInfo, lookup
from ...client.informers import ResourceInformer
from ...client.metadata import MetadataClient
from ...client.tools.cache import SharedIndexInformer
from ...client.transport import Transport
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ...client.tools.cache.listers import GenericLister
from ...quota.evaluator.core.persistent_volume_claims import requires_quota_replenish
from ...quota.evaluator.core.pods import quota_v1_pod
from ...quota.evaluator.core.services import quota_service_type
from ...quota.generic import Obj
from ...utils.clock import REAL_CLOCK, Clock

MONITORED = (("", "v1", "pods"), ("", "v1", "services"), ("", "v1", "persistentvolumeclaims"),
             ("", "v1", "replicationcontrollers"), ("", "v1", "configmaps"), ("", "v1", "secrets"))

Replenish = Callable[[str, str, str], None]       # (group, resource, namespace)


class InformerSource(Protocol):
    def informer_for(self, group: str, version: str, plural: str) -> ResourceInformer[GenericLister[Any]]:
        """The shared informer of a served resource."""
        ...


def update_gives_back(resource: str, old: Any, new: Any, now: float | Callable[[], float]) -> bool:
    """Upstream: DefaultUpdateFilter. Pods are compared on the few fields that decide whether
    they are charged before converting anything (pod status updates are the hot path); `now`
    may be the clock's now function, then it is only read for a pod that changed them."""
    if resource == "pods":
        if not pod_charge_fields_changed(old, new):
            return False
        t = now() if callable(now) else now
        return quota_v1_pod(_charge_fields(old), t) and not quota_v1_pod(_charge_fields(new), t)
    if resource == "services":
        return quota_service_type(types.to_dict(old)) != quota_service_type(types.to_dict(new))
    if resource == "persistentvolumeclaims":
        return requires_quota_replenish(types.to_dict(new), types.to_dict(old))
    return False


def pod_charge_fields_changed(old: Any, new: Any) -> bool:
    """Whether a pod update changed anything quota_v1_pod reads (phase, deletionTimestamp,
    deletionGracePeriodSeconds); if not, it cannot have stopped being charged."""
    om, nm = old.metadata, new.metadata
    return ((old.status.phase if old.status else None) != (new.status.phase if new.status else None)
            or om.deletion_timestamp != nm.deletion_timestamp
            or om.deletion_grace_period_seconds != nm.deletion_grace_period_seconds)


def _charge_fields(pod: Any) -> Obj:
    """The fields of a typed pod quota_v1_pod reads, as a dict (to_dict of the whole pod cost
    ~5 us, and every phase change asks twice)."""
    meta = pod.metadata
    return {"status": {"phase": pod.status.phase if pod.status else None},
            "metadata": {"deletionTimestamp": meta.deletion_timestamp,
                         "deletionGracePeriodSeconds": meta.deletion_grace_period_seconds}}


def quotable(ri: ResourceInfo) -> bool:
    """Upstream: GetQuotableResources — namespaced, and supports create, list, watch and delete."""
    return ri.namespaced and {"create", "list", "watch", "delete"} <= set(ri.verbs)


class QuotaMonitor:
    def __init__(self, factory: InformerSource, replenish: Replenish, *, clock: Clock = REAL_CLOCK,
                 transport: Transport | None = None, has_quotas: Callable[[str], bool] | None = None) -> None:
        self.clock = clock
        self.replenish = replenish
        # has_quotas(namespace): whether replenish could queue anything there (a namespace without
        # ResourceQuotas has nothing to replenish). Every pod event of the cluster reaches the
        # handlers; in namespaces without a quota they stop at this one lookup.
        self.has_quotas = has_quotas
        self.transport = transport          # what the custom resources' monitors list and watch through
        self.informers: dict[tuple[str, str], ResourceInformer[GenericLister[Any]]] = {}
        # custom resources learnt from discovery: (group, plural) -> (informer, its task)
        self.runtime: dict[tuple[str, str], tuple[ResourceInformer[GenericLister[Any]], asyncio.Future[None]]] = {}
        for group, version, plural in MONITORED:
            if lookup(group, version, plural) is None:
                continue                              # not served: nothing to watch
            inf = factory.informer_for(group, version, plural)
            inf.informer().add_event_handler(self._handlers(group, plural))
            self.informers[(group, plural)] = inf

    def _handlers(self, group: str, resource: str) -> ResourceEventHandlerFuncs:
        has_quotas = self.has_quotas

        def on_update(old: Any, new: Any) -> None:
            ns = new.metadata.namespace or ""
            if has_quotas is not None and not has_quotas(ns):
                return
            if update_gives_back(resource, old, new, self.clock.now):
                self.replenish(group, resource, ns)

        def on_delete(obj: Any) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                obj = obj.obj
            ns = obj.metadata.namespace or ""
            if has_quotas is not None and not has_quotas(ns):
                return
            self.replenish(group, resource, ns)

        return ResourceEventHandlerFuncs(update_func=on_update, delete_func=on_delete)

    def sync_monitors(self, resources: list[ResourceInfo]) -> bool:
        """Watch exactly these custom resources (the quotable ones) beside the built-in monitors:
        a metadata informer started for each new one, stopped for each one gone; whether
        anything changed. Upstream: QuotaMonitor.SyncMonitors / StartMonitors."""
        wanted = {(ri.group, ri.plural): ri for ri in resources
                  if quotable(ri) and (ri.group, ri.plural) not in self.informers}
        changed = False
        for key in [k for k in self.runtime if k not in wanted or self.runtime[k][0].ri.version != wanted[k].version]:
            self.runtime.pop(key)[1].cancel()
            changed = True
        for key, ri in wanted.items():
            if key in self.runtime:
                continue
            assert self.transport is not None, "custom resources' monitors need the controller's transport"
            shared = SharedIndexInformer(MetadataClient(self.transport, ri), name=f"{ri.plural}.{ri.group}",
                                         clock=self.clock)
            shared.add_event_handler(self._handlers(ri.group, ri.plural))
            self.runtime[key] = (ResourceInformer(ri, shared, GenericLister), asyncio.ensure_future(shared.run()))
            changed = True
        return changed

    async def stop_runtime_monitors(self) -> None:
        tasks = [task for _, task in self.runtime.values()]
        self.runtime.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def list(self, group: str, resource: str, namespace: str) -> list[Obj] | None:
        """The cached objects of a watched resource in a namespace (None if not watched, or a
        custom resource's informer has not listed yet)."""
        inf = self.informers.get((group, resource))
        if inf is None:
            inf = self.runtime[(group, resource)][0] if (group, resource) in self.runtime else None
            if inf is None or not inf.informer().has_synced():
                return None
        return [types.to_dict(o) for o in inf.lister().namespace(namespace).list()]

    async def wait_synced(self) -> None:
        await asyncio.gather(*(inf.informer().wait_synced() for inf in self.informers.values()))
