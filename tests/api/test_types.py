"""Typed objects (kubeplane.api.types): wire round-trips, names, copies, registry, generator."""
from __future__ import annotations

import copy
import datetime as dt
import gc
import importlib.util
import pathlib
import subprocess
import sys
from typing import Any

import msgspec
import orjson
import pytest

from kubeplane.api import schema
from kubeplane.api import types as t
from kubeplane.api.types import (
    ObjectName,
    apps_v1,
    autoscaling_v1,
    coordination_v1,
    core_v1,
    events_v1,
    meta_v1,
)

ROOT = pathlib.Path(__file__).resolve().parents[2]

# --- realistic objects, as the API server returns them ----------------------------------------

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "nginx", "namespace": "default", "uid": "7d1c4e0e-3f5a-4a55-9a44-0b8c2d3e4f50",
        "resourceVersion": "1234", "generation": 2, "creationTimestamp": "2024-05-01T10:00:00Z",
        "labels": {"app": "nginx"},
        "annotations": {"deployment.kubernetes.io/revision": "2",
                        "kubectl.kubernetes.io/last-applied-configuration": "{\"apiVersion\":\"apps/v1\"}\n"},
        "managedFields": [{
            "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1",
            "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                         "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"k:{\"name\":\"nginx\"}": {}}}}},
        }, {
            "manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1",
            "time": "2024-05-01T10:00:05Z", "fieldsType": "FieldsV1", "subresource": "status",
            "fieldsV1": {"f:status": {"f:availableReplicas": {}}},
        }],
    },
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "nginx"}},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [{
                    "name": "nginx", "image": "nginx:1.24",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler",
            },
        },
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
    "status": {
        "observedGeneration": 2, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
        "availableReplicas": 3,
        "conditions": [
            {"type": "Available", "status": "True", "lastUpdateTime": "2024-05-01T10:00:05Z",
             "lastTransitionTime": "2024-05-01T10:00:05Z", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "lastUpdateTime": "2024-05-01T10:00:05Z",
             "lastTransitionTime": "2024-05-01T10:00:00Z", "reason": "NewReplicaSetAvailable",
             "message": "ReplicaSet \"nginx-7c5ddbdf54\" has successfully progressed."},
        ],
    },
}

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "nginx-7c5ddbdf54-abcde", "generateName": "nginx-7c5ddbdf54-", "namespace": "default",
        "uid": "0f4b2c66-1111-4c2e-8a77-2f6b1a9d0c11", "resourceVersion": "1300",
        "creationTimestamp": "2024-05-01T10:00:01Z",
        "labels": {"app": "nginx", "pod-template-hash": "7c5ddbdf54"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "nginx-7c5ddbdf54",
                             "uid": "9a9a9a9a-2222-4c2e-8a77-2f6b1a9d0c11", "controller": True,
                             "blockOwnerDeletion": True}],
    },
    "spec": {
        "volumes": [{"name": "kube-api-access-x1y2z", "projected": {
            "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}],
            "defaultMode": 420}}],
        "containers": [{
            "name": "nginx", "image": "nginx:1.24",
            "ports": [{"containerPort": 80, "protocol": "TCP"}],
            "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
            "volumeMounts": [{"name": "kube-api-access-x1y2z", "readOnly": True,
                              "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
            "readinessProbe": {"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "timeoutSeconds": 1,
                               "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "imagePullPolicy": "IfNotPresent",
        }],
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default", "serviceAccount": "default", "nodeName": "node-1",
        "securityContext": {}, "schedulerName": "default-scheduler",
        "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 300}],
        "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
    },
    "status": {
        "phase": "Running",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": "2024-05-01T10:00:03Z"},
            {"type": "Ready", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": "2024-05-01T10:00:04Z"},
        ],
        "hostIP": "10.0.0.11", "hostIPs": [{"ip": "10.0.0.11"}],
        "podIP": "10.244.1.7", "podIPs": [{"ip": "10.244.1.7"}],
        "startTime": "2024-05-01T10:00:02Z",
        "containerStatuses": [{
            "name": "nginx", "ready": True, "restartCount": 1, "started": True,
            "state": {"running": {"startedAt": "2024-05-01T10:00:03Z"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                                         "startedAt": "2024-05-01T10:00:02Z",
                                         "finishedAt": "2024-05-01T10:00:02Z",
                                         "containerID": "containerd://abc"}},
            "image": "docker.io/library/nginx:1.24",
            "imageID": "docker.io/library/nginx@sha256:0123456789abcdef",
            "containerID": "containerd://def",
        }],
        "qosClass": "Burstable",
    },
}

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-1", "uid": "n-1", "resourceVersion": "88",
                 "labels": {"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux"},
                 "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
    "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"], "providerID": "kubeplane://node-1",
             "taints": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "4", "memory": "16393524Ki", "pods": "110", "ephemeral-storage": "100Gi"},
        "allocatable": {"cpu": "3800m", "memory": "16291124Ki", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2024-05-01T10:00:00Z",
                        "lastTransitionTime": "2024-05-01T09:00:00Z", "reason": "KubeletReady",
                        "message": "kubelet is posting ready status"}],
        "addresses": [{"type": "InternalIP", "address": "10.0.0.11"}, {"type": "Hostname", "address": "node-1"}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": "m1", "systemUUID": "s1", "bootID": "b1", "kernelVersion": "6.1.0",
                     "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7.0",
                     "kubeletVersion": "v1.37.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                     "architecture": "amd64"},
        "images": [{"names": ["docker.io/library/nginx:1.24"], "sizeBytes": 67000000}],
    },
}

CORE_EVENT: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Event",
    "metadata": {"name": "nginx.17c9a1b2c3d4e5f6", "namespace": "default", "uid": "e1",
                 "resourceVersion": "1235", "creationTimestamp": "2024-05-01T10:00:00Z"},
    "involvedObject": {"kind": "Deployment", "namespace": "default", "name": "nginx", "uid": "7d1c",
                       "apiVersion": "apps/v1", "resourceVersion": "1233"},
    "reason": "ScalingReplicaSet",
    "message": "Scaled up replica set nginx-7c5ddbdf54 from 0 to 3",
    "source": {"component": "deployment-controller"},
    "firstTimestamp": "2024-05-01T10:00:00Z", "lastTimestamp": "2024-05-01T10:00:00Z",
    "count": 1, "type": "Normal", "eventTime": None,
    "reportingComponent": "deployment-controller", "reportingInstance": "",
}

EVENTS_V1_EVENT: dict[str, Any] = {
    "apiVersion": "events.k8s.io/v1",
    "kind": "Event",
    "metadata": {"name": "nginx-abcde.17c9", "namespace": "default", "uid": "e2", "resourceVersion": "1301"},
    "eventTime": "2024-05-01T10:00:02.123456Z",
    "reportingController": "default-scheduler", "reportingInstance": "default-scheduler-node-0",
    "action": "Binding", "reason": "Scheduled",
    "regarding": {"kind": "Pod", "namespace": "default", "name": "nginx-abcde", "uid": "0f4b",
                  "apiVersion": "v1", "resourceVersion": "1299"},
    "note": "Successfully assigned default/nginx-abcde to node-1", "type": "Normal",
    "series": {"count": 2, "lastObservedTime": "2024-05-01T10:00:09.000001Z"},
    "deprecatedSource": {"component": "default-scheduler"},
}

LEASE: dict[str, Any] = {
    "apiVersion": "coordination.k8s.io/v1",
    "kind": "Lease",
    "metadata": {"name": "node-1", "namespace": "kube-node-lease", "resourceVersion": "90",
                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "n-1"}]},
    "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 40,
             "acquireTime": "2024-05-01T09:00:00.000000Z", "renewTime": "2024-05-01T10:00:00.123456Z",
             "leaseTransitions": 0},
}

SCALE: dict[str, Any] = {
    "apiVersion": "autoscaling/v1",
    "kind": "Scale",
    "metadata": {"name": "nginx", "namespace": "default", "uid": "7d1c", "resourceVersion": "1234",
                 "creationTimestamp": "2024-05-01T10:00:00Z"},
    "spec": {"replicas": 5},
    "status": {"replicas": 3, "selector": "app=nginx"},
}

DEPLOYMENT_LIST: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DeploymentList",
    "metadata": {"resourceVersion": "2000", "continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", "remainingItemCount": 4},
    "items": [DEPLOYMENT, {**DEPLOYMENT, "metadata": {**DEPLOYMENT["metadata"], "name": "web"}}],
}


def _strip_nulls(v: Any) -> Any:
    """What a typed round-trip yields: JSON nulls are unset fields, and unset fields are omitted."""
    if isinstance(v, dict):
        return {k: _strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_strip_nulls(x) for x in v]
    return v


ROUND_TRIPS = [
    pytest.param(DEPLOYMENT, apps_v1.Deployment, id="deployment"),
    pytest.param(POD, core_v1.Pod, id="pod"),
    pytest.param(NODE, core_v1.Node, id="node"),
    pytest.param(CORE_EVENT, core_v1.Event, id="core-event"),
    pytest.param(EVENTS_V1_EVENT, events_v1.Event, id="events.k8s.io-event"),
    pytest.param(LEASE, coordination_v1.Lease, id="lease"),
    pytest.param(SCALE, autoscaling_v1.Scale, id="scale"),
    pytest.param(DEPLOYMENT_LIST, apps_v1.DeploymentList, id="deployment-list"),
]


@pytest.mark.parametrize(("obj", "type_"), ROUND_TRIPS)
def test_json_round_trip_is_lossless(obj: dict[str, Any], type_: type) -> None:
    typed = t.decode(orjson.dumps(obj), type_)
    assert isinstance(typed, type_)
    assert orjson.loads(t.encode(typed)) == _strip_nulls(obj)


@pytest.mark.parametrize(("obj", "type_"), ROUND_TRIPS)
def test_dict_round_trip_matches_bytes_round_trip(obj: dict[str, Any], type_: type) -> None:
    typed = t.from_dict(obj, type_)
    assert typed == t.decode(orjson.dumps(obj), type_)
    assert t.to_dict(typed) == _strip_nulls(obj)


def test_null_fields_decode_as_unset_and_are_omitted() -> None:
    tmpl = {"metadata": {"creationTimestamp": None, "labels": {"a": "b"}}}
    typed = t.decode(orjson.dumps(tmpl), core_v1.PodTemplateSpec)
    assert typed.metadata.creation_timestamp is None
    assert t.encode(typed) == b'{"metadata":{"labels":{"a":"b"}}}'


def test_empty_structs_and_collections_survive() -> None:
    """`resources: {}` and `args: []` are values, not unset fields: both are re-encoded."""
    c = t.decode(b'{"name":"c","resources":{},"args":[],"env":[]}', core_v1.Container)
    assert c.resources == core_v1.ResourceRequirements()
    assert orjson.loads(t.encode(c)) == {"name": "c", "resources": {}, "args": [], "env": []}


def test_unknown_fields_are_ignored_at_every_level() -> None:
    future = copy.deepcopy(DEPLOYMENT)
    future["futureTopLevel"] = {"x": 1}
    future["metadata"]["futureMeta"] = "y"
    future["spec"]["template"]["spec"]["containers"][0]["futureContainerField"] = [1, 2]
    d = t.decode(orjson.dumps(future), apps_v1.Deployment)
    assert orjson.loads(t.encode(d)) == DEPLOYMENT


# --- attribute names --------------------------------------------------------------------------

def test_attribute_names_are_upstream_names_in_snake_case() -> None:
    d = t.decode(orjson.dumps(DEPLOYMENT), apps_v1.Deployment)
    assert d.spec.template.spec.containers[0].image_pull_policy == "IfNotPresent"
    assert d.spec.template.spec.termination_grace_period_seconds == 30
    assert d.status.observed_generation == 2
    assert d.status.conditions[1].last_transition_time == "2024-05-01T10:00:00Z"
    assert d.metadata.managed_fields[1].subresource == "status"

    pod = t.decode(orjson.dumps(POD), core_v1.Pod)
    assert pod.metadata.owner_references[0].block_owner_deletion is True
    assert pod.status.pod_ips[0].ip == "10.244.1.7"
    assert pod.status.host_ip == "10.0.0.11"
    assert pod.status.container_statuses[0].last_state.terminated.exit_code == 137
    assert pod.spec.volumes[0].projected.sources[2].downward_api.items[0].field_ref.field_path == "metadata.namespace"

    node = t.decode(orjson.dumps(NODE), core_v1.Node)
    assert node.spec.pod_cidrs == ["10.244.1.0/24"]
    assert node.status.node_info.system_uuid == "s1"
    assert node.status.daemon_endpoints.kubelet_endpoint.port == 10250     # JSON name "Port"

    lst = t.decode(orjson.dumps(DEPLOYMENT_LIST), apps_v1.DeploymentList)
    assert lst.metadata.continue_ == "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ"     # "continue" is a keyword
    assert lst.metadata.remaining_item_count == 4
    assert [i.metadata.name for i in lst.items] == ["nginx", "web"]


@pytest.mark.parametrize(("json_name", "attr"), [
    pytest.param("ownerReferences", "owner_references", id="camel"),
    pytest.param("podIP", "pod_ip", id="acronym"),
    pytest.param("podIPs", "pod_ips", id="plural-acronym"),
    pytest.param("hostIPC", "host_ipc", id="acronym-at-end"),
    pytest.param("serverAddressByClientCIDRs", "server_address_by_client_cidrs", id="long"),
    pytest.param("targetCPUUtilizationPercentage", "target_cpu_utilization_percentage", id="acronym-mid"),
    pytest.param("Port", "port", id="capitalised"),
    pytest.param("fieldsV1", "fields_v1", id="version-digit"),
    pytest.param("ipv4Address", "ipv4_address", id="lower-digit"),
    pytest.param("continue", "continue_", id="keyword"),
    pytest.param("x-kubernetes-list-type", "x_kubernetes_list_type", id="dashes"),
    pytest.param("$ref", "ref", id="dollar"),
    pytest.param("3d", "_3_d", id="leading-digit"),
])
def test_snake_name(gen: Any, json_name: str, attr: str) -> None:
    assert gen.snake_name(json_name) == attr


def test_every_schema_property_is_a_field_with_its_json_name(gen: Any) -> None:
    """The generated modules cover each definition, field for field (encode names = schema names)."""
    checked = 0
    for def_name, d in schema.definitions().items():
        if def_name in gen.ALIASES:
            continue
        module = getattr(t, gen.module_of(def_name))
        cls = getattr(module, gen.class_name(def_name))
        fields = msgspec.structs.fields(cls)
        assert {f.encode_name for f in fields} == set(d.get("properties", {})), def_name
        assert all(f.default is None or f.name in ("api_version", "kind") for f in fields), def_name
        checked += 1
    assert checked == 616       # 622 definitions minus the 6 aliased scalars/free-form ones


def test_event_kinds_of_both_groups_are_distinct_classes() -> None:
    assert core_v1.Event is not events_v1.Event
    assert t.encode(core_v1.Event()).startswith(b'{"apiVersion":"v1","kind":"Event"')
    assert t.encode(events_v1.Event()).startswith(b'{"apiVersion":"events.k8s.io/v1","kind":"Event"')


def test_docstrings_are_first_sentence_of_the_schema_description() -> None:
    assert apps_v1.Deployment.__doc__ == "Deployment enables declarative updates for Pods and ReplicaSets."
    assert meta_v1.OwnerReference.__doc__ == (
        "OwnerReference contains enough information to let you identify an owning object.")


# --- int-or-string, quantities ----------------------------------------------------------------

@pytest.mark.parametrize("value", ["25%", 1, 0, "0%"])
def test_int_or_string_keeps_its_json_type(value: int | str) -> None:
    body = orjson.dumps({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": value, "maxUnavailable": value}})
    s = t.decode(body, apps_v1.DeploymentStrategy)
    assert s.rolling_update.max_surge == value and type(s.rolling_update.max_surge) is type(value)
    assert orjson.loads(t.encode(s)) == orjson.loads(body)


def test_int_or_string_rejects_other_types() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"maxSurge"):
        t.decode(b'{"maxSurge": true}', apps_v1.RollingUpdateDeployment)


def test_quantities_are_strings_but_bare_numbers_decode() -> None:
    r = t.decode(b'{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"cpu":1,"memory":0.5}}',
                 core_v1.ResourceRequirements)
    assert r.requests == {"cpu": "500m", "memory": "1Gi"}
    assert r.limits == {"cpu": 1, "memory": 0.5}


# --- apiVersion / kind ------------------------------------------------------------------------

def test_fresh_object_encodes_api_version_and_kind() -> None:
    d = apps_v1.Deployment(metadata=meta_v1.ObjectMeta(name="web", namespace="default"),
                           spec=apps_v1.DeploymentSpec(replicas=2))
    assert t.encode(d) == (b'{"apiVersion":"apps/v1","kind":"Deployment",'
                           b'"metadata":{"name":"web","namespace":"default"},"spec":{"replicas":2}}')
    assert t.to_dict(core_v1.Pod()) == {"apiVersion": "v1", "kind": "Pod"}
    assert t.to_dict(apps_v1.DeploymentList(items=[])) == {"apiVersion": "apps/v1", "kind": "DeploymentList", "items": []}


def test_missing_api_version_and_kind_are_filled_on_decode() -> None:
    """Some servers omit TypeMeta on list items; typed objects always know their kind."""
    d = t.decode(b'{"metadata":{"name":"x"}}', apps_v1.Deployment)
    assert (d.api_version, d.kind) == ("apps/v1", "Deployment")
    assert orjson.loads(t.encode(d))["kind"] == "Deployment"


def test_non_kind_structs_have_no_default_api_version() -> None:
    """OwnerReference.apiVersion is data, not TypeMeta: unset and omitted."""
    assert t.encode(meta_v1.OwnerReference(name="rs")) == b'{"name":"rs"}'
    assert t.encode(core_v1.ObjectReference()) == b"{}"


# --- deep copy --------------------------------------------------------------------------------

@pytest.mark.parametrize("how", ["method", "function", "copy.deepcopy"])
def test_deep_copy_is_equal_and_independent(how: str) -> None:
    d = t.decode(orjson.dumps(DEPLOYMENT), apps_v1.Deployment)
    d2 = {"method": lambda: d.deep_copy(), "function": lambda: t.deep_copy(d),
          "copy.deepcopy": lambda: copy.deepcopy(d)}[how]()
    assert d2 == d and d2 is not d and type(d2) is apps_v1.Deployment

    d2.spec.replicas = 7
    d2.metadata.labels["app"] = "changed"
    d2.spec.template.spec.containers[0].image = "nginx:1.25"
    d2.spec.template.spec.containers.append(core_v1.Container(name="sidecar"))
    d2.status.conditions[0].status = "False"
    d2.metadata.managed_fields[0].fields_v1["f:spec"]["f:replicas"]["x"] = 1    # free-form JSON too
    assert orjson.loads(t.encode(d)) == DEPLOYMENT


def test_deep_copy_of_nested_struct_keeps_its_type() -> None:
    pod = t.decode(orjson.dumps(POD), core_v1.Pod)
    spec = pod.spec.deep_copy()
    assert type(spec) is core_v1.PodSpec and spec == pod.spec
    spec.containers[0].resources.requests["cpu"] = "1"
    assert pod.spec.containers[0].resources.requests["cpu"] == "100m"


def test_structs_are_mutable_and_not_gc_tracked() -> None:
    pod = core_v1.Pod(metadata=meta_v1.ObjectMeta(name="p"))
    pod.metadata.name = "q"
    assert pod.metadata.name == "q"
    assert not gc.is_tracked(pod)


# --- registry, object_name, time --------------------------------------------------------------

@pytest.mark.parametrize(("api_version", "kind", "cls"), [
    ("apps/v1", "Deployment", apps_v1.Deployment),
    ("apps/v1", "ReplicaSet", apps_v1.ReplicaSet),
    ("v1", "Pod", core_v1.Pod),
    ("v1", "Event", core_v1.Event),
    ("events.k8s.io/v1", "Event", events_v1.Event),
    ("coordination.k8s.io/v1", "Lease", coordination_v1.Lease),
    ("autoscaling/v1", "Scale", autoscaling_v1.Scale),
    ("v1", "Status", meta_v1.Status),
])
def test_kind_type(api_version: str, kind: str, cls: type) -> None:
    assert t.kind_type(api_version, kind) is cls


def test_list_type() -> None:
    assert t.list_type("apps/v1", "Deployment") is apps_v1.DeploymentList
    assert t.list_type("v1", "Pod") is core_v1.PodList
    assert t.list_type("events.k8s.io/v1", "Event") is events_v1.EventList
    with pytest.raises(KeyError):
        t.kind_type("batch/v1beta1", "CronJob")     # not served by a default 1.37 server


def test_object_name() -> None:
    pod = t.decode(orjson.dumps(POD), core_v1.Pod)
    assert t.object_name(pod) == ObjectName("default", "nginx-7c5ddbdf54-abcde")
    assert str(t.object_name(pod)) == "default/nginx-7c5ddbdf54-abcde"
    assert str(t.object_name(t.decode(orjson.dumps(NODE), core_v1.Node))) == "node-1"
    assert t.object_name(POD) == t.object_name(pod)                       # a JSON dict works too
    assert t.object_name(core_v1.Pod()) == ObjectName("", "")
    assert ObjectName.parse("default/web") == ObjectName("default", "web")
    assert ObjectName.parse("node-1") == ObjectName("", "node-1")


def test_time_helpers() -> None:
    utc = dt.timezone.utc
    assert t.parse_time("2024-05-01T10:00:00Z") == dt.datetime(2024, 5, 1, 10, 0, 0, tzinfo=utc)
    assert t.parse_time("2024-05-01T12:00:00+02:00") == dt.datetime(2024, 5, 1, 10, tzinfo=utc)
    assert t.parse_time("2024-05-01T10:00:00.123456Z").microsecond == 123456
    assert t.parse_time(None) is None and t.parse_time("") is None
    moment = dt.datetime(2024, 5, 1, 10, 0, 0, 123, tzinfo=utc)
    assert t.format_time(moment) == "2024-05-01T10:00:00Z"                  # Time drops the fraction
    assert t.format_micro_time(moment) == "2024-05-01T10:00:00.000123Z"
    assert t.format_time(dt.datetime(2024, 5, 1, 10)) == "2024-05-01T10:00:00Z"  # naive means UTC
    tz2 = dt.timezone(dt.timedelta(hours=2))
    assert t.format_time(dt.datetime(2024, 5, 1, 12, tzinfo=tz2)) == "2024-05-01T10:00:00Z"


# --- generator and import cost ----------------------------------------------------------------

@pytest.fixture(scope="module")
def gen() -> Any:
    spec = importlib.util.spec_from_file_location("gen_types", ROOT / "tools/gen_types.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_output_is_what_the_generator_writes(gen: Any) -> None:
    out = ROOT / "src/kubeplane/api/types"
    for name, src in gen.render_all().items():
        assert (out / name).read_text() == src, f"{name} is stale: run tools/gen_types.py"


def test_first_sentence(gen: Any) -> None:
    assert gen.first_sentence("A thing, e.g. a pod. More text.") == "A thing, e.g. a pod."
    assert gen.first_sentence("No full stop") == "No full stop"
    assert gen.first_sentence(None) == ""


def test_package_import_is_lazy_and_fast() -> None:
    code = ("import sys, time; t0 = time.perf_counter(); import kubeplane.api.types as t; "
            "ms = round((time.perf_counter() - t0) * 1000); "
            "lazy = not any(m.startswith('kubeplane.api.types._registry') or m.endswith('_v1') for m in sys.modules); "
            "n = len([getattr(t, m) for m in t.GROUP_MODULES]); "
            "print(lazy, ms, n)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lazy, ms, n = out.stdout.split()
    assert lazy == "True"
    assert int(n) == 25         # every group module imports
    assert int(ms) < 250        # the package alone, ~50 ms measured; generous for a loaded CI machine
