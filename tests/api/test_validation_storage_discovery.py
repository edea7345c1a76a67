"""Validation of the storage.k8s.io kinds and EndpointSlices: upstream's messages and paths."""
from __future__ import annotations

import copy
from typing import Any

from kubeplane.api.validation import discovery, storage

Obj = dict[str, Any]


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def _sc(**fields: Any) -> Obj:
    return {"metadata": {"name": "foo", "resourceVersion": "1"}, "provisioner": "kubernetes.io/foo-provisioner", "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate", **fields}


def test_storage_class() -> None:
    assert storage.validate_storage_class(_sc(parameters={"foo": "bar"})) == []
    assert _msgs(storage.validate_storage_class(_sc(provisioner=""))) == ["provisioner: Required value"]
    assert _msgs(storage.validate_storage_class(_sc(reclaimPolicy="Recycle"))) == [
        'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"']
    assert _msgs(storage.validate_storage_class(_sc(volumeBindingMode="Later"))) == [
        'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"']
    assert _msgs(storage.validate_storage_class(_sc(parameters={"": "v"}))) == [
        'parameters: Invalid value: "": field can not be empty.']
    old, new = _sc(parameters={"a": "1"}), _sc(parameters={"a": "2"}, provisioner="other", reclaimPolicy="Retain")
    assert _msgs(storage.validate_storage_class_update(new, old)) == [
        "parameters: Forbidden: updates to parameters are forbidden.",
        "provisioner: Forbidden: updates to provisioner are forbidden.",
        "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden."]


def _va(source: Obj) -> Obj:
    return {"metadata": {"name": "va", "resourceVersion": "1"}, "spec": {"attacher": "myattacher", "nodeName": "mynode", "source": source}}


def test_volume_attachment() -> None:
    assert storage.validate_volume_attachment(_va({"persistentVolumeName": "pv"})) == []
    assert _msgs(storage.validate_volume_attachment(_va({}))) == [
        "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"]
    assert _msgs(storage.validate_volume_attachment(_va({"persistentVolumeName": "pv"}) | {"spec": {
        "attacher": "", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}})) == ["spec.attacher: Required value"]
    old = _va({"persistentVolumeName": "pv"})
    new = copy.deepcopy(old)
    new["spec"]["nodeName"] = "other"
    assert [e.field for e in storage.validate_volume_attachment_update(new, old)] == ["spec"]


def test_csi_driver_and_node() -> None:
    driver: Obj = {"metadata": {"name": "io.kubernetes.storage.mock"},
                   "spec": {"attachRequired": True, "podInfoOnMount": False, "requiresRepublish": False,
                            "storageCapacity": False, "seLinuxMount": False, "volumeLifecycleModes": ["Persistent"]}}
    assert storage.validate_csi_driver(driver) == []
    bad = copy.deepcopy(driver)
    bad["metadata"]["name"] = "a/b"
    bad["spec"].pop("attachRequired")
    bad["spec"]["volumeLifecycleModes"] = ["no-such-mode"]
    assert _msgs(storage.validate_csi_driver(bad)) == [
        'metadata.name: Invalid value: "a/b": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        "spec.attachedRequired: Required value",
        'spec.volumeLifecycleModes: Unsupported value: "no-such-mode": supported values: "Ephemeral", "Persistent"']
    changed = copy.deepcopy(driver)
    changed["metadata"]["resourceVersion"] = driver["metadata"]["resourceVersion"] = "1"
    changed["spec"].update(attachRequired=False, podInfoOnMount=True)
    assert _msgs(storage.validate_csi_driver_update(changed, driver)) == [
        "spec.attachedRequired: Invalid value: false: field is immutable"]
    node = {"metadata": {"name": "n"}, "spec": {"drivers": [{"name": "io.kubernetes.storage.csi.driver", "nodeID": ""},
                                                            {"name": "io.kubernetes.storage.csi.driver", "nodeID": "x"}]}}
    assert _msgs(storage.validate_csi_node(node)) == [
        "spec.drivers[0].nodeID: Required value",
        'spec.drivers[1].name: Duplicate value: "io.kubernetes.storage.csi.driver"']


def test_capacity_and_attributes_class() -> None:
    cap = {"metadata": {"name": "c", "namespace": "ns"}, "storageClassName": "sc", "capacity": "-1Gi"}
    assert _msgs(storage.validate_csi_storage_capacity(cap)) == [
        'capacity: Invalid value: "-1Gi": must be greater than or equal to 0']
    vac = {"metadata": {"name": "gold", "resourceVersion": "1"}, "driverName": "csi.example.com", "parameters": {"iops": "100"}}
    assert storage.validate_volume_attributes_class(vac) == []
    changed = {**vac, "parameters": {"iops": "200"}}
    assert _msgs(storage.validate_volume_attributes_class_update(changed, vac)) == [
        "parameters: Forbidden: updates to parameters are forbidden."]


def _eps(**fields: Any) -> Obj:
    return {"metadata": {"name": "s", "namespace": "ns", "resourceVersion": "1"}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.1.2.3"]}], "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
            **fields}


def test_endpoint_slice() -> None:
    assert discovery.validate_endpoint_slice(_eps()) == []
    assert _msgs(discovery.validate_endpoint_slice(_eps(addressType="IP"))) == [
        'addressType: Unsupported value: "IP": supported values: "FQDN", "IPv4", "IPv6"']
    assert _msgs(discovery.validate_endpoint_slice(_eps(endpoints=[{"addresses": []}, {"addresses": ["2001:db8::1"]}]))) == [
        "endpoints[0].addresses: Required value: must contain at least 1 address",
        'endpoints[1].addresses[0]: Invalid value: "2001:db8::1": must be an IPv4 address']
    ports = [{"name": "a", "protocol": "TCP"}, {"name": "a", "protocol": "TCP"}, {"name": "b"}]
    assert _msgs(discovery.validate_endpoint_slice(_eps(ports=ports))) == [
        'ports[1].name: Duplicate value: "a"', "ports[2].protocol: Required value"]
    assert _msgs(discovery.validate_endpoint_slice_update(_eps(addressType="IPv6", endpoints=[]), _eps())) == [
        'addressType: Invalid value: "IPv6": field is immutable']


def _topology(*exprs: Obj) -> Obj:
    return {"matchLabelExpressions": list(exprs)}


def test_storage_class_allowed_topologies() -> None:
    """Upstream: TestValidateAllowedTopologies's cases."""
    zone = {"key": "topology.kubernetes.io/zone", "values": ["zone1", "zone2"]}
    assert storage.validate_storage_class(_sc(allowedTopologies=[_topology(zone)])) == []
    assert storage.validate_storage_class(_sc(allowedTopologies=[_topology()])) == []   # empty terms are allowed
    assert _msgs(storage.validate_storage_class(_sc(allowedTopologies=[_topology({"key": "z", "values": []})]))) == [
        "allowedTopologies[0].matchLabelExpressions[0].values: Required value"]
    assert _msgs(storage.validate_storage_class(_sc(allowedTopologies=[
        _topology({"key": "z", "values": ["a", "a"]}, {"key": "z", "values": ["b"]})]))) == [
        'allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: "a"',
        'allowedTopologies[0].matchLabelExpressions[1].key: Duplicate value: "z"']
    assert _msgs(storage.validate_storage_class(_sc(allowedTopologies=[_topology({"key": "-k", "values": ["a"]})]))) \
        == ['allowedTopologies[0].matchLabelExpressions[0].key: Invalid value: "-k": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]
    reordered = {"key": "topology.kubernetes.io/zone", "values": ["zone2", "zone1"]}
    assert _msgs(storage.validate_storage_class(_sc(allowedTopologies=[_topology(zone), _topology(reordered)]))) == [
        'allowedTopologies[1].matchLabelExpressions: Duplicate value: ""']


def test_endpoint_slice_hints() -> None:
    """Upstream: validateHints (TestValidateEndpointSlice's hints cases)."""
    def hints(**h: Any) -> Obj:
        return _eps(endpoints=[{"addresses": ["10.1.2.3"], "hints": h}])
    assert discovery.validate_endpoint_slice(hints(forZones=[{"name": "zone-a"}], forNodes=[{"name": "node-1"}])) == []
    assert _msgs(discovery.validate_endpoint_slice(hints(forZones=[{"name": "zone-a"}, {"name": "zone-a"}]))) == [
        'endpoints[0].hints.forZones[1].name: Duplicate value: "zone-a"']
    assert _msgs(discovery.validate_endpoint_slice(hints(forZones=[{"name": f"z{i}"} for i in range(9)]))) == [
        "endpoints[0].hints.forZones: Too many: 9: must have at most 8 items"]
    assert _msgs(discovery.validate_endpoint_slice(hints(forNodes=[{"name": "Node_1"}])))[0].startswith(
        'endpoints[0].hints.forNodes[0].name: Invalid value: "Node_1": a lowercase RFC 1123 subdomain')


def test_csi_driver_node_allocatable_update_period() -> None:
    """Upstream: validateNodeAllocatableUpdatePeriodSeconds."""
    driver: Obj = {"metadata": {"name": "io.kubernetes.storage.mock"},
                   "spec": {"attachRequired": True, "podInfoOnMount": False, "requiresRepublish": False,
                            "storageCapacity": False, "seLinuxMount": False, "nodeAllocatableUpdatePeriodSeconds": 10}}
    assert storage.validate_csi_driver(driver) == []
    driver["spec"]["nodeAllocatableUpdatePeriodSeconds"] = 9
    assert _msgs(storage.validate_csi_driver(driver)) == [
        "spec.nodeAllocatableUpdatePeriodSeconds: Invalid value: 9: must be greater than or equal to 10 seconds"]
