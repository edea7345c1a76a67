"""resource.k8s.io/v1 validation: upstream's messages and field paths (cases after
pkg/apis/resource/validation/validation_{resourceclaim,deviceclass,resourceslice,devicetaintrule}_test.go)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.defaulting import resource as defaulting
from kubeplane.api.validation import resource

Obj = dict[str, Any]
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def _claim(*requests: Obj, **devices: Any) -> Obj:
    claim = {"metadata": {"name": "claim", "namespace": "kube-system"},
             "spec": {"devices": {"requests": list(requests), **devices}}}
    defaulting.set_defaults_resource_claim(claim)
    return claim


def _req(name: str = "req-0", **exactly: Any) -> Obj:
    return {"name": name, "exactly": {"deviceClassName": "class", **exactly}}


def test_a_valid_claim_passes() -> None:
    claim = _claim(_req(selectors=[{"cel": {"expression": "true"}}]),
                   {"name": "req-1", "firstAvailable": [{"name": "sub-0", "deviceClassName": "class"}]},
                   constraints=[{"requests": ["req-0", "req-1/sub-0"], "matchAttribute": "dra.example.com/numa"}],
                   config=[{"requests": ["req-0"], "opaque": {"driver": "dra.example.com", "parameters": {"a": 1}}}])
    assert resource.validate_resource_claim(claim) == []


@pytest.mark.parametrize("claim, expected", [
    (_claim(_req(deviceClassName="")), ["spec.devices.requests[0].exactly.deviceClassName: Required value"]),
    (_claim(_req(name="Bad_Name")), [f'spec.devices.requests[0].name: Invalid value: "Bad_Name": {LABEL_MSG}']),
    (_claim({"name": "req-0"}),
     ["spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"]),
    (_claim({**_req(), "firstAvailable": [{"name": "s", "deviceClassName": "c"}]}),
     ["spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, "
      "but multiple fields are set"]),
    (_claim(_req(), _req()), ['spec.devices.requests[1]: Duplicate value: "req-0"']),
    (_claim(*[_req(f"r-{i}") for i in range(33)]),
     ["spec.devices.requests: Too many: 33: must have at most 32 items"]),
    (_claim(_req(allocationMode="All", count=2)),
     ["spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"]),
    (_claim(_req(allocationMode="ExactCount", count=-1)),
     ["spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"]),
    (_claim(_req(allocationMode="Some")),
     ['spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", '
      '"ExactCount"']),
    (_claim(_req(selectors=[{}])), ["spec.devices.requests[0].exactly.selectors[0].cel: Required value"]),
    (_claim(_req(selectors=[{"cel": {"expression": "x" * (10 * 1024 + 1)}}])),
     ["spec.devices.requests[0].exactly.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"]),
    (_claim(_req(selectors=[{"cel": {"expression": "true"}}] * 33)),
     ["spec.devices.requests[0].exactly.selectors: Too many: 33: must have at most 32 items"]),
    (_claim(_req(tolerations=[{"key": "k", "operator": "Exists", "value": "v", "effect": "Sometimes"}])),
     ['spec.devices.requests[0].exactly.tolerations[0].value: Invalid value: "v": must be empty for operator '
      '`Exists`',
      'spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value: "Sometimes": supported values: '
      '"NoExecute", "NoSchedule", "None"']),
    (_claim({"name": "req-0", "firstAvailable": [{"name": "s", "deviceClassName": "c"}] * 2}),
     ['spec.devices.requests[0].firstAvailable[1]: Duplicate value: "s"']),
    (_claim(_req(), constraints=[{"requests": ["no-such"], "matchAttribute": "dra.example.com/numa"}]),
     ['spec.devices.constraints[0].requests[0]: Invalid value: "no-such": must be the name of a request in the '
      "claim or the name of a request and a subrequest separated by '/'"]),
    (_claim(_req(), constraints=[{"requests": ["req-0"]}]),
     ["spec.devices.constraints[0].matchAttribute: Required value"]),
    (_claim(_req(), constraints=[{"matchAttribute": "numa"}]),
     ['spec.devices.constraints[0].matchAttribute: Invalid value: "numa": a fully qualified name must be a domain '
      "and a name separated by a slash"]),
    (_claim(_req(), config=[{"requests": ["req-0"]}]), ["spec.devices.config[0].opaque: Required value"]),
    (_claim(_req(), config=[{"opaque": {"driver": "dra.example.com"}}]),
     ["spec.devices.config[0].opaque.parameters: Required value"]),
    (_claim(_req(), config=[{"opaque": {"driver": "dra.example.com", "parameters": [1]}}]),
     ['spec.devices.config[0].opaque.parameters: Invalid value: "<value omitted>": must be a valid JSON object']),
    (_claim(_req(), config=[{"opaque": {"driver": "dra.example.com", "parameters": {"x": "y" * 10240}}}]),
     ["spec.devices.config[0].opaque.parameters: Too long: may not be more than 10240 bytes"]),
])
def test_claim_errors(claim: Obj, expected: list[str]) -> None:
    assert _msgs(resource.validate_resource_claim(claim)) == expected


def test_claim_spec_is_immutable_and_template_metadata_is_labels_and_annotations() -> None:
    old = _claim(_req())
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["devices"]["requests"][0]["exactly"]["count"] = 2
    assert [e.field for e in resource.validate_resource_claim_update(new, old)] == ["spec"]
    template = {"metadata": {"name": "t", "namespace": "ns"},
                "spec": {"metadata": {"labels": {"a": "b"}, "name": "x"}, "spec": {"devices": {"requests": [_req()]}}}}
    defaulting.set_defaults_resource_claim_template(template)
    assert _msgs(resource.validate_resource_claim_template(template)) == [
        "spec.metadata.name: Forbidden: cannot be set"]


def test_claim_status() -> None:
    old = _claim(_req())
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    result = {"request": "req-0", "driver": "dra.example.com", "pool": "pool", "device": "dev-0"}
    new["status"] = {"allocation": {"devices": {"results": [result]}},
                     "reservedFor": [{"resource": "pods", "name": "p", "uid": "1"}],
                     "devices": [{"driver": "dra.example.com", "pool": "pool", "device": "dev-0"}]}
    assert resource.validate_resource_claim_status_update(new, old) == []
    bad = copy.deepcopy(new)
    bad["status"]["allocation"]["devices"]["results"][0]["request"] = "other"
    bad["status"]["devices"][0]["device"] = "dev-1"
    assert _msgs(resource.validate_resource_claim_status_update(bad, old)) == [
        'status.devices[0]: Invalid value: "dra.example.com/pool/dev-1": must be an allocated device in the claim',
        'status.allocation.devices.results[0].request: Invalid value: "other": must be the name of a request in the '
        "claim or the name of a request and a subrequest separated by '/'"]
    unallocated = copy.deepcopy(new)
    del unallocated["status"]["allocation"]
    unallocated["status"]["devices"] = []
    assert _msgs(resource.validate_resource_claim_status_update(unallocated, old)) == [
        "status.reservedFor: Forbidden: may not be specified when `allocated` is not set"]
    changed = copy.deepcopy(new)
    changed["status"]["allocation"]["devices"]["results"][0]["pool"] = "other"
    assert [e.field for e in resource.validate_resource_claim_status_update(changed, new)] == [
        "status.devices[0]", "status.allocation"]


def _class(**spec: Any) -> Obj:
    return {"metadata": {"name": "gpu.example.com"}, "spec": spec}


@pytest.mark.parametrize("dc, expected", [
    (_class(selectors=[{"cel": {"expression": 'device.driver == "x"'}}],
            config=[{"opaque": {"driver": "dra.example.com", "parameters": {}}}],
            extendedResourceName="example.com/gpu"), []),
    (_class(selectors=[{}]), ["spec.selectors[0].cel: Required value"]),
    (_class(config=[{"opaque": {"driver": "", "parameters": {}}}]), ["spec.config[0].opaque.driver: Required value"]),
    (_class(config=[{}] * 33), ["spec.config: Too many: 33: must have at most 32 items"]),
    (_class(extendedResourceName="gpu"),
     ['spec.extendedResourceName: Invalid value: "gpu": must be a valid extended resource name']),
    (_class(extendedResourceName="kubernetes.io/gpu"),
     ['spec.extendedResourceName: Invalid value: "kubernetes.io/gpu": must be a valid extended resource name']),
])
def test_device_class(dc: Obj, expected: list[str]) -> None:
    assert _msgs(resource.validate_device_class(dc)) == expected


def _slice(*devices: Obj, **spec: Any) -> Obj:
    base = {"driver": "dra.example.com", "pool": {"name": "pool", "resourceSliceCount": 1, "generation": 1},
            "nodeName": "worker-1", "devices": list(devices)}
    return {"metadata": {"name": "slice"}, "spec": {**base, **spec}}


def _dev(name: str = "dev-0", **fields: Any) -> Obj:
    return {"name": name, **fields}


def test_a_valid_slice_passes() -> None:
    dev = _dev(attributes={"model": {"string": "a100"}, "dra.example.com/version": {"version": "1.2.3-rc.1"}},
               capacity={"memory": {"value": "40Gi"}},
               taints=[{"key": "example.com/unhealthy", "effect": "NoSchedule"}],
               consumesCounters=[{"counterSet": "set", "counters": {"mem": {"value": "1Gi"}}}])
    assert resource.validate_resource_slice(_slice(dev)) == []
    counters = _slice(sharedCounters=[{"name": "set", "counters": {"mem": {"value": "8Gi"}}}])
    del counters["spec"]["devices"]
    assert resource.validate_resource_slice(counters) == []


@pytest.mark.parametrize("s, expected", [
    (_slice(_dev(), _dev()), ['spec.devices[1]: Duplicate value: "dev-0"']),
    (_slice(_dev("Dev")), [f'spec.devices[0].name: Invalid value: "Dev": {LABEL_MSG}']),
    (_slice(*[_dev(f"d-{i}") for i in range(129)]), ["spec.devices: Too many: 129: must have at most 128 items"]),
    (_slice(*[_dev(f"d-{i}", taints=[{"key": "k", "effect": "NoSchedule"}]) for i in range(65)]),
     ["spec.devices: Too many: 65: must have at most 64 items"]),
    (_slice(_dev(attributes={"a": {}})), ['spec.devices[0].attributes[a]: Invalid value: "": exactly one value must '
                                          'be specified']),
    (_slice(_dev(attributes={"a": {"int": 1, "bool": True}})),
     ['spec.devices[0].attributes[a]: Invalid value: {"int":1,"bool":true}: exactly one value must be specified']),
    (_slice(_dev(attributes={"a": {"version": "1.0"}})),
     ['spec.devices[0].attributes[a].version: Invalid value: "1.0": must be a string compatible with semver.org '
      'spec 2.0.0']),
    (_slice(_dev(attributes={"a": {"string": "x" * 65}})),
     ["spec.devices[0].attributes[a].string: Too long: may not be more than 64 bytes"]),
    (_slice(_dev(attributes={"1a": {"int": 1}})),
     ['spec.devices[0].attributes[1a]: Invalid value: "1a": a valid C identifier must start with alphabetic '
      "character or '_', followed by a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  "
      "or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"]),
    (_slice(_dev(attributes={"/a": {"int": 1}})),
     ['spec.devices[0].attributes[/a]: Invalid value: "": the domain must not be empty']),
    (_slice(_dev(attributes={f"a{i}": {"int": i} for i in range(33)})),
     ["spec.devices[0]: Invalid value: 33: the total number of attributes and capacities must not exceed 32"]),
    (_slice(_dev(capacity={"mem": {"value": "1Gi", "requestPolicy": {"default": "1Gi"}}})),
     ["spec.devices[0].capacity[mem].requestPolicy: Forbidden: allowMultipleAllocations must be true"]),
    (_slice(_dev(allowMultipleAllocations=True, capacity={"mem": {"value": "10", "requestPolicy": {
        "default": "3", "validRange": {"min": "2", "max": "10", "step": "4"}}}})),
     ['spec.devices[0].capacity[mem].requestPolicy.validRange.step: Invalid value: "3": value is not a multiple '
      "of a given step (4) from (2)"]),
    (_slice(_dev(allowMultipleAllocations=True, capacity={"mem": {"value": "10", "requestPolicy": {
        "default": "4", "validValues": ["8", "4", "20"]}}})),
     ['spec.devices[0].capacity[mem].requestPolicy.validValues[1]: Invalid value: "4": values must be sorted in '
      'ascending order',
      'spec.devices[0].capacity[mem].requestPolicy.validValues[2]: Invalid value: "20": option is larger than '
      'capacity value: 10']),
    (_slice(_dev(taints=[{"key": "k"}])), ["spec.devices[0].taints[0].effect: Required value"]),
    (_slice(_dev(consumesCounters=[{"counterSet": "set"}])),
     ["spec.devices[0].consumesCounters[0].counters: Required value"]),
    (_slice(_dev(nodeName="worker-1")),
     ["spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only be set if "
      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"]),
    (_slice(_dev(), nodeName=None, perDeviceNodeSelection=True),
     ["spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
      "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"]),
    (_slice(_dev(bindingConditions=["ready"])),
     ["spec.devices[0].bindingFailureConditions: Invalid value: []: bindingFailureConditions are required to use "
      "bindingConditions"]),
    (_slice(nodeName=None),
     ["spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
      "required"]),
    (_slice(allNodes=True),
     ['spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, `nodeSelector`, `allNodes`, '
      "`perDeviceNodeSelection` is required, but multiple fields are set"]),
    (_slice(nodeName=None, allNodes=False),
     ["spec.allNodes: Invalid value: false: must be either unset or set to true",
      "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
      "required"]),
    (_slice(nodeName=None, nodeSelector={"nodeSelectorTerms": [{}, {}]}),
     ["spec.nodeSelector.nodeSelectorTerms: Invalid value: [{},{}]: must have exactly one node selector term"]),
    (_slice(pool={"name": "", "resourceSliceCount": 0, "generation": -1}),
     ["spec.pool.name: Required value",
      "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
      "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero"]),
    (_slice(sharedCounters=[{"name": "set", "counters": {"c": {"value": "1"}}}]),
     ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed']),
    (_slice(sharedCounters=[{"name": f"s-{i}", "counters": {"c": {"value": "1"}}} for i in range(9)], devices=None),
     ["spec.sharedCounters: Too many: 9: must have at most 8 items"]),
])
def test_slice_errors(s: Obj, expected: list[str]) -> None:
    if s["spec"].get("devices") is None:
        s["spec"].pop("devices", None)
    for key in ("nodeName",):
        if s["spec"].get(key) is None:
            s["spec"].pop(key, None)
    assert _msgs(resource.validate_resource_slice(s)) == expected


def test_slice_pool_driver_and_node_are_immutable() -> None:
    old = _slice(_dev())
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["pool"]["name"] = "other"
    new["spec"]["driver"] = "other.example.com"
    assert [e.field for e in resource.validate_resource_slice_update(new, old)] == ["spec.pool.name", "spec.driver"]


def test_device_taint_rule() -> None:
    rule = {"metadata": {"name": "r"}, "spec": {"deviceSelector": {"driver": "dra.example.com", "pool": "p",
                                                                   "device": "Bad"},
                                                "taint": {"key": "example.com/x", "value": "-v-", "effect": "Evict"}}}
    assert [e.field for e in resource.validate_device_taint_rule(rule)] == [
        "spec.deviceSelector.device", "spec.taint.value", "spec.taint.effect"]
    rule["metadata"]["resourceVersion"] = "1"
    status = copy.deepcopy(rule)
    status["status"] = {"conditions": [{"type": f"T{i}"} for i in range(9)]}
    assert _msgs(resource.validate_device_taint_rule_status_update(status, rule)) == [
        "status.conditions: Too many: 9: must have at most 8 items"]
