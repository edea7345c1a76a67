"""The EndpointSlice reconciler: from a Service and its pods, the slices to create, update and
delete, then the writes.

Upstream: k8s.io/endpointslice reconciler.go (Reconciler.Reconcile, reconcileByAddressType,
reconcileByPortMapping, finalize). Zone hints come from the topology cache when the Service asks
for them (`service.kubernetes.io/topology-mode: Auto`, topologycache.py) and are removed
otherwise; hints for spec.trafficDistribution are not computed.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import msgspec

from ...api import errors
from ...api.types import core_v1, discovery_v1
from .. import controller_utils as cu
from . import metrics
from . import topologycache as tc
from . import utils as u

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.listers import NodeLister
    from ...client.tools.record import EventRecorder
    from ..endpoint.util import LogRecorder
    from .endpointslice_tracker import EndpointSliceTracker

log = logging.getLogger(__name__)

DEFAULT_MAX_ENDPOINTS_PER_SLICE = 100        # --max-endpoints-per-slice


class Reconciler:
    """Upstream: endpointslice.Reconciler"""

    def __init__(self, client: Clientset, node_lister: NodeLister, tracker: EndpointSliceTracker, *,
                 max_endpoints_per_slice: int = DEFAULT_MAX_ENDPOINTS_PER_SLICE,
                 controller_name: str = u.CONTROLLER_NAME, topology_cache: tc.TopologyCache | None = None,
                 recorder: EventRecorder | LogRecorder | None = None) -> None:
        self.client = client
        self.topology_cache = topology_cache
        self.recorder = recorder
        self.node_lister = node_lister
        self.tracker = tracker
        self.max_endpoints_per_slice = max_endpoints_per_slice
        self.controller_name = controller_name
        self.metrics_cache = metrics.Cache(max_endpoints_per_slice)

    def delete_service(self, namespace: str, name: str) -> None:
        """Upstream: Reconciler.DeleteService (its share of the gauges goes)."""
        self.metrics_cache.delete_service((namespace, name))

    async def reconcile(self, service: core_v1.Service, pods: list[core_v1.Pod],
                        existing_slices: list[discovery_v1.EndpointSlice], trigger_time: float | None) -> None:
        """Reconcile each address type the Service supports; slices of another type go.
        Upstream: Reconcile"""
        supported = u.get_address_types_for_service(service)
        to_delete: list[discovery_v1.EndpointSlice] = []
        by_type: dict[str, list[discovery_v1.EndpointSlice]] = {}
        for s in existing_slices:
            if s.address_type not in supported:
                to_delete.append(s)
            else:
                by_type.setdefault(s.address_type or "", []).append(s)
        errs: list[BaseException] = []
        for address_type in supported:
            try:
                await self.reconcile_by_address_type(service, pods, by_type.get(address_type, []), trigger_time,
                                                      address_type)
            except Exception as err:
                errs.append(err)
        ns = service.metadata.namespace or ""
        for s in to_delete:
            try:
                await self.client.discovery_v1().endpointslices(ns).delete(s.metadata.name)
            except errors.StatusError as err:
                errs.append(RuntimeError(f"error deleting {s.metadata.name} EndpointSlice for Service "
                                         f"{ns}/{service.metadata.name}: {err}"))
            else:
                self.tracker.expect_deletion(s)
                metrics.slice_changed(metrics.DELETE)
        if (agg := cu.new_aggregate(errs)) is not None:
            raise agg

    async def reconcile_by_address_type(self, service: core_v1.Service, pods: list[core_v1.Pod],
                                        existing_slices: list[discovery_v1.EndpointSlice], trigger_time: float | None,
                                        address_type: str) -> None:
        """Group the existing and desired endpoints by port set, reconcile each group, add a
        placeholder slice when there would be none, and write. Upstream: reconcileByAddressType"""
        to_create: list[discovery_v1.EndpointSlice] = []
        to_update: list[discovery_v1.EndpointSlice] = []
        to_delete: list[discovery_v1.EndpointSlice] = []
        existing_by_port_map: dict[u.PortMapKey, list[discovery_v1.EndpointSlice]] = {}
        for s in existing_slices:
            if u.owned_by(s, service):
                existing_by_port_map.setdefault(u.port_map_key(s.ports), []).append(s)
            else:
                to_delete.append(s)
        desired_ports: dict[u.PortMapKey, list[discovery_v1.EndpointPort]] = {}
        desired: dict[u.PortMapKey, u.EndpointSet] = {}
        errs: list[BaseException] = []
        publish_not_ready = bool(service.spec and service.spec.publish_not_ready_addresses)
        for pod in pods:
            if not u.should_pod_be_in_endpoints(pod, True):
                continue
            ports = u.get_endpoint_ports(service, pod)
            key = u.port_map_key(ports)
            desired.setdefault(key, u.EndpointSet())
            desired_ports.setdefault(key, ports)
            node = self._node(pod)
            if node is None and not publish_not_ready:
                # Requeue the Service, but publish the others meanwhile: a pod on a node that
                # is gone must not keep the slices stuck.
                errs.append(RuntimeError(f"skipping Pod {pod.metadata.name} for Service {service.metadata.namespace}/"
                                         f"{service.metadata.name}: Node {pod.spec.node_name if pod.spec else ''} "
                                         "Not Found"))
                continue
            ep = u.pod_to_endpoint(pod, node, service, address_type)
            if ep.addresses:
                desired[key].insert(ep)
        sp_metrics = metrics.ServicePortCache()
        total_added = total_removed = 0
        for key, endpoints in desired.items():
            num_endpoints = len(endpoints)
            c, up, d, added, removed = self.reconcile_by_port_mapping(
                service, existing_by_port_map.get(key, []), endpoints, desired_ports[key], address_type)
            total_added += added
            total_removed += removed
            sp_metrics.set(key, metrics.EfficiencyInfo(
                num_endpoints, len(existing_by_port_map.get(key, [])) + len(c) - len(d)))
            to_create += c
            to_update += up
            to_delete += d
        for key, slices in existing_by_port_map.items():
            if key not in desired:
                to_delete += slices
        if len(existing_slices) == len(to_delete) and not to_create:
            # No slice would be left: keep (or make) one empty placeholder, so that consumers
            # can tell "no endpoints" from "not yet processed".
            placeholder = u.new_endpoint_slice(service, [], address_type, self.controller_name)
            if len(to_delete) == 1 and _placeholder_equal(to_delete[0], placeholder):
                to_delete = []
            else:
                to_create.append(placeholder)
        m = metrics.ENDPOINT_SLICE
        m.endpoints_added_per_sync.observe(total_added)
        m.endpoints_removed_per_sync.observe(total_removed)
        service_key = (service.metadata.namespace or "", service.metadata.name or "")
        self.metrics_cache.update_service_port_cache(service_key, sp_metrics)
        annotated = tc.hints_enabled(service.metadata.annotations)
        self.metrics_cache.update_traffic_distribution_for_service(
            service_key, None if annotated or service.spec is None else service.spec.traffic_distribution)
        to_create, to_update, events = self._topology_hints(service, address_type, existing_slices, to_create,
                                                            to_update, to_delete)
        try:
            await self.finalize(service, to_create, to_update, to_delete, trigger_time)
        except Exception as err:
            errs.append(err)
        if self.recorder is not None:
            for e in events:
                self.recorder.event(service, e.event_type, e.reason, e.message)
        if (agg := cu.new_aggregate(errs)) is not None:
            raise agg

    def _topology_hints(self, service: core_v1.Service, address_type: str,
                        existing: list[discovery_v1.EndpointSlice], to_create: list[discovery_v1.EndpointSlice],
                        to_update: list[discovery_v1.EndpointSlice], to_delete: list[discovery_v1.EndpointSlice],
                        ) -> tuple[list[discovery_v1.EndpointSlice], list[discovery_v1.EndpointSlice],
                                   list[tc.EventBuilder]]:
        """Zone hints per address type: added when the Service asks (topology-mode Auto),
        otherwise removed (a Warning if the cache had some). Upstream: reconcileByAddressType's
        topology part"""
        changing = {s.metadata.name for s in (*to_update, *to_delete) if s.metadata.name}
        si = tc.SliceInfo(f"{service.metadata.namespace}/{service.metadata.name}", address_type, list(to_create),
                          list(to_update), [s for s in existing if s.metadata.name not in changing])
        if self.topology_cache is not None and tc.hints_enabled(service.metadata.annotations):
            return self.topology_cache.add_hints(si)
        events: list[tc.EventBuilder] = []
        if self.topology_cache is not None:
            if self.topology_cache.has_populated_hints(si.service_key):
                log.info("TopologyAwareHints annotation has changed, removing hints",
                         extra={"serviceKey": si.service_key, "addressType": address_type})
                events.append(tc.EventBuilder("Warning", tc.REASON_DISABLED, tc.format_with_address_type(
                    tc.TOPOLOGY_AWARE_HINTS_DISABLED, address_type)))
            self.topology_cache.remove_hints(si.service_key, address_type)
        created, updated = tc.remove_hints_from_slices(si)
        return created, updated, events

    def _node(self, pod: core_v1.Pod) -> core_v1.Node | None:
        from ...api import errors as e
        name = (pod.spec.node_name if pod.spec else None) or ""
        if not name:
            return None
        try:
            return self.node_lister.get(name)
        except e.NotFound:
            return None

    def reconcile_by_port_mapping(
            self, service: core_v1.Service, existing_slices: list[discovery_v1.EndpointSlice],
            desired_set: u.EndpointSet, ports: list[discovery_v1.EndpointPort], address_type: str,
    ) -> tuple[list[discovery_v1.EndpointSlice], list[discovery_v1.EndpointSlice], list[discovery_v1.EndpointSlice],
               int, int]:
        """The creates, updates and deletes for one port set, and the endpoints added and
        removed (for the metrics), changing as few slices as it can:

        1. In each existing slice drop the endpoints no longer desired and refresh changed ones
           (a slice left empty is deleted).
        2. Fill the slices already being updated, fullest first, up to the maximum.
        3. Put what remains in the one unchanged slice it fits best, else in new slices.

        E.g. max 100, slices A (90 endpoints, 5 gone) and B (50, unchanged), 20 new pods: A is
        updated to 85 and then filled to 100 (15 of the new), the last 5 go into B (75 left of
        room) rather than a new slice. Upstream: reconcileByPortMapping
        """
        max_eps = self.max_endpoints_per_slice
        to_delete: list[discovery_v1.EndpointSlice] = []
        by_name: dict[str, discovery_v1.EndpointSlice] = {}
        names_to_update: set[str] = set()
        names_unchanged: set[str] = set()
        num_removed = 0
        # 1. Remove endpoints that are no longer desired, refresh the ones that changed.
        for s in existing_slices:
            new_eps: list[discovery_v1.Endpoint] = []
            ep_updated = False
            for ep in s.endpoints or []:
                got = desired_set.get(ep)
                if got is not None:
                    new_eps.append(got)
                    if got != ep and not _equal_beyond_hints(got, ep):
                        ep_updated = True
                    desired_set.delete(got)
            labels, labels_changed = u.set_endpoint_slice_labels(s, service, self.controller_name)
            if len(s.endpoints or []) != len(new_eps) or ep_updated or labels_changed:
                num_removed += max(0, len(s.endpoints or []) - len(new_eps))
                if not new_eps:
                    to_delete.append(s)
                    continue
                copy = s.deep_copy()
                copy.endpoints = new_eps
                copy.metadata.labels = labels
                by_name[s.metadata.name] = copy
                names_to_update.add(s.metadata.name)
            else:
                by_name[s.metadata.name] = s
                names_unchanged.add(s.metadata.name)
        num_added = len(desired_set)
        # 2. Fill the slices that are being updated anyway, the fullest first.
        if len(desired_set) and names_to_update:
            updating = sorted((by_name[n] for n in sorted(names_to_update)), key=lambda s: -len(s.endpoints or []))
            for s in updating:
                while len(desired_set) and len(s.endpoints or []) < max_eps:
                    s.endpoints = [*(s.endpoints or []), desired_set.pop_any()]
        # 3. Fit what is left into one unchanged slice, or into new slices.
        to_create: list[discovery_v1.EndpointSlice] = []
        while len(desired_set):
            fill = None
            if len(desired_set) < max_eps and names_unchanged:
                fill = u.get_slice_to_fill([by_name[n] for n in sorted(names_unchanged)], len(desired_set), max_eps)
            if fill is None:
                fill = u.new_endpoint_slice(service, ports, address_type, self.controller_name)
            else:
                fill = fill.deep_copy()
                by_name[fill.metadata.name] = fill
            eps = list(fill.endpoints or [])
            while len(desired_set) and len(eps) < max_eps:
                eps.append(desired_set.pop_any())
            fill.endpoints = eps
            if fill.metadata.name:
                names_to_update.add(fill.metadata.name)
                names_unchanged.discard(fill.metadata.name)
            else:
                to_create.append(fill)
        return to_create, [by_name[n] for n in sorted(names_to_update)], to_delete, num_added, num_removed

    async def finalize(self, service: core_v1.Service, to_create: list[discovery_v1.EndpointSlice],
                       to_update: list[discovery_v1.EndpointSlice], to_delete: list[discovery_v1.EndpointSlice],
                       trigger_time: float | None) -> None:
        """Write: a create and a delete of the same kind become one update of the slice that
        would go; no creates while the Service is being deleted (the garbage collector would
        race us). Upstream: finalize"""
        to_create, to_delete = list(to_create), list(to_delete)
        i = 0
        while i < len(to_delete) and to_create:
            doomed, new = to_delete[i], to_create[-1]
            if doomed.address_type == new.address_type and u.owned_by(doomed, service):
                new.metadata.name = doomed.metadata.name
                new.metadata.generate_name = None
                new.metadata.resource_version = doomed.metadata.resource_version
                to_create.pop()
                to_update.append(new)
                del to_delete[i]
            else:
                i += 1
        ns = service.metadata.namespace or ""
        slices = self.client.discovery_v1().endpointslices(ns)
        changed = len(to_create) + len(to_update) + len(to_delete)
        topology = "Auto" if self.topology_cache is not None and tc.hints_enabled(service.metadata.annotations) \
            else "Disabled"
        metrics.ENDPOINT_SLICES_CHANGED_PER_SYNC.labels(
            topology, (service.spec.traffic_distribution if service.spec else None) or "").observe(changed)
        if service.metadata.deletion_timestamp is None:
            for s in to_create:
                _add_trigger_time_annotation(s, trigger_time)
                try:
                    created = await slices.create(s)
                except errors.StatusError as err:
                    if cu.has_status_cause(err, cu.NAMESPACE_TERMINATING_CAUSE):
                        return                 # every create would fail: drop the item
                    raise RuntimeError(f"failed to create EndpointSlice for Service {ns}/{service.metadata.name}: "
                                       f"{err}") from err
                self.tracker.update(created)
                metrics.slice_changed(metrics.CREATE)
        for s in to_update:
            _add_trigger_time_annotation(s, trigger_time)
            try:
                updated = await slices.update(s)
            except errors.StatusError as err:
                raise RuntimeError(f"failed to update {s.metadata.name} EndpointSlice for Service "
                                   f"{ns}/{service.metadata.name}: {err}") from err
            self.tracker.update(updated)
            metrics.slice_changed(metrics.UPDATE)
        for s in to_delete:
            try:
                await slices.delete(s.metadata.name)
            except errors.StatusError as err:
                raise RuntimeError(f"failed to delete {s.metadata.name} EndpointSlice for Service "
                                   f"{ns}/{service.metadata.name}: {err}") from err
            self.tracker.expect_deletion(s)
            metrics.slice_changed(metrics.DELETE)


def _equal_beyond_hints(desired: discovery_v1.Endpoint, existing: discovery_v1.Endpoint) -> bool:
    """Equal but for the zone hints the existing one carries (the topology cache judges those).
    Upstream: endpointsEqualBeyondHash ignores hints"""
    return existing.hints is not None and msgspec.structs.replace(existing, hints=desired.hints) == desired


def _add_trigger_time_annotation(s: discovery_v1.EndpointSlice, trigger_time: float | None) -> None:
    """Upstream: addTriggerTimeAnnotation — no new trigger time clears the annotation."""
    annotations = dict(s.metadata.annotations or {})
    if trigger_time:
        annotations[u.LAST_CHANGE_TRIGGER_TIME] = u.rfc3339_nano(trigger_time)
    else:
        annotations.pop(u.LAST_CHANGE_TRIGGER_TIME, None)
    s.metadata.annotations = annotations


def _placeholder_equal(a: discovery_v1.EndpointSlice, b: discovery_v1.EndpointSlice) -> bool:
    """Upstream: placeholderSliceCompare — the fields a placeholder is made of."""
    return (a.address_type == b.address_type and not (a.endpoints or []) and not (b.endpoints or [])
            and (a.ports or []) == (b.ports or []) and (a.metadata.labels or {}) == (b.metadata.labels or {})
            and (a.metadata.namespace == b.metadata.namespace))
