"""Write errors as upstream words them: status code, reason, message and details.

Every failing write must leave the stored object untouched, so most tests also assert the
resourceVersion afterwards. Upstream references: handlers/create.go, update.go, rest.go
(checkName, transformDecodeError), the NamespaceLifecycle admission plugin, Store.Create/Update.
"""
from __future__ import annotations

import pytest

LEGACY_SCHEME = "pkg/api/legacyscheme/scheme.go:30"


def status_of(r):
    body = r.json
    assert body["kind"] == "Status" and body["status"] == "Failure", body
    return body


@pytest.mark.parametrize("path,body,message", [
    # A kind the version knows, but not the URL's: the decoder cannot convert it.
    ("/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x"}},
     'Service in version "v1" cannot be handled as a Pod: converting (v1.Service) to (core.Pod): unknown conversion'),
    # A kind without apiVersion takes the URL's version.
    ("/apis/apps/v1/namespaces/default/deployments", {"kind": "ReplicaSet", "metadata": {"name": "x"}},
     'ReplicaSet in version "v1" cannot be handled as a Deployment: '
     'converting (v1.ReplicaSet) to (apps.Deployment): unknown conversion'),
    # A version that has no such kind.
    ("/apis/apps/v1/namespaces/default/deployments", {"apiVersion": "v1", "kind": "Deployment", "metadata": {"name": "x"}},
     f'Deployment in version "v1" cannot be handled as a Deployment: no kind "Deployment" is registered for '
     f'version "v1" in scheme "{LEGACY_SCHEME}"'),
    ("/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "pod", "metadata": {"name": "x"}},
     f'pod in version "v1" cannot be handled as a Pod: no kind "pod" is registered for version "v1" '
     f'in scheme "{LEGACY_SCHEME}"'),
    ("/api/v1/namespaces/default/pods", {"apiVersion": "v2", "kind": "Pod", "metadata": {"name": "x"}},
     f'Pod in version "v2" cannot be handled as a Pod: no kind "Pod" is registered for version "v2" '
     f'in scheme "{LEGACY_SCHEME}"'),
    # The scheme knows the kind in another version: decoding works, the version check refuses.
    ("/apis/apps/v1/namespaces/default/deployments",
     {"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": {"name": "x"}},
     "the API version in the data (apps/v1beta2) does not match the expected API version (apps/v1)"),
    ("/apis/events.k8s.io/v1/namespaces/default/events", {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "x"}},
     "the API version in the data (v1) does not match the expected API version (events.k8s.io/v1)"),
])
async def test_wrong_kind_or_version_for_the_url(api, path, body, message):
    for method, url in (("POST", path), ("PUT", f"{path}/x")):
        r = await api.call(method, url, body=body)
        assert r.status == 400, r.json
        st = status_of(r)
        assert st["reason"] == "BadRequest"
        assert st["message"] == message


@pytest.mark.parametrize("body,content_type,start", [
    (b'{"apiVersion": "v1", "kind": "ConfigMap", bad', "application/json",
     "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: "),
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata: [unclosed", "application/yaml", ""),
    (b"\x01\x02\x03not protobuf", "application/vnd.kubernetes.protobuf", ""),
    (b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}}', "application/json",
     'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct '
     'field ObjectMeta.metadata.name of type string'),
])
async def test_malformed_bodies_are_400(api, body, content_type, start):
    r = await api.call("POST", api.CMS, body=body, headers={"content-type": content_type})
    assert r.status == 400, r.body
    st = status_of(r)
    assert st["reason"] == "BadRequest"
    assert st["message"].startswith(start)
    assert (await api.get(api.CMS)).json["items"] == []


async def test_body_over_3_mib_is_413_and_unknown_content_type_is_415(api):
    await api.create(api.CMS, api.configmap("c"))
    rv = await api.rv(f"{api.CMS}/c")
    big = api.configmap("c", {"k": "x" * (3 * 1024 * 1024)})
    for method, url in (("POST", api.CMS), ("PUT", f"{api.CMS}/c")):
        r = await api.call(method, url, body=big)
        assert r.status == 413
        assert status_of(r)["reason"] == "RequestEntityTooLarge"
        assert r.json["message"] == "Request entity too large: limit is 3145728"
    r = await api.call("POST", api.CMS, body=b"x=1", headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status == 415
    assert status_of(r)["reason"] == "UnsupportedMediaType"
    assert r.json["message"] == ("the body of the request was in an unknown format - accepted media types include: "
                                 "application/json, application/yaml, application/vnd.kubernetes.protobuf")
    assert await api.rv(f"{api.CMS}/c") == rv


async def test_missing_namespace_is_404_namespace_not_found(api):
    r = await api.create("/api/v1/namespaces/nope/configmaps", api.configmap("c"))
    assert r.status == 404
    st = status_of(r)
    assert st["reason"] == "NotFound"
    assert st["message"] == 'namespaces "nope" not found'
    assert st["details"] == {"name": "nope", "kind": "namespaces"}


async def test_body_namespace_must_match_the_url(api):
    r = await api.create(api.CMS, api.configmap("c", namespace="other"))
    assert r.status == 400
    assert r.json["message"] == "the namespace of the provided object does not match the namespace sent on the request"
    await api.create(api.CMS, api.configmap("c"))
    rv = await api.rv(f"{api.CMS}/c")
    r = await api.call("PUT", f"{api.CMS}/c", body=api.configmap("c", namespace="other"))
    assert r.status == 400
    assert r.json["message"] == "the namespace of the provided object does not match the namespace sent on the request"
    assert await api.rv(f"{api.CMS}/c") == rv


async def test_update_name_must_match_the_url(api):
    await api.create(api.CMS, api.configmap("c"))
    rv = await api.rv(f"{api.CMS}/c")
    r = await api.call("PUT", f"{api.CMS}/c", body=api.configmap("d"))
    assert r.status == 400
    assert r.json["message"] == "the name of the object (d) does not match the name on the URL (c)"
    # checkName compares even an empty name (upstream: PUT needs the name in the body)
    body = api.configmap("c")
    del body["metadata"]["name"]
    r = await api.call("PUT", f"{api.CMS}/c", body=body)
    assert r.status == 400
    assert r.json["message"] == "the name of the object () does not match the name on the URL (c)"
    assert await api.rv(f"{api.CMS}/c") == rv


async def test_terminating_namespace_forbids_creation(api):
    await api.create("/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    r = await api.call("DELETE", "/api/v1/namespaces/doomed")
    assert r.status == 200 and r.json["status"]["phase"] == "Terminating"
    r = await api.create("/api/v1/namespaces/doomed/configmaps", api.configmap("c"))
    assert r.status == 403
    st = status_of(r)
    assert st["reason"] == "Forbidden"
    assert st["message"] == ('configmaps "c" is forbidden: unable to create new content in namespace doomed '
                             "because it is being terminated")
    assert st["details"] == {"name": "c", "kind": "configmaps", "causes": [
        {"reason": "NamespaceTerminating", "message": "namespace doomed is being terminated",
         "field": "metadata.namespace"}]}
    # generateName: the name is not generated yet when mutating admission runs, so the object is
    # named by its generateName (upstream: admission.extractResourceName)
    r = await api.create("/api/v1/namespaces/doomed/configmaps",
                         {"metadata": {"generateName": "c-"}, "data": {}})
    assert r.status == 403
    assert r.json["message"] == ('configmaps "c-" is forbidden: unable to create new content in namespace doomed '
                                 "because it is being terminated")
    assert r.json["details"]["name"] == "c-"


async def test_already_exists(api):
    await api.create(api.DEPLOYS, api.deployment("web"))
    rv = await api.rv(f"{api.DEPLOYS}/web")
    r = await api.create(api.DEPLOYS, api.deployment("web"))
    assert r.status == 409
    st = status_of(r)
    assert st["reason"] == "AlreadyExists"
    assert st["message"] == 'deployments.apps "web" already exists'
    assert st["details"] == {"name": "web", "group": "apps", "kind": "deployments"}
    assert await api.rv(f"{api.DEPLOYS}/web") == rv


async def test_already_exists_while_being_deleted_says_so(api):
    cm = api.configmap("c")
    cm["metadata"]["finalizers"] = ["example.com/hold"]
    await api.create(api.CMS, cm)
    assert (await api.call("DELETE", f"{api.CMS}/c")).status == 200
    r = await api.create(api.CMS, api.configmap("c"))
    assert r.status == 409
    assert r.json["message"] == 'object is being deleted: configmaps "c" already exists'


async def test_stale_resource_version_is_409_conflict(api):
    await api.create(api.CMS, api.configmap("c"))
    old = (await api.get(f"{api.CMS}/c")).json
    old_rv = old["metadata"]["resourceVersion"]
    r = await api.call("PUT", f"{api.CMS}/c", body={**old, "data": {"k": "v2"}})
    assert r.status == 200
    new_rv = r.json["metadata"]["resourceVersion"]
    for body in ({**old, "data": {"k": "v3"}}, {**old, "data": {"k": "v2"}}):   # also a no-op at a stale RV
        r = await api.call("PUT", f"{api.CMS}/c", body=body)
        assert r.status == 409, r.json
        st = status_of(r)
        assert st["reason"] == "Conflict"
        assert st["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has been modified; '
                                 "please apply your changes to the latest version and try again")
        assert st["details"] == {"name": "c", "kind": "configmaps"}
    assert await api.rv(f"{api.CMS}/c") == new_rv != old_rv


async def test_update_of_missing_object_is_404_unless_create_on_update(api):
    r = await api.call("PUT", f"{api.DEPLOYS}/ghost", body=api.deployment("ghost"))
    assert r.status == 404
    assert r.json["message"] == 'deployments.apps "ghost" not found'
    assert r.json["details"] == {"name": "ghost", "group": "apps", "kind": "deployments"}
    r = await api.call("PUT", f"{api.CMS}/ghost", body=api.configmap("ghost"))
    assert r.status == 404
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
             "spec": {"holderIdentity": "me"}}
    event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
             "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "R"}
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
           "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}
    for path, body in (("/apis/coordination.k8s.io/v1/namespaces/default/leases/l", lease),
                       ("/api/v1/namespaces/default/events/e", event),
                       ("/api/v1/namespaces/default/serviceaccounts/sa", sa),
                       ("/api/v1/namespaces/default/services/svc", svc)):
        r = await api.call("PUT", path, body=body)
        assert r.status == 201, (path, r.json)
        assert (await api.get(path)).status == 200


async def test_invalid_object_is_422_and_nothing_is_stored(api):
    await api.create(api.DEPLOYS, api.deployment("web"))
    rv = await api.rv(f"{api.DEPLOYS}/web")
    bad = (await api.get(f"{api.DEPLOYS}/web")).json
    bad["spec"]["replicas"] = -1
    r = await api.call("PUT", f"{api.DEPLOYS}/web", body=bad)
    assert r.status == 422
    st = status_of(r)
    assert st["reason"] == "Invalid"
    assert st["message"].startswith('Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1')
    assert st["details"]["causes"][0]["field"] == "spec.replicas"
    assert await api.rv(f"{api.DEPLOYS}/web") == rv


async def test_unknown_route_and_method(api):
    r = await api.get("/api/v1/namespaces/default/widgets")
    assert r.status == 404 and r.json["reason"] == "NotFound"
    r = await api.call("POST", "/api/v1/namespaces/default/pods/x/binding/extra", body={})
    assert r.status == 404
    assert r.json["message"] == "the server could not find the requested resource"


@pytest.mark.parametrize("path", ["/api/v1/watch", "/apis/apps/v1/watch", "/apis/foo/v1/bars",
                                  "/api/v1/namespaces/default/pods/x/y/z"])
async def test_paths_that_name_no_resource_are_a_plain_404(api, path):
    r = await api.call("GET", path)
    assert r.status == 404
    assert r.json["kind"] == "Status" and r.json["reason"] == "NotFound"
