"""flowcontrol.apiserver.k8s.io/v1 defaulting and validation (pkg/apis/flowcontrol/v1/defaults.go,
pkg/apis/flowcontrol/validation)."""
from __future__ import annotations

from typing import Any

from kubeplane.api.defaulting import flowcontrol as defaulting
from kubeplane.api.validation import flowcontrol as v


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_defaults() -> None:
    fs: dict[str, Any] = {"spec": {}}
    defaulting.set_defaults_flow_schema(fs)
    assert fs["spec"]["matchingPrecedence"] == 1000
    plc: dict[str, Any] = {"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}
    defaulting.set_defaults_priority_level_configuration(plc)
    limited = plc["spec"]["limited"]
    assert (limited["nominalConcurrencyShares"], limited["lendablePercent"]) == (30, 0)
    assert limited["limitResponse"]["queuing"] == {"handSize": 8, "queues": 64, "queueLengthLimit": 50}
    exempt: dict[str, Any] = {"spec": {"type": "Exempt", "exempt": {}}}
    defaulting.set_defaults_priority_level_configuration(exempt)
    assert exempt["spec"]["exempt"] == {"nominalConcurrencyShares": 0, "lendablePercent": 0}


def test_flow_schema() -> None:
    fs = {"metadata": {"name": "f"}, "spec": {"matchingPrecedence": 10001, "priorityLevelConfiguration": {},
                                              "distinguisherMethod": {"type": "ByPod"},
                                              "rules": [{"subjects": [{"kind": "Group"}]}]}}
    assert msgs(v.validate_flow_schema(fs)) == [
        "spec.matchingPrecedence: Invalid value: 10001: must be between 1 and 10000, inclusive",
        "spec.priorityLevelConfiguration.name: Required value: must reference a priority level",
        'spec.distinguisherMethod.type: Unsupported value: "ByPod": supported values: "ByNamespace", "ByUser"',
        "spec.rules[0].subjects[0].group: Required value: group is required when subject kind is 'Group'",
        "spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty",
    ]


def test_priority_level() -> None:
    plc = {"metadata": {"name": "p"}, "spec": {"type": "Limited"}}
    assert msgs(v.validate_priority_level_configuration(plc)) == [
        "spec.limited: Required value: must not be empty when type is Limited"]
    plc = {"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {"limitResponse": {
        "type": "Queue", "queuing": {"queues": 4, "handSize": 8, "queueLengthLimit": 50}}}}}
    assert msgs(v.validate_priority_level_configuration(plc)) == [
        "spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater than queues (4)"]
    assert msgs(v.validate_priority_level_configuration({"metadata": {"name": "p"}, "spec": {"type": "X"}})) == [
        'spec.type: Unsupported value: "X": supported values: "Exempt", "Limited"']
