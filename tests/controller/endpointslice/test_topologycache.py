"""Topology Aware Routing: upstream's topologycache_test.go tables (TestAddHints, TestSetNodes)
as facts, and the controller adding zone hints to a Service annotated topology-mode: Auto."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import core_v1, discovery_v1
from kubeplane.controller.endpointslice import topologycache as tc

A, B, C = "zone-a", "zone-b", "zone-c"


def ep(address: str, zone: str | None, ready: bool | None = True, hint: str | None = None) -> discovery_v1.Endpoint:
    conditions = discovery_v1.EndpointConditions(ready=ready)
    hints = discovery_v1.EndpointHints(for_zones=[discovery_v1.ForZone(name=hint)]) if hint else None
    return discovery_v1.Endpoint(addresses=[address], zone=zone, conditions=conditions, hints=hints)


def sl(*endpoints: discovery_v1.Endpoint, name: str | None = None) -> discovery_v1.EndpointSlice:
    from kubeplane.api.types import meta_v1
    return discovery_v1.EndpointSlice(metadata=meta_v1.ObjectMeta(name=name), address_type="IPv4",
                                      endpoints=list(endpoints))


def hints_of(slices: list[discovery_v1.EndpointSlice]) -> list[list[tuple[str, str | None]]]:
    return [[(e.addresses[0], e.hints.for_zones[0].name if e.hints else None) for e in s.endpoints or []]
            for s in slices]


# (name, cpu ratios, to create, to update, expected hints to create, to update, zone counts, event reason+message)
ADD_HINTS: list[tuple[str, dict[str, float] | None, list[Any], list[Any], list[Any], list[Any],
                      dict[str, int] | None, tuple[str, str]]] = [
    ("empty", None, [], [], [], [], None, ("TopologyAwareHintsDisabled", tc.INSUFFICIENT_NODE_INFO)),
    ("slice to create, no zone ratios", None, [sl(ep("10.1.2.3", A))], [], [[("10.1.2.3", None)]], [], None,
     ("TopologyAwareHintsDisabled", tc.INSUFFICIENT_NODE_INFO)),
    ("slice to create with 2 endpoints, zone ratios require 3", {A: 0.3, B: 0.4, C: 0.3},
     [sl(ep("10.1.2.3", A), ep("10.1.2.4", B))], [], [[("10.1.2.3", None), ("10.1.2.4", None)]], [], None,
     ("TopologyAwareHintsDisabled", tc.INSUFFICIENT_NUMBER_OF_ENDPOINTS)),
    ("slice to create with 2 endpoints, zone ratios only require 2", {A: 0.45, B: 0.55},
     [sl(ep("10.1.2.3", A), ep("10.1.2.4", B))], [], [[("10.1.2.3", A), ("10.1.2.4", B)]], [], {A: 1, B: 1},
     ("TopologyAwareHintsEnabled", tc.TOPOLOGY_AWARE_HINTS_ENABLED)),
    ("slice to create with 2 ready, 1 unready, 1 unknown endpoints, zone ratios only require 2", {A: 0.45, B: 0.55},
     [sl(ep("10.1.2.3", A), ep("10.1.2.4", B), ep("10.1.2.5", B, False), ep("10.1.2.6", B, None))], [],
     [[("10.1.2.3", A), ("10.1.2.4", B), ("10.1.2.5", None), ("10.1.2.6", None)]], [], {A: 1, B: 1},
     ("TopologyAwareHintsEnabled", tc.TOPOLOGY_AWARE_HINTS_ENABLED)),
    ("slices to create and update within 3 zone threshold", {A: 0.35, B: 0.35, C: 0.30},
     [sl(ep("10.1.2.3", A), ep("10.1.2.4", B)), sl(ep("10.1.3.3", C), ep("10.1.3.4", C), ep("10.1.3.4", A))],
     [sl(ep("10.2.2.3", A), ep("10.2.2.4", A)), sl(ep("10.2.3.3", B), ep("10.2.3.4", C), ep("10.2.3.4", A))],
     [[("10.1.2.3", B), ("10.1.2.4", B)], [("10.1.3.3", C), ("10.1.3.4", C), ("10.1.3.4", A)]],
     [[("10.2.2.3", A), ("10.2.2.4", A)], [("10.2.3.3", B), ("10.2.3.4", C), ("10.2.3.4", A)]],
     {A: 4, B: 3, C: 3}, ("TopologyAwareHintsEnabled", tc.TOPOLOGY_AWARE_HINTS_ENABLED)),
]


@pytest.mark.parametrize("name,ratios,to_create,to_update,want_create,want_update,want_zones,want_event", ADD_HINTS,
                         ids=[c[0] for c in ADD_HINTS])
def test_add_hints(name: str, ratios: dict[str, float] | None, to_create: list[Any], to_update: list[Any],
                   want_create: list[Any], want_update: list[Any], want_zones: dict[str, int] | None,
                   want_event: tuple[str, str]) -> None:
    cache = tc.TopologyCache(cpu_ratios_by_zone=ratios)
    si = tc.SliceInfo("ns/svc", "IPv4", to_create, to_update, [])
    created, updated, events = cache.add_hints(si)
    assert hints_of(created) == want_create
    assert hints_of(updated) == want_update
    [event] = events
    assert (event.reason, event.event_type == "Warning") == (want_event[0], want_event[0].endswith("Disabled"))
    assert event.message.startswith(want_event[1]) and event.message.endswith(", addressType: IPv4")
    if want_zones is None:
        assert "ns/svc" not in cache.endpoints_by_service
    else:
        assert cache.endpoints_by_service["ns/svc"] == {"IPv4": want_zones}


def test_unchanged_slices_keep_valid_hints_and_redo_stale_ones() -> None:
    """getAllocatedHintsByZone: an unchanged slice whose hints fit stays unchanged (no write);
    one hinting a zone that has no allocation any more is copied into the updates."""
    cache = tc.TopologyCache(cpu_ratios_by_zone={A: 0.5, B: 0.5})
    good = sl(ep("10.0.0.1", A, hint=A), ep("10.0.0.2", B, hint=B), name="good")
    stale = sl(ep("10.0.0.3", A, hint=C), ep("10.0.0.4", B, hint=B), name="stale")
    si = tc.SliceInfo("ns/svc", "IPv4", [], [], [good, stale])
    created, updated, events = cache.add_hints(si)
    assert si.unchanged == [good] and [s.metadata.name for s in updated] == ["stale"]
    assert updated[0] is not stale and stale.endpoints[0].hints.for_zones[0].name == C    # the cache's copy kept
    assert hints_of(updated) == [[("10.0.0.3", A), ("10.0.0.4", B)]]
    assert cache.endpoints_by_service["ns/svc"] == {"IPv4": {A: 2, B: 2}}
    assert [e.reason for e in events] == ["TopologyAwareHintsEnabled"]
    # the next sync: hints already populated, no second "enabled" event
    si = tc.SliceInfo("ns/svc", "IPv4", [], [], [good, updated[0]])
    assert cache.add_hints(si)[2] == []


def test_an_endpoint_without_a_zone_disables_hints_and_removes_them_everywhere() -> None:
    cache = tc.TopologyCache(cpu_ratios_by_zone={A: 0.5, B: 0.5})
    hinted = sl(ep("10.0.0.9", A, hint=A), name="hinted")
    si = tc.SliceInfo("ns/svc", "IPv4", [sl(ep("10.0.0.1", A), ep("10.0.0.3", B), ep("10.0.0.2", None))], [],
                      [hinted])
    created, updated, [event] = cache.add_hints(si)
    assert (event.reason, event.message) == ("TopologyAwareHintsDisabled", f"{tc.NO_ZONE_SPECIFIED}, addressType: IPv4")
    assert hints_of(created) == [[("10.0.0.1", None), ("10.0.0.3", None), ("10.0.0.2", None)]]
    assert hints_of(updated) == [[("10.0.0.9", None)]] and hinted.endpoints[0].hints is not None


def test_allocations_respect_the_overload_threshold() -> None:
    """getAllocations: 2:1 CPU, 6 endpoints -> a wants 4 (min ceil(4/1.2)=4), b 2 (min 2), max
    min + 0; a 5% zone with 10 endpoints cannot get its minimum of 1 without... it can: min 1."""
    cache = tc.TopologyCache(cpu_ratios_by_zone={A: 2 / 3, B: 1 / 3})
    allocations, event = cache.get_allocations(6)
    assert event is None and allocations is not None
    assert {z: (a.minimum, a.maximum) for z, a in allocations.items()} == {A: (4, 4), B: (2, 2)}
    cache = tc.TopologyCache(cpu_ratios_by_zone={A: 0.5, B: 0.45, C: 0.05})
    allocations, event = cache.get_allocations(3)
    assert allocations is None and event is not None
    assert event.message == f"{tc.MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD} (3 endpoints, 3 zones)"


def node(zone: str, cpu: str, ready: str = "True", node_labels: dict[str, str] | None = None) -> core_v1.Node:
    return types.from_dict({"apiVersion": "v1", "kind": "Node",
                            "metadata": {"name": f"n-{zone}-{cpu}-{ready}", "labels": {
                                **(node_labels or {}), **({tc.LABEL_TOPOLOGY_ZONE: zone} if zone else {})}},
                            "status": {"allocatable": {"cpu": cpu}, "conditions": [{"type": "Ready", "status": ready}]}},
                           core_v1.Node)


CP = {"node-role.kubernetes.io/control-plane": ""}
SET_NODES: list[tuple[str, list[core_v1.Node], bool, dict[str, int] | None, dict[str, float] | None]] = [
    ("empty", [], False, None, None),
    ("single node", [node(A, "1000m")], False, None, None),
    ("single zone", [node(A, "1000m"), node(A, "1000m")], False, None, None),
    ("2 zones", [node(A, "1000m"), node(B, "1000m")], True, {A: 1000, B: 1000}, {A: 0.5, B: 0.5}),
    ("2 zones, unready node in 1, ready node in 1", [node(A, "1000m", "False"), node(B, "1000m")], False, None, None),
    ("2 zones, control plane node in 1, ready node in 1", [node(A, "1000m"), node(B, "1000m", node_labels=CP)],
     False, None, None),
    ("2 zones, unready node in 1, ready node in 2", [node(A, "1000m"), node(B, "1000m"), node(B, "1000m", "False")],
     True, {A: 1000, B: 1000}, {A: 0.5, B: 0.5}),
    ("2 zones, control plane node in 1, ready node in 2",
     [node(A, "1000m"), node(B, "1000m"), node(B, "1000m", node_labels=CP)], True, {A: 1000, B: 1000},
     {A: 0.5, B: 0.5}),
    ("3 zones, 4 nodes in 1, 2 nodes in 1, 1 node in 1",
     [node(A, "1000m"), node(A, "1000m"), node(A, "1000m"), node(A, "2000m"), node(B, "3000m"), node(B, "1500m"),
      node(C, "500m")], True, {A: 5000, B: 4500, C: 500}, {A: 0.5, B: 0.45, C: 0.05}),
    ("a node without a zone makes the information insufficient", [node(A, "1"), node(B, "1"), node("", "1")],
     False, None, None),
]


@pytest.mark.parametrize("name,nodes,sufficient,cpu,ratios", SET_NODES, ids=[c[0] for c in SET_NODES])
def test_set_nodes(name: str, nodes: list[core_v1.Node], sufficient: bool, cpu: dict[str, int] | None,
                   ratios: dict[str, float] | None) -> None:
    cache = tc.TopologyCache()
    cache.set_nodes(nodes)
    assert (cache.sufficient_node_info, cache.cpu_by_zone, cache.cpu_ratios_by_zone) == (sufficient, cpu, ratios)


def test_overloaded_services_are_found_after_nodes_change() -> None:
    """serviceOverloaded: hints of 1:1 set for zones a and b, then b's CPU grows to 3:1: b's
    single endpoint is below its minimum (ceil(2 * 0.75 / 1.2) = 2)."""
    cache = tc.TopologyCache()
    cache.set_nodes([node(A, "1"), node(B, "1")])
    cache.set_hints("ns/svc", "IPv4", {A: 1, B: 1})
    assert cache.get_overloaded_services() == []
    cache.set_nodes([node(A, "1"), node(B, "3")])
    assert cache.get_overloaded_services() == ["ns/svc"]


@pytest.mark.parametrize("annotations,enabled", [
    ({}, False), ({tc.ANNOTATION_TOPOLOGY_MODE: "Auto"}, True), ({tc.ANNOTATION_TOPOLOGY_MODE: "auto"}, True),
    ({tc.ANNOTATION_TOPOLOGY_MODE: "Disabled"}, False), ({tc.DEPRECATED_ANNOTATION_TOPOLOGY_AWARE_HINTS: "Auto"}, True),
    ({tc.ANNOTATION_TOPOLOGY_MODE: "", tc.DEPRECATED_ANNOTATION_TOPOLOGY_AWARE_HINTS: "Auto"}, False),
])
def test_hints_enabled(annotations: dict[str, str], enabled: bool) -> None:
    assert tc.hints_enabled(annotations) is enabled


async def test_the_controller_hints_zones_for_an_auto_service_and_removes_them_after() -> None:
    """Two zones of 2 CPUs each, two ready pods in each: each endpoint hinted for its own zone,
    a TopologyAwareHintsEnabled event; the annotation removed: hints gone, a Disabled Warning."""
    from prometheus_client import REGISTRY

    from test_endpointslice import new_fixture, pod, service
    f = await new_fixture()
    zones = {"node-1": A, "node-2": B}
    for name, zone in zones.items():
        f.add(types.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {tc.LABEL_TOPOLOGY_ZONE: zone}}, "status": {
            "allocatable": {"cpu": "2"}, "conditions": [{"type": "Ready", "status": "True"}]}}, core_v1.Node))
    f.esc.check_node_topology_distribution()                 # what the node informer's handlers do
    svc = service()
    svc.metadata.annotations = {tc.ANNOTATION_TOPOLOGY_MODE: "Auto"}
    f.add(svc, pod(1, node="node-1"), pod(2, node="node-1"), pod(3, node="node-2"), pod(4, node="node-2"))
    auto = REGISTRY.get_sample_value("endpoint_slice_controller_endpointslices_changed_per_sync_count",
                                     {"topology": "Auto", "traffic_distribution": ""}) or 0
    await f.sync()
    [s] = await f.slices()
    assert {e.target_ref.name: e.hints.for_zones[0].name for e in s.endpoints} == {
        "pod1": A, "pod2": A, "pod3": B, "pod4": B}
    assert f.recorder.events == ["Normal TopologyAwareHintsEnabled Topology Aware Hints has been enabled, "
                                 "addressType: IPv4"]
    assert REGISTRY.get_sample_value("endpoint_slice_controller_endpointslices_changed_per_sync_count",
                                     {"topology": "Auto", "traffic_distribution": ""}) == auto + 1
    f.fake.clear_actions()
    await f.sync()
    assert f.writes() == []                                  # valid hints: the slice is left alone

    svc = service()                                          # the annotation removed
    f.add(svc)
    await f.sync()
    [s] = await f.slices()
    assert all(e.hints is None for e in s.endpoints)
    assert f.recorder.events[-1] == ("Warning TopologyAwareHintsDisabled Topology Aware Hints has been disabled, "
                                     "addressType: IPv4")


async def test_a_burst_of_node_events_makes_one_recomputation() -> None:
    from test_endpointslice import new_fixture
    f = await new_fixture()
    for name, zone in (("node-1", A), ("node-2", B)):
        f.add(types.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": name, "labels": {tc.LABEL_TOPOLOGY_ZONE: zone}}, "status": {
            "allocatable": {"cpu": "1"}, "conditions": [{"type": "Ready", "status": "True"}]}}, core_v1.Node))
    f.esc.node_topology_changed()
    pending = f.esc._topology_check
    f.esc.node_topology_changed()
    f.esc.node_topology_changed()
    assert pending is not None and f.esc._topology_check is pending      # one timer for the burst
    assert f.esc.topology_cache.cpu_ratios_by_zone == {}                  # not yet computed
    pending.cancel()
    f.esc._run_topology_check()                                           # what the timer runs
    assert f.esc.topology_cache.cpu_ratios_by_zone == {A: 0.5, B: 0.5} and f.esc._topology_check is None
