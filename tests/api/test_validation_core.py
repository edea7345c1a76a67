"""ObjectMeta, selector and core/v1 / coordination / events validation, with upstream's messages."""
from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from kubeplane.apiserver.registry.scheme import set_defaults, validate, validate_status_update, validate_update

LABEL_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
DNS_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
DNS1035_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
               "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
               "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
CONFIG_KEY_MSG = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
                  "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")


def strs(errs: list) -> list[str]:
    return [str(e) for e in errs]


def with_(obj: dict, fn: Callable[[dict], Any]) -> dict:
    obj = copy.deepcopy(obj)
    fn(obj)
    return obj


def cm(**meta: Any) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default", **meta}}


# --- ObjectMeta ----------------------------------------------------------------------------------

META_CASES = [
    pytest.param({"labels": {"app": "web", "example.com/tier": ""}}, [], id="valid-labels"),
    pytest.param({"labels": {"-bad": "x"}}, [f'metadata.labels: Invalid value: "-bad": {LABEL_MSG}'], id="label-key"),
    pytest.param({"labels": {"a/b/c": "x"}},
                 ["metadata.labels: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, "
                  "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name', "
                  " or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an "
                  "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"], id="label-key-two-slashes"),
    pytest.param({"labels": {"/x": "v"}}, ['metadata.labels: Invalid value: "/x": prefix part must be non-empty'],
                 id="label-key-empty-prefix"),
    pytest.param({"labels": {"k": "v" * 64}},
                 [f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63 characters'], id="label-value-too-long"),
    pytest.param({"annotations": {"Example.COM/Upper": "ok"}}, [], id="annotation-keys-case-insensitive"),
    pytest.param({"annotations": {"big": "x" * 262141}}, [], id="annotations-at-limit"),       # 3 + 262141 bytes
    pytest.param({"annotations": {"big": "x" * 262141, "k": ""}},
                 ["metadata.annotations: Too long: may not be more than 262144 bytes"], id="annotations-over-256KiB"),
    pytest.param({"finalizers": ["example.com/cleanup", "kubernetes", "foregroundDeletion"]}, [], id="valid-finalizers"),
    pytest.param({"finalizers": ["cleanup"]},
                 ['metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified'],
                 id="unqualified-finalizer"),
    pytest.param({"finalizers": ["orphan", "foregroundDeletion"]},
                 ['metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and '
                  'foregroundDeletion cannot be both set'], id="orphan-and-foreground"),
    pytest.param({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u"}]}, [],
                 id="valid-owner"),
    pytest.param({"ownerReferences": [{}]},
                 ['metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
                  'metadata.ownerReferences.kind: Invalid value: "": must not be empty',
                  'metadata.ownerReferences.name: Invalid value: "": must not be empty',
                  'metadata.ownerReferences.uid: Invalid value: "": must not be empty'], id="owner-fields-required"),
    pytest.param({"generation": -1}, ["metadata.generation: Invalid value: -1: must be greater than or equal to 0"],
                 id="negative-generation"),
]


@pytest.mark.parametrize("meta,expected", META_CASES)
def test_object_meta_rules(meta: dict, expected: list[str]) -> None:
    assert strs(validate(cm(**meta))) == expected


def test_only_one_controller_owner() -> None:
    refs = [{"apiVersion": "apps/v1", "kind": k, "name": "x", "uid": k, "controller": True} for k in ("A", "B")]
    errs = validate(cm(ownerReferences=refs))
    assert [(e.field, e.detail) for e in errs] == [(
        "metadata.ownerReferences",
        'Only one reference can have Controller set to true. Found "true" in references for A/x and B/x')]


@pytest.mark.parametrize("obj,expected", [
    pytest.param(cm(namespace=""), ["metadata.namespace: Required value"], id="namespaced-needs-namespace"),
    # the apiserver generates the name before validating, as upstream's BeforeCreate does
    pytest.param(cm(name="gen-x7k2p", generateName="gen-"), [], id="generate-name-trailing-dash"),
    pytest.param(cm(name="", generateName="gen-"), ["metadata.name: Required value: name or generateName is required"],
                 id="name-must-be-generated-before-validation"),
    pytest.param(cm(name="", generateName="Gen-"),
                 ['metadata.generateName: Invalid value: "Gen-": a lowercase RFC 1123 subdomain must consist of lower case '
                  "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                  "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
                  "[a-z0-9])?)*')",
                  "metadata.name: Required value: name or generateName is required"], id="bad-generate-name"),
    pytest.param({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "namespace": "default"}},
                 ["metadata.namespace: Forbidden: not allowed on this type"], id="cluster-scoped-rejects-namespace"),
    pytest.param({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}},
                 ['metadata.name: Invalid value: "a.b": must not contain dots'], id="namespace-name-dns-label"),
    pytest.param({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ok"}, "spec": {"finalizers": ["nope"]}},
                 ['spec.finalizers[0]: Invalid value: "nope": name is neither a standard finalizer name nor is it fully qualified'],
                 id="namespace-spec-finalizers"),
    pytest.param({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc", "namespace": "d"},
                  "spec": {"ports": [{"port": 80}]}},
                 [f'metadata.name: Invalid value: "1svc": {DNS1035_MSG}'], id="service-name-dns1035"),
    pytest.param({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "a.b", "namespace": "d"}}, [],
                 id="service-account-subdomain"),
])
def test_names_and_namespaces(obj: dict, expected: list[str]) -> None:
    set_defaults(obj)
    assert strs(validate(obj)) == expected


def test_metadata_update_rules() -> None:
    old = cm(uid="u1", resourceVersion="3", finalizers=["example.com/a"], deletionTimestamp="2024-01-01T00:00:00Z")
    new = with_(old, lambda o: o["metadata"].update(finalizers=["example.com/a", "example.com/b"], labels={"x": "y"}))
    assert strs(validate_update(new, old)) == [
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, '
        'found new finalizers []string{"example.com/b"}']


# --- Pod -----------------------------------------------------------------------------------------


def pod(**spec: Any) -> dict:
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], **spec}}
    set_defaults(p)
    return p


def _c(p: dict, i: int = 0) -> dict:
    return p["spec"]["containers"][i]


POD_CASES = [
    pytest.param(lambda p: None, [], id="valid"),
    pytest.param(lambda p: p["spec"].update(containers=[]), ["spec.containers: Required value"], id="no-containers"),
    pytest.param(lambda p: p["spec"]["containers"].append(dict(_c(p))),
                 ['spec.containers[1].name: Duplicate value: "app"'], id="duplicate-container-name"),
    pytest.param(lambda p: _c(p).update(name="App"), [f'spec.containers[0].name: Invalid value: "App": {DNS_LABEL_MSG}'],
                 id="container-name-dns-label"),
    pytest.param(lambda p: _c(p).pop("image"), ["spec.containers[0].image: Required value"], id="image-required"),
    pytest.param(lambda p: _c(p).update(image=" nginx"),
                 ['spec.containers[0].image: Invalid value: " nginx": must not have leading or trailing whitespace'],
                 id="image-whitespace"),
    pytest.param(lambda p: _c(p).update(ports=[{"containerPort": 70000, "protocol": "TCP"}]),
                 ["spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"],
                 id="container-port-range"),
    pytest.param(lambda p: _c(p).update(ports=[{"containerPort": 80, "protocol": "HTTP"}]),
                 ['spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'],
                 id="port-protocol"),
    pytest.param(lambda p: _c(p).update(ports=[{"containerPort": 80, "protocol": "TCP", "name": "http"},
                                               {"containerPort": 81, "protocol": "TCP", "name": "http"}]),
                 ['spec.containers[0].ports[1].name: Duplicate value: "http"'], id="duplicate-port-name"),
    pytest.param(lambda p: _c(p).update(ports=[{"containerPort": 80, "protocol": "TCP", "name": "1234"}]),
                 ['spec.containers[0].ports[0].name: Invalid value: "1234": must contain at least one letter (a-z)'],
                 id="port-name-needs-letter"),
    pytest.param(lambda p: p["spec"].update(restartPolicy="Sometimes"),
                 ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'],
                 id="restart-policy"),
    pytest.param(lambda p: p["spec"].update(dnsPolicy="Google"),
                 ['spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", '
                  '"ClusterFirst", "Default", "None"'], id="dns-policy"),
    pytest.param(lambda p: _c(p).update(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "1500m"}}),
                 ['spec.containers[0].resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1'],
                 id="requests-above-limits"),
    pytest.param(lambda p: _c(p).update(resources={"requests": {"memory": "lots"}}),
                 ['spec.containers[0].resources.requests[memory]: Invalid value: "lots": quantities must match the '
                  "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"], id="unparsable-quantity"),
    # Upstream: validateContainerResourceName = validateResourceName's error, then the container's own.
    pytest.param(lambda p: _c(p).update(resources={"requests": {"gpu": "1"}}),
                 ['spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type '
                  'or fully qualified',
                  'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers'],
                 id="non-standard-resource"),
    pytest.param(lambda p: _c(p).update(resources={"requests": {"example.com/gpu": "1", "cpu": "-1"}}),
                 ["spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
                  'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
                 id="negative-quantity"),
    # Upstream: validateResourceRequirements (TestValidateResourceRequirements' error cases):
    # extended resources and hugepages are not overcommittable.
    pytest.param(lambda p: _c(p).update(resources={"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}),
                 ['spec.containers[0].resources.requests: Invalid value: "1": must be equal to nvidia.com/gpu limit of 2'],
                 id="extended-request-not-limit"),
    pytest.param(lambda p: _c(p).update(resources={"limits": {"nvidia.com/gpu": "500m"}}),
                 ['spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "500m": must be an integer'],
                 id="extended-fraction"),
    pytest.param(lambda p: _c(p).update(resources={"limits": {"hugepages-2Mi": "2Mi"}, "requests": {"hugepages-2Mi": "2Mi"}}),
                 ["spec.containers[0].resources: Forbidden: HugePages require cpu or memory"],
                 id="hugepages-without-cpu-or-memory"),
    pytest.param(lambda p: _c(p).update(resources={"limits": {"hugepages-2Mi": "4Mi", "memory": "1Gi"},
                                                   "requests": {"hugepages-2Mi": "2Mi", "memory": "1Gi"}}),
                 ['spec.containers[0].resources.requests: Invalid value: "2Mi": must be equal to hugepages-2Mi limit of 4Mi'],
                 id="hugepages-request-not-limit"),
    pytest.param(lambda p: _c(p).update(resources={"limits": {"requests.cpu": "1", "example.com/requests.x": "1",
                                                              "example.com/_x": "1", "cpu": "1"}}),
                 ['spec.containers[0].resources.limits[requests.cpu]: Invalid value: "requests.cpu": '
                  "must be a standard resource for containers",
                  'spec.containers[0].resources.limits[example.com/_x]: Invalid value: "example.com/_x": name part must '
                  "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
                  "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                  'spec.containers[0].resources.limits[example.com/_x]: Invalid value: "example.com/_x": '
                  "doesn't follow extended resource name standard"],
                 id="container-resource-names"),
    pytest.param(lambda p: _c(p).update(livenessProbe={"exec": {"command": ["true"]}, "timeoutSeconds": 1,
                                                       "periodSeconds": 10, "successThreshold": 2, "failureThreshold": -1}),
                 ["spec.containers[0].livenessProbe.failureThreshold: Invalid value: -1: must be greater than or equal to 0",
                  "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"], id="probe-numbers"),
    pytest.param(lambda p: _c(p).update(readinessProbe={"periodSeconds": 1}),
                 ["spec.containers[0].readinessProbe: Required value: must specify a handler type"], id="probe-handler"),
    pytest.param(lambda p: _c(p).update(env=[{"name": "A=B"}, {"name": ""}]),
                 ['spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist '
                  "only of printable ASCII characters other than '='", "spec.containers[0].env[1].name: Required value"],
                 id="env-names"),
    pytest.param(lambda p: _c(p).update(volumeMounts=[{"name": "data", "mountPath": "/d"}]),
                 ['spec.containers[0].volumeMounts[0].name: Not found: "data"'], id="mount-needs-volume"),
    pytest.param(lambda p: (p["spec"].update(volumes=[{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]),
                            _c(p).update(volumeMounts=[{"name": "data", "mountPath": "/d"}])),
                 ['spec.volumes[1].name: Duplicate value: "data"'], id="duplicate-volume"),
    pytest.param(lambda p: p["spec"].update(activeDeadlineSeconds=0),
                 ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"],
                 id="active-deadline-range"),
    pytest.param(lambda p: p["spec"].update(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
                 ['spec.tolerations[0].operator: Invalid value: "v": value must be empty when `operator` is \'Exists\''],
                 id="toleration-exists-with-value"),
]


@pytest.mark.parametrize("mutate,expected", POD_CASES)
def test_pod_spec_rules(mutate: Callable[[dict], Any], expected: list[str]) -> None:
    assert strs(validate(with_(pod(), mutate))) == expected


def test_undefaulted_pod_reports_the_defaulted_fields_as_required() -> None:
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
         "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert strs(validate(p)) == [
        "spec.terminationGracePeriodSeconds: Required value", "spec.containers[0].terminationMessagePolicy: Required value",
        "spec.containers[0].imagePullPolicy: Required value", "spec.restartPolicy: Required value",
        "spec.dnsPolicy: Required value"]


POD_UPDATE_MSG = ("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
                  "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
                  "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                  "previously negative)")


@pytest.mark.parametrize("mutate,expected", [
    pytest.param(lambda p: _c(p).update(image="nginx:1.26"), [], id="image-may-change"),
    pytest.param(lambda p: p["spec"].update(activeDeadlineSeconds=60), [], id="set-active-deadline"),
    pytest.param(lambda p: p["spec"].update(tolerations=[{"key": "k", "operator": "Exists", "effect": "NoExecute"}]), [],
                 id="add-toleration"),
    pytest.param(lambda p: p["spec"].update(nodeName="node-1"), [POD_UPDATE_MSG], id="node-name-is-immutable"),
    pytest.param(lambda p: _c(p).update(env=[{"name": "A", "value": "1"}]), [POD_UPDATE_MSG], id="env-is-immutable"),
    pytest.param(lambda p: p["spec"]["containers"].append({**_c(p), "name": "two"}),
                 ["spec.containers: Forbidden: pod updates may not add or remove containers"], id="add-container"),
])
def test_pod_update_rules(mutate: Callable[[dict], Any], expected: list[str]) -> None:
    old = with_(pod(), lambda p: p["metadata"].update(uid="u", resourceVersion="1"))
    assert strs(validate_update(with_(old, mutate), old)) == expected


def test_pod_active_deadline_may_only_shrink() -> None:
    old = with_(pod(activeDeadlineSeconds=60), lambda p: p["metadata"].update(resourceVersion="1"))
    assert strs(validate_update(with_(old, lambda p: p["spec"].update(activeDeadlineSeconds=90)), old)) == [
        "spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value"]


def test_pod_status_qos_class_immutable() -> None:
    old = with_(pod(), lambda p: (p["metadata"].update(resourceVersion="1"), p.update(status={"qosClass": "BestEffort"})))
    new = with_(old, lambda p: p["status"].update(qosClass="Guaranteed", phase="Running"))
    assert strs(validate_status_update(new, old)) == ['status.qosClass: Invalid value: "Guaranteed": field is immutable']


@pytest.mark.parametrize("body,expected", [
    pytest.param({"target": {"kind": "Node", "name": "n1"}}, [], id="valid"),
    pytest.param({"target": {}}, ["target.name: Required value"], id="name-required"),
    pytest.param({"target": {"kind": "Pod", "name": "x"}},
                 ['target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"'], id="kind-node-only"),
])
def test_binding(body: dict, expected: list[str]) -> None:
    assert strs(validate({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, **body})) == expected


# --- ConfigMap, Secret, Service, Node, Namespace ------------------------------------------------


@pytest.mark.parametrize("obj,expected", [
    pytest.param(with_(cm(), lambda c: c.update(data={"app.conf": "x", "KEY_1": "y"})), [], id="configmap-valid"),
    pytest.param(with_(cm(), lambda c: c.update(data={"bad key": "x"})),
                 [f'data[bad key]: Invalid value: "bad key": {CONFIG_KEY_MSG}'], id="configmap-bad-key"),
    pytest.param(with_(cm(), lambda c: c.update(data={"..x": "x"})),
                 ["data[..x]: Invalid value: \"..x\": must not start with '..'"], id="configmap-dotdot"),
    pytest.param(with_(cm(), lambda c: c.update(data={"a": "x"}, binaryData={"a": "eA=="})),
                 ['data[a]: Invalid value: "a": duplicate of key present in binaryData'], id="configmap-duplicate-key"),
    pytest.param(with_(cm(), lambda c: c.update(data={"a": "x" * (1 << 20), "b": "y"})),
                 [": Too long: may not be more than 1048576 bytes"], id="configmap-too-big"),
    pytest.param({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d"}, "type": "Opaque",
                  "data": {"k": "A" * ((1 << 20) * 4 // 3 + 8)}},
                 ["data: Too long: may not be more than 1048576 bytes"], id="secret-too-big"),
    pytest.param({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d"},
                  "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}},
                 ["data[tls.key]: Required value"], id="tls-secret-needs-key"),
    pytest.param({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "d"}, "spec": {}},
                 ["spec.ports: Required value"], id="service-ports-required"),
    pytest.param({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "d"},
                  "spec": {"ports": [{"port": 0}, {"port": 80, "name": "web"}], "selector": {"app": "web"}}},
                 ["spec.ports[0].name: Required value",
                  "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                  "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"],
                 id="service-port-rules"),
    pytest.param({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "d"},
                  "spec": {"type": "Magic", "ports": [{"port": 80}]}},
                 ['spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", '
                  '"LoadBalancer", "NodePort"'], id="service-type"),
    pytest.param({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                  "spec": {"taints": [{"key": "k", "effect": "NoRun"}]}},
                 ['metadata.taints[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", '
                  '"PreferNoSchedule", "NoExecute"'], id="node-taint-effect"),
    pytest.param({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
                  "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "NoSchedule"}]}},
                 ['metadata.taints[1]: Duplicate value: {"Key":"k","Value":"","Effect":"NoSchedule","TimeAdded":null}: '
                  'taints must be unique by key and effect pair'], id="node-taint-duplicate"),
])
def test_core_kinds(obj: dict, expected: list[str]) -> None:
    set_defaults(obj)
    assert strs(validate(obj)) == expected


def test_immutable_secret_keeps_data() -> None:
    old = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d", "resourceVersion": "1"},
           "type": "Opaque", "immutable": True, "data": {"a": "eA=="}}
    new = with_(old, lambda s: s["data"].update(a="eQ=="))
    assert strs(validate_update(new, old)) == ["data: Forbidden: field is immutable when `immutable` is set"]
    assert strs(validate_update(with_(old, lambda s: s.update(type="kubernetes.io/tls", data={"tls.crt": "", "tls.key": ""})),
                                with_(old, lambda s: s.update(immutable=False)))) == [
        'type: Invalid value: "kubernetes.io/tls": field is immutable']


@pytest.mark.parametrize("deleting,phase,expected", [
    pytest.param(False, "Active", [], id="active"),
    pytest.param(False, "Terminating",
                 ["status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"],
                 id="terminating-without-deletion"),
    pytest.param(True, "Active",
                 ["status.Phase: Invalid value: \"Active\": may only be 'Terminating' if `deletionTimestamp` is not empty"],
                 id="active-while-deleting"),
])
def test_namespace_status_phase(deleting: bool, phase: str, expected: list[str]) -> None:
    meta = {"name": "ns", "resourceVersion": "1", **({"deletionTimestamp": "2024-01-01T00:00:00Z"} if deleting else {})}
    old = {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": {"phase": "Active"}}
    assert strs(validate_status_update(with_(old, lambda n: n["status"].update(phase=phase)), old)) == expected


# --- Lease and Events ----------------------------------------------------------------------------


@pytest.mark.parametrize("spec,expected", [
    pytest.param({"holderIdentity": "kcm-1", "leaseDurationSeconds": 15}, [], id="valid"),
    pytest.param({"leaseDurationSeconds": 0}, ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"],
                 id="duration-positive"),
    pytest.param({"leaseTransitions": -1},
                 ["spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"], id="transitions"),
])
def test_lease(spec: dict, expected: list[str]) -> None:
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"}, "spec": spec}
    assert strs(validate(lease)) == expected


def core_event(**fields: Any) -> dict:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.17a8b", "namespace": "default"},
            "involvedObject": {"kind": "Deployment", "namespace": "default", "name": "web"},
            "reason": "ScalingReplicaSet", "message": "Scaled up", "type": "Normal", **fields}


@pytest.mark.parametrize("obj,expected", [
    pytest.param(core_event(), [], id="valid"),
    pytest.param(with_(core_event(), lambda e: e["metadata"].update(name="Web_Event:1")), [],
                 id="core-event-names-only-need-path-segment-rules"),
    pytest.param(with_(core_event(), lambda e: e["metadata"].update(name="a/b")),
                 ["metadata.name: Invalid value: \"a/b\": may not contain '/'"], id="name-with-slash"),
    pytest.param(with_(core_event(), lambda e: e["involvedObject"].update(namespace="other")),
                 ['involvedObject.namespace: Invalid value: "other": does not match event.namespace'], id="namespace-mismatch"),
])
def test_core_event(obj: dict, expected: list[str]) -> None:
    assert strs(validate(obj)) == expected


def events_v1(**fields: Any) -> dict:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "web.17a8b", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "kubeplane.io/scheduler",
            "reportingInstance": "sched-1", "action": "Binding", "reason": "Scheduled", "type": "Normal",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "p"}, "note": "ok", **fields}


@pytest.mark.parametrize("obj,expected", [
    pytest.param(events_v1(), [], id="valid"),
    pytest.param(events_v1(type="Info"), ['type: Invalid value: "": has invalid value: Info'], id="type"),
    pytest.param(events_v1(action=""), ["action: Required value"], id="action-required"),
    pytest.param(events_v1(deprecatedCount=3), ['count: Invalid value: "": needs to be unset'], id="count-unset"),
    pytest.param(with_(events_v1(), lambda e: e["metadata"].update(name="Web_Event")),
                 ["metadata.name: Invalid value: \"Web_Event\": a lowercase RFC 1123 subdomain must consist of lower case "
                  "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
                  "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
                  "[a-z0-9])?)*')"], id="strict-name"),
])
def test_events_v1(obj: dict, expected: list[str]) -> None:
    assert strs(validate(obj)) == expected


def test_events_v1_note_is_immutable() -> None:
    old = with_(events_v1(), lambda e: e["metadata"].update(resourceVersion="1"))
    assert strs(validate_update(with_(old, lambda e: e.update(note="changed")), old)) == [
        'message: Invalid value: "changed": field is immutable']


def test_node_update_rules() -> None:
    """Upstream: ValidateNodeUpdate (podCIDRs and providerID set once; taints validated on update too)."""
    old = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "resourceVersion": "1"},
           "spec": {"podCIDRs": ["10.244.1.0/24"], "providerID": "kind://n1"}}
    new = copy.deepcopy(old)
    new["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    assert validate_update(new, old) == []
    new["spec"].update(podCIDRs=["10.244.2.0/24"], providerID="kind://other", taints=[{"key": "k", "effect": "Bad"}])
    assert strs(validate_update(new, old)) == [
        'metadata.taints[0].effect: Unsupported value: "Bad": supported values: "NoSchedule", "PreferNoSchedule", '
        '"NoExecute"',
        'spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid',
        'spec.providerID: Forbidden: node updates may not change providerID except from "" to valid']
    unset = copy.deepcopy(old)
    del unset["spec"]["podCIDRs"], unset["spec"]["providerID"]
    assert validate_update(old, unset) == []
