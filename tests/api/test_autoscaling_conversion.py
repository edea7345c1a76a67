"""autoscaling/v1 <-> v2 HorizontalPodAutoscaler conversion (upstream's conversion.go and its
tests: pkg/apis/autoscaling/v1/conversion_test.go)."""
from __future__ import annotations

import json
from typing import Any

from kubeplane.api import autoscaling_conversion as conv

REF = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}


def hpa_v2(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "h", "namespace": "default"},
            "spec": {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5, **spec}}


def cpu(utilization: int) -> dict[str, Any]:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                         "averageUtilization": utilization}}}


def test_the_cpu_utilization_metric_is_the_v1_percentage_and_back() -> None:
    v1 = conv.hpa_v2_to_v1(hpa_v2(metrics=[cpu(55)]))
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5,
                          "targetCPUUtilizationPercentage": 55}
    assert v1["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    assert "annotations" not in v1["metadata"]
    back = conv.hpa_v1_to_v2(v1)
    assert back["apiVersion"] == "autoscaling/v2" and back["spec"]["metrics"] == [cpu(55)]


def test_metrics_v1_cannot_hold_travel_in_the_annotation_in_v1_s_shape() -> None:
    memory = {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                             "averageValue": "100Mi"}}}
    external = {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                                                 "target": {"type": "Value", "value": "30"}}}
    pods = {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue",
                                                                           "averageValue": "1k"}}}
    obj = {"type": "Object", "object": {"describedObject": {"kind": "Ingress", "name": "i",
                                                            "apiVersion": "networking.k8s.io/v1"},
                                        "metric": {"name": "hits"}, "target": {"type": "Value", "value": "10"}}}
    v1 = conv.hpa_v2_to_v1(hpa_v2(metrics=[memory, cpu(70), external, pods, obj]))
    raw = v1["metadata"]["annotations"][conv.METRIC_SPECS_ANNOTATION]
    assert json.loads(raw) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}},
        {"type": "External", "external": {"metricName": "queue", "metricSelector": {"matchLabels": {"q": "a"}},
                                          "targetValue": "30"}},
        {"type": "Pods", "pods": {"metricName": "rps", "targetAverageValue": "1k"}},
        {"type": "Object", "object": {"target": {"kind": "Ingress", "name": "i", "apiVersion": "networking.k8s.io/v1"},
                                      "metricName": "hits", "targetValue": "10"}}]
    assert " " not in raw                                       # encoding/json: compact
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 70
    back = conv.hpa_v1_to_v2(v1)
    # The annotation's metrics first, the spec's own CPU metric last (upstream's order).
    assert back["spec"]["metrics"] == [memory, external, pods, obj, cpu(70)]
    assert "annotations" not in back["metadata"]


def test_status_conditions_and_behavior_round_trip_through_annotations() -> None:
    v2 = hpa_v2(metrics=[cpu(50)], behavior={"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                                                         "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
                                             "scaleDown": {"selectPolicy": "Min", "policies": [
                                                 {"type": "Percent", "value": 10, "periodSeconds": 60}]}})
    v2["status"] = {"currentReplicas": 2, "desiredReplicas": 3,
                    "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {
                        "averageUtilization": 64, "averageValue": "120m"}}}],
                    "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale",
                                    "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
    v1 = conv.hpa_v2_to_v1(v2)
    assert v1["status"] == {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 64}
    annotations = v1["metadata"]["annotations"]
    behavior = json.loads(annotations[conv.BEHAVIOR_SPECS_ANNOTATION])
    assert behavior == {"ScaleUp": {"StabilizationWindowSeconds": 0, "SelectPolicy": "Max",
                                    "Policies": [{"Type": "Pods", "Value": 4, "PeriodSeconds": 15}], "Tolerance": None},
                        "ScaleDown": {"StabilizationWindowSeconds": None, "SelectPolicy": "Min",
                                      "Policies": [{"Type": "Percent", "Value": 10, "PeriodSeconds": 60}],
                                      "Tolerance": None}}
    assert json.loads(annotations[conv.METRIC_STATUSES_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 64,
                                          "currentAverageValue": "120m"}}]
    back = conv.hpa_v1_to_v2(v1)
    assert back["spec"]["behavior"] == v2["spec"]["behavior"]
    assert back["status"]["conditions"] == v2["status"]["conditions"]
    assert back["status"]["currentMetrics"] == v2["status"]["currentMetrics"]


def test_a_v1_object_without_metrics_gets_the_implicit_80_percent() -> None:
    v2 = conv.hpa_v1_to_v2({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
                            "metadata": {"name": "h"}, "spec": {"scaleTargetRef": REF, "maxReplicas": 3}})
    assert v2["spec"]["metrics"] == [cpu(80)]
    assert "minReplicas" not in v2["spec"]          # defaulting (v2's SetDefaults) fills it afterwards


def test_annotations_that_do_not_decode_are_dropped_not_fatal() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
          "metadata": {"name": "h", "annotations": {conv.METRIC_SPECS_ANNOTATION: "nope",
                                                    conv.BEHAVIOR_SPECS_ANNOTATION: "{}",
                                                    conv.CONDITIONS_ANNOTATION: "[1,",
                                                    "keep": "me"}},
          "spec": {"scaleTargetRef": REF, "maxReplicas": 3, "targetCPUUtilizationPercentage": 40}}
    v2 = conv.hpa_v1_to_v2(v1)
    assert v2["spec"]["metrics"] == [cpu(40)] and "behavior" not in v2["spec"]
    assert v2["metadata"]["annotations"] == {"keep": "me"}
    assert v1["metadata"]["annotations"]["keep"] == "me" and len(v1["metadata"]["annotations"]) == 4   # input untouched


def test_stale_round_trip_annotations_on_a_stored_object_are_not_shown_twice() -> None:
    v2 = hpa_v2(metrics=[cpu(50)])
    v2["metadata"]["annotations"] = {conv.METRIC_SPECS_ANNOTATION: "[]", "a": "b"}
    assert conv.hpa_v2_to_v1(v2)["metadata"]["annotations"] == {"a": "b"}
