"""The Endpoints controller: the v1 Endpoints object of every Service with a selector, its
pods' addresses split into ready and not-ready, at most 1000 of them.

Upstream: pkg/controller/endpoint/endpoints_controller.go, with RepackSubsets from
pkg/api/v1/endpoints/util.go.
"""
from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.types import ObjectName, core_v1, meta_v1
from ...client.tools.cache import ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item, retry_or_drop, run_workers
from ...utils.clock import REAL_CLOCK, Clock
from .. import controller_utils as cu
from ..endpointslice import utils as su
from . import util as eu
from .trigger_time_tracker import TriggerTimeTracker

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import EndpointsLister, PodLister, ServiceLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

MAX_RETRIES = 15                # upstream: maxRetries
MAX_CAPACITY = 1000             # upstream: maxCapacity, the addresses one Endpoints holds
# Upstream: v1.EndpointsOverCapacity and its one value, `truncated`.
ENDPOINTS_OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
TRUNCATED = "truncated"
# Upstream: resourcelock.LeaderElectionRecordAnnotationKey — old leader-election Endpoints have
# no Service and must survive the leftover sweep.
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"
CONTROLLER_NAME = "endpoints-controller"


class StaleEndpointsTracker:
    """The resourceVersions this controller has replaced, so a lister still returning one is
    known to be behind. Upstream: staleEndpointsTracker"""

    def __init__(self) -> None:
        self._versions: dict[ObjectName, str] = {}

    def stale(self, ep: core_v1.Endpoints) -> None:
        self._versions[ObjectName(ep.metadata.namespace or "", ep.metadata.name or "")] = \
            ep.metadata.resource_version or ""

    def is_stale(self, ep: core_v1.Endpoints) -> bool:
        rv = self._versions.get(ObjectName(ep.metadata.namespace or "", ep.metadata.name or ""))
        return rv is not None and rv == ep.metadata.resource_version

    def delete(self, namespace: str, name: str) -> None:
        self._versions.pop(ObjectName(namespace, name), None)


class EndpointsController(eu.PodHandlers):
    """Upstream: endpoint.Controller"""

    def __init__(self, pod_informer: ResourceInformer[PodLister], service_informer: ResourceInformer[ServiceLister],
                 endpoints_informer: ResourceInformer[EndpointsLister], client: Clientset, *,
                 endpoint_updates_batch_period: float = 0.0, clock: Clock = REAL_CLOCK,
                 recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder if recorder is not None else eu.LogRecorder()
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="endpoint", clock=clock))
        self.endpoint_updates_batch_period = endpoint_updates_batch_period
        self.pod_lister = pod_informer.lister()
        self.service_lister = service_informer.lister()
        self.endpoints_lister = endpoints_informer.lister()
        self._informers = [i.informer() for i in (pod_informer, service_informer, endpoints_informer)]
        service_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.on_service_update, lambda old, cur: self.on_service_update(cur), self.on_service_delete))
        pod_informer.informer().add_event_handler(ResourceEventHandlerFuncs(self.add_pod, self.update_pod,
                                                                            self.delete_pod))
        endpoints_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            None, None, self.on_endpoints_delete))
        self.trigger_time_tracker = TriggerTimeTracker()
        self.stale_endpoints_tracker = StaleEndpointsTracker()
        self.sync_handler = self.sync_service           # test seam
        self._swept = False                             # the leftover sweep has run

    async def run(self, workers: int = 5) -> None:
        """Upstream: Run (--concurrent-endpoint-syncs, 5); the leftover sweep once synced."""
        log.info("Starting endpoint controller")

        async def worker() -> None:
            if not self._swept:                 # the first worker, once the caches are synced
                self._swept = True
                self.check_leftover_endpoints()
            await self.worker()
        await run_workers(self.queue, self._informers, worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: ObjectName) -> None:
        """Upstream: handleErr"""
        extra = {"key": str(key), "err": str(err)}
        retry_or_drop(self.queue, key, err, MAX_RETRIES,
                      lambda: log.info("Error syncing endpoints, retrying", extra=extra),
                      lambda: log.warning("Dropping service out of the queue", extra=extra))

    def check_leftover_endpoints(self) -> None:
        """Queue every Endpoints' key once, so those whose Service went while we were down are
        deleted (leader-election records excepted). Upstream: checkLeftoverEndpoints"""
        for ep in self.endpoints_lister.list():
            if LEADER_ANNOTATION in (ep.metadata.annotations or {}):
                continue
            self.queue.add(ObjectName(ep.metadata.namespace or "", ep.metadata.name or ""))

    # --- handlers ------------------------------------------------------------------------------

    def on_service_update(self, svc: core_v1.Service) -> None:
        """Upstream: onServiceUpdate"""
        self.queue.add(ObjectName(svc.metadata.namespace or "", svc.metadata.name or ""))

    def on_service_delete(self, obj: Any) -> None:
        """Upstream: onServiceDelete"""
        svc = object_from_tombstone(obj, core_v1.Service)
        if svc is not None:
            self.on_service_update(svc)

    def on_endpoints_delete(self, obj: Any) -> None:
        """Someone deleted an Endpoints: put it back if its Service still wants it.
        Upstream: onEndpointsDelete"""
        ep = object_from_tombstone(obj, core_v1.Endpoints)
        if ep is not None:
            self.queue.add(ObjectName(ep.metadata.namespace or "", ep.metadata.name or ""))

    # --- the sync ------------------------------------------------------------------------------

    async def sync_service(self, key: ObjectName) -> None:
        """Converge one Service's Endpoints.

        1. Service gone: delete its Endpoints. ExternalName or no selector: not ours.
        2. One subset per (ready or not, pod, port), repacked into upstream's N-to-M form.
        3. Unchanged subsets, labels and capacity annotation: nothing to write.
        4. Create or update, with the trigger time and, over 1000 addresses, truncated.
        Upstream: syncService
        """
        namespace, name = key
        try:
            service = self.service_lister.services(namespace).get(name)
        except errors.NotFound:
            try:
                await self.client.core_v1().endpoints(namespace).delete(name)
            except errors.NotFound:
                pass
            self.trigger_time_tracker.delete_service(namespace, name)
            self.stale_endpoints_tracker.delete(namespace, name)
            return
        if service.spec is None or service.spec.type == "ExternalName" or service.spec.selector is None:
            return
        pods = self.pod_lister.pods(namespace).list(eu.service_selector(service))
        # Computed even when nothing is written, so the tracker's state moves on.
        trigger_time = self.trigger_time_tracker.compute_endpoint_last_change_trigger_time(namespace, service, pods)
        subsets = repack_subsets(build_subsets(service, pods))
        try:
            current = self.endpoints_lister.endpoints(namespace).get(name)
        except errors.NotFound:
            current = core_v1.Endpoints(metadata=meta_v1.ObjectMeta(name=name, labels=service.metadata.labels))
        else:
            if self.stale_endpoints_tracker.is_stale(current):
                raise RuntimeError(f"endpoints informer cache is out of date, resource version "
                                   f"{current.metadata.resource_version} already processed for endpoints {key}")
        create = not current.metadata.resource_version
        compare_labels = {k: v for k, v in (current.metadata.labels or {}).items() if k != su.IS_HEADLESS_SERVICE}
        if (not create and subsets_equal(current.subsets, subsets)
                and compare_labels == (service.metadata.labels or {})
                and capacity_annotation_set_correctly(current.metadata.annotations, current.subsets)):
            return
        new = current.deep_copy()
        new.subsets = subsets
        new.metadata.labels = dict(service.metadata.labels or {})
        annotations = dict(new.metadata.annotations or {})
        if trigger_time:
            annotations[su.LAST_CHANGE_TRIGGER_TIME] = su.rfc3339_nano(trigger_time)
        else:
            annotations.pop(su.LAST_CHANGE_TRIGGER_TIME, None)
        if truncate_endpoints(new):
            annotations[ENDPOINTS_OVER_CAPACITY] = TRUNCATED
        else:
            annotations.pop(ENDPOINTS_OVER_CAPACITY, None)
        new.metadata.annotations = annotations
        if not su.is_service_ip_set(service):
            new.metadata.labels[su.IS_HEADLESS_SERVICE] = ""
        await self._write(service, current, new, create)

    async def _write(self, service: core_v1.Service, current: core_v1.Endpoints, new: core_v1.Endpoints,
                     create: bool) -> None:
        endpoints = self.client.core_v1().endpoints(service.metadata.namespace or "")
        ns, name = service.metadata.namespace, service.metadata.name
        try:
            if create:
                await endpoints.create(new)
                return
            updated = await endpoints.update(new)
        except errors.StatusError as err:
            if create and isinstance(err, errors.Forbidden) and errors.has_status_cause(
                    err, cu.NAMESPACE_TERMINATING_CAUSE):
                return                  # the namespace is going: every create would fail
            if create:
                self.recorder.event(new, "Warning", "FailedToCreateEndpoint",
                                    f"Failed to create endpoint for service {ns}/{name}: {err}")
            else:
                self.recorder.event(new, "Warning", "FailedToUpdateEndpoint",
                                    f"Failed to update endpoint {ns}/{name}: {err}")
            raise
        # The lister may hand back the version we replaced: remember it as stale (#127370).
        if updated.metadata.resource_version != current.metadata.resource_version:
            self.stale_endpoints_tracker.stale(current)


def pod_to_endpoint_address(service: core_v1.Service, pod: core_v1.Pod) -> core_v1.EndpointAddress | None:
    """The pod's address of the Service's (first) IP family. Upstream: podToEndpointAddressForService"""
    spec = service.spec or core_v1.ServiceSpec()
    if spec.ip_families:
        want_v6 = spec.ip_families[0] == "IPv6"
    elif spec.cluster_ip and spec.cluster_ip != su.CLUSTER_IP_NONE:
        want_v6 = su.is_ipv6(spec.cluster_ip)
    else:
        ips = su.pod_ips(pod)               # headless without families: the pod's primary IP
        want_v6 = bool(ips) and su.is_ipv6(ips[0])
    ip = next((ip for ip in su.pod_ips(pod) if su.is_ipv6(ip) == want_v6), None)
    if ip is None:
        return None
    return core_v1.EndpointAddress(
        ip=ip, node_name=(pod.spec.node_name if pod.spec else None) or None,
        target_ref=core_v1.ObjectReference(kind="Pod", namespace=pod.metadata.namespace, name=pod.metadata.name,
                                           uid=pod.metadata.uid),
        hostname=pod.spec.hostname if pod.spec and su.should_set_hostname(pod, service) else None)


def build_subsets(service: core_v1.Service, pods: list[core_v1.Pod]) -> list[core_v1.EndpointSubset]:
    """One subset per pod and Service port (a headless Service without ports: per pod), its
    address ready or not. Upstream: syncService's loop with addEndpointSubset"""
    spec = service.spec or core_v1.ServiceSpec()
    tolerate_unready = bool(spec.publish_not_ready_addresses)
    subsets: list[core_v1.EndpointSubset] = []

    def add(pod: core_v1.Pod, epa: core_v1.EndpointAddress, port: core_v1.EndpointPort | None) -> None:
        ports = [port] if port is not None else []
        if tolerate_unready or cu.is_pod_ready(pod):
            subsets.append(core_v1.EndpointSubset(addresses=[epa], ports=ports))
        else:
            subsets.append(core_v1.EndpointSubset(not_ready_addresses=[epa], ports=ports))

    for pod in pods:
        if not su.should_pod_be_in_endpoints(pod, tolerate_unready):
            continue
        epa = pod_to_endpoint_address(service, pod)
        if epa is None:
            continue                     # no address of the Service's family on this pod
        if not spec.ports:
            if spec.cluster_ip == su.CLUSTER_IP_NONE:
                add(pod, epa, None)
            continue
        for sp in spec.ports:
            try:
                num = su.find_port(pod, sp)
            except su.PortNotFound:
                continue
            add(pod, epa, core_v1.EndpointPort(name=sp.name or None, port=num, protocol=sp.protocol,
                                               app_protocol=sp.app_protocol))
    return subsets


def _port_key(p: core_v1.EndpointPort) -> tuple[str, int, str, str]:
    return (p.name or "", p.port or 0, p.protocol or "", p.app_protocol or "")


def _addr_key(a: core_v1.EndpointAddress) -> tuple[str, str]:
    return (a.ip or "", (a.target_ref.uid or "") if a.target_ref else "")


def repack_subsets(subsets: list[core_v1.EndpointSubset]) -> list[core_v1.EndpointSubset]:
    """Regroup (address, port) pairs so that each subset is the set of addresses offering the
    same set of ports; an address not ready for a port is not ready for it whatever another
    subset says. E.g. {a:80}, {b:80}, {a:443} -> {a: 80, 443}, {b: 80}.

    Upstream: RepackSubsets. The order differs: upstream sorts ports and subsets by a hash of
    their Go structs; here by port and by first address (the API gives them no meaning)."""
    addrs: dict[tuple[str, str], core_v1.EndpointAddress] = {}
    port_to_addrs: dict[tuple[str, int, str, str], dict[tuple[str, str], bool]] = {}
    ports_by_key: dict[tuple[str, int, str, str], core_v1.EndpointPort | None] = {}

    def map_address(a: core_v1.EndpointAddress, port_key: tuple[str, int, str, str], ready: bool) -> None:
        k = _addr_key(a)
        addrs.setdefault(k, a)
        seen = port_to_addrs.setdefault(port_key, {})
        if seen.get(k, True):            # not ready always trumps ready
            seen[k] = ready

    for s in subsets:
        ports: list[core_v1.EndpointPort | None] = list(s.ports or []) or [None]   # None: the no-port sentinel
        for p in ports:
            pk = _port_key(p) if p is not None else ("", -1, "", "")
            ports_by_key.setdefault(pk, p)
            for a in s.addresses or []:
                map_address(a, pk, True)
            for a in s.not_ready_addresses or []:
                map_address(a, pk, False)
    groups: dict[tuple[tuple[tuple[str, str], bool], ...], list[core_v1.EndpointPort]] = {}
    for pk, members in port_to_addrs.items():
        gk = tuple(sorted(members.items()))
        group = groups.setdefault(gk, [])
        if (p := ports_by_key[pk]) is not None:
            group.append(p)
    final = []
    for gk, ports in groups.items():
        ready = sorted((addrs[k] for k, r in gk if r), key=_addr_key)
        not_ready = sorted((addrs[k] for k, r in gk if not r), key=_addr_key)
        final.append(core_v1.EndpointSubset(addresses=ready or None, not_ready_addresses=not_ready or None,
                                            ports=sorted(ports, key=_port_key) or None))
    final.sort(key=lambda s: (_addr_key((s.addresses or s.not_ready_addresses or [core_v1.EndpointAddress()])[0]),
                              [_port_key(p) for p in s.ports or []]))
    return final


def _normal(subsets: list[core_v1.EndpointSubset] | None) -> list[Any]:
    return [(tuple(s.addresses or ()), tuple(s.not_ready_addresses or ()), tuple(s.ports or ()))
            for s in subsets or []]


def subsets_equal(a: list[core_v1.EndpointSubset] | None, b: list[core_v1.EndpointSubset] | None) -> bool:
    """Upstream: endpointSubsetsEqualIgnoreResourceVersion (targets carry no resourceVersion here)."""
    return _normal(a) == _normal(b)


def capacity_annotation_set_correctly(annotations: dict[str, str] | None,
                                      subsets: list[core_v1.EndpointSubset] | None) -> bool:
    """Upstream: capacityAnnotationSetCorrectly"""
    n = sum(len(s.addresses or []) + len(s.not_ready_addresses or []) for s in subsets or [])
    if n > MAX_CAPACITY:
        return False
    return ENDPOINTS_OVER_CAPACITY not in (annotations or {})


def truncate_endpoints(ep: core_v1.Endpoints) -> bool:
    """Keep at most MAX_CAPACITY addresses, each subset its proportional share (rounded up, the
    last one getting what is left). Ready addresses are kept first: if they alone exceed the
    capacity every not-ready one goes. E.g. 600 ready + 600 not ready in two subsets of 300 not
    ready each: 400 not ready stay, 200 per subset. Upstream: truncateEndpoints"""
    subsets = ep.subsets or []
    total_ready = sum(len(s.addresses or []) for s in subsets)
    total_not_ready = sum(len(s.not_ready_addresses or []) for s in subsets)
    if total_ready + total_not_ready <= MAX_CAPACITY:
        return False
    truncate_ready = total_ready > MAX_CAPACITY
    max_, num_total = (MAX_CAPACITY, total_ready) if truncate_ready else (MAX_CAPACITY - total_ready, total_not_ready)
    can_be_added = max_
    for s in subsets:
        in_subset = len(s.addresses or []) if truncate_ready else len(s.not_ready_addresses or [])
        to_add = min(math.ceil(in_subset / num_total * max_), can_be_added)
        if truncate_ready:
            s.addresses = (s.addresses or [])[:to_add]
            s.not_ready_addresses = None
            can_be_added -= len(s.addresses)
        else:
            s.not_ready_addresses = (s.not_ready_addresses or [])[:to_add] or None
            can_be_added -= len(s.not_ready_addresses or [])
    return True
