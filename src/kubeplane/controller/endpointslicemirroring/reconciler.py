"""The EndpointSlice mirroring reconciler: the EndpointSlices that mirror a custom Endpoints
(one per subset and address type, at most --mirroring-max-endpoints-per-subset addresses).

Upstream: pkg/controller/endpointslicemirroring/reconciler.go and utils.go
"""
from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from ...api import errors
from ...api.types import core_v1, discovery_v1, meta_v1
from .. import controller_utils as cu
from ..endpoint.endpoints_controller import repack_subsets
from ..endpointslice import metrics as esm
from ..endpointslice import utils as su
from . import metrics

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.tools.record import EventRecorder
    from ..endpointslice.endpointslice_tracker import EndpointSliceTracker

CONTROLLER_NAME = "endpointslicemirroring-controller.k8s.io"     # managed-by of mirrored slices
DEFAULT_MAX_ENDPOINTS_PER_SUBSET = 1000    # --mirroring-max-endpoints-per-subset
LAST_APPLIED_CONFIG = "kubectl.kubernetes.io/last-applied-configuration"
# Upstream's event reasons.
INVALID_IP_ADDRESS = "InvalidIPAddress"
TOO_MANY_ADDRESSES_TO_MIRROR = "TooManyAddressesToMirror"

Key = tuple[str, su.PortMapKey]           # (address type, ports)


def get_address_type(ip: str | None) -> str | None:
    """Upstream: getAddressType — None for what is not an IP."""
    try:
        return su.ADDRESS_TYPE_IPV6 if ipaddress.ip_address(ip or "").version == 6 else su.ADDRESS_TYPE_IPV4
    except ValueError:
        return None


def address_to_endpoint(address: core_v1.EndpointAddress, ready: bool) -> discovery_v1.Endpoint:
    """Upstream: addressToEndpoint"""
    return discovery_v1.Endpoint(addresses=[address.ip or ""], conditions=discovery_v1.EndpointConditions(ready=ready),
                                 target_ref=address.target_ref, node_name=address.node_name or None,
                                 hostname=address.hostname or None)


def mirrored_annotations(endpoints: core_v1.Endpoints) -> dict[str, str]:
    """Every annotation but the trigger time and kubectl's last-applied configuration."""
    return {k: v for k, v in (endpoints.metadata.annotations or {}).items()
            if k not in (su.LAST_CHANGE_TRIGGER_TIME, LAST_APPLIED_CONFIG)}


def new_endpoint_slice(endpoints: core_v1.Endpoints, ports: list[discovery_v1.EndpointPort], address_type: str,
                       slice_name: str) -> discovery_v1.EndpointSlice:
    """A slice owned by the Endpoints, with its labels and annotations. Upstream: newEndpointSlice"""
    owner = meta_v1.OwnerReference(api_version="v1", kind="Endpoints", name=endpoints.metadata.name,
                                   uid=endpoints.metadata.uid, controller=True, block_owner_deletion=True)
    labels = {**(endpoints.metadata.labels or {}), su.LABEL_SERVICE_NAME: endpoints.metadata.name or "",
              su.LABEL_MANAGED_BY: CONTROLLER_NAME}
    meta = meta_v1.ObjectMeta(labels=labels, annotations=mirrored_annotations(endpoints), owner_references=[owner],
                              namespace=endpoints.metadata.namespace)
    if slice_name:
        meta.name = slice_name
    else:
        meta.generate_name = su.endpoint_slice_prefix(endpoints.metadata.name or "")
    return discovery_v1.EndpointSlice(metadata=meta, ports=list(ports), address_type=address_type, endpoints=[])


def _slice_key(s: discovery_v1.EndpointSlice) -> Key:
    return (s.address_type or "", su.port_map_key(s.ports))


class Reconciler:
    """Upstream: endpointslicemirroring reconciler"""

    def __init__(self, client: Clientset, tracker: EndpointSliceTracker, recorder: EventRecorder, *,
                 max_endpoints_per_subset: int = DEFAULT_MAX_ENDPOINTS_PER_SUBSET) -> None:
        self.client = client
        self.tracker = tracker
        self.recorder = recorder
        self.max_endpoints_per_subset = max_endpoints_per_subset
        self.metrics_cache = esm.Cache(max_endpoints_per_subset, metrics.MIRRORING, mirroring=True)

    async def delete_endpoints(self, endpoints: tuple[str, str], slices: list[discovery_v1.EndpointSlice]) -> None:
        """Forget the Endpoints' share of the gauges and delete its mirrored slices.
        Upstream: reconciler.deleteEndpoints"""
        self.metrics_cache.delete_service(endpoints)
        for s in slices:
            try:
                await self.client.discovery_v1().endpointslices(endpoints[0]).delete(s.metadata.name)
            except errors.NotFound:
                continue
            metrics.MIRRORING.changes.inc(esm.DELETE)

    def desired(self, endpoints: core_v1.Endpoints) -> tuple[dict[Key, su.EndpointSet],
                                                             dict[Key, list[discovery_v1.EndpointPort]]]:
        """The endpoints wanted per (address type, ports), at most max per subset; invalid IPs
        and addresses over the limit skipped with a Warning event each. Upstream: reconcile's loop"""
        by_key: dict[Key, su.EndpointSet] = {}
        ports_by_key: dict[Key, list[discovery_v1.EndpointPort]] = {}
        invalid = skipped = 0
        for subset in repack_subsets(list(endpoints.subsets or [])):
            ports = [discovery_v1.EndpointPort(name=p.name or "", port=p.port, protocol=p.protocol,
                                               app_protocol=p.app_protocol) for p in subset.ports or []]
            pk = su.port_map_key(ports)
            added = 0
            candidates = [(a, True) for a in subset.addresses or []] + [(a, False) for a in
                                                                        subset.not_ready_addresses or []]
            for address, ready in candidates:
                if added >= self.max_endpoints_per_subset:
                    break
                address_type = get_address_type(address.ip)
                if address_type is None:
                    invalid += 1
                    continue
                key = (address_type, pk)
                by_key.setdefault(key, su.EndpointSet()).insert(address_to_endpoint(address, ready))
                ports_by_key.setdefault(key, ports)
                added += 1
            skipped += len(candidates) - added
        metrics.ADDRESSES_SKIPPED_PER_SYNC.observe(skipped)      # invalid ones included, as upstream
        if invalid:
            self.recorder.event(endpoints, "Warning", INVALID_IP_ADDRESS,
                                f"Skipped {invalid} invalid IP addresses when mirroring to EndpointSlices")
        if skipped > invalid:
            self.recorder.event(endpoints, "Warning", TOO_MANY_ADDRESSES_TO_MIRROR,
                                f"A max of {self.max_endpoints_per_subset} addresses can be mirrored to EndpointSlices "
                                f"per Endpoints subset. {skipped} addresses were skipped")
        return by_key, ports_by_key

    async def reconcile(self, endpoints: core_v1.Endpoints, existing: list[discovery_v1.EndpointSlice]) -> None:
        """Upstream: reconcile"""
        desired, ports = self.desired(endpoints)
        existing_by_key: dict[Key, list[discovery_v1.EndpointSlice]] = {}
        for s in existing:
            existing_by_key.setdefault(_slice_key(s), []).append(s)
        to_create: list[discovery_v1.EndpointSlice] = []
        to_update: list[discovery_v1.EndpointSlice] = []
        to_delete: list[discovery_v1.EndpointSlice] = []
        ep_metrics = esm.ServicePortCache()
        added = updated = removed = 0
        for key, eps in desired.items():
            num_endpoints = len(eps)
            a, up, r = _total_changes(existing_by_key.get(key, [])[:1], eps)
            added, updated, removed = added + a, updated + up, removed + r
            c, u, d = self.reconcile_by_port_mapping(endpoints, existing_by_key.get(key, []), eps, ports[key], key[0])
            ep_metrics.set(key, esm.EfficiencyInfo(num_endpoints, len(existing_by_key.get(key, [])) + len(c) - len(d)))
            to_create += c
            to_update += u
            to_delete += d
        for key, slices in existing_by_key.items():
            if key not in desired:
                to_delete += slices
        metrics.MIRRORING.endpoints_added_per_sync.observe(added)
        metrics.ENDPOINTS_UPDATED_PER_SYNC.observe(updated)
        metrics.MIRRORING.endpoints_removed_per_sync.observe(removed)
        self.metrics_cache.update_service_port_cache((endpoints.metadata.namespace or "",
                                                      endpoints.metadata.name or ""), ep_metrics)
        await self.finalize(endpoints, to_create, to_update, to_delete)

    def reconcile_by_port_mapping(
            self, endpoints: core_v1.Endpoints, existing: list[discovery_v1.EndpointSlice], desired: su.EndpointSet,
            ports: list[discovery_v1.EndpointPort], address_type: str,
    ) -> tuple[list[discovery_v1.EndpointSlice], list[discovery_v1.EndpointSlice], list[discovery_v1.EndpointSlice]]:
        """One slice per key: the first existing one is kept (rewritten if its endpoints, labels
        or annotations differ), any others deleted. Upstream: reconcileByPortMapping"""
        if not len(desired):
            return [], [], list(existing)
        to_delete = list(existing[1:])
        if existing:
            first = existing[0]
            same_endpoints = (len(first.endpoints or []) == len(desired)
                              and all(desired.get(ep) == ep for ep in first.endpoints or []))
            compare_labels = {k: v for k, v in (first.metadata.labels or {}).items()
                              if k not in (su.LABEL_MANAGED_BY, su.LABEL_SERVICE_NAME)}
            if (same_endpoints and compare_labels == (endpoints.metadata.labels or {})
                    and mirrored_annotations(endpoints) == (first.metadata.annotations or {})):
                return [], [], to_delete
        new = new_endpoint_slice(endpoints, ports, address_type, existing[0].metadata.name if existing else "")
        eps: list[discovery_v1.Endpoint] = []
        while len(desired) and len(eps) < self.max_endpoints_per_subset:
            eps.append(desired.pop_any())
        new.endpoints = eps
        if existing:
            new.metadata.resource_version = existing[0].metadata.resource_version
            return [], [new], to_delete
        return [new], [], to_delete

    async def finalize(self, endpoints: core_v1.Endpoints, to_create: list[discovery_v1.EndpointSlice],
                       to_update: list[discovery_v1.EndpointSlice], to_delete: list[discovery_v1.EndpointSlice]) -> None:
        """Creates recycle slices marked for deletion (same address type) as updates; no
        creates while the Endpoints is being deleted. Upstream: finalize, recycleSlices"""
        to_create, to_update, to_delete = list(to_create), list(to_update), list(to_delete)
        for new in list(to_create):
            doomed = next((d for d in to_delete if d.address_type == new.address_type), None)
            if doomed is not None:
                new.metadata.name, new.metadata.generate_name = doomed.metadata.name, None
                new.metadata.resource_version = doomed.metadata.resource_version
                to_create.remove(new)
                to_delete.remove(doomed)
                to_update.append(new)
        ns = endpoints.metadata.namespace or ""
        slices = self.client.discovery_v1().endpointslices(ns)
        name = f"{ns}/{endpoints.metadata.name}"
        if endpoints.metadata.deletion_timestamp is None:
            for s in to_create:
                try:
                    self.tracker.update(await slices.create(s))
                except errors.StatusError as err:
                    if cu.has_status_cause(err, cu.NAMESPACE_TERMINATING_CAUSE):
                        return
                    raise RuntimeError(f"failed to create EndpointSlice for Endpoints {name}: {err}") from err
                metrics.MIRRORING.changes.inc(esm.CREATE)
        for s in to_update:
            try:
                self.tracker.update(await slices.update(s))
            except errors.StatusError as err:
                raise RuntimeError(f"failed to update {s.metadata.name} EndpointSlice for Endpoints {name}: {err}"
                                   ) from err
            metrics.MIRRORING.changes.inc(esm.UPDATE)
        for s in to_delete:
            try:
                await slices.delete(s.metadata.name)
            except errors.StatusError as err:
                raise RuntimeError(f"failed to delete {s.metadata.name} EndpointSlice for Endpoints {name}: {err}"
                                   ) from err
            self.tracker.expect_deletion(s)
            metrics.MIRRORING.changes.inc(esm.DELETE)


def _total_changes(existing: list[discovery_v1.EndpointSlice], desired: su.EndpointSet) -> tuple[int, int, int]:
    """(added, updated, removed) endpoints against the one slice kept. Upstream: totalChanges"""
    removed = updated = matches = 0
    for ep in (existing[0].endpoints or []) if existing else []:
        got = desired.get(ep)
        if got is None:
            removed += 1
        else:
            matches += 1
            updated += got != ep
    return len(desired) - matches, updated, removed
