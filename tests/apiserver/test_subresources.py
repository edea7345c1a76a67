"""Subresources: scale (autoscaling/v1 Scale for deployments and replicasets), pods/binding
and namespaces/finalize (the latter also in test_deletion.py).

Upstream references: pkg/registry/apps/deployment/storage/storage.go (ScaleREST,
scaleFromDeployment, scaleUpdatedObjectInfo), pkg/apis/autoscaling/validation (ValidateScale),
pkg/registry/core/pod/storage/storage.go (BindingREST, setPodHostAndAnnotations).
"""
from __future__ import annotations

import pytest

MERGE = {"content-type": "application/merge-patch+json"}


@pytest.fixture(params=["deployments", "replicasets"])
async def scalable(request, api):
    base = api.DEPLOYS if request.param == "deployments" else api.RSS
    make = api.deployment if request.param == "deployments" else api.replicaset
    body = make("web", replicas=2)
    body["spec"]["selector"] = {"matchLabels": {"tier": "fe", "app": "web"},
                                "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dev"]}]}
    body["spec"]["template"]["metadata"]["labels"] = {"tier": "fe", "app": "web", "env": "prod"}
    r = await api.create(base, body)
    assert r.status == 201, r.json
    return api, f"{base}/web", request.param


async def test_get_scale(scalable):
    api, path, plural = scalable
    obj = (await api.get(path)).json
    r = await api.get(f"{path}/scale")
    assert r.status == 200
    assert r.json == {
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": "web", "namespace": "default", "uid": obj["metadata"]["uid"],
                     "resourceVersion": obj["metadata"]["resourceVersion"],
                     "creationTimestamp": obj["metadata"]["creationTimestamp"]},
        "spec": {"replicas": 2},
        # LabelSelectorAsSelector(...).String(): requirements sorted by key, values sorted
        "status": {"replicas": 0, "selector": "app=web,env in (dev,prod),tier=fe"},
    }


async def test_put_and_patch_scale(scalable):
    api, path, plural = scalable
    scale = (await api.get(f"{path}/scale")).json
    scale["spec"]["replicas"] = 5
    r = await api.call("PUT", f"{path}/scale", body=scale)
    assert r.status == 200 and r.json["kind"] == "Scale" and r.json["spec"]["replicas"] == 5
    owner = (await api.get(path)).json
    assert owner["spec"]["replicas"] == 5 and owner["metadata"]["generation"] == 2
    assert r.json["metadata"]["resourceVersion"] == owner["metadata"]["resourceVersion"]
    r = await api.call("PATCH", f"{path}/scale", body={"spec": {"replicas": 1}}, headers=MERGE)
    assert r.status == 200 and r.json["spec"]["replicas"] == 1
    assert (await api.get(path)).json["spec"]["replicas"] == 1
    r = await api.call("PATCH", f"{path}/scale", headers={"content-type": "application/json-patch+json"},
                       body=[{"op": "replace", "path": "/spec/replicas", "value": 3}])
    assert r.status == 200 and r.json["spec"]["replicas"] == 3


async def test_scale_errors(scalable):
    api, path, plural = scalable
    scale = (await api.get(f"{path}/scale")).json
    rv = scale["metadata"]["resourceVersion"]
    scale["spec"]["replicas"] = -1
    r = await api.call("PUT", f"{path}/scale", body=scale)
    assert r.status == 422 and r.json["reason"] == "Invalid"
    assert r.json["message"] == ('Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: '
                                 "must be greater than or equal to 0")
    assert r.json["details"]["group"] == "autoscaling" and r.json["details"]["kind"] == "Scale"
    assert await api.rv(path) == rv
    # the Scale's resourceVersion is a precondition
    await api.call("PATCH", path, body={"metadata": {"labels": {"x": "y"}}}, headers=MERGE)
    scale["spec"]["replicas"] = 4
    r = await api.call("PUT", f"{path}/scale", body=scale)
    assert r.status == 409
    assert r.json["message"] == (f'Operation cannot be fulfilled on {plural}.apps "web": the object has been '
                                 "modified; please apply your changes to the latest version and try again")
    assert (await api.get(path)).json["spec"]["replicas"] == 2
    scale["metadata"]["resourceVersion"] = ""
    scale["metadata"]["uid"] = "other"
    r = await api.call("PUT", f"{path}/scale", body=scale)
    assert r.status == 409 and "Precondition failed: UID in precondition: other" in r.json["message"]
    r = await api.call("PATCH", f"{path}/scale", body=b"{}", headers={"content-type": "application/apply-patch+yaml"})
    assert r.status == 415


async def test_scale_of_missing_object(api):
    r = await api.get(f"{api.DEPLOYS}/ghost/scale")
    assert r.status == 404 and r.json["message"] == 'deployments.apps "ghost" not found'
    body = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "ghost"}, "spec": {"replicas": 1}}
    r = await api.call("PUT", f"{api.RSS}/ghost/scale", body=body)
    assert r.status == 404 and r.json["message"] == 'replicasets/scale.apps "ghost" not found'
    assert r.json["details"] == {"name": "ghost", "group": "apps", "kind": "replicasets/scale"}


def binding(name: str, node: str, **meta) -> dict:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, **meta},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}


async def test_binding(api):
    await api.create(api.PODS, api.pod("p"))
    r = await api.create(f"{api.PODS}/p/binding", binding("p", "n1", annotations={"sched": "yes"}))
    assert r.status == 201
    assert r.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    pod = (await api.get(f"{api.PODS}/p")).json
    assert pod["spec"]["nodeName"] == "n1"
    assert pod["metadata"]["annotations"] == {"sched": "yes"}
    assert pod["status"]["conditions"] == [{"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                            "lastTransitionTime": "2023-11-14T22:13:20Z"}]
    rv = pod["metadata"]["resourceVersion"]
    r = await api.create(f"{api.PODS}/p/binding", binding("p", "n2"))
    assert r.status == 409 and r.json["reason"] == "Conflict"
    assert r.json["message"] == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    assert r.json["details"] == {"name": "p", "kind": "pods/binding"}
    assert await api.rv(f"{api.PODS}/p") == rv


async def test_binding_a_terminating_pod_is_409(api):
    p = api.pod("p")
    p["metadata"]["finalizers"] = ["example.com/hold"]
    await api.create(api.PODS, p)
    assert (await api.call("DELETE", f"{api.PODS}/p")).status == 200
    r = await api.create(f"{api.PODS}/p/binding", binding("p", "n1"))
    assert r.status == 409
    assert r.json["message"] == ('Operation cannot be fulfilled on pods/binding "p": '
                                 "pod p is being deleted, cannot be assigned to a host")


async def test_binding_preconditions_and_bad_bindings(api):
    created = (await api.create(api.PODS, api.pod("p"))).json
    uid = created["metadata"]["uid"]
    r = await api.create(f"{api.PODS}/p/binding", binding("p", "n1", uid="other"))
    assert r.status == 409
    assert r.json["message"] == (f'Operation cannot be fulfilled on pods "p": Precondition failed: '
                                 f"UID in precondition: other, UID in object meta: {uid}")
    r = await api.create(f"{api.PODS}/p/binding", binding("q", "n1"))
    assert r.status == 400 and r.json["message"] == "name in URL does not match name in Binding object"
    r = await api.create(f"{api.PODS}/p/binding", binding("p", ""))
    assert r.status == 422
    r = await api.create(f"{api.PODS}/ghost/binding", binding("ghost", "n1"))
    assert r.status == 404 and r.json["message"] == 'pods "ghost" not found'
    gated = api.pod("g", schedulingGates=[{"name": "wait"}])
    await api.create(api.PODS, gated)
    r = await api.create(f"{api.PODS}/g/binding", binding("g", "n1"))
    assert r.status == 409 and r.json["message"].endswith("pod g has non-empty .spec.schedulingGates")
    assert "nodeName" not in (await api.get(f"{api.PODS}/p")).json["spec"]


def test_set_defaults_except_spec_defaults_all_but_the_spec() -> None:
    from kubeplane.apiserver.registry.scheme import set_defaults_except_spec
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}, "spec": {"finalizers": []}, "status": {}}
    set_defaults_except_spec(ns)
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "a"} and ns["status"] == {"phase": "Active"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    spec = pod["spec"]
    set_defaults_except_spec(pod)
    assert pod["spec"] is spec and spec == {"containers": [{"name": "c"}]}      # set aside, untouched


async def test_legacy_bindings_collection(api):
    """POST /api/v1/namespaces/<ns>/bindings binds the pod the Binding names, as pods/<name>/binding
    (upstream: LegacyBindingREST); it is create-only."""
    await api.create(api.PODS, api.pod("p"))
    bindings = "/api/v1/namespaces/default/bindings"
    r = await api.create(bindings, binding("p", "n1", annotations={"sched": "yes"}))
    assert r.status == 201, r.json
    assert r.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    pod = (await api.get(f"{api.PODS}/p")).json
    assert pod["spec"]["nodeName"] == "n1" and pod["metadata"]["annotations"] == {"sched": "yes"}
    r = await api.create(bindings, binding("p", "n2"))
    assert r.status == 409
    assert r.json["message"] == 'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    r = await api.create(bindings, binding("ghost", "n1"))
    assert r.status == 404 and r.json["message"] == 'pods "ghost" not found'
    r = await api.create(bindings, binding("p", "n1", namespace="other"))
    assert r.status == 400
    assert r.json["message"] == "the namespace of the provided object does not match the namespace sent on the request"
    assert (await api.get(bindings)).status == 405
    assert (await api.call("POST", f"{bindings}/p", body=binding("p", "n1"))).status == 405
    [res] = [x for x in (await api.get("/api/v1")).json["resources"] if x["name"] == "bindings"]
    assert (res["kind"], res["namespaced"], res["verbs"]) == ("Binding", True, ["create"])


def test_every_subresource_names_a_handler_that_serves_its_verbs() -> None:
    """The router serves a subresource through the handler its definition names
    (Subresource.handler); each declared verb must have its function there."""
    from kubeplane.apiserver.handlers.subresource_rest import REST
    from kubeplane.apiserver.registry import REGISTRY
    for r in REGISTRY.resources:
        for s in r.subresources:
            verbs = REST.get(s.handler or s.name)
            assert verbs is not None, (r.plural, s.name, s.handler)
            assert set(s.verbs) <= set(verbs), (r.plural, s.name, s.verbs)


async def test_unknown_subresource_is_404_and_a_verb_it_lacks_405(api):
    """Upstream: no route for an undeclared subresource (404); a declared one answers a verb
    it does not serve with 405 MethodNotAllowed."""
    await api.create(api.PODS, api.pod("p"))
    r = await api.get(f"{api.PODS}/p/nope")
    assert r.status == 404 and r.json["message"] == "the server could not find the requested resource"
    r = await api.call("DELETE", f"{api.PODS}/p/status")
    assert r.status == 405, r.json
    assert r.json["reason"] == "MethodNotAllowed"
    assert r.json["message"] == 'delete is not supported on resources of kind "pods/status"'
    assert (await api.get(f"{api.PODS}/p/binding")).status == 405
    assert (await api.call("PATCH", "/api/v1/namespaces/default/finalize", body={}, headers=MERGE)).status == 405
    r = await api.get("/api/v1/namespaces/default/finalize")
    assert r.status == 405 and r.json["message"] == 'get is not supported on resources of kind "namespaces/finalize"'


async def test_server_side_apply_to_status_writes_the_status_and_its_own_entry(api):
    """An apply to /status owns and writes status (and nothing else); an apply to the main
    resource leaves status alone (upstream: the strategies' GetResetFields)."""
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    path = "/apis/apps/v1/namespaces/default/deployments"
    assert (await api.create(path, dep)).status == 201
    apply = {"content-type": "application/apply-patch+yaml"}
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 5}, "status": {"observedGeneration": 1, "replicas": 3}}
    r = await api.call("PATCH", f"{path}/d/status", {"fieldManager": "ctl", "force": "true"}, body=body, headers=apply)
    assert r.status == 200, r.json
    assert r.json["status"] == {"observedGeneration": 1, "replicas": 3} and r.json["spec"]["replicas"] == 1
    entry = next(e for e in r.json["metadata"]["managedFields"] if e["manager"] == "ctl")
    assert (entry["operation"], entry["subresource"]) == ("Apply", "status")
    assert set(entry["fieldsV1"]) == {"f:status"}
    body["status"] = {"replicas": 7}
    r = await api.call("PATCH", f"{path}/d", {"fieldManager": "other", "force": "true"}, body=body, headers=apply)
    assert r.status == 200, r.json
    assert r.json["status"] == {"observedGeneration": 1, "replicas": 3} and r.json["spec"]["replicas"] == 5


def _managed(obj: dict) -> list[tuple]:
    return [(m["manager"], m["operation"], m["apiVersion"], m.get("subresource", ""), "time" in m, m["fieldsV1"])
            for m in obj["metadata"].get("managedFields") or []]


async def test_a_scale_write_takes_the_replicas_as_an_entry_of_subresource_scale(scalable):
    """`kubectl apply --server-side`, `kubectl scale`, then the same apply: the scale's manager
    holds .spec.replicas through subresource "scale", and the applier's conflict names it.
    Upstream: ScaleREST's scaleUpdatedObjectInfo with managedfields.ScaleHandler (ToSubresource,
    ToParent: a manager new to the object gets no time) and printManager's "with subresource"."""
    api, path, plural = scalable
    kind = "Deployment" if plural == "deployments" else "ReplicaSet"
    owner = (await api.get(path)).json
    config = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"},
              "spec": {"replicas": 2, "selector": owner["spec"]["selector"], "template": owner["spec"]["template"]}}
    apply = {"content-type": "application/apply-patch+yaml"}
    r = await api.call("PATCH", path, {"fieldManager": "applier", "force": "true"}, body=config, headers=apply)
    assert r.status == 200, r.json
    r = await api.call("PATCH", f"{path}/scale", {"fieldManager": "kubectl"}, body={"spec": {"replicas": 3}},
                       headers=MERGE)
    assert r.status == 200 and "managedFields" not in r.json["metadata"], r.json
    entries = _managed((await api.get(path)).json)
    assert ("kubectl", "Update", "apps/v1", "scale", False, {"f:spec": {"f:replicas": {}}}) in entries
    applier = next(e for e in entries if e[0] == "applier")
    assert "f:replicas" not in applier[5]["f:spec"]            # taken from the applier
    r = await api.call("PATCH", path, {"fieldManager": "applier"}, body=config, headers=apply)
    assert (r.status, r.json["message"]) == (
        409, 'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: '
             '.spec.replicas'), r.json
    # a scale to the same count changes no ownership
    r = await api.call("PATCH", f"{path}/scale", {"fieldManager": "other"}, body={"spec": {"replicas": 3}},
                       headers=MERGE)
    assert r.status == 200 and _managed((await api.get(path)).json) == entries
