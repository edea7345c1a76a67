"""Topology Aware Routing (`service.kubernetes.io/topology-mode: Auto`): zone hints on a
Service's endpoints, in proportion to each zone's share of the cluster's allocatable CPU.

How the hints are allocated (AddHints):
1. Each zone's share of the ready endpoints is its share of the CPU of the ready nodes (nodes
   labelled control-plane or master left out). A zone may receive at most 20% fewer than its
   share (the overload threshold): minimum = ceil(desired / 1.2). E.g. zones a and b with 2
   and 1 CPUs, 6 endpoints: a wants 4 (min 4), b wants 2 (min 2).
2. Every ready endpoint first gets a hint for its own zone; unchanged slices whose hints are
   still valid keep them (their counts are added in).
3. Zones with more than they want give endpoints to zones with fewer, one at a time, most
   needy first, until what is left is less than half an endpoint.
Hints are dropped (with a TopologyAwareHintsDisabled Warning event naming the reason and the
address type) when the node information is insufficient (a node without zone or CPU), nodes
are ready in one zone only, there are fewer endpoints than zones, the minimums cannot be met,
or an endpoint has no zone. The first time hints are added: a TopologyAwareHintsEnabled event.

Zones are visited in sorted order where upstream ranges over Go maps (random order), so the
same input gives the same hints. Upstream: k8s.io/endpointslice topologycache (topologycache.go,
utils.go, sliceinfo.go, event.go).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from ...api import quantity
from ...api.types import core_v1, discovery_v1

log = logging.getLogger(__name__)

OVERLOAD_THRESHOLD = 0.2
ANNOTATION_TOPOLOGY_MODE = "service.kubernetes.io/topology-mode"
DEPRECATED_ANNOTATION_TOPOLOGY_AWARE_HINTS = "service.kubernetes.io/topology-aware-hints"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# Upstream: event.go
NO_ZONE_SPECIFIED = "One or more endpoints do not have a zone specified"
NO_ALLOCATED_HINTS_FOR_ZONES = "No hints allocated for zones"
TOPOLOGY_AWARE_HINTS_ENABLED = "Topology Aware Hints has been enabled"
TOPOLOGY_AWARE_HINTS_DISABLED = "Topology Aware Hints has been disabled"
INSUFFICIENT_NODE_INFO = "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"
NODES_READY_IN_ONE_ZONE_ONLY = "Nodes only ready in one zone"
INSUFFICIENT_NUMBER_OF_ENDPOINTS = "Insufficient number of endpoints"
MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD = ("Unable to allocate minimum required endpoints to each zone without "
                                             "exceeding overload threshold")
REASON_DISABLED, REASON_ENABLED = "TopologyAwareHintsDisabled", "TopologyAwareHintsEnabled"

Slice = discovery_v1.EndpointSlice
EndpointZoneInfo = dict[str, int]


@dataclass(frozen=True)
class EventBuilder:
    """An event to record on the Service. Upstream: EventBuilder"""
    event_type: str
    reason: str
    message: str


@dataclass
class Allocation:
    minimum: int
    maximum: int
    desired: float


@dataclass
class SliceInfo:
    """A Service's slices of one address type, by what the reconciler will do with them.
    Upstream: SliceInfo"""
    service_key: str
    address_type: str
    to_create: list[Slice]
    to_update: list[Slice]
    unchanged: list[Slice]

    def total_ready_endpoints(self) -> int:
        return sum(num_ready_endpoints(s.endpoints) for s in (*self.to_create, *self.to_update, *self.unchanged))

    def allocated_hints_by_zone(self, allocations: dict[str, Allocation]) -> EndpointZoneInfo:
        """The hints unchanged slices already hold; a slice whose hints are missing or no longer
        fit moves to to_update (a copy). Upstream: getAllocatedHintsByZone"""
        allocated: EndpointZoneInfo = {}
        still_unchanged = []
        for s in self.unchanged:
            by_zone = get_hints_by_zone(s, allocated, allocations)
            if by_zone is None:
                self.to_update.append(s.deep_copy())
                continue
            still_unchanged.append(s)
            for zone, n in by_zone.items():
                allocated[zone] = allocated.get(zone, 0) + n
        self.unchanged = still_unchanged
        return allocated


@dataclass
class TopologyCache:
    """The zones' CPU ratios and the hints allocated per Service. Upstream: TopologyCache"""
    sufficient_node_info: bool = False
    cpu_by_zone: dict[str, int] | None = field(default_factory=dict)            # millicores
    cpu_ratios_by_zone: dict[str, float] | None = field(default_factory=dict)
    endpoints_by_service: dict[str, dict[str, EndpointZoneInfo]] = field(default_factory=dict)
    hints_populated_by_service: set[str] = field(default_factory=set)

    def get_overloaded_services(self) -> list[str]:
        """Upstream: GetOverloadedServices"""
        return [key for key, by_type in self.endpoints_by_service.items()
                if any(service_overloaded(ezi, self.cpu_ratios_by_zone or {}) for ezi in by_type.values())]

    def add_hints(self, si: SliceInfo) -> tuple[list[Slice], list[Slice], list[EventBuilder]]:
        """(to create, to update, events). Upstream: AddHints"""
        allocations, event = self.get_allocations(si.total_ready_endpoints())
        if event is not None:
            log.info("%s, removing hints", event.message, extra={"key": si.service_key, "addressType": si.address_type})
            return self._disable(si, [EventBuilder(event.event_type, event.reason,
                                                   format_with_address_type(event.message, si.address_type))])
        assert allocations is not None
        allocated = si.allocated_hints_by_zone(allocations)
        allocatable = [*si.to_create, *si.to_update]
        # 1. Same-zone hints for every ready endpoint, as a start.
        for s in allocatable:
            for ep in s.endpoints or []:
                if not endpoint_ready(ep):
                    continue
                if not ep.zone:
                    return self._disable(si, [EventBuilder("Warning", REASON_DISABLED, format_with_address_type(
                        NO_ZONE_SPECIFIED, si.address_type))])
                allocated[ep.zone] = allocated.get(ep.zone, 0) + 1
                ep.hints = _hint(ep.zone)
        # 2. Which zones give, and which receive.
        giving, receiving = get_giving_and_receiving_zones(allocations, allocated)
        # 3. Move hints accordingly.
        for zone, diff in redistribute_hints(allocatable, giving, receiving).items():
            allocated[zone] = allocated.get(zone, 0) + diff
        if not allocated:
            return self._disable(si, [EventBuilder("Warning", REASON_DISABLED, format_with_address_type(
                NO_ALLOCATED_HINTS_FOR_ZONES, si.address_type))])
        events: list[EventBuilder] = []
        if not self.has_populated_hints(si.service_key):
            log.info("Topology Aware Hints has been enabled, adding hints.",
                     extra={"key": si.service_key, "addressType": si.address_type})
            events.append(EventBuilder("Normal", REASON_ENABLED, format_with_address_type(
                TOPOLOGY_AWARE_HINTS_ENABLED, si.address_type)))
        self.set_hints(si.service_key, si.address_type, allocated)
        return si.to_create, si.to_update, events

    def _disable(self, si: SliceInfo, events: list[EventBuilder]) -> tuple[list[Slice], list[Slice],
                                                                          list[EventBuilder]]:
        self.remove_hints(si.service_key, si.address_type)
        to_create, to_update = remove_hints_from_slices(si)
        return to_create, to_update, events

    def set_hints(self, service_key: str, address_type: str, allocated: EndpointZoneInfo) -> None:
        """Upstream: SetHints"""
        self.endpoints_by_service.setdefault(service_key, {})[address_type] = allocated
        self.hints_populated_by_service.add(service_key)

    def remove_hints(self, service_key: str, address_type: str) -> None:
        """Upstream: RemoveHints"""
        by_type = self.endpoints_by_service.get(service_key)
        if by_type is not None:
            by_type.pop(address_type, None)
            if not by_type:
                del self.endpoints_by_service[service_key]
        self.hints_populated_by_service.discard(service_key)

    def has_populated_hints(self, service_key: str) -> bool:
        return service_key in self.hints_populated_by_service

    def set_nodes(self, nodes: list[core_v1.Node]) -> None:
        """The zones' CPU ratios from the ready nodes; one node without a zone or allocatable
        CPU makes the information insufficient. Upstream: SetNodes"""
        cpu_by_zone: dict[str, int] = {}
        sufficient = True
        total = 0
        for node in nodes:
            node_labels = node.metadata.labels or {}
            if has_excluded_labels(node_labels) or not is_node_ready(node):
                continue
            cpu = _allocatable_milli_cpu(node)
            zone = node_labels.get(LABEL_TOPOLOGY_ZONE, "")
            if not zone or cpu == 0:
                cpu_by_zone, sufficient = {}, False
                log.info("Can't get CPU or zone information for node", extra={"node": node.metadata.name})
                break
            total += cpu
            cpu_by_zone[zone] = cpu_by_zone.get(zone, 0) + cpu
        if total == 0 or not sufficient or len(cpu_by_zone) < 2:
            self.sufficient_node_info, self.cpu_by_zone, self.cpu_ratios_by_zone = False, None, None
            return
        self.sufficient_node_info, self.cpu_by_zone = True, cpu_by_zone
        self.cpu_ratios_by_zone = {zone: cpu / total for zone, cpu in cpu_by_zone.items()}

    def get_allocations(self, num_endpoints: int) -> tuple[dict[str, Allocation] | None, EventBuilder | None]:
        """Each zone's minimum, maximum and desired number of endpoints, or why there can be
        none. Upstream: getAllocations"""
        ratios = self.cpu_ratios_by_zone
        if ratios is None:
            return None, EventBuilder("Warning", REASON_DISABLED, INSUFFICIENT_NODE_INFO)
        if len(ratios) < 2:
            return None, EventBuilder("Warning", REASON_DISABLED, NODES_READY_IN_ONE_ZONE_ONLY)
        if len(ratios) > num_endpoints:
            return None, EventBuilder("Warning", REASON_DISABLED, f"{INSUFFICIENT_NUMBER_OF_ENDPOINTS} "
                                                                  f"({num_endpoints} endpoints, {len(ratios)} zones)")
        remaining, min_total = num_endpoints, 0
        allocations: dict[str, Allocation] = {}
        for zone in sorted(ratios):
            desired = ratios[zone] * num_endpoints
            minimum = math.ceil(desired * (1 / (1 + OVERLOAD_THRESHOLD)))
            allocations[zone] = Allocation(minimum, 0, max(desired, float(minimum)))
            min_total += minimum
            remaining -= minimum
            if remaining < 0:
                return None, EventBuilder("Warning", REASON_DISABLED, f"{MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD} "
                                                                      f"({num_endpoints} endpoints, {len(ratios)} zones)")
        for a in allocations.values():
            a.maximum = a.minimum + num_endpoints - min_total
        return allocations, None


def hints_enabled(annotations: dict[str, str] | None) -> bool:
    """topology-mode (or the deprecated topology-aware-hints) is Auto. Upstream: hintsEnabled"""
    annotations = annotations or {}
    val = annotations.get(ANNOTATION_TOPOLOGY_MODE)
    if val is None:
        val = annotations.get(DEPRECATED_ANNOTATION_TOPOLOGY_AWARE_HINTS)
    return val in ("Auto", "auto")


def remove_hints_from_slices(si: SliceInfo) -> tuple[list[Slice], list[Slice]]:
    """No hints on the slices being written; unchanged slices that had some are copied,
    cleared and written too. Upstream: RemoveHintsFromSlices"""
    for s in (*si.to_create, *si.to_update):
        for ep in s.endpoints or []:
            ep.hints = None
    still_unchanged = []
    for s in si.unchanged:
        if any(ep.hints is not None for ep in s.endpoints or []):
            s = s.deep_copy()                      # informer cache objects are never modified
            for ep in s.endpoints or []:
                ep.hints = None
            si.to_update.append(s)
        else:
            still_unchanged.append(s)
    si.unchanged = still_unchanged
    return si.to_create, si.to_update


def format_with_address_type(s: str, address_type: str) -> str:
    return f"{s}, addressType: {address_type}"


def redistribute_hints(slices: list[Slice], giving: dict[str, int], receiving: dict[str, int]) -> dict[str, int]:
    """Re-point ready endpoints of giving zones at receiving zones; the change per zone.
    Upstream: redistributeHints"""
    redistributions: dict[str, int] = {}
    for s in slices:
        for ep in s.endpoints or []:
            if not endpoint_ready(ep):
                continue
            if not giving or not receiving:
                return redistributions
            if not ep.zone:
                continue
            giving_zone = ep.zone
            if giving.get(giving_zone, 0) <= 0:
                continue
            for receiving_zone in sorted(receiving):
                if receiving[receiving_zone] <= 0:
                    continue
                ep.hints = _hint(receiving_zone)
                _take_one(giving, giving_zone)
                _take_one(receiving, receiving_zone)
                redistributions[receiving_zone] = redistributions.get(receiving_zone, 0) + 1
                redistributions[giving_zone] = redistributions.get(giving_zone, 0) - 1
                break
    return redistributions


def _take_one(counts: dict[str, int], zone: str) -> None:
    if counts[zone] == 1:
        del counts[zone]
    else:
        counts[zone] -= 1


def get_giving_and_receiving_zones(allocations: dict[str, Allocation], allocated: EndpointZoneInfo
                                   ) -> tuple[dict[str, int], dict[str, int]]:
    """How many endpoints each zone gives and receives. Upstream: getGivingAndReceivingZones"""
    giving_desired: dict[str, float] = {}
    receiving_desired: dict[str, float] = {}
    for zone in sorted(allocations):
        hints, target = allocated.get(zone, 0), allocations[zone].desired
        if hints > target:
            giving_desired[zone] = hints - target
        elif hints < target:
            receiving_desired[zone] = target - hints
    giving: dict[str, int] = {}
    receiving: dict[str, int] = {}
    while True:
        giving_zone, to_give = get_most(giving_desired)
        receiving_zone, to_receive = get_most(receiving_desired)
        if (not giving_zone or not receiving_zone or (to_give < 1.0 and to_receive < 1.0) or to_give < 0.5
                or to_receive < 0.5):
            break
        giving[giving_zone] = giving.get(giving_zone, 0) + 1
        giving_desired[giving_zone] -= 1
        receiving[receiving_zone] = receiving.get(receiving_zone, 0) + 1
        receiving_desired[receiving_zone] -= 1
    return giving, receiving


def get_most(zones: dict[str, float]) -> tuple[str, float]:
    """The zone with the greatest value (the first in sorted order on a tie). Upstream: getMost"""
    zone, num = "", 0.0
    for z in sorted(zones):
        if zones[z] > num:
            zone, num = z, zones[z]
    return zone, num


def get_hints_by_zone(s: Slice, allocated: EndpointZoneInfo, allocations: dict[str, Allocation]
                      ) -> EndpointZoneInfo | None:
    """The slice's hints per zone, or None when they must be redone: a ready endpoint without
    hints, a hint for a zone with no allocation, or more than a zone's maximum.
    Upstream: getHintsByZone"""
    by_zone: EndpointZoneInfo = {}
    for ep in s.endpoints or []:
        if not endpoint_ready(ep):
            continue
        if ep.hints is None or not ep.hints.for_zones:
            return None
        for fz in ep.hints.for_zones:
            if fz.name not in allocations:
                return None
            by_zone[fz.name or ""] = by_zone.get(fz.name or "", 0) + 1
    for zone, n in by_zone.items():
        if n + allocated.get(zone, 0) > allocations[zone].maximum:
            return None
    return by_zone


def service_overloaded(ezi: EndpointZoneInfo, zone_ratios: dict[str, float]) -> bool:
    """A zone has fewer endpoints than its share allows. Upstream: serviceOverloaded"""
    if not ezi:
        return False
    if not zone_ratios:
        return True
    total = float(sum(ezi.values()))
    for zone, ratio in zone_ratios.items():
        if zone not in ezi:
            return True
        if ezi[zone] < int(math.ceil(total * ratio * (1 / (1 + OVERLOAD_THRESHOLD)))):
            return True
    return False


def has_excluded_labels(node_labels: dict[str, str]) -> bool:
    return "node-role.kubernetes.io/control-plane" in node_labels or "node-role.kubernetes.io/master" in node_labels


def is_node_ready(node: core_v1.Node) -> bool:
    for c in (node.status.conditions if node.status else None) or []:
        if c.type == "Ready":
            return c.status == "True"
    return False


def num_ready_endpoints(endpoints: list[discovery_v1.Endpoint] | None) -> int:
    return sum(1 for ep in endpoints or [] if endpoint_ready(ep))


def endpoint_ready(ep: discovery_v1.Endpoint) -> bool:
    return bool(ep.conditions is not None and ep.conditions.ready)


def _hint(zone: str) -> discovery_v1.EndpointHints:
    return discovery_v1.EndpointHints(for_zones=[discovery_v1.ForZone(name=zone)])


def _allocatable_milli_cpu(node: core_v1.Node) -> int:
    cpu = ((node.status.allocatable if node.status else None) or {}).get("cpu")
    if cpu is None:
        return 0
    try:
        return quantity.parse(str(cpu)).milli_value()
    except (ValueError, TypeError):
        return 0
