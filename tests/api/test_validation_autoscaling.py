"""autoscaling/v2 HorizontalPodAutoscaler defaulting and validation (upstream's
pkg/apis/autoscaling/v2/defaults.go and validation.go, the main cases)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.defaulting import autoscaling as defaulting
from kubeplane.api.validation import autoscaling as v

REF = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}


def hpa(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "h", "namespace": "default"},
            "spec": {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 5, "metrics": [CPU], **spec}}


def msgs(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in v.validate_hpa(obj)]


def test_defaults_min_replicas_and_the_cpu_metric() -> None:
    obj = {"spec": {"scaleTargetRef": REF, "maxReplicas": 3}}
    defaulting.set_defaults_hpa(obj)
    assert obj["spec"]["minReplicas"] == 1 and obj["spec"]["metrics"] == [CPU]
    assert "behavior" not in obj["spec"]


def test_behavior_defaults_fill_every_unset_rule_field() -> None:
    obj = {"spec": {"maxReplicas": 3, "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}
    defaulting.set_defaults_hpa(obj)
    assert obj["spec"]["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"selectPolicy": "Max", "stabilizationWindowSeconds": 60,
                      "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}


def test_a_valid_hpa() -> None:
    assert msgs(hpa()) == []
    assert msgs(hpa(metrics=[{"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {
        "type": "AverageValue", "averageValue": "1k"}}}])) == []


@pytest.mark.parametrize("spec, expected", [
    ({"minReplicas": 0}, ["spec.minReplicas: Invalid value: 0: must be greater than or equal to 1"]),
    ({"maxReplicas": 0}, ["spec.maxReplicas: Invalid value: 0: must be greater than 0",
                          "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`"]),
    ({"scaleTargetRef": {"name": "web"}}, ["spec.scaleTargetRef.kind: Required value"]),
    ({"scaleTargetRef": {"kind": "Deployment", "name": "a/b"}},
     ["spec.scaleTargetRef.name: Invalid value: \"a/b\": may not contain '/'"]),
    ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                              "averageUtilization": 0}}}]},
     ["spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"]),
    ({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}]},
     ["spec.metrics[0].resource.target.averageUtilization: Required value: "
      "must set either a target raw value or a target utilization"]),
    ({"metrics": [{"type": "Resource"}]},
     ["spec.metrics[0].resource: Required value: must populate information for the given metric source"]),
    ({"metrics": [{"type": "Resource", "resource": {"name": "memory", "target": {
        "type": "AverageValue", "averageValue": "-1"}}}]},
     ['spec.metrics[0].resource.target.averageValue: Invalid value: "-1": must be positive']),
    ({"behavior": {"scaleUp": {"policies": []}}},
     ["spec.behavior.scaleUp.policies: Required value: must specify at least one Policy"]),
    ({"behavior": {"scaleDown": {"stabilizationWindowSeconds": 3601, "selectPolicy": "Most",
                                 "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}}},
     ["spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600",
      'spec.behavior.scaleDown.selectPolicy: Unsupported value: "Most": supported values: "Disabled", "Max", "Min"',
      "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
      "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800"]),
])
def test_hpa_errors(spec: dict[str, Any], expected: list[str]) -> None:
    assert msgs(hpa(**spec)) == expected
