"""REST verbs through the in-process API server: list (selectors, paging, resourceVersion),
create/update (metadata, strategies, dry run) and patch.

Upstream references: handlers/get.go (ListResource), create.go, update.go, patch.go,
registry/generic/registry/store.go, storage/etcd3 (paging), pkg/registry/apps/deployment/strategy.go.
"""
from __future__ import annotations

import base64
import json

import orjson
import pytest

from kubeplane.storage import interface as st


def names(r):
    assert r.status == 200, r.json
    return [i["metadata"]["name"] for i in r.json["items"]]


@pytest.fixture
async def labelled(api):
    """Pods a..f with labels as upstream's selector tests use them."""
    specs = {"a": {"app": "web", "tier": "fe"}, "b": {"app": "web", "tier": "be"}, "c": {"app": "db"},
             "d": {"tier": "fe"}, "e": {}, "f": {"app": "web", "env": "prod"}}
    for n, lbls in specs.items():
        assert (await api.create(api.PODS, api.pod(n, labels=lbls))).status == 201
    return api


@pytest.mark.parametrize("selector,expected", [
    ("", ["a", "b", "c", "d", "e", "f"]),
    ("app=web", ["a", "b", "f"]),
    ("app==web", ["a", "b", "f"]),
    ("app!=web", ["c", "d", "e"]),           # != also matches objects without the key
    ("app=web,tier=fe", ["a"]),
    ("app in (web,db)", ["a", "b", "c", "f"]),
    ("app notin (web)", ["c", "d", "e"]),
    ("tier", ["a", "b", "d"]),
    ("!tier", ["c", "e", "f"]),
    ("app,!env", ["a", "b", "c"]),
    ("app in (web),tier notin (be)", ["a", "f"]),
    ("app=nothing", []),
])
async def test_list_label_selectors(labelled, selector, expected):
    assert names(await labelled.get(labelled.PODS, {"labelSelector": selector})) == expected


async def test_bad_label_selector_is_400(api):
    r = await api.get(api.PODS, {"labelSelector": "app in (web"})
    assert r.status == 400 and r.json["reason"] == "BadRequest"
    assert r.json["message"].startswith("unable to parse requirement: ")


async def test_list_field_selectors(api):
    await api.create("/api/v1/namespaces", {"metadata": {"name": "other"}})
    await api.create(api.PODS, api.pod("a", node="n1"))
    await api.create(api.PODS, api.pod("b", node="n2"))
    await api.create(api.PODS, api.pod("c"))
    await api.create("/api/v1/namespaces/other/pods", api.pod("a", ns="other", node="n1"))
    status = (await api.get(f"{api.PODS}/b")).json
    status["status"]["phase"] = "Running"
    assert (await api.call("PUT", f"{api.PODS}/b/status", body=status)).status == 200

    assert names(await api.get(api.PODS, {"fieldSelector": "metadata.name=b"})) == ["b"]
    assert names(await api.get(api.PODS, {"fieldSelector": "metadata.name!=b"})) == ["a", "c"]
    assert names(await api.get(api.PODS, {"fieldSelector": "spec.nodeName=n1"})) == ["a"]
    assert names(await api.get(api.PODS, {"fieldSelector": "spec.nodeName="})) == ["c"]   # unscheduled
    assert names(await api.get(api.PODS, {"fieldSelector": "status.phase=Running"})) == ["b"]
    assert names(await api.get(api.PODS, {"fieldSelector": "status.phase!=Running,spec.nodeName!="})) == ["a"]
    everywhere = await api.get("/api/v1/pods", {"fieldSelector": "spec.nodeName=n1"})
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere.json["items"]] == [
        ("default", "a"), ("other", "a")]
    r = await api.get("/api/v1/pods", {"fieldSelector": "metadata.namespace=other"})
    assert names(r) == ["a"] and r.json["items"][0]["metadata"]["namespace"] == "other"


async def test_event_field_selectors(api):
    def event(name, kind, obj, reason):
        return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                "involvedObject": {"kind": kind, "name": obj, "namespace": "default"},
                "reason": reason, "source": {"component": "kubelet"}, "type": "Normal"}
    await api.create("/api/v1/namespaces/default/events", event("e1", "Pod", "web-1", "Scheduled"))
    await api.create("/api/v1/namespaces/default/events", event("e2", "Deployment", "web", "ScalingReplicaSet"))
    path = "/api/v1/namespaces/default/events"
    assert names(await api.get(path, {"fieldSelector": "involvedObject.kind=Pod"})) == ["e1"]
    assert names(await api.get(path, {"fieldSelector": "involvedObject.name=web,involvedObject.kind=Deployment"})) == ["e2"]
    assert names(await api.get(path, {"fieldSelector": "reason=Scheduled"})) == ["e1"]
    assert names(await api.get(path, {"fieldSelector": "source=kubelet"})) == ["e1", "e2"]
    # events.k8s.io names the same fields regarding.* / reportingController
    r = await api.get("/apis/events.k8s.io/v1/namespaces/default/events", {"fieldSelector": "regarding.name=web-1"})
    assert names(r) == ["e1"]


@pytest.mark.parametrize("path,selector,message", [
    ("/api/v1/namespaces/default/pods", "spec.foo=bar", "field label not supported: spec.foo"),
    ("/api/v1/namespaces/default/events", "involvedObject.bogus=x", "field label not supported: involvedObject.bogus"),
    ("/api/v1/nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"),
    ("/apis/apps/v1/namespaces/default/deployments", "status.replicas=1",
     '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("/api/v1/namespaces/default/configmaps", "data.k=v",
     '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ("/api/v1/namespaces/default/pods", "nonsense", "invalid selector: 'nonsense'; can't understand 'nonsense'"),
])
async def test_unsupported_field_selector_is_400(api, path, selector, message):
    r = await api.get(path, {"fieldSelector": selector})
    assert r.status == 400
    assert r.json["reason"] == "BadRequest"
    assert r.json["message"] == message


async def test_pagination_in_key_order_with_continue_and_remaining_count(api):
    for n in ["e", "b", "d", "a", "c"]:
        await api.create(api.CMS, api.configmap(n))
    first = await api.get(api.CMS, {"limit": "2"})
    list_rv = first.json["metadata"]["resourceVersion"]
    assert names(first) == ["a", "b"]
    assert first.json["metadata"]["remainingItemCount"] == 3
    token = first.json["metadata"]["continue"]
    decoded = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    assert decoded == {"v": "meta.k8s.io/v1", "rv": int(list_rv), "start": "b\x00"}
    # A write between pages: later pages still report the first page's list resourceVersion.
    await api.create(api.CMS, api.configmap("zz"))
    second = await api.get(api.CMS, {"limit": "2", "continue": token})
    assert names(second) == ["c", "d"]
    assert second.json["metadata"]["resourceVersion"] == list_rv
    assert second.json["metadata"]["remainingItemCount"] == 2
    third = await api.get(api.CMS, {"limit": "2", "continue": second.json["metadata"]["continue"]})
    assert names(third) == ["e", "zz"]
    assert "continue" not in third.json["metadata"] and "remainingItemCount" not in third.json["metadata"]
    # exactly a full last page: no continue
    assert "continue" not in (await api.get(api.CMS, {"limit": "6"})).json["metadata"]


async def test_pagination_with_a_selector_fills_pages_and_omits_the_count(api):
    for i in range(6):
        await api.create(api.CMS, api.configmap(f"c{i}", labels={"even": str(i % 2 == 0).lower()}))
    r = await api.get(api.CMS, {"limit": "2", "labelSelector": "even=true"})
    assert names(r) == ["c0", "c2"]
    assert "remainingItemCount" not in r.json["metadata"] and r.json["metadata"]["continue"]
    r = await api.get(api.CMS, {"limit": "2", "labelSelector": "even=true", "continue": r.json["metadata"]["continue"]})
    assert names(r) == ["c4"]
    assert "continue" not in r.json["metadata"]


async def test_bad_and_expired_continue_tokens(api):
    for n in "abc":
        await api.create(api.CMS, api.configmap(n))
    r = await api.get(api.CMS, {"continue": "not-a-token"})
    assert r.status == 400 and r.json["message"].startswith("invalid continue token: continue key is not valid")
    token = (await api.get(api.CMS, {"limit": "1"})).json["metadata"]["continue"]
    r = await api.get(api.CMS, {"continue": token, "resourceVersion": "5"})
    assert r.status == 400
    assert r.json["message"] == "specifying resource version is not allowed when using continue"
    await api.create(api.CMS, api.configmap("d"))
    await api.storage.compact(api.storage.revision)
    r = await api.get(api.CMS, {"limit": "1", "continue": token})
    assert r.status == 410 and r.json["reason"] == "Expired"
    assert r.json["message"].startswith("The provided continue parameter is too old to display a consistent list")
    # the 410 carries a token that continues at the latest revision
    again = await api.get(api.CMS, {"limit": "5", "continue": r.json["metadata"]["continue"]})
    assert names(again) == ["b", "c", "d"]
    assert again.json["metadata"]["resourceVersion"] == str(api.storage.revision)


async def test_all_namespaces_list(api):
    await api.create("/api/v1/namespaces", {"metadata": {"name": "a-ns"}})
    await api.create(api.CMS, api.configmap("x"))
    await api.create("/api/v1/namespaces/a-ns/configmaps", api.configmap("y"))
    r = await api.get("/api/v1/configmaps")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in r.json["items"]] == [
        ("a-ns", "y"), ("default", "x")]
    assert r.json["kind"] == "ConfigMapList" and r.json["apiVersion"] == "v1"
    assert r.json["metadata"]["resourceVersion"] == str(api.storage.revision)


async def test_list_resource_version_semantics(api):
    await api.create(api.CMS, api.configmap("a"))
    old = api.storage.revision
    await api.create(api.CMS, api.configmap("b"))
    cur = api.storage.revision
    for q in ({}, {"resourceVersion": "0"}, {"resourceVersion": str(old)},
              {"resourceVersion": str(old), "resourceVersionMatch": "NotOlderThan"},
              {"resourceVersion": str(cur), "resourceVersionMatch": "Exact"}):
        r = await api.get(api.CMS, q)
        assert names(r) == ["a", "b"], q
        assert r.json["metadata"]["resourceVersion"] == str(cur)
    r = await api.get(api.CMS, {"resourceVersion": str(old), "resourceVersionMatch": "Exact"})
    assert r.status == 410 and r.json["reason"] == "Expired"
    assert r.json["message"] == "The resourceVersion for the provided list is too old."
    r = await api.get(api.CMS, {"resourceVersion": str(cur + 10)})
    assert r.status == 504 and r.json["reason"] == "Timeout"
    assert r.json["message"] == f"Too large resource version: {cur + 10}, current: {cur}"
    assert r.json["details"]["causes"] == [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}]


@pytest.mark.parametrize("query,status,message", [
    ({"resourceVersion": "abc"}, 400,
     'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'),
    ({"resourceVersionMatch": "Exact"}, 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden unless resourceVersion is provided"),
    ({"resourceVersion": "1", "resourceVersionMatch": "Newest"}, 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": '
     'supported values: "Exact", "NotOlderThan", ""'),
    ({"resourceVersion": "0", "resourceVersionMatch": "Exact"}, 422,
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'),
    ({"sendInitialEvents": "true"}, 422,
     'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'),
])
async def test_invalid_list_options(api, query, status, message):
    r = await api.get(api.CMS, query)
    assert r.status == status, r.json
    assert r.json["message"] == message
    if status == 422:
        assert r.json["reason"] == "Invalid"
        assert r.json["details"]["group"] == "meta.k8s.io" and r.json["details"]["kind"] == "ListOptions"


# --- create / update ----------------------------------------------------------------------

async def test_create_fills_metadata_and_generate_name(api, clock):
    body = api.configmap("")
    body["metadata"] = {"generateName": "cm-"}
    r = await api.create(api.CMS, body)
    assert r.status == 201
    meta = r.json["metadata"]
    assert meta["name"].startswith("cm-") and len(meta["name"]) == 8
    assert meta["namespace"] == "default"                          # from the URL
    assert meta["creationTimestamp"] == "2023-11-14T22:13:20Z"     # the server's clock
    assert meta["resourceVersion"] == str(api.storage.revision)
    assert len(meta["uid"]) == 36
    assert (await api.get(f"{api.CMS}/{meta['name']}")).json == r.json


@pytest.mark.parametrize("taken,expected_status", [(1, 201), (7, 201), (8, 409)])
async def test_taken_generated_name_is_retried_up_to_8_attempts(api, monkeypatch, taken, expected_status):
    """Upstream: createWithGenerateNameRetry (RetryGenerateName): a taken generated name is
    replaced by a new one, 8 attempts in all; then the AlreadyExists reaches the client."""
    from kubeplane.apiserver import objects
    assert (await api.create(api.CMS, api.configmap("cm-taken"))).status == 201
    generated = iter(["cm-taken"] * taken + ["cm-fresh"])
    monkeypatch.setattr(objects, "generate_name", lambda base: next(generated))
    body = api.configmap("")
    body["metadata"] = {"generateName": "cm-"}
    r = await api.create(api.CMS, body)
    assert r.status == expected_status, r.json
    if expected_status == 201:
        assert r.json["metadata"]["name"] == "cm-fresh"
    else:
        assert r.json["reason"] == "AlreadyExists" and next(generated) == "cm-fresh"   # no 9th attempt
    assert len(names(await api.get(api.CMS))) == (2 if expected_status == 201 else 1)


async def test_a_taken_requested_name_is_not_retried(api, monkeypatch):
    from kubeplane.apiserver import objects
    monkeypatch.setattr(objects, "generate_name", lambda base: pytest.fail("a requested name is never replaced"))
    assert (await api.create(api.CMS, api.configmap("c"))).status == 201
    r = await api.create(api.CMS, api.configmap("c"))
    assert r.status == 409 and r.json["reason"] == "AlreadyExists"


async def test_create_ignores_system_fields_sent_by_the_client(api):
    body = api.configmap("c")
    body["metadata"].update({"uid": "mine", "resourceVersion": "77", "creationTimestamp": "2001-01-01T00:00:00Z",
                             "deletionTimestamp": "2001-01-01T00:00:00Z", "generation": 9})
    r = await api.create(api.CMS, body)
    assert r.status == 201
    meta = r.json["metadata"]
    assert meta["uid"] != "mine" and meta["resourceVersion"] != "77"
    assert meta["creationTimestamp"] == "2023-11-14T22:13:20Z"
    assert "deletionTimestamp" not in meta and "generation" not in meta


async def test_dry_run_stores_nothing(api):
    rev = api.storage.revision
    r = await api.create(api.CMS, api.configmap("c"), {"dryRun": "All"})
    assert r.status == 201 and r.json["metadata"]["name"] == "c"
    assert (await api.get(f"{api.CMS}/c")).status == 404
    assert api.storage.revision == rev
    await api.create(api.CMS, api.configmap("c"))
    cur = (await api.get(f"{api.CMS}/c")).json
    rv = cur["metadata"]["resourceVersion"]
    r = await api.call("PUT", f"{api.CMS}/c", {"dryRun": "All"}, body={**cur, "data": {"k": "dry"}})
    assert r.status == 200 and r.json["data"] == {"k": "dry"}
    r = await api.call("PATCH", f"{api.CMS}/c", {"dryRun": "All"}, body={"data": {"k": "dry"}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200 and r.json["data"] == {"k": "dry"}
    r = await api.call("DELETE", f"{api.CMS}/c", {"dryRun": "All"})
    assert r.status == 200
    got = (await api.get(f"{api.CMS}/c")).json
    assert got["data"] == {"k": "v"} and got["metadata"]["resourceVersion"] == rv
    r = await api.create(api.CMS, api.configmap("d"), {"dryRun": "Some"})
    assert r.status == 422          # Upstream: ValidateCreateOptions (ValidateDryRun), handlers/create.go
    assert r.json["message"] == ('CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
                                 '[]string{"Some"}: supported values: "All"')


async def test_no_op_update_keeps_the_resource_version(api):
    await api.create(api.CMS, api.configmap("c"))
    cur = (await api.get(f"{api.CMS}/c")).json
    rev = api.storage.revision
    r = await api.call("PUT", f"{api.CMS}/c", body=cur)
    assert r.status == 200
    assert r.json["metadata"]["resourceVersion"] == cur["metadata"]["resourceVersion"]
    assert api.storage.revision == rev
    # without a resourceVersion the update is unconditional
    del cur["metadata"]["resourceVersion"]
    cur["data"] = {"k": "v2"}
    r = await api.call("PUT", f"{api.CMS}/c", body=cur)
    assert r.status == 200 and r.json["metadata"]["resourceVersion"] == str(rev + 1)


async def test_update_keeps_system_metadata(api):
    created = (await api.create(api.CMS, api.configmap("c"))).json
    body = api.configmap("c", {"k": "v2"})
    body["metadata"].update({"uid": "", "creationTimestamp": "2001-01-01T00:00:00Z"})
    r = await api.call("PUT", f"{api.CMS}/c", body=body)
    assert r.status == 200
    assert r.json["metadata"]["uid"] == created["metadata"]["uid"]
    assert r.json["metadata"]["creationTimestamp"] == created["metadata"]["creationTimestamp"]


async def test_deployment_generation(api):
    path = f"{api.DEPLOYS}/web"
    d = (await api.create(api.DEPLOYS, api.deployment("web"))).json
    assert d["metadata"]["generation"] == 1

    async def put(change):
        cur = (await api.get(path)).json
        change(cur)
        r = await api.call("PUT", path, body=cur)
        assert r.status == 200, r.json
        return r.json["metadata"]["generation"]

    assert await put(lambda o: o["spec"].update(replicas=3)) == 2                       # spec change
    assert await put(lambda o: o["metadata"].setdefault("labels", {}).update(x="y")) == 2   # labels: no
    assert await put(lambda o: o["metadata"].setdefault("annotations", {}).update(a="b")) == 3  # annotations: yes
    assert await put(lambda o: o["metadata"]["annotations"].update(a="b")) == 3          # unchanged
    # an empty annotation map is the same as none (Semantic.DeepEqual)
    cm = (await api.create(api.DEPLOYS, api.deployment("plain"))).json
    cm["metadata"]["annotations"] = {}
    r = await api.call("PUT", f"{api.DEPLOYS}/plain", body=cm)
    assert r.json["metadata"]["generation"] == 1
    # configmaps have no generation at all
    c = (await api.create(api.CMS, api.configmap("c"))).json
    c["data"] = {"k": "new"}
    assert "generation" not in (await api.call("PUT", f"{api.CMS}/c", body=c)).json["metadata"]


async def test_status_is_ignored_on_main_writes_and_spec_on_status_writes(api):
    path = f"{api.DEPLOYS}/web"
    body = api.deployment("web")
    body["status"] = {"replicas": 9}
    created = (await api.create(api.DEPLOYS, body)).json
    assert created.get("status", {}).get("replicas") in (None, 0)
    cur = (await api.get(path)).json
    cur["status"] = {"replicas": 5}
    cur["spec"]["replicas"] = 2
    r = await api.call("PUT", path, body=cur)
    assert r.json["spec"]["replicas"] == 2 and r.json.get("status", {}).get("replicas") in (None, 0)
    # /status: spec and labels are kept, status and annotations are written
    cur = r.json
    cur["status"] = {"replicas": 2, "observedGeneration": 2}
    cur["spec"]["replicas"] = 7
    cur["metadata"]["labels"] = {"sneaky": "yes"}
    cur["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    r = await api.call("PUT", f"{path}/status", body=cur)
    assert r.status == 200, r.json
    got = (await api.get(path)).json
    assert got["status"]["replicas"] == 2 and got["status"]["observedGeneration"] == 2
    assert got["spec"]["replicas"] == 2
    assert "sneaky" not in (got["metadata"].get("labels") or {})
    assert got["metadata"]["annotations"] == {"deployment.kubernetes.io/revision": "1"}
    assert got["metadata"]["generation"] == 2          # a /status write never bumps it


async def test_status_subresource_get_and_missing(api):
    await api.create(api.PODS, api.pod("p"))
    r = await api.get(f"{api.PODS}/p/status")
    assert r.status == 200 and r.json["kind"] == "Pod" and r.json["status"]["phase"] == "Pending"
    r = await api.call("PUT", f"{api.PODS}/ghost/status", body=api.pod("ghost"))
    assert r.status == 404 and r.json["message"] == 'pods "ghost" not found'


# --- patch ---------------------------------------------------------------------------------

MERGE = {"content-type": "application/merge-patch+json"}
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}
JSONPATCH = {"content-type": "application/json-patch+json"}
APPLY = {"content-type": "application/apply-patch+yaml"}


async def test_patch_types(api):
    path = f"{api.DEPLOYS}/web"
    await api.create(api.DEPLOYS, api.deployment("web"))
    r = await api.call("PATCH", path, body={"spec": {"replicas": 2}}, headers=MERGE)
    assert r.status == 200 and r.json["spec"]["replicas"] == 2 and r.json["metadata"]["generation"] == 2
    r = await api.call("PATCH", path, headers=STRATEGIC,
                       body={"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    assert r.status == 200
    assert r.json["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    r = await api.call("PATCH", path, headers=JSONPATCH, body=[{"op": "replace", "path": "/spec/replicas", "value": 4}])
    assert r.status == 200 and r.json["spec"]["replicas"] == 4
    r = await api.call("PATCH", path, headers=APPLY, query={"fieldManager": "me", "force": "true"},
                       body="apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n")
    assert r.status == 200 and r.json["spec"]["replicas"] == 5
    rv = r.json["metadata"]["resourceVersion"]
    r = await api.call("PATCH", path, body=b"x", headers={"content-type": "text/plain"})
    assert r.status == 415
    assert r.json["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, "
        "application/apply-patch+yaml")
    r = await api.call("PATCH", path, body=b'{"spec": ', headers=MERGE)
    assert r.status == 400
    assert await api.rv(path) == rv
    r = await api.call("PATCH", f"{api.DEPLOYS}/ghost", body={"spec": {}}, headers=MERGE)
    assert r.status == 404 and r.json["message"] == 'deployments.apps "ghost" not found'


async def test_patch_name_change_is_400(api):
    await api.create(api.CMS, api.configmap("c"))
    r = await api.call("PATCH", f"{api.CMS}/c", body={"metadata": {"name": "d"}}, headers=MERGE)
    assert r.status == 400
    assert r.json["message"] == "the name of the object (d) does not match the name on the URL (c)"


async def test_server_side_apply_creates_with_201(api):
    r = await api.call("PATCH", f"{api.CMS}/applied", headers=APPLY, query={"fieldManager": "kubectl"},
                       body="apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: b\n")
    assert r.status == 201, r.json
    assert r.json["data"] == {"a": "b"}
    assert r.json["metadata"]["managedFields"][0]["manager"] == "kubectl"
    assert r.json["metadata"]["managedFields"][0]["operation"] == "Apply"


class ConcurrentWriter:
    """Makes the first storage.update of a key lose a race against another writer."""

    def __init__(self, api, key: str) -> None:
        self.storage, self.key, self.calls = api.storage, key, 0
        self.original = api.storage.update

    async def __call__(self, key, obj, expected_revision=None):
        self.calls += 1
        if self.calls == 1 and key == self.key:
            cur = await self.storage.get(key)
            other = orjson.loads(cur.value)
            other["metadata"].setdefault("labels", {})["raced"] = "yes"
            await self.original(key, other, cur.mod_revision)
        return await self.original(key, obj, expected_revision)


async def test_patch_retries_a_conflict_when_it_pins_no_resource_version(api, monkeypatch):
    await api.create(api.CMS, api.configmap("c"))
    racer = ConcurrentWriter(api, "/registry/configmaps/default/c")
    monkeypatch.setattr(api.storage, "update", racer)
    r = await api.call("PATCH", f"{api.CMS}/c", body={"data": {"k": "patched"}}, headers=MERGE)
    assert r.status == 200, r.json
    assert racer.calls == 2
    got = (await api.get(f"{api.CMS}/c")).json
    assert got["data"] == {"k": "patched"} and got["metadata"]["labels"] == {"raced": "yes"}


async def test_patch_pinning_a_stale_resource_version_is_409(api, monkeypatch):
    await api.create(api.CMS, api.configmap("c"))
    rv = await api.rv(f"{api.CMS}/c")
    r = await api.call("PATCH", f"{api.CMS}/c", body={"data": {"k": "1"}}, headers=MERGE)
    assert r.status == 200
    current = r.json["metadata"]["resourceVersion"]
    r = await api.call("PATCH", f"{api.CMS}/c", body={"metadata": {"resourceVersion": rv}, "data": {"k": "2"}},
                       headers=MERGE)
    assert r.status == 409 and r.json["reason"] == "Conflict"
    assert r.json["message"] == ('Operation cannot be fulfilled on configmaps "c": the object has been modified; '
                                 "please apply your changes to the latest version and try again")
    assert await api.rv(f"{api.CMS}/c") == current
    # pinned to the current version but losing a race: no retry either
    racer = ConcurrentWriter(api, "/registry/configmaps/default/c")
    monkeypatch.setattr(api.storage, "update", racer)
    r = await api.call("PATCH", f"{api.CMS}/c", body={"metadata": {"resourceVersion": current}, "data": {"k": "3"}},
                       headers=MERGE)
    assert r.status == 409 and racer.calls == 1


async def test_status_patch_writes_only_status(api):
    await api.create(api.PODS, api.pod("p"))
    r = await api.call("PATCH", f"{api.PODS}/p/status", headers=STRATEGIC,
                       body={"status": {"phase": "Running"}, "spec": {"nodeName": "sneaky"}})
    assert r.status == 200, r.json
    got = (await api.get(f"{api.PODS}/p")).json
    assert got["status"]["phase"] == "Running" and "nodeName" not in got["spec"]
    r = await api.call("PATCH", f"{api.PODS}/p", headers=STRATEGIC, body={"status": {"phase": "Failed"}})
    assert r.status == 200 and r.json["status"]["phase"] == "Running"


async def test_wrong_storage_error_never_leaks(api, monkeypatch):
    await api.create(api.CMS, api.configmap("c"))

    async def broken(*a, **k):
        raise st.KeyNotFound("/registry/configmaps/default/c")
    monkeypatch.setattr(api.storage, "update", broken)
    cur = (await api.get(f"{api.CMS}/c")).json
    r = await api.call("PUT", f"{api.CMS}/c", body={**cur, "data": {"k": "x"}})
    assert r.status == 404 and r.json["message"] == 'configmaps "c" not found'


async def test_events_k8s_io_events_patch_and_apply_in_their_own_form(api):
    path = "/apis/events.k8s.io/v1/namespaces/default/events"
    ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e1"},
          "eventTime": "2024-05-01T10:00:00.000000Z", "reportingController": "c", "reportingInstance": "i",
          "action": "Act", "reason": "R", "type": "Normal", "note": "first",
          "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}}
    assert (await api.create(path, ev)).status == 201
    r = await api.call("PATCH", f"{path}/e1", body={"note": "second"},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200 and r.json["note"] == "second" and r.json["apiVersion"] == "events.k8s.io/v1"
    core = await api.get("/api/v1/namespaces/default/events/e1")
    assert core.json["message"] == "second"
    applied = {**ev, "note": "third"}
    r = await api.call("PATCH", f"{path}/e1", {"fieldManager": "m", "force": "true"}, body=applied,
                       headers={"content-type": "application/apply-patch+yaml"})
    assert r.status == 200 and r.json["note"] == "third"
    assert (await api.get("/api/v1/namespaces/default/events/e1")).json["message"] == "third"
