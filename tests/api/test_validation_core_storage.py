"""Validation of PersistentVolumes/Claims, LimitRanges, ResourceQuotas and Endpoints: upstream's
messages and field paths (pkg/apis/core/validation/validation_test.go cases)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.validation import core

Obj = dict[str, Any]


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def _pv(**spec: Any) -> Obj:
    base = {"capacity": {"storage": "10G"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/foo", "type": ""},
            "persistentVolumeReclaimPolicy": "Retain", "volumeMode": "Filesystem"}
    return {"metadata": {"name": "pv1"}, "spec": {**base, **spec}}


def _pvc(**spec: Any) -> Obj:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10G"}}, "volumeMode": "Filesystem"}
    return {"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "1"}, "spec": {**base, **spec}, "status": {"phase": "Pending"}}


def test_a_valid_pv_passes() -> None:
    assert core.validate_persistent_volume(_pv()) == []


@pytest.mark.parametrize("spec, expected", [
    ({"accessModes": []}, "spec.accessModes: Required value"),
    ({"accessModes": ["fakemode"]}, 'spec.accessModes: Unsupported value: "fakemode": supported values: '
                                    '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'),
    ({"accessModes": ["ReadWriteOncePod", "ReadWriteMany"]},
     "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"),
    ({"capacity": {"storage": "0"}}, 'spec.capacity[storage]: Invalid value: "0": must be greater than zero'),
    ({"persistentVolumeReclaimPolicy": "fakeReclaimPolicy"},
     'spec.persistentVolumeReclaimPolicy: Unsupported value: "fakeReclaimPolicy": supported values: '
     '"Delete", "Recycle", "Retain"'),
    ({"hostPath": None}, "spec: Required value: must specify a volume type"),
    ({"nfs": {"server": "s", "path": "/p"}}, "spec.nfs: Forbidden: may not specify more than 1 volume type"),
    ({"hostPath": {"path": "/"}, "persistentVolumeReclaimPolicy": "Recycle"},
     "spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"),
    ({"volumeMode": "fakeVolumeMode"},
     'spec.volumeMode: Unsupported value: "fakeVolumeMode": supported values: "Block", "Filesystem"'),
    ({"storageClassName": "-invalid-"}, 'spec.storageClassName: Invalid value: "-invalid-": a lowercase RFC 1123'),
])
def test_pv_errors(spec: Obj, expected: str) -> None:
    msgs = _msgs(core.validate_persistent_volume(_pv(**spec)))
    assert any(m.startswith(expected) for m in msgs), msgs


def test_pv_source_and_volume_mode_are_immutable() -> None:
    old = _pv()
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["hostPath"]["path"] = "/bar"
    new["spec"]["volumeMode"] = "Block"
    new["spec"]["capacity"] = {"storage": "20G"}                  # capacity may change
    assert _msgs(core.validate_persistent_volume_update(new, old)) == [
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
        'volumeMode: Invalid value: "Block": field is immutable']


def test_a_valid_claim_passes() -> None:
    assert core.validate_persistent_volume_claim(_pvc()) == []


@pytest.mark.parametrize("spec, expected", [
    ({"accessModes": []}, "spec.accessModes: Required value: at least 1 access mode is required"),
    ({"resources": {"requests": {}}}, "spec.resources[storage]: Required value"),
    ({"resources": {"requests": {"storage": "-1"}}},
     'spec.resources[storage]: Invalid value: "-1": must be greater than zero'),
    ({"volumeMode": "x"}, 'spec.volumeMode: Unsupported value: "x": supported values: "Block", "Filesystem"'),
])
def test_claim_errors(spec: Obj, expected: str) -> None:
    assert expected in _msgs(core.validate_persistent_volume_claim(_pvc(**spec)))


def test_claim_spec_is_immutable_but_a_bound_claim_may_grow() -> None:
    old = _pvc()
    grown = copy.deepcopy(old)
    grown["spec"]["resources"]["requests"]["storage"] = "20G"
    assert _msgs(core.validate_persistent_volume_claim_update(grown, old)) == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
        "for bound claims"]
    old["status"] = {"phase": "Bound", "capacity": {"storage": "10G"}}
    grown["status"] = old["status"]
    assert core.validate_persistent_volume_claim_update(grown, old) == []
    shrunk = copy.deepcopy(old)
    shrunk["spec"]["resources"]["requests"]["storage"] = "5G"
    assert _msgs(core.validate_persistent_volume_claim_update(shrunk, old)) == [
        "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
    bound = copy.deepcopy(_pvc())
    bound["spec"]["volumeName"] = "pv1"                   # volumeName may be set once
    assert core.validate_persistent_volume_claim_update(bound, _pvc()) == []


def _lr(*limits: Obj) -> Obj:
    return {"metadata": {"name": "lr", "namespace": "ns"}, "spec": {"limits": list(limits)}}


def test_limit_range() -> None:
    ok = {"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "100m"}, "default": {"cpu": "500m"},
          "defaultRequest": {"cpu": "200m"}, "maxLimitRequestRatio": {"cpu": "5"}}
    assert core.validate_limit_range(_lr(ok)) == []
    assert _msgs(core.validate_limit_range(_lr({"type": "Container", "min": {"memory": "2Gi"},
                                                 "max": {"memory": "1Gi"}}))) == [
        'spec.limits[0].min[memory]: Invalid value: "2Gi": min value 2Gi is greater than max value 1Gi']
    assert _msgs(core.validate_limit_range(_lr({"type": "Pod", "default": {"cpu": "1"}}))) == [
        "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"]
    assert _msgs(core.validate_limit_range(_lr({"type": "PersistentVolumeClaim"}))) == [
        "spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither "
        "was provided"]
    assert 'spec.limits[1].type: Duplicate value: "Container"' in \
        _msgs(core.validate_limit_range(_lr({"type": "Container"}, {"type": "Container"})))
    assert _msgs(core.validate_limit_range(_lr({"type": "Unknown"}))) == [
        'spec.limits[0].type: Invalid value: "Unknown": must be a standard limit type or fully qualified']
    assert _msgs(core.validate_limit_range(_lr({"type": "Container", "maxLimitRequestRatio": {"cpu": "0.5"}}))) == [
        'spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "0.5": ratio 0.5 is less than 1']


def _quota(**spec: Any) -> Obj:
    return {"metadata": {"name": "q", "namespace": "ns", "resourceVersion": "1"}, "spec": spec}


def test_resource_quota() -> None:
    assert core.validate_resource_quota(_quota(hard={"cpu": "100", "pods": "10", "count/deployments.apps": "1",
                                                     "requests.storage": "10Gi"})) == []
    assert _msgs(core.validate_resource_quota(_quota(hard={"pods": "-1"}))) == [
        'spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0']
    assert _msgs(core.validate_resource_quota(_quota(hard={"pods": "1.5"}))) == [
        'spec.hard[pods]: Invalid value: "1.5": must be an integer']
    assert _msgs(core.validate_resource_quota(_quota(hard={"storage": "1"}))) == [
        'spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota']
    # Upstream: ValidateResourceQuotaResourceName appends its own error after validateResourceName's
    assert _msgs(core.validate_resource_quota(_quota(hard={"foo": "1"}))) == [
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified',
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota']
    assert _msgs(core.validate_resource_quota(_quota(hard={"limits.hugepages-2Mi": "1"}))) == [
        'spec.hard[limits.hugepages-2Mi]: Invalid value: "limits.hugepages-2Mi": must be a standard resource type or '
        'fully qualified',
        'spec.hard[limits.hugepages-2Mi]: Invalid value: "limits.hugepages-2Mi": must be a standard resource for quota']
    assert core.validate_resource_quota(_quota(hard={"requests.hugepages-2Mi": "1", "hugepages-1Gi": "1"})) == []
    assert _msgs(core.validate_resource_quota(_quota(hard={"pods": "1"}, scopes=["BestEffort", "NotBestEffort"]))) == [
        'spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: conflicting scopes']
    assert _msgs(core.validate_resource_quota(_quota(hard={"cpu": "1"}, scopes=["BestEffort"]))) == [
        'spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource']
    selector = {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In"}]}
    assert _msgs(core.validate_resource_quota(_quota(hard={"pods": "1"}, scopeSelector=selector))) == [
        "spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is "
        "'In' or 'NotIn' for scope selector"]


def test_resource_quota_scopes_are_immutable() -> None:
    old = _quota(hard={"pods": "1"}, scopes=["BestEffort"])
    new = _quota(hard={"pods": "1"}, scopes=["NotBestEffort"])
    assert _msgs(core.validate_resource_quota_update(new, old)) == [
        'spec.scopes: Invalid value: ["NotBestEffort"]: field is immutable']


def test_endpoints() -> None:
    ok = {"metadata": {"name": "e", "namespace": "ns"},
          "subsets": [{"addresses": [{"ip": "10.10.1.1"}], "ports": [{"name": "a", "port": 8675, "protocol": "TCP"}]}]}
    assert core.validate_endpoints(ok) == []
    bad = copy.deepcopy(ok)
    bad["subsets"] = [{"ports": [{"port": 80, "protocol": "TCP"}]},
                      {"addresses": [{"ip": "127.0.0.1"}, {"ip": "[2001:db8::1]"}],
                       "ports": [{"port": 0, "protocol": "HTTP"}, {"port": 1, "protocol": "TCP"}]}]
    assert _msgs(core.validate_endpoints(bad)) == [
        "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
        'subsets[1].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range '
        "(127.0.0.0/8, ::1/128)",
        'subsets[1].addresses[1].ip: Invalid value: "[2001:db8::1]": must be a valid IP address, '
        "(e.g. 10.9.8.7 or 2001:db8::ffff)",
        "subsets[1].ports[0].name: Required value",
        "subsets[1].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        'subsets[1].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"',
        "subsets[1].ports[1].name: Required value"]


# --- nodeAffinity, local volumes, data sources, claim update and status rules (upstream's
# TestValidatePersistentVolumeSpec, TestValidateVolumeNodeAffinityUpdate, TestValidatePersistentVolumeClaim
# (dataSource/dataSourceRef cases), TestValidatePersistentVolumeClaimUpdate, TestValidatePersistentVolumeClaimStatusUpdate)

def _affinity(*exprs: Obj, fields: tuple[Obj, ...] = ()) -> Obj:
    term: Obj = {"matchExpressions": list(exprs)}
    if fields:
        term["matchFields"] = list(fields)
    return {"required": {"nodeSelectorTerms": [term]}}


_LOCAL = {"hostPath": None, "local": {"path": "/foo"}}


@pytest.mark.parametrize("spec, expected", [
    ({**_LOCAL}, ["spec.nodeAffinity: Required value: Local volume requires node affinity"]),
    ({**_LOCAL, "nodeAffinity": {}}, ["spec.nodeAffinity.required: Required value: must specify required node "
                                      "constraints"]),
    ({"nodeAffinity": {"required": {"nodeSelectorTerms": []}}},
     ["spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node selector term"]),
    ({"nodeAffinity": _affinity({"key": "k", "operator": "In"})},
     ["spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be "
      "specified when `operator` is 'In' or 'NotIn'"]),
    ({"nodeAffinity": _affinity({"key": "k", "operator": "Exists", "values": ["v"]})},
     ["spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Forbidden: may not be "
      "specified when `operator` is 'Exists' or 'DoesNotExist'"]),
    ({"nodeAffinity": _affinity({"key": "k", "operator": "Gt", "values": ["1", "2"]})},
     ["spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be "
      "specified single value when `operator` is 'Lt' or 'Gt'"]),
    ({"nodeAffinity": _affinity({"key": "k", "operator": "Near", "values": ["v"]})},
     ['spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Near": '
      'not a valid selector operator']),
    ({"nodeAffinity": _affinity({"key": "k", "operator": "In", "values": ["-bad-"]})},
     ['spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "-bad-": '
      "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
      "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
      "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"]),
    ({"nodeAffinity": _affinity(fields=({"key": "spec.nodeName", "operator": "In", "values": ["n1"]},))},
     ['spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "spec.nodeName": '
      "not a valid field selector key"]),
    ({"nodeAffinity": _affinity(fields=({"key": "metadata.name", "operator": "In", "values": ["a", "b"]},))},
     ["spec.nodeAffinity.required.nodeSelectorTerms[0].matchFields[0].values: Required value: must be only "
      "one value when `operator` is 'In' or 'NotIn' for node field selector"]),
    ({"gcePersistentDisk": {}, "hostPath": None}, ["spec.persistentDisk.pdName: Required value"]),
])
def test_pv_node_affinity_and_sources(spec: Obj, expected: list[str]) -> None:
    assert _msgs(core.validate_persistent_volume(_pv(**spec))) == expected


def test_a_local_pv_with_node_affinity_passes() -> None:
    affinity = _affinity({"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]},
                         fields=({"key": "metadata.name", "operator": "In", "values": ["node-1"]},))
    assert core.validate_persistent_volume(_pv(**_LOCAL, nodeAffinity=affinity)) == []


def test_pv_volume_attributes_class_may_not_be_unset() -> None:
    old = _pv(hostPath=None, csi={"driver": "d", "volumeHandle": "h"}, volumeAttributesClassName="gold")
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["volumeAttributesClassName"] = "silver"
    assert core.validate_persistent_volume_update(new, old) == []
    del new["spec"]["volumeAttributesClassName"]
    assert _msgs(core.validate_persistent_volume_update(new, old)) == [
        "spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden"]


@pytest.mark.parametrize("spec, expected", [
    ({"dataSource": {"kind": "PersistentVolumeClaim", "name": "src"}}, []),
    ({"dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"}}, []),
    ({"dataSource": {"kind": "PersistentVolumeClaim"}}, ["spec.dataSource.name: Required value"]),
    ({"dataSource": {"name": "s"}},
     ["spec.dataSource.kind: Required value",
      'spec.dataSource: Invalid value: "": must be \'PersistentVolumeClaim\' when referencing the default apiGroup']),
    ({"dataSource": {"kind": "Pod", "name": "p"}},
     ['spec.dataSource: Invalid value: "Pod": must be \'PersistentVolumeClaim\' when referencing the default '
      'apiGroup']),
    ({"dataSource": {"apiGroup": "Bad_Group", "kind": "K", "name": "n"}},
     ['spec.dataSource.apiGroup: Invalid value: "Bad_Group": a lowercase RFC 1123 subdomain must consist of '
      "lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
      "(e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ({"dataSourceRef": {"apiGroup": "g.io", "kind": "K", "name": "n", "namespace": "Bad"}},
     ['spec.dataSourceRef.namespace: Invalid value: "Bad": a lowercase RFC 1123 label must consist of lower '
      "case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. "
      "'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ({"dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
      "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "b"}},
     ["spec: Invalid value: {}: must match dataSourceRef"]),
    ({"dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
      "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "a", "namespace": "other"}},
     ["spec: Invalid value: {}: may not be specified when dataSourceRef.namespace is specified"]),
])
def test_claim_data_sources(spec: Obj, expected: list[str]) -> None:
    assert _msgs(core.validate_persistent_volume_claim(_pvc(**spec))) == expected


def test_claim_storage_class_may_be_set_once_from_nil_or_the_annotation() -> None:
    old = _pvc()
    new = copy.deepcopy(old)
    new["spec"]["storageClassName"] = "fast"              # validateStorageClassUpgradeFromNil
    assert core.validate_persistent_volume_claim_update(new, old) == []
    changed = copy.deepcopy(new)
    changed["spec"]["storageClassName"] = "slow"
    assert _msgs(core.validate_persistent_volume_claim_update(changed, new)) == [
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
        "for bound claims"]
    annotated = _pvc()
    annotated["metadata"]["annotations"] = {core.BETA_STORAGE_CLASS_ANNOTATION: "fast"}
    upgraded = copy.deepcopy(annotated)
    upgraded["spec"]["storageClassName"] = "fast"         # validateStorageClassUpgradeFromAnnotation
    assert core.validate_persistent_volume_claim_update(upgraded, annotated) == []
    other = copy.deepcopy(annotated)
    other["metadata"]["annotations"][core.BETA_STORAGE_CLASS_ANNOTATION] = "slow"
    assert _msgs(core.validate_persistent_volume_claim_update(other, annotated)) == [
        'metadata.annotations.volume.beta.kubernetes.io/storage-class: Invalid value: "slow": field is immutable']


def test_claim_volume_attributes_class() -> None:
    old = _pvc(volumeAttributesClassName="gold")
    new = copy.deepcopy(old)
    new["spec"]["volumeAttributesClassName"] = "silver"   # may change, bound or not
    assert core.validate_persistent_volume_claim_update(new, old) == []
    new["spec"]["volumeAttributesClassName"] = ""
    assert _msgs(core.validate_persistent_volume_claim_update(new, old)) == [
        "spec.volumeAttributesClassName: Forbidden: update from non-nil value to an empty string is forbidden"]
    del new["spec"]["volumeAttributesClassName"]
    assert _msgs(core.validate_persistent_volume_claim_update(new, old)) == [
        "spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden"]


def test_claim_status_update() -> None:
    old = _pvc()
    new = copy.deepcopy(old)
    new["status"] = {"phase": "Bound", "capacity": {"storage": "10G"},
                     "allocatedResources": {"storage": "10G"},
                     "allocatedResourceStatuses": {"storage": "ControllerResizeInProgress"}}
    assert core.validate_persistent_volume_claim_status_update(new, old) == []
    new["status"] = {"capacity": {"storage": "-2"}, "allocatedResources": {"cpu": "1", "example.com/x": "-1"},
                     "allocatedResourceStatuses": {"storage": "Resizing"}}
    new["metadata"]["resourceVersion"] = ""
    assert _msgs(core.validate_persistent_volume_claim_status_update(new, old)) == [
        'metadata.resourceVersion: Invalid value: "": must be specified for an update',
        "resourceVersion: Required value",
        "status.capacity[storage]: Invalid value: -2: must be a valid resource quantity",
        'status.allocatedResourceStatus: Unsupported value: "storage": supported values: "ControllerResizeInProgress", '
        '"ControllerResizeInfeasible", "NodeResizeInProgress", "NodeResizeInfeasible", "NodeResizePending"',
        'status.allocatedResources: Unsupported value: "cpu": supported values: "storage"',
        "status.allocatedResources[example.com/x]: Invalid value: -1: must be a valid resource quantity"]


def test_claim_data_sources_are_normalised_on_create_and_update() -> None:
    """Upstream: pvcutil.NormalizeDataSources, run by the claim strategy's PrepareForCreate/Update."""
    from kubeplane.apiserver.registry.core.persistentvolumeclaim import PERSISTENT_VOLUME_CLAIMS
    strategy = PERSISTENT_VOLUME_CLAIMS.strategy
    claim = _pvc(dataSource={"kind": "PersistentVolumeClaim", "name": "src"})
    strategy.prepare_for_create(claim)
    assert claim["spec"]["dataSourceRef"] == {"kind": "PersistentVolumeClaim", "name": "src"}
    assert core.validate_persistent_volume_claim(claim) == []
    ref = _pvc(dataSourceRef={"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"})
    strategy.prepare_for_create(ref)
    assert ref["spec"]["dataSource"] == {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s"}
    cross = _pvc(dataSourceRef={"apiGroup": "g.io", "kind": "K", "name": "n", "namespace": "other"})
    strategy.prepare_for_create(cross)
    assert "dataSource" not in cross["spec"]
    old_client = copy.deepcopy(claim)
    del old_client["spec"]["dataSourceRef"]              # an older client omits the field
    strategy.prepare_for_update(old_client, claim)
    assert old_client["spec"]["dataSourceRef"] == claim["spec"]["dataSourceRef"]


def _secret(secret_type: str, **data: str) -> Obj:
    return {"metadata": {"name": "s", "namespace": "ns"}, "type": secret_type, "data": data}


@pytest.mark.parametrize("secret, expected", [
    (_secret("kubernetes.io/dockerconfigjson", **{".dockerconfigjson": "e30="}), []),            # {}
    (_secret("kubernetes.io/dockerconfigjson"), ["data[.dockerconfigjson]: Required value"]),
    (_secret("kubernetes.io/dockerconfigjson", **{".dockerconfigjson": "eA=="}),                 # x
     ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character \'x\' looking for '
      'beginning of value']),
    (_secret("kubernetes.io/dockercfg", **{".dockercfg": "WzFd"}),                                # [1]
     ['data[.dockercfg]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value '
      'of type map[string]interface {}']),
    (_secret("kubernetes.io/basic-auth"), ["data[username]: Required value", "data[password]: Required value"]),
    (_secret("kubernetes.io/basic-auth", password=""), []),
    (_secret("kubernetes.io/ssh-auth", **{"ssh-privatekey": ""}), ["data[ssh-privatekey]: Required value"]),
    (_secret("kubernetes.io/tls", **{"tls.crt": "eA=="}), ["data[tls.key]: Required value"]),
])
def test_typed_secrets(secret: Obj, expected: list[str]) -> None:
    """Upstream: ValidateSecret's switch on the type (TestValidateSecret / TestValidateDockerConfigSecret /
    TestValidateBasicAuthSecret / TestValidateSSHAuth / TestValidateTLSSecret cases)."""
    assert _msgs(core.validate_secret(secret)) == expected
