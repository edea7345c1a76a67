"""Deletion as upstream's generic store does it: graceful pods, finalizers, propagation
policies, preconditions, deletecollection and namespace termination.

Upstream references: registry/generic/registry/store.go (Delete, updateForGracefulDeletion
AndFinalizers, markAsDeleting, deletionFinalizersForGarbageCollection, ShouldDeleteDuringUpdate),
registry/rest/delete.go (BeforeDelete), pkg/registry/core/pod/strategy.go (CheckGracefulDelete),
pkg/registry/core/namespace/storage/storage.go.
"""
from __future__ import annotations

import pytest

NOW = "2023-11-14T22:13:20Z"          # the fake clock's start


async def events_since(api, rev: int, prefix: str):
    w = api.storage.watch(prefix, rev)
    out = []
    while True:
        it = w.__aiter__()
        import asyncio
        task = asyncio.ensure_future(it.__anext__())
        await asyncio.sleep(0)
        if not task.done():
            task.cancel()
            break
        out.append(task.result())
    w.stop()
    return [(e.type, e.kv.obj) for e in out]


async def test_status_success_for_most_kinds(api):
    created = (await api.create(api.DEPLOYS, api.deployment("web"))).json
    r = await api.call("DELETE", f"{api.DEPLOYS}/web")
    assert r.status == 200
    assert r.json == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                      "details": {"name": "web", "group": "apps", "kind": "deployments",
                                  "uid": created["metadata"]["uid"]}}
    assert (await api.get(f"{api.DEPLOYS}/web")).status == 404
    r = await api.call("DELETE", f"{api.DEPLOYS}/web")
    assert r.status == 404 and r.json["message"] == 'deployments.apps "web" not found'


async def test_unbound_pod_is_removed_at_once_and_returned(api):
    await api.create(api.PODS, api.pod("p"))
    rev = api.storage.revision
    r = await api.call("DELETE", f"{api.PODS}/p", {"gracePeriodSeconds": "30"})
    assert r.status == 200
    assert r.json["kind"] == "Pod" and r.json["metadata"]["name"] == "p"
    assert r.json["metadata"]["deletionTimestamp"] == NOW
    assert r.json["metadata"]["deletionGracePeriodSeconds"] == 0
    assert (await api.get(f"{api.PODS}/p")).status == 404
    # upstream writes the deletion marks first, then deletes: watchers see both
    evs = await events_since(api, rev, "/registry/pods/")
    assert [t for t, _ in evs] == ["MODIFIED", "DELETED"]
    assert evs[1][1]["metadata"]["deletionGracePeriodSeconds"] == 0


async def test_bound_pod_is_marked_then_removed_by_grace_zero(api, clock):
    await api.create(api.PODS, api.pod("p", node="n1"))
    r = await api.call("DELETE", f"{api.PODS}/p")
    assert r.status == 200
    meta = r.json["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30           # the defaulted terminationGracePeriodSeconds
    assert meta["deletionTimestamp"] == "2023-11-14T22:13:50Z"
    got = (await api.get(f"{api.PODS}/p")).json
    assert got["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:50Z"
    rv = got["metadata"]["resourceVersion"]
    # a second delete without a shorter grace changes nothing and returns the pod
    r = await api.call("DELETE", f"{api.PODS}/p", {"gracePeriodSeconds": "60"})
    assert r.status == 200 and r.json["metadata"]["resourceVersion"] == rv
    # a shorter grace moves the deadline by the difference (10:13:50 - 30 + 5)
    clock.step(10)
    r = await api.call("DELETE", f"{api.PODS}/p", body={"kind": "DeleteOptions", "apiVersion": "v1",
                                                       "gracePeriodSeconds": 5})
    assert r.status == 200
    assert r.json["metadata"]["deletionTimestamp"] == "2023-11-14T22:13:25Z"
    assert r.json["metadata"]["deletionGracePeriodSeconds"] == 5
    assert (await api.get(f"{api.PODS}/p")).status == 200
    # the kubelet's final delete
    r = await api.call("DELETE", f"{api.PODS}/p", {"gracePeriodSeconds": "0"})
    assert r.status == 200 and r.json["kind"] == "Pod"
    assert (await api.get(f"{api.PODS}/p")).status == 404


async def test_deletion_leaves_the_stored_versions_it_replaces_as_they_were(api, clock):
    """Deletion copies only what it changes (top level and metadata) and shares the rest with
    the stored object: each version a watcher or the history holds stays as it was stored, the
    one before the marks included, through the graceful delete and the final one."""
    import copy
    await api.create(api.PODS, api.pod("p", node="n1", labels={"app": "web"}))
    key = "/registry/pods/default/p"
    before = await api.storage.get(key)
    snapshot = copy.deepcopy(before.obj)
    rev = api.storage.revision
    r = await api.call("DELETE", f"{api.PODS}/p", body={"kind": "DeleteOptions", "apiVersion": "v1",
                                                       "finalizers": None, "propagationPolicy": "Foreground"})
    assert r.status == 200 and r.json["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert r.json["metadata"]["generation"] == 2
    marked = await api.storage.get(key)
    marked_snapshot = copy.deepcopy(marked.obj)
    r = await api.call("PATCH", f"{api.PODS}/p", body={"metadata": {"finalizers": None}},
                       headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200
    r = await api.call("DELETE", f"{api.PODS}/p", {"gracePeriodSeconds": "0"})
    assert r.status == 200 and r.json["metadata"]["deletionGracePeriodSeconds"] == 0
    assert r.json["spec"] == snapshot["spec"] and r.json["metadata"]["labels"] == {"app": "web"}
    assert before.obj == snapshot and "deletionTimestamp" not in before.obj["metadata"]
    assert marked.obj == marked_snapshot and marked.obj["metadata"]["deletionGracePeriodSeconds"] == 30
    evs = await events_since(api, rev, "/registry/pods/")
    assert [t for t, _ in evs] == ["MODIFIED", "MODIFIED", "MODIFIED", "DELETED"]
    assert [o["metadata"].get("deletionGracePeriodSeconds") for _, o in evs] == [30, 30, 0, 0]


async def test_pod_grace_rules(api):
    await api.create(api.PODS, api.pod("neg", node="n1"))
    r = await api.call("DELETE", f"{api.PODS}/neg", {"gracePeriodSeconds": "-5"})
    assert r.json["metadata"]["deletionGracePeriodSeconds"] == 1        # negative means 1s
    done = api.pod("done", node="n1")
    await api.create(api.PODS, done)
    cur = (await api.get(f"{api.PODS}/done")).json
    cur["status"]["phase"] = "Succeeded"
    await api.call("PUT", f"{api.PODS}/done/status", body=cur)
    r = await api.call("DELETE", f"{api.PODS}/done")                   # finished pods go at once
    assert r.status == 200 and (await api.get(f"{api.PODS}/done")).status == 404


@pytest.mark.parametrize("policy,finalizer", [("Orphan", "orphan"), ("Foreground", "foregroundDeletion")])
async def test_orphan_and_foreground_only_mark(api, policy, finalizer):
    await api.create(api.RSS, api.replicaset("rs"))
    r = await api.call("DELETE", f"{api.RSS}/rs", body={"propagationPolicy": policy})
    assert r.status == 200
    assert r.json["kind"] == "ReplicaSet"
    meta = r.json["metadata"]
    assert meta["finalizers"] == [finalizer]
    assert meta["deletionTimestamp"] == NOW and meta["deletionGracePeriodSeconds"] == 0
    assert meta["generation"] == 2                       # markAsDeleting bumps it once
    stored = (await api.get(f"{api.RSS}/rs")).json
    assert stored["metadata"]["finalizers"] == [finalizer]
    # the garbage collector removes its finalizer: that update deletes the object
    stored["metadata"]["finalizers"] = []
    r = await api.call("PUT", f"{api.RSS}/rs", body=stored)
    assert r.status == 200
    assert (await api.get(f"{api.RSS}/rs")).status == 404


async def test_query_parameter_policy_and_background(api):
    await api.create(api.RSS, api.replicaset("a"))
    r = await api.call("DELETE", f"{api.RSS}/a", {"propagationPolicy": "Orphan"})
    assert r.json["metadata"]["finalizers"] == ["orphan"]
    await api.create(api.RSS, api.replicaset("b"))
    r = await api.call("DELETE", f"{api.RSS}/b", body={"propagationPolicy": "Background"})
    assert r.status == 200 and r.json["kind"] == "Status"
    assert (await api.get(f"{api.RSS}/b")).status == 404
    r = await api.call("DELETE", f"{api.RSS}/a", body={"propagationPolicy": "Sideways"})
    assert r.status == 422 and r.json["reason"] == "Invalid"


async def test_orphan_dependents_false_answers_202_while_pending(api):
    cm = api.configmap("c")
    cm["metadata"]["finalizers"] = ["example.com/hold"]
    await api.create(api.CMS, cm)
    r = await api.call("DELETE", f"{api.CMS}/c", body={"orphanDependents": False})
    assert r.status == 202 and r.json["metadata"]["deletionTimestamp"] == NOW


async def test_other_finalizers_only_mark_and_the_last_removal_deletes(api):
    cm = api.configmap("c")
    cm["metadata"]["finalizers"] = ["example.com/a", "example.com/b"]
    await api.create(api.CMS, cm)
    r = await api.call("DELETE", f"{api.CMS}/c")
    assert r.status == 200 and r.json["metadata"]["deletionTimestamp"] == NOW
    cur = (await api.get(f"{api.CMS}/c")).json
    cur["metadata"]["finalizers"] = ["example.com/b"]
    r = await api.call("PUT", f"{api.CMS}/c", body=cur)
    assert r.status == 200 and (await api.get(f"{api.CMS}/c")).status == 200
    r = await api.call("PATCH", f"{api.CMS}/c", body=[{"op": "remove", "path": "/metadata/finalizers"}],
                       headers={"content-type": "application/json-patch+json"})
    assert r.status == 200
    assert r.json["metadata"]["name"] == "c"            # the PUT/PATCH answers the object
    assert (await api.get(f"{api.CMS}/c")).status == 404


@pytest.mark.parametrize("field,value,message", [
    ("uid", "wrong", "the UID in the precondition (wrong) does not match the UID in record ({uid}). "
                     "The object might have been deleted and then recreated"),
    ("resourceVersion", "1", "the ResourceVersion in the precondition (1) does not match the ResourceVersion "
                             "in record ({rv}). The object might have been modified"),
])
async def test_preconditions_conflict(api, field, value, message):
    created = (await api.create(api.DEPLOYS, api.deployment("web"))).json
    r = await api.call("DELETE", f"{api.DEPLOYS}/web", body={"preconditions": {field: value}})
    assert r.status == 409 and r.json["reason"] == "Conflict"
    why = message.format(uid=created["metadata"]["uid"], rv=created["metadata"]["resourceVersion"])
    assert r.json["message"] == f'Operation cannot be fulfilled on Deployment.apps "web": {why}'
    assert r.json["details"] == {"name": "web", "group": "apps", "kind": "Deployment"}
    assert await api.rv(f"{api.DEPLOYS}/web") == created["metadata"]["resourceVersion"]
    r = await api.call("DELETE", f"{api.DEPLOYS}/web",
                       body={"preconditions": {"uid": created["metadata"]["uid"],
                                               "resourceVersion": created["metadata"]["resourceVersion"]}})
    assert r.status == 200 and r.json["status"] == "Success"


async def test_delete_dry_run_keeps_everything(api):
    await api.create(api.PODS, api.pod("p", node="n1"))
    rv = await api.rv(f"{api.PODS}/p")
    r = await api.call("DELETE", f"{api.PODS}/p", {"dryRun": "All"})
    assert r.status == 200 and r.json["metadata"]["deletionGracePeriodSeconds"] == 30
    got = (await api.get(f"{api.PODS}/p")).json
    assert got["metadata"]["resourceVersion"] == rv and "deletionTimestamp" not in got["metadata"]


async def test_deletecollection_with_selector(api):
    for n, app in (("a", "web"), ("b", "db"), ("c", "web")):
        await api.create(api.CMS, api.configmap(n, labels={"app": app}))
    r = await api.call("DELETE", api.CMS, {"labelSelector": "app=web"})
    assert r.status == 200
    assert r.json["kind"] == "ConfigMapList"
    assert [i["metadata"]["name"] for i in r.json["items"]] == ["a", "c"]
    left = (await api.get(api.CMS)).json["items"]
    assert [i["metadata"]["name"] for i in left] == ["b"]


async def test_namespace_termination_and_finalize(api, clock):
    created = (await api.create("/api/v1/namespaces", {"metadata": {"name": "team"}})).json
    assert created["spec"]["finalizers"] == ["kubernetes"] and created["status"]["phase"] == "Active"
    await api.create("/api/v1/namespaces/team/configmaps", api.configmap("c"))
    r = await api.call("DELETE", "/api/v1/namespaces/team")
    assert r.status == 200 and r.json["kind"] == "Namespace"
    assert r.json["status"]["phase"] == "Terminating"
    assert r.json["metadata"]["deletionTimestamp"] == NOW
    assert "deletionGracePeriodSeconds" not in r.json["metadata"]
    # the namespace stays until its controller empties it and finalizes
    clock.step(5)
    r = await api.call("DELETE", "/api/v1/namespaces/team")
    assert r.status == 200 and r.json["metadata"]["deletionTimestamp"] == NOW
    assert (await api.get("/api/v1/namespaces/team")).status == 200
    ns = (await api.get("/api/v1/namespaces/team")).json
    ns["spec"]["finalizers"] = []
    ns["status"]["phase"] = "Active"                      # finalize cannot change status
    r = await api.call("PUT", "/api/v1/namespaces/team/finalize", body=ns)
    assert r.status == 200
    assert r.json["spec"].get("finalizers", []) == []
    assert (await api.get("/api/v1/namespaces/team")).status == 404


async def test_finalize_of_live_namespace_only_updates(api):
    await api.create("/api/v1/namespaces", {"metadata": {"name": "live"}})
    ns = (await api.get("/api/v1/namespaces/live")).json
    ns["spec"]["finalizers"] = []
    r = await api.call("PUT", "/api/v1/namespaces/live/finalize", body=ns)
    assert r.status == 200
    got = (await api.get("/api/v1/namespaces/live")).json
    assert got["spec"].get("finalizers", []) == [] and got["status"]["phase"] == "Active"
    r = await api.call("DELETE", "/api/v1/namespaces/live")
    assert r.status == 200 and r.json["status"]["phase"] == "Terminating"
    r = await api.call("DELETE", "/api/v1/namespaces/live")       # nothing holds it any more
    assert r.status == 200 and r.json["kind"] == "Namespace"
    assert (await api.get("/api/v1/namespaces/live")).status == 404


async def test_namespace_delete_preconditions(api):
    await api.create("/api/v1/namespaces", {"metadata": {"name": "n"}})
    uid = (await api.get("/api/v1/namespaces/n")).json["metadata"]["uid"]
    r = await api.call("DELETE", "/api/v1/namespaces/n", body={"preconditions": {"uid": "x"}})
    assert r.status == 409
    assert r.json["message"] == (f'Operation cannot be fulfilled on namespaces "n": Precondition failed: '
                                 f"UID in precondition: x, UID in object meta: {uid}")


async def test_finalize_validates_the_finalizers_and_honours_dry_run(api):
    """/finalize goes through the generic store: ValidateNamespaceFinalizeUpdate's messages,
    dryRun=All writes nothing, an unchanged namespace keeps its resourceVersion."""
    await api.create("/api/v1/namespaces", {"metadata": {"name": "fin"}})
    ns = (await api.get("/api/v1/namespaces/fin")).json
    rv = ns["metadata"]["resourceVersion"]
    bad = {**ns, "spec": {"finalizers": ["no-slash"]}}
    r = await api.call("PUT", "/api/v1/namespaces/fin/finalize", body=bad)
    assert r.status == 422, r.json
    assert r.json["message"] == ('Namespace "fin" is invalid: spec.finalizers[0]: Invalid value: "no-slash": '
                                 "name is neither a standard finalizer name nor is it fully qualified")
    r = await api.call("PUT", "/api/v1/namespaces/fin/finalize", {"dryRun": "All"}, body={**ns, "spec": {}})
    assert r.status == 200 and "finalizers" not in r.json["spec"]
    got = (await api.get("/api/v1/namespaces/fin")).json
    assert got["spec"]["finalizers"] == ["kubernetes"] and got["metadata"]["resourceVersion"] == rv
    r = await api.call("PUT", "/api/v1/namespaces/fin/finalize", body=ns)     # no change
    assert r.status == 200 and r.json["metadata"]["resourceVersion"] == rv
    assert (await api.call("PUT", "/api/v1/namespaces/ghost/finalize", body=ns)).status == 404


async def test_a_delete_that_lost_a_race_goes_again_on_the_newer_object(api, monkeypatch):
    """Another writer updating the object between the delete's read and its write (a
    controller's status write, frequent on etcd) does not fail the delete: the store deletes
    the newer version, as upstream's conditionalDelete retries on the current state. A
    resourceVersion precondition still refuses it."""
    r = await api.create(api.CMS, api.configmap("raced"))
    assert r.status == 201
    key = "/registry/configmaps/default/raced"
    delete = api.storage.delete
    raced = []

    async def racing_delete(k, expected_revision=None):
        if not raced:
            raced.append(k)
            current = await api.storage.get(k)
            await api.storage.update(k, {**current.obj, "data": {"by": "someone else"}})
        return await delete(k, expected_revision)

    monkeypatch.setattr(api.storage, "delete", racing_delete)
    r = await api.call("DELETE", api.CMS + "/raced")
    assert r.status == 200, r.json
    assert raced == [key] and await api.storage.get(key) is None

    r = await api.create(api.CMS, api.configmap("pinned"))
    stale = r.json["metadata"]["resourceVersion"]
    raced.clear()
    r = await api.call("DELETE", api.CMS + "/pinned", body={"preconditions": {"resourceVersion": stale}})
    assert r.status == 409 and r.json["message"] == (
        f'Operation cannot be fulfilled on ConfigMap "pinned": the ResourceVersion in the precondition ({stale}) '
        f"does not match the ResourceVersion in record ({int(stale) + 1}). The object might have been modified"), r.json
