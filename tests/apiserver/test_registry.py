"""Every registered kind round-trips create, get, list, watch, the four patch types, server-side
apply and delete, on both storage backends; and the registry is the one table of kinds."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kubeplane.api import resources
from kubeplane.apiserver.registry import REGISTRY, ResourceDefinition, resource_definition
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

NOW = "2023-11-14T22:13:20Z"
CONTAINERS = {"containers": [{"name": "c", "image": "nginx"}]}
TEMPLATE = {"replicas": 1, "selector": {"matchLabels": {"app": "rt"}},
            "template": {"metadata": {"labels": {"app": "rt"}}, "spec": CONTAINERS}}
REFERENCE = {"kind": "Pod", "name": "p", "namespace": "default", "apiVersion": "v1"}

# A minimal valid object of each registered resource, keyed as the registry is; without
# apiVersion, kind and metadata.name/namespace (the test adds them).
SAMPLES: dict[tuple[str, str, str], dict[str, Any]] = {
    ("", "v1", "namespaces"): {},
    ("", "v1", "pods"): {"spec": CONTAINERS},
    ("", "v1", "nodes"): {},
    ("", "v1", "events"): {"involvedObject": REFERENCE, "reason": "R", "message": "m", "type": "Normal",
                           "source": {"component": "c"}, "firstTimestamp": NOW, "lastTimestamp": NOW,
                           "count": 1},
    ("", "v1", "configmaps"): {"data": {"k": "v"}},
    ("", "v1", "secrets"): {"stringData": {"k": "v"}},
    ("", "v1", "services"): {"spec": {"ports": [{"port": 80}], "selector": {"app": "rt"}}},
    ("", "v1", "serviceaccounts"): {},
    ("apps", "v1", "deployments"): {"spec": TEMPLATE},
    ("apps", "v1", "replicasets"): {"spec": TEMPLATE},
    ("coordination.k8s.io", "v1", "leases"): {"spec": {"holderIdentity": "h"}},
    ("events.k8s.io", "v1", "events"): {"eventTime": "2023-11-14T22:13:20.000000Z", "reportingController": "c",
                                        "reportingInstance": "i", "action": "A", "reason": "R", "type": "Normal",
                                        "regarding": REFERENCE},
    # authzmisc: apiregistration, authentication, authorization, certificates, rbac,
    # admissionregistration, flowcontrol, resource, storagemigration
    ("apiregistration.k8s.io", "v1", "apiservices"): {"spec": {"group": "rt.example.com", "version": "v1",
                                                                "groupPriorityMinimum": 100, "versionPriority": 10,
                                                                "service": {"namespace": "default", "name": "s"}}},
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions"): {"spec": {
        "group": "rt.example.com", "scope": "Namespaced", "names": {"plural": "rts", "kind": "Rt"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object"}}}]}},
    ("authentication.k8s.io", "v1", "selfsubjectreviews"): {},
    ("authentication.k8s.io", "v1", "tokenreviews"): {"spec": {"token": "t"}},
    ("authorization.k8s.io", "v1", "localsubjectaccessreviews"): {
        "spec": {"user": "u", "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}},
    ("authorization.k8s.io", "v1", "selfsubjectaccessreviews"): {
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}},
    ("authorization.k8s.io", "v1", "selfsubjectrulesreviews"): {"spec": {"namespace": "default"}},
    ("authorization.k8s.io", "v1", "subjectaccessreviews"): {
        "spec": {"user": "u", "nonResourceAttributes": {"path": "/healthz", "verb": "get"}}},
    ("certificates.k8s.io", "v1", "certificatesigningrequests"): {"spec": {
        "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlJQgotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
        "signerName": "example.com/signer", "usages": ["client auth"]}},
    ("certificates.k8s.io", "v1", "clustertrustbundles"): {"spec": {
        "trustBundle": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}},
    ("certificates.k8s.io", "v1", "podcertificaterequests"): {"spec": {
        "signerName": "example.com/signer", "podName": "p", "podUID": "u", "serviceAccountName": "default",
        "serviceAccountUID": "u", "nodeName": "n", "nodeUID": "u", "pkixPublicKey": "AAAA", "proofOfPossession": "AAAA"}},
    ("rbac.authorization.k8s.io", "v1", "clusterrolebindings"): {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "jane"}]},
    ("rbac.authorization.k8s.io", "v1", "clusterroles"): {
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    ("rbac.authorization.k8s.io", "v1", "rolebindings"): {
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]},
    ("rbac.authorization.k8s.io", "v1", "roles"): {
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
    ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies"): {"spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                "operations": ["CREATE"], "resources": ["deployments"]}]},
        "mutations": [{"patchType": "ApplyConfiguration",
                       "applyConfiguration": {"expression": "Object{metadata: Object.metadata{}}"}}],
        "reinvocationPolicy": "Never"}},
    ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings"): {"spec": {"policyName": "p"}},
    ("admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations"): {"webhooks": [{
        "name": "m.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://example.com/m"}}]},
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"): {"spec": {
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                                                "operations": ["CREATE"], "resources": ["deployments"]}]},
        "validations": [{"expression": "object.spec.replicas <= 5"}]}},
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"): {"spec": {
        "policyName": "p", "validationActions": ["Deny"]}},
    ("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations"): {"webhooks": [{
        "name": "v.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "default", "name": "s"}}}]},
    ("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"): {"spec": {
        "priorityLevelConfiguration": {"name": "global-default"}}},
    ("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"): {"spec": {
        "type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}},
    ("resource.k8s.io", "v1", "deviceclasses"): {"spec": {}},
    ("resource.k8s.io", "v1", "devicetaintrules"): {"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}},
    ("resource.k8s.io", "v1", "resourceclaims"): {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}},
    ("resource.k8s.io", "v1", "resourceclaimtemplates"): {"spec": {"spec": {"devices": {"requests": [
        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}},
    ("resource.k8s.io", "v1", "resourceslices"): {"spec": {"driver": "gpu.example.com", "nodeName": "n",
                                                           "pool": {"name": "p", "resourceSliceCount": 1}}},
    ("storagemigration.k8s.io", "v1", "storageversionmigrations"): {"spec": {
        "resource": {"group": "apps", "resource": "deployments"}}},
    ("", "v1", "replicationcontrollers"): {"spec": {"replicas": 1, "selector": {"app": "rt"},
                                                    "template": TEMPLATE["template"]}},
    ("", "v1", "podtemplates"): {"template": {"spec": CONTAINERS}},
    ("apps", "v1", "statefulsets"): {"spec": {**TEMPLATE, "serviceName": "rt"}},
    ("apps", "v1", "daemonsets"): {"spec": {"selector": TEMPLATE["selector"], "template": TEMPLATE["template"]}},
    ("apps", "v1", "controllerrevisions"): {"data": {"spec": {}}, "revision": 1},
    ("batch", "v1", "jobs"): {"spec": {"template": {"spec": {**CONTAINERS, "restartPolicy": "Never"}}}},
    ("batch", "v1", "cronjobs"): {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
        "template": {"spec": {**CONTAINERS, "restartPolicy": "OnFailure"}}}}}},
    ("", "v1", "persistentvolumes"): {"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                               "hostPath": {"path": "/tmp/pv"}}},
    ("", "v1", "persistentvolumeclaims"): {"spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}},
    ("", "v1", "limitranges"): {"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}},
    ("", "v1", "resourcequotas"): {"spec": {"hard": {"pods": "10"}}},
    ("", "v1", "endpoints"): {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
    ("", "v1", "componentstatuses"): {},        # get and list only: tests/apiserver/test_componentstatus.py
    ("", "v1", "bindings"): {},                 # create only, binds a pod: tests/apiserver/test_subresources.py
    ("metrics.k8s.io", "v1beta1", "nodes"): {},   # get and list only: tests/apiserver/test_metricsapi.py
    ("metrics.k8s.io", "v1beta1", "pods"): {},
    ("storage.k8s.io", "v1", "storageclasses"): {"provisioner": "example.com/csi"},
    ("storage.k8s.io", "v1", "volumeattachments"): {"spec": {"attacher": "csi.example.com", "nodeName": "n1",
                                                             "source": {"persistentVolumeName": "pv1"}}},
    ("storage.k8s.io", "v1", "csinodes"): {"spec": {"drivers": []}},
    ("storage.k8s.io", "v1", "csidrivers"): {"spec": {}},
    ("storage.k8s.io", "v1", "csistoragecapacities"): {"storageClassName": "sc1", "capacity": "1Gi"},
    ("storage.k8s.io", "v1", "volumeattributesclasses"): {"driverName": "example.com/csi"},
    ("discovery.k8s.io", "v1", "endpointslices"): {"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}],
                                                   "ports": [{"port": 80}]},
    ("networking.k8s.io", "v1", "ingresses"): {"spec": {"defaultBackend": {"service": {"name": "web",
                                                                                       "port": {"number": 80}}}}},
    ("networking.k8s.io", "v1", "ingressclasses"): {"spec": {"controller": "example.com/ingress"}},
    ("networking.k8s.io", "v1", "networkpolicies"): {"spec": {"podSelector": {}}},
    ("networking.k8s.io", "v1", "servicecidrs"): {"spec": {"cidrs": ["10.100.0.0/16"]}},
    ("networking.k8s.io", "v1", "ipaddresses"): {"spec": {"parentRef": {"resource": "services", "name": "s",
                                                                         "namespace": "default"}}},
    ("policy", "v1", "poddisruptionbudgets"): {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "rt"}}}},
    ("autoscaling", "v2", "horizontalpodautoscalers"): {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"},
                                                                 "maxReplicas": 3}},
    ("autoscaling", "v1", "horizontalpodautoscalers"): {"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"},
                                                                 "maxReplicas": 3}},
    ("scheduling.k8s.io", "v1", "priorityclasses"): {"value": 1000},
    ("node.k8s.io", "v1", "runtimeclasses"): {"handler": "runc"},
}
# Kinds whose names have a format of their own (the test names the others "rt").
NAMES: dict[tuple[str, str, str], str] = {
    ("networking.k8s.io", "v1", "ipaddresses"): "10.96.0.10",
    ("apiregistration.k8s.io", "v1", "apiservices"): "v1.rt.example.com",     # <version>.<group>
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions"): "rts.rt.example.com",   # <plural>.<group>
}


def _id(d: ResourceDefinition) -> str:
    return f"{d.plural}.{d.group or 'core'}/{d.version}"


def test_every_registered_resource_has_a_sample() -> None:
    """Adding a kind (docs/adding-a-kind.md) means adding its sample here."""
    assert sorted(SAMPLES) == sorted((d.group, d.version, d.plural) for d in REGISTRY.resources)


def _identity(ri: resources.ResourceInfo) -> tuple[Any, ...]:
    return tuple(getattr(ri, f.name) for f in dataclasses.fields(resources.ResourceInfo))


def test_the_client_side_table_is_the_registry_s_identity_part() -> None:
    """api.resources (what clients and controllers read; generated into api/served.py by
    tools/gen_client.py) lists exactly the registered resources, in the same order."""
    assert [_identity(r) for r in resources.RESOURCES] == [_identity(d) for d in REGISTRY.resources]
    assert resources.GROUP_VERSIONS == REGISTRY.group_versions()
    for d in REGISTRY.resources:
        assert REGISTRY.lookup(d.group, d.version, d.plural) is d
        ri = resources.lookup(d.group, d.version, d.plural)
        assert ri is not None and _identity(ri) == _identity(d)
        assert resource_definition(ri) is d
    assert REGISTRY.for_kind("apps", "Deployment") is REGISTRY.lookup("apps", "v1", "deployments")
    assert REGISTRY.lookup("apps", "v1", "widgets") is None


def test_a_kind_registered_twice_is_refused() -> None:
    with pytest.raises(AssertionError):
        REGISTRY.register(REGISTRY.resources[0])


@pytest.fixture(params=["memory", "sqlite"])
async def server(request: pytest.FixtureRequest, tmp_path: Any, clock: Any) -> Any:
    storage = new_storage(request.param, tmp_path / "data" if request.param == "sqlite" else None)
    api = APIServer(storage, clock=clock, options=WITHOUT_CONTROLLER_MANAGER)   # no "default" service account
    await api.bootstrap()
    yield api
    await storage.close()


def _path(d: ResourceDefinition, name: str = "") -> str:
    root = f"/apis/{d.group}/{d.version}" if d.group else "/api/v1"
    ns = "namespaces/default/" if d.namespaced else ""
    return f"{root}/{ns}{d.plural}" + (f"/{name}" if name else "")


def _name(d: ResourceDefinition) -> str:
    return NAMES.get((d.group, d.version, d.plural), "rt")


def _sample(d: ResourceDefinition) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": _name(d)}
    if d.namespaced:
        meta["namespace"] = "default"
    return {"apiVersion": d.api_version, "kind": d.kind, "metadata": meta, **SAMPLES[(d.group, d.version, d.plural)]}


PATCHES = [
    ("application/merge-patch+json", {"metadata": {"labels": {"merge": "1"}}}),
    ("application/strategic-merge-patch+json", {"metadata": {"labels": {"strategic": "1"}}}),
    ("application/json-patch+json", [{"op": "add", "path": "/metadata/labels/json", "value": "1"}]),
]


@pytest.mark.parametrize("d", [d for d in REGISTRY.resources if d.review is None], ids=_id)
async def test_every_kind_round_trips(server: APIServer, api: Any, d: ResourceDefinition) -> None:
    api.server, api.storage = server, server.storage          # the conftest helpers on this backend
    if "create" not in d.verbs:
        pytest.skip("not writable (componentstatuses: probed, not stored)")
    if d.verbs == ("create",):
        pytest.skip("create only, not stored (bindings bind a pod)")
    name = _name(d)
    listed = await api.get(_path(d))
    assert listed.status == 200, listed.json
    watch = await api.open_watch(_path(d), {"resourceVersion": listed.json["metadata"]["resourceVersion"]})
    try:
        created = await api.create(_path(d), _sample(d))
        assert created.status == 201, created.json
        assert (created.json["apiVersion"], created.json["kind"]) == (d.api_version, d.kind)
        [event] = await watch.events(1)
        assert event["type"] == "ADDED" and event["object"]["metadata"]["name"] == name
    finally:
        await watch.close()

    got = await api.get(_path(d, name))
    assert got.status == 200 and got.json["metadata"]["uid"] == created.json["metadata"]["uid"]
    names = [o["metadata"]["name"] for o in (await api.get(_path(d))).json["items"]]
    assert name in names

    for content_type, body in PATCHES:
        r = await api.call("PATCH", _path(d, name), body=body, headers={"content-type": content_type})
        assert r.status == 200, (content_type, r.json)
    apply = {"apiVersion": d.api_version, "kind": d.kind, "metadata": {"name": name, "labels": {"apply": "1"}}}
    r = await api.call("PATCH", _path(d, name), {"fieldManager": "test"}, body=apply,
                       headers={"content-type": "application/apply-patch+yaml"})
    assert r.status == 200, r.json
    labels = (await api.get(_path(d, name))).json["metadata"]["labels"]
    assert {"merge", "strategic", "json", "apply"} <= set(labels), labels

    r = await api.call("DELETE", _path(d, name))
    assert r.status == 200, r.json
    after = await api.get(_path(d, name))
    if d.plural == "namespaces":       # termination waits for the namespace controller
        assert after.json["status"]["phase"] == "Terminating"
    elif d.plural == "customresourcedefinitions":     # waits for the CRD finalizer (apiextensions/controller.py)
        assert after.json["metadata"]["finalizers"] == ["customresourcecleanup.apiextensions.k8s.io"]
    else:
        assert after.status == 404, after.json


@pytest.mark.parametrize("d", [d for d in REGISTRY.resources if d.review is not None], ids=_id)
async def test_every_review_kind_is_answered_and_not_stored(server: APIServer, api: Any, d: ResourceDefinition) -> None:
    api.server, api.storage = server, server.storage
    sample = _sample(d)
    del sample["metadata"]["name"]
    r = await api.create(_path(d), sample)
    assert r.status == 201, r.json
    assert (r.json["apiVersion"], r.json["kind"]) == (d.api_version, d.kind) and "status" in r.json
    assert (await api.get(_path(d))).status == 405
    kvs, _ = await server.storage.list(d.prefix)
    assert kvs == []
