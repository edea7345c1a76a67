"""policy/v1 PodDisruptionBudget, scheduling.k8s.io/v1 PriorityClass and node.k8s.io/v1
RuntimeClass defaulting and validation (upstream's validation.go tables, the main cases)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.defaulting import scheduling as defaulting
from kubeplane.api.validation import policy, scheduling


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def pdb(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "default"}, "spec": spec}


@pytest.mark.parametrize("spec", [{"minAvailable": 2}, {"minAvailable": "50%"}, {"maxUnavailable": "100%"},
                                  {"maxUnavailable": 0, "unhealthyPodEvictionPolicy": "AlwaysAllow"}])
def test_valid_pdbs(spec: dict[str, Any]) -> None:
    assert policy.validate_pdb(pdb(**spec, selector={"matchLabels": {"app": "a"}})) == []


@pytest.mark.parametrize("spec, expected", [
    ({"minAvailable": -1}, ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]),
    ({"maxUnavailable": "101%"}, ['spec.maxUnavailable: Invalid value: "101%": must not be greater than 100%']),
    ({"minAvailable": "1x"}, ["spec.minAvailable: Invalid value: \"1x\": a valid percent string must be a numeric "
                              "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation "
                              "is '[0-9]+%')"]),
    ({"unhealthyPodEvictionPolicy": "Sometimes"},
     ['spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", '
      '"IfHealthyBudget"']),
])
def test_pdb_errors(spec: dict[str, Any], expected: list[str]) -> None:
    assert msgs(policy.validate_pdb(pdb(**spec))) == expected


def test_pdb_min_and_max_cannot_both_be_set() -> None:
    [err] = policy.validate_pdb(pdb(minAvailable=1, maxUnavailable=1))
    assert err.field == "spec" and err.detail == "minAvailable and maxUnavailable cannot be both set"


def test_pdb_status_counts_are_nonnegative() -> None:
    old = {"metadata": {"name": "p", "namespace": "default", "resourceVersion": "1"}, "spec": {}}
    new = {**old, "status": {"disruptionsAllowed": -1}}
    assert msgs(policy.validate_pdb_status_update(new, old)) == [
        "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0"]


def pc(name: str = "high", **fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": "1"}, "value": 1000, **fields}


def test_priority_class_defaults_preemption_policy() -> None:
    obj = pc()
    defaulting.set_defaults_priority_class(obj)
    assert obj["preemptionPolicy"] == "PreemptLowerPriority"
    obj = pc(preemptionPolicy="Never")
    defaulting.set_defaults_priority_class(obj)
    assert obj["preemptionPolicy"] == "Never"


def test_priority_class_rules() -> None:
    assert scheduling.validate_priority_class(pc()) == []
    assert scheduling.validate_priority_class(pc("system-node-critical", value=2000001000)) == []
    assert msgs(scheduling.validate_priority_class(pc(value=1_000_000_001))) == [
        "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
    assert msgs(scheduling.validate_priority_class(pc("system-cluster-critical", value=5))) == [
        "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
        "error: value of system-cluster-critical PriorityClass must be 2000000000"]
    assert msgs(scheduling.validate_priority_class(pc(preemptionPolicy="Always"))) == [
        'preemptionPolicy: Unsupported value: "Always": supported values: "Never", "PreemptLowerPriority"']
    assert msgs(scheduling.validate_priority_class_update(pc(value=1), pc())) == [
        "value: Forbidden: may not be changed in an update."]
    assert msgs(scheduling.validate_priority_class_update(pc(preemptionPolicy="Never"),
                                                          pc(preemptionPolicy="PreemptLowerPriority"))) == [
        'preemptionPolicy: Invalid value: "Never": field is immutable']


def test_runtime_class_rules() -> None:
    rc = {"metadata": {"name": "gvisor", "resourceVersion": "1"}, "handler": "runsc"}
    assert scheduling.validate_runtime_class(rc) == []
    assert msgs(scheduling.validate_runtime_class({**rc, "handler": "Run_SC"}))[0].startswith(
        'handler: Invalid value: "Run_SC": a lowercase RFC 1123 label must consist of')
    assert msgs(scheduling.validate_runtime_class_update({**rc, "handler": "runc"}, rc)) == [
        'handler: Invalid value: "runc": field is immutable']


def test_runtime_class_overhead_and_scheduling() -> None:
    """Upstream: TestValidateOverhead / TestValidateScheduling (pkg/apis/node/validation)."""
    rc = {"metadata": {"name": "gvisor"}, "handler": "runsc",
          "overhead": {"podFixed": {"cpu": "250m", "memory": "120Mi"}},
          "scheduling": {"nodeSelector": {"runtime": "gvisor"},
                         "tolerations": [{"key": "runtime", "operator": "Equal", "value": "gvisor",
                                          "effect": "NoSchedule"}]}}
    assert scheduling.validate_runtime_class(rc) == []
    bad = {**rc, "overhead": {"podFixed": {"cpu": "-1"}},
           "scheduling": {"tolerations": [{"key": "k", "operator": "Exists", "value": "v"},
                                          {"key": "a", "operator": "Exists"}, {"key": "a", "operator": "Exists"}]}}
    assert msgs(scheduling.validate_runtime_class(bad)) == [
        'overhead.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        "scheduling.tolerations.tolerations[0].operator: Invalid value: \"v\": value must be empty when "
        "`operator` is 'Exists'",
        'scheduling.tolerations[2]: Duplicate value: {"Key":"a","Operator":"Exists","Value":"","Effect":"",'
        '"TolerationSeconds":null}']
