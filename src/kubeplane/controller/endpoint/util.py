"""What the Endpoints and EndpointSlice controllers share: which Services a pod belongs to and
which pod changes matter to them.

Upstream: pkg/controller/util/endpoint/controller_utils.go
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ...api import labels
from ...api.types import ObjectName, core_v1
from ...client.tools.cache import object_from_tombstone
from ...client.tools.cache.store import NAMESPACE_INDEX
from .. import controller_utils as cu

if TYPE_CHECKING:
    from ...client.listers import ServiceLister

log = logging.getLogger(__name__)


def service_selector(service: core_v1.Service) -> labels.Selector | None:
    """spec.selector as a label selector; None for a Service without one (no managed endpoints).
    Upstream: labels.Set(service.Spec.Selector).AsSelectorPreValidated()"""
    sel = service.spec.selector if service.spec else None
    if sel is None:
        return None
    return tuple(labels.Requirement(k, "=", (v,)) for k, v in sorted(sel.items()))


def namespace_has_services(service_lister: ServiceLister, namespace: str) -> bool:
    """Whether the namespace holds any Service (one dict lookup in the lister's namespace index).
    Without one, no pod of it is a member of anything and its events concern no Service: a
    rolling update's 7,000 pod events reach both controllers' handlers, mostly in namespaces
    like that. Upstream lists the namespace's Services for every event (GetPodServiceMemberships);
    the answer is the same empty set."""
    return service_lister.indexer.has_index_value(NAMESPACE_INDEX, namespace)


def get_pod_service_memberships(service_lister: ServiceLister, pod: core_v1.Pod) -> set[ObjectName]:
    """The keys of the Services in the pod's namespace whose selector matches it.
    Upstream: GetPodServiceMemberships"""
    out: set[ObjectName] = set()
    if not namespace_has_services(service_lister, pod.metadata.namespace or ""):
        return out
    pod_labels = pod.metadata.labels or {}
    for svc in service_lister.services(pod.metadata.namespace or "").list():
        sel = svc.spec.selector if svc.spec else None
        if sel is None:
            continue             # a nil selector selects nothing (an empty one everything)
        if all(pod_labels.get(k) == v for k, v in sel.items()):
            out.add(ObjectName(svc.metadata.namespace or "", svc.metadata.name or ""))
    return out


def _hostname_and_domain_equal(a: core_v1.Pod, b: core_v1.Pod) -> bool:
    sa, sb = a.spec or core_v1.PodSpec(), b.spec or core_v1.PodSpec()
    return sa.hostname == sb.hostname and sa.subdomain == sb.subdomain


def _ips(pod: core_v1.Pod) -> list[str]:
    return [p.ip or "" for p in (pod.status.pod_ips or [])] if pod.status else []


def pod_endpoints_changed(old: core_v1.Pod, new: core_v1.Pod) -> tuple[bool, bool]:
    """(the endpoint changed: deletion, readiness or IPs; the membership may have: labels,
    hostname or subdomain). Upstream: podEndpointsChanged"""
    labels_changed = old.metadata.labels != new.metadata.labels or not _hostname_and_domain_equal(old, new)
    if old.metadata.deletion_timestamp != new.metadata.deletion_timestamp:
        return True, labels_changed
    if cu.is_pod_ready(old) != cu.is_pod_ready(new):
        return True, labels_changed
    if _ips(old) != _ips(new):
        return True, labels_changed
    # Phase matters too here: a terminal pod leaves the endpoints (upstream sees it through
    # readiness, which a terminal pod loses).
    if (old.status.phase if old.status else None) != (new.status.phase if new.status else None):
        return True, labels_changed
    return False, labels_changed


def get_services_to_update_on_pod_change(service_lister: ServiceLister, old: core_v1.Pod,
                                         cur: core_v1.Pod) -> set[ObjectName]:
    """The Services a pod update concerns: none on a resync or an irrelevant change; when the
    labels changed, the old and new memberships (only their difference if the endpoint itself
    did not change). Upstream: GetServicesToUpdateOnPodChange"""
    if old.metadata.resource_version == cur.metadata.resource_version:
        return set()
    # A pod's namespace never changes: without Services in it, both memberships are empty.
    if not namespace_has_services(service_lister, cur.metadata.namespace or ""):
        return set()
    pod_changed, labels_changed = pod_endpoints_changed(old, cur)
    if not pod_changed and not labels_changed:
        return set()
    services = get_pod_service_memberships(service_lister, cur)
    if labels_changed:
        old_services = get_pod_service_memberships(service_lister, old)
        services = services | old_services if pod_changed else services ^ old_services
    return services


class PodHandlers:
    """The pod event handlers both controllers have: queue the Services a pod's change
    concerns, after the batch period when there is one. Upstream: addPod, updatePod and
    deletePod (endpoints_controller.go, endpointslice_controller.go)."""
    queue: Any
    service_lister: ServiceLister
    endpoint_updates_batch_period: float

    def _queue_services(self, keys: set[ObjectName]) -> None:
        for key in keys:
            if self.endpoint_updates_batch_period:
                self.queue.add_after(key, self.endpoint_updates_batch_period)
            else:
                self.queue.add(key)

    def add_pod(self, pod: core_v1.Pod) -> None:
        """Upstream: addPod"""
        self._queue_services(get_pod_service_memberships(self.service_lister, pod))

    def update_pod(self, old: core_v1.Pod, cur: core_v1.Pod) -> None:
        """Upstream: updatePod"""
        # get_services_to_update_on_pod_change's answer for a namespace without Services
        # (the empty set), asked before the call: most pod updates stop here.
        if not self.service_lister.indexer.has_index_value(NAMESPACE_INDEX, cur.metadata.namespace or ""):
            return
        self._queue_services(get_services_to_update_on_pod_change(self.service_lister, old, cur))

    def delete_pod(self, obj: Any) -> None:
        """Upstream: deletePod"""
        pod = object_from_tombstone(obj, core_v1.Pod)
        if pod is not None:
            self.add_pod(pod)


class LogRecorder:
    """Events the controllers record when none is given: logged at debug."""
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event %s %s: %s", type_, reason, message)
