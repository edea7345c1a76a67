"""The write path's shortcuts keep behaviour: what is stored, returned and refused is the same
whether a write takes the shortcut (an in-process merge patch applied onto the stored object,
a binding's partial copy, remembered-valid validation) or the full way (JSON over HTTP)."""
from __future__ import annotations

import copy

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.api.resources import lookup
from kubeplane.apiserver.objects import storage_errors
from kubeplane.apiserver.authentication.user import component
from kubeplane.apiserver.request import Request
from kubeplane.storage import interface as st

MERGE = "application/merge-patch+json"


async def in_process(api, method: str, path: str, obj: dict, content_type: str = "application/json"):
    """A request as InProcessTransport sends a typed object or dict patch (Request.obj)."""
    resp = await api.server.route_trusted(Request(method, path, {}, {"content-type": content_type}, b"",
                                                  component("system:test"), copy.deepcopy(obj)))
    return resp.status, orjson.loads(resp.body)


def status_patch(uid: str, **status) -> dict:
    return {"metadata": {"uid": uid}, "status": status}


KUBELET_STATUS = {
    "phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
    "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"},
                   {"type": "PodReadyToStartContainers", "status": "True"}],
    "containerStatuses": [{"name": "c", "image": "nginx", "imageID": "", "ready": True, "restartCount": 0,
                           "state": {"running": {"startedAt": "2023-11-14T22:13:20Z"}}}],
}


async def test_in_process_status_merge_patch_matches_http_and_leaves_the_stored_object_alone(api):
    for name in ("a", "b"):
        await api.create(api.PODS, api.pod(name, labels={"app": "x"}))
    before = await api.storage.get(lookup("", "v1", "pods").key("default", "a"))
    snapshot = orjson.loads(before.value)
    assert before.obj == snapshot
    uid_a, uid_b = before.obj["metadata"]["uid"], (await api.get(f"{api.PODS}/b")).json["metadata"]["uid"]

    code, via_obj = await in_process(api, "PATCH", f"{api.PODS}/a/status", status_patch(uid_a, **KUBELET_STATUS), MERGE)
    r = await api.call("PATCH", f"{api.PODS}/b/status", body=status_patch(uid_b, **KUBELET_STATUS),
                       headers={"content-type": MERGE})
    assert code == r.status == 200
    via_http = r.json
    # The same result apart from the identity fields.
    for obj in (via_obj, via_http):
        for k in ("name", "uid", "resourceVersion"):
            obj["metadata"].pop(k)
    assert via_obj == via_http
    assert via_obj["status"]["podIP"] == "10.244.0.5" and via_obj["status"]["qosClass"] == "BestEffort"
    # The earlier revision's object is untouched (it shares unchanged parts with the new one).
    assert before.obj == snapshot and orjson.loads(before.value) == snapshot
    now = await api.storage.get(before.key)
    assert now.obj == orjson.loads(now.value)
    assert now.obj["spec"] == snapshot["spec"] and now.obj["metadata"]["labels"] == {"app": "x"}


async def test_in_process_status_patch_refusals_are_the_same_status_as_over_http(api):
    await api.create(api.PODS, api.pod("a"))
    kv = await api.storage.get(lookup("", "v1", "pods").key("default", "a"))
    cases = [
        {"status": {"qosClass": "Guaranteed"}},                               # immutable
        {"status": {"conditions": [{"type": "bad type!", "status": "True"}]}},  # not a qualified name
        {"metadata": {"labels": {"a": "-bad-"}}},                             # a changed label is checked
        {"metadata": {"uid": "other"}},                                      # immutable uid
        {"metadata": {"name": "b"}},                                         # name differs from URL
    ]
    for patch in cases:
        code, body = await in_process(api, "PATCH", f"{api.PODS}/a/status", patch, MERGE)
        r = await api.call("PATCH", f"{api.PODS}/a/status", body=patch, headers={"content-type": MERGE})
        assert (code, body) == (r.status, r.json), patch
        assert code in (400, 422), body
    assert (await api.storage.get(kv.key)).mod_revision == kv.mod_revision       # nothing written


async def test_in_process_main_resource_merge_patch_of_a_kind_without_defaults(api):
    await api.create(api.CMS, api.configmap("c", {"a": "1", "b": "2"}, labels={"x": "y"}))
    kv = await api.storage.get(lookup("", "v1", "configmaps").key("default", "c"))
    snapshot = orjson.loads(kv.value)
    code, body = await in_process(api, "PATCH", f"{api.CMS}/c", {"data": {"a": None, "c": "3"}}, MERGE)
    assert code == 200 and body["data"] == {"b": "2", "c": "3"} and body["metadata"]["labels"] == {"x": "y"}
    assert kv.obj == snapshot                                       # the old revision is unchanged
    code, body = await in_process(api, "PATCH", f"{api.CMS}/c", {"metadata": {"labels": {"x": "-"}}}, MERGE)
    assert code == 422 and body["details"]["causes"][0]["field"] == "metadata.labels"


async def test_in_process_pod_spec_merge_patch_still_defaults_a_copy(api):
    """A main-resource patch of a defaulted kind takes the full way (defaulting writes in place)."""
    await api.create(api.PODS, api.pod("a"))
    kv = await api.storage.get(lookup("", "v1", "pods").key("default", "a"))
    snapshot = orjson.loads(kv.value)
    patch = {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}
    code, body = await in_process(api, "PATCH", f"{api.PODS}/a", patch, MERGE)
    assert code == 422       # the merge patch replaced the list: a spec change pods forbid
    assert kv.obj == snapshot


async def test_binding_keeps_the_stored_pod_unchanged_and_merges_annotations(api):
    p = api.pod("p")
    p["metadata"]["annotations"] = {"keep": "1"}
    await api.create(api.PODS, p)
    kv = await api.storage.get(lookup("", "v1", "pods").key("default", "p"))
    snapshot = orjson.loads(kv.value)
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "annotations": {"sched": "yes"}},
            "target": {"kind": "Node", "name": "n1"}}
    assert (await api.create(f"{api.PODS}/p/binding", body)).status == 201
    assert kv.obj == snapshot and orjson.loads(kv.value) == snapshot
    pod = (await api.get(f"{api.PODS}/p")).json
    assert pod["metadata"]["annotations"] == {"keep": "1", "sched": "yes"}
    assert pod["spec"]["nodeName"] == "n1" and "nodeName" not in kv.obj["spec"]
    assert [c["type"] for c in pod["status"]["conditions"]] == ["PodScheduled"]
    assert "conditions" not in kv.obj["status"]


async def test_pod_creates_refuse_an_invalid_spec_after_valid_ones(api):
    """Remembered-valid validation: an invalid spec is still refused with the full Status."""
    for i in range(3):
        code, _ = await in_process(api, "POST", api.PODS, api.pod(f"ok{i}", labels={"app": "x"}))
        assert code == 201
    bad = api.pod("bad", labels={"app": "x"})
    bad["spec"]["containers"][0]["name"] = "Bad_Name"
    code, body = await in_process(api, "POST", api.PODS, bad)
    r = await api.create(api.PODS, bad)
    assert code == r.status == 422 and body == r.json
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.containers[0].name"]
    bad_label = api.pod("bad2", labels={"app": "x", "k": "-v"})
    code, body = await in_process(api, "POST", api.PODS, bad_label)
    assert code == 422 and body["details"]["causes"][0]["field"] == "metadata.labels"


@pytest.mark.parametrize("raised, expected", [
    (st.KeyExists("k"), errors.AlreadyExists), (st.KeyNotFound("k"), errors.NotFound),
    (st.RevisionMismatch("k"), errors.Conflict), (st.Compacted(1, 5), errors.Gone),
])
def test_storage_errors_translates_each_storage_failure(raised, expected):
    ri = lookup("", "v1", "pods")
    with pytest.raises(expected) as info:
        with storage_errors(ri, "p"):
            raise raised
    assert info.value.__suppress_context__
    if expected is errors.Conflict:
        assert info.value.message == f'Operation cannot be fulfilled on pods "p": {errors.OPTIMISTIC_LOCK_MSG}'
    with pytest.raises(ValueError):
        with storage_errors(ri, "p"):
            raise ValueError("passes through")
    with storage_errors(ri, "p"):
        pass


async def test_an_in_process_delete_that_reads_only_its_status_gets_no_body_and_the_same_result(api):
    """InProcessTransport.request_unread (ResourceClient.delete in process): the deleted pod is
    not encoded for a caller that drops it; the delete itself, its errors and an HTTP client's
    answer are unchanged."""
    from kubeplane.apiserver.inprocess import InProcessTransport
    from kubeplane.client.clientset import Clientset
    for name in ("a", "b"):
        await api.create(api.PODS, api.pod(name, node="n1"))
    t = InProcessTransport(api.server, "system:test")
    opts = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
    unread = await t.request_unread("DELETE", f"{api.PODS}/a", None, dict(opts))
    assert (unread.status, unread.body) == (200, b"")
    assert (await api.get(f"{api.PODS}/a")).status == 404
    r = await api.call("DELETE", f"{api.PODS}/b", body=opts)        # over HTTP: the deleted pod
    assert r.status == 200 and r.json["metadata"]["name"] == "b"
    missing = await t.request_unread("DELETE", f"{api.PODS}/a", None, dict(opts))
    assert missing.status == 404 and orjson.loads(missing.body)["reason"] == "NotFound"
    pods = Clientset(t).core_v1().pods("default")
    with pytest.raises(errors.NotFound):
        await pods.delete("a", grace_period_seconds=0)
    await api.create(api.PODS, api.pod("c"))
    await pods.delete("c")
    assert (await api.get(f"{api.PODS}/c")).status == 404


def test_the_in_process_transport_remembers_a_write_paths_request_info_as_parsed():
    """request_info: parse_request_info's answer, shared for a write (method and path decide
    it), parsed each time for a read (its query may make it a watch)."""
    from kubeplane.apiserver.inprocess import request_info
    from kubeplane.apiserver.request import parse_request_info
    cases = [("POST", "/api/v1/namespaces/default/events"), ("PATCH", "/api/v1/namespaces/default/pods/p/status"),
             ("DELETE", "/api/v1/namespaces/default/pods/p"), ("DELETE", "/api/v1/namespaces/default/pods"),
             ("PUT", "/apis/apps/v1/namespaces/d/deployments/x/scale"), ("POST", "/api/v1/namespaces/d/pods/p/binding"),
             ("PUT", "/api/v1/namespaces/x/finalize"), ("POST", "/version")]
    for method, path in cases:
        req = Request(method, path, {}, {})
        info = request_info(req)
        assert info == parse_request_info(req)
        assert request_info(Request(method, path, {"watch": "true"}, {})) is info
    watch = Request("GET", "/api/v1/namespaces/default/pods", {"watch": "true"}, {})
    assert request_info(watch).verb == "watch"
    assert request_info(Request("GET", "/api/v1/namespaces/default/pods", {}, {})).verb == "list"
