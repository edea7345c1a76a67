"""core/v1 <-> events.k8s.io/v1 Event conversion (upstream pkg/apis/events/v1/conversion.go)."""
from __future__ import annotations

import copy

import pytest

from kubeplane.api.conversion import event_core_to_events_v1, event_events_v1_to_core

META = {"name": "nginx.17a", "namespace": "default", "uid": "u-1", "resourceVersion": "42",
        "creationTimestamp": "2024-05-01T10:00:00Z"}
POD_REF = {"kind": "Pod", "namespace": "default", "name": "nginx-1", "uid": "p-1",
           "apiVersion": "v1", "resourceVersion": "7", "fieldPath": "spec.containers{nginx}"}
NODE_REF = {"kind": "Node", "name": "node-1", "uid": "n-1", "apiVersion": "v1"}

# Every field set, in both shapes; each is the other's conversion.
FULL_CORE = {
    "kind": "Event", "apiVersion": "v1", "metadata": META,
    "involvedObject": POD_REF,
    "reason": "Pulled", "message": "Container image \"nginx\" already present",
    "source": {"component": "kubelet", "host": "node-1"},
    "firstTimestamp": "2024-05-01T10:00:00Z", "lastTimestamp": "2024-05-01T10:05:00Z",
    "count": 3, "type": "Normal",
    "eventTime": "2024-05-01T10:00:00.123456Z",
    "series": {"count": 3, "lastObservedTime": "2024-05-01T10:05:00.000001Z"},
    "action": "Pulling", "related": NODE_REF,
    "reportingComponent": "kubelet", "reportingInstance": "node-1",
}
FULL_EVENTS = {
    "kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": META,
    "eventTime": "2024-05-01T10:00:00.123456Z",
    "series": {"count": 3, "lastObservedTime": "2024-05-01T10:05:00.000001Z"},
    "reportingController": "kubelet", "reportingInstance": "node-1",
    "action": "Pulling", "reason": "Pulled",
    "regarding": POD_REF, "related": NODE_REF,
    "note": "Container image \"nginx\" already present", "type": "Normal",
    "deprecatedSource": {"component": "kubelet", "host": "node-1"},
    "deprecatedFirstTimestamp": "2024-05-01T10:00:00Z",
    "deprecatedLastTimestamp": "2024-05-01T10:05:00Z",
    "deprecatedCount": 3,
}


def test_core_to_events_maps_every_field() -> None:
    assert event_core_to_events_v1(FULL_CORE) == FULL_EVENTS


def test_events_to_core_maps_every_field() -> None:
    assert event_events_v1_to_core(FULL_EVENTS) == FULL_CORE


def test_reporting_controller_uses_core_json_name_reporting_component() -> None:
    core = event_events_v1_to_core({"reportingController": "deployment-controller"})
    assert core["reportingComponent"] == "deployment-controller"
    assert "reportingController" not in core


def test_conversion_does_not_mutate_input() -> None:
    before = copy.deepcopy(FULL_CORE)
    event_core_to_events_v1(FULL_CORE)
    assert FULL_CORE == before


# What an old-style recorder (client-go tools/record) writes through core/v1.
SPARSE_CORE = {"kind": "Event", "apiVersion": "v1", "metadata": META,
               "involvedObject": {"kind": "Deployment", "name": "nginx", "namespace": "default"},
               "reason": "ScalingReplicaSet", "message": "Scaled up replica set nginx-5d8 from 0 to 3",
               "source": {"component": "deployment-controller"},
               "firstTimestamp": "2024-05-01T10:00:00Z", "lastTimestamp": "2024-05-01T10:00:00Z",
               "count": 1, "type": "Normal"}
# What a new-style recorder (client-go tools/events, e.g. the scheduler) writes.
SPARSE_EVENTS = {"kind": "Event", "apiVersion": "events.k8s.io/v1", "metadata": META,
                 "eventTime": "2024-05-01T10:00:00.000000Z",
                 "reportingController": "default-scheduler", "reportingInstance": "sched-1",
                 "action": "Binding", "reason": "Scheduled",
                 "regarding": {"kind": "Pod", "name": "nginx-1", "namespace": "default"},
                 "note": "Successfully assigned default/nginx-1 to node-1", "type": "Normal"}


def test_sparse_core_gets_upstream_json_shape_in_events_v1() -> None:
    ev = event_core_to_events_v1(SPARSE_CORE)
    # eventTime has no omitempty upstream: a core event without it reads back as null.
    assert ev["eventTime"] is None
    assert ev["regarding"] == SPARSE_CORE["involvedObject"]
    assert ev["note"] == SPARSE_CORE["message"]
    assert ev["deprecatedSource"] == {"component": "deployment-controller"}
    assert ev["deprecatedCount"] == 1
    assert "reportingController" not in ev and "series" not in ev and "related" not in ev


def test_sparse_events_v1_gets_upstream_json_shape_in_core() -> None:
    core = event_events_v1_to_core(SPARSE_EVENTS)
    assert core["source"] == {}
    assert core["firstTimestamp"] is None and core["lastTimestamp"] is None
    assert "count" not in core
    assert core["reportingComponent"] == "default-scheduler"
    assert core["reportingInstance"] == "sched-1"
    assert core["message"] == SPARSE_EVENTS["note"]


@pytest.mark.parametrize("core", [FULL_CORE, SPARSE_CORE], ids=["full", "sparse"])
def test_round_trip_from_core(core: dict) -> None:
    once = event_events_v1_to_core(event_core_to_events_v1(core))
    for key, value in core.items():
        assert once[key] == value, key
    # Normalised once, the round trip is exact.
    assert event_events_v1_to_core(event_core_to_events_v1(once)) == once


@pytest.mark.parametrize("ev", [FULL_EVENTS, SPARSE_EVENTS], ids=["full", "sparse"])
def test_round_trip_from_events_v1(ev: dict) -> None:
    once = event_core_to_events_v1(event_events_v1_to_core(ev))
    for key, value in ev.items():
        assert once[key] == value, key
    assert event_core_to_events_v1(event_events_v1_to_core(once)) == once


def test_series_shapes_follow_each_apis_omitempty() -> None:
    # events.k8s.io/v1 EventSeries fields are required; core/v1's are omitempty.
    ev = event_core_to_events_v1({"series": {"lastObservedTime": "2024-05-01T10:00:00.000000Z"}})
    assert ev["series"] == {"count": 0, "lastObservedTime": "2024-05-01T10:00:00.000000Z"}
    core = event_events_v1_to_core({"series": {"count": 0, "lastObservedTime": None}})
    assert core["series"] == {"lastObservedTime": None}
