"""The ReplicaSet controller: handlers, sync, manage_replicas, ranking, and an in-process run.

Tables reproduce upstream's pkg/controller/replicaset/replica_set_test.go. Syncs run against
FakeClientset (the real API server in-process) with listers preloaded, as upstream's fixtures do.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import ObjectName, apps_v1, core_v1, meta_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.replicaset import ReplicaSetController, ReplicaSetControllerOptions
from kubeplane.controller.replicaset.replica_set import get_pod_keys, get_pods_to_delete
from kubeplane.utils.clock import FakeClock, rfc3339

LABELS = {"foo": "bar"}
KEY = ObjectName("default", "foobar")


def rs_dict(replicas: int, *, name: str = "foobar", min_ready: int = 0, owner_uid: str | None = None,
            finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if owner_uid:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": owner_uid,
                                    "controller": True}]
    if finalizers:
        meta["finalizers"] = finalizers
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta,
            "spec": {"replicas": replicas, "minReadySeconds": min_ready, "selector": {"matchLabels": LABELS},
                     "template": {"metadata": {"labels": {**LABELS, "type": "production"}},
                                  "spec": {"containers": [{"name": "c", "image": "foo/bar"}]}}}}


def pod_dict(name: str, rs: apps_v1.ReplicaSet | None, *, phase: str = "Running", ready: bool | None = None,
             node: str = "", labels: dict[str, str] | None = None, ready_since: float | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or LABELS}
    if rs is not None:
        meta["ownerReferences"] = [types.to_dict(cu.new_controller_ref(rs, cu.GroupVersionKind("apps", "v1",
                                                                                             "ReplicaSet")))]
    status: dict[str, Any] = {"phase": phase}
    if ready is not None:
        cond: dict[str, Any] = {"type": "Ready", "status": "True" if ready else "False"}
        if ready_since is not None:
            cond["lastTransitionTime"] = rfc3339(ready_since)
        status["conditions"] = [cond]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "foo/bar"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status}


@dataclass
class Fixture:
    """Listers preloaded by hand (informers not running), the real API behind the client."""

    fake: FakeClientset
    clock: FakeClock
    factory: SharedInformerFactory
    rsc: ReplicaSetController
    recorder: FakeRecorder

    async def add_rs(self, d: dict[str, Any], *, to_cache: bool = True) -> apps_v1.ReplicaSet:
        [rs] = await self.fake.seed(d)
        if to_cache:
            self.factory.apps_v1().replicasets().informer().get_indexer().add(rs)
        return rs

    async def add_pods(self, *ds: dict[str, Any]) -> list[core_v1.Pod]:
        pods = []
        for d in ds:
            # FakeClientset.seed replaces the whole status, dropping the server-set (immutable)
            # qosClass; merge the wanted status into the stored one instead.
            [pod] = await self.fake.seed({k: v for k, v in d.items() if k != "status"})
            merged = types.to_dict(pod)
            merged["status"] = {**merged.get("status", {}), **d.get("status", {})}
            self.fake.recorder.recording = False
            try:
                pod = await self.fake.core_v1().pods("default").update_status(types.from_dict(merged, core_v1.Pod))
            finally:
                self.fake.recorder.recording = True
            pods.append(pod)
        for p in pods:
            self.factory.core_v1().pods().informer().get_indexer().add(p)
        return pods

    async def refresh_rs(self, name: str = "foobar") -> None:
        """What the informer would deliver after our status write."""
        rs = await self.fake.apps_v1().replicasets("default").get(name)
        self.factory.apps_v1().replicasets().informer().get_indexer().add(rs)

    def pods_created(self) -> list[dict[str, Any]]:
        return [a.body for a in self.fake.actions if a.verb == "create" and a.resource == "pods"]

    def status_writes(self) -> list[dict[str, Any]]:
        return [a.body["status"] for a in self.fake.actions if a.subresource == "status"]


async def new_fixture(**options: Any) -> Fixture:
    clock = FakeClock(start=1_700_000_000.0)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    rsc = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), fake, clock=clock,
                               recorder=recorder, options=ReplicaSetControllerOptions(**options))
    return Fixture(fake, clock, factory, rsc, recorder)


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


def queued(rsc: ReplicaSetController) -> list[ObjectName]:
    out = []
    while rsc.queue.len():
        key = rsc.queue._queue.popleft()
        rsc.queue._dirty.discard(key)
        out.append(key)
    return out


# --- sync -------------------------------------------------------------------------------------

async def test_sync_creates_pods_from_template(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(3))
    await f.rsc.sync_replica_set(KEY)

    assert f.fake.verbs() == [("create", "pods", "")] * 3 + [("update", "replicasets", "status")]
    for body in f.pods_created():
        meta = body["metadata"]
        assert meta["generateName"] == "foobar-" and "name" not in meta
        assert meta["labels"] == {"foo": "bar", "type": "production"}
        assert meta["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "foobar",
                                            "uid": rs.metadata.uid, "controller": True, "blockOwnerDeletion": True}]
        assert body["spec"]["containers"][0]["image"] == "foo/bar"
    names = sorted(p.metadata.name for p in (await f.fake.core_v1().pods("default").list()).items)
    assert len(names) == 3 and all(n.startswith("foobar-") for n in names)
    assert sorted(f.recorder.events) == sorted(f"Normal SuccessfulCreate Created pod: {n}" for n in names)
    # Status counts the cache, which has not seen the new pods yet; observedGeneration is written.
    assert f.status_writes() == [{"replicas": 0, "fullyLabeledReplicas": 0, "readyReplicas": 0,
                                  "availableReplicas": 0, "terminatingReplicas": 0, "observedGeneration": 1}]
    assert f.rsc.expectations.get_expectations("default/foobar").get_expectations() == (3, 0)


async def test_sync_waits_for_expectations_then_resumes(f: Fixture) -> None:
    """Upstream: TestSyncReplicaSetDormancy, on the real API."""
    await f.add_rs(rs_dict(2))
    await f.rsc.sync_replica_set(KEY)
    assert len(f.pods_created()) == 2
    await f.refresh_rs()
    f.fake.clear_actions()

    await f.rsc.sync_replica_set(KEY)              # creates not observed yet: no new pods, no write
    assert f.fake.verbs() == []

    created = (await f.fake.core_v1().pods("default").list()).items
    for p in created:                              # the informer delivers the two pods
        f.factory.core_v1().pods().informer().get_indexer().add(p)
        f.rsc.add_pod(p)
    assert f.rsc.expectations.satisfied_expectations("default/foobar")
    assert queued(f.rsc) == [KEY]
    await f.rsc.sync_replica_set(KEY)
    assert f.fake.verbs() == [("update", "replicasets", "status")]
    assert f.status_writes()[0]["replicas"] == 2


async def test_sync_does_nothing_when_replicas_match(f: Fixture) -> None:
    """Upstream: TestSyncReplicaSetDoesNothing"""
    rs = await f.add_rs(rs_dict(2))
    await f.add_pods(pod_dict("pod0", rs), pod_dict("pod1", rs))
    f.rsc.pod_control = pod_control = cu.FakePodControl()
    await f.rsc.sync_replica_set(KEY)
    assert (pod_control.templates, pod_control.delete_pod_name, pod_control.patches) == ([], [], [])


async def test_sync_create_failures_are_slow_started() -> None:
    """Upstream: TestSyncReplicaSetCreateFailures — 100 wanted, a quota-like limit of 10."""
    f = await new_fixture()
    await f.add_rs(rs_dict(100))
    f.rsc.pod_control = pod_control = cu.FakePodControl(create_limit=10)
    with pytest.raises(ValueError, match="limit 10 already reached"):
        await f.rsc.sync_replica_set(KEY)
    assert len(pod_control.templates) == 10
    assert pod_control.create_call_count <= 1 + 2 + 4 + 8          # the batch that failed was the last
    # Batches 1+2+4+8 = 15 calls, calls 11-15 fail: 10 successes. The 90 creations that failed
    # or were never attempted are no longer expected: 100 - 90 = 10 still expected.
    assert f.rsc.expectations.get_expectations("default/foobar").get_expectations() == (10, 0)
    [status] = f.status_writes()
    [cond] = status["conditions"]
    assert (cond["type"], cond["status"], cond["reason"]) == ("ReplicaFailure", "True", "FailedCreate")
    assert cond["message"].startswith("not creating pod, limit 10 already reached")


async def test_quota_failure_sets_and_clears_replica_failure(f: Fixture) -> None:
    """e2e "should surface a failure condition on a common issue like exceeded quota", in miniature."""
    await f.add_rs(rs_dict(3))
    quota = errors.Forbidden('pods "foobar-x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, '
                             'limited: pods=2')
    f.fake.fail_on("create", "pods", quota, times=1)
    with pytest.raises(errors.Forbidden):
        await f.rsc.sync_replica_set(KEY)
    assert f.fake.verbs() == [("create", "pods", ""), ("update", "replicasets", "status")]   # slow start: 1 try
    assert f.recorder.events == [f"Warning FailedCreate Error creating: {quota}"]
    cond = f.status_writes()[-1]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("FailedCreate", str(quota))
    assert f.rsc.expectations.satisfied_expectations("default/foobar")     # the 2 skipped + 1 failed forgiven

    await f.refresh_rs()
    f.fake.clear_actions()
    await f.rsc.sync_replica_set(KEY)                                      # quota lifted
    assert len(f.pods_created()) == 3
    assert "conditions" not in f.status_writes()[-1]


async def test_scale_down_deletes_the_right_pods(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(1))
    await f.add_pods(pod_dict("ready", rs, ready=True, node="n1", ready_since=f.clock.now() - 3600),
                     pod_dict("not-ready", rs, ready=False, node="n1"),
                     pod_dict("unscheduled", rs, phase="Pending"))
    await f.rsc.sync_replica_set(KEY)
    deleted = sorted(a.name for a in f.fake.actions if a.verb == "delete")
    assert deleted == ["not-ready", "unscheduled"]
    assert sorted(f.recorder.events) == ["Normal SuccessfulDelete Deleted pod: not-ready",
                                         "Normal SuccessfulDelete Deleted pod: unscheduled"]
    assert f.rsc.expectations.get_uids("default/foobar") == {"default/not-ready", "default/unscheduled"}
    assert f.status_writes()[-1]["replicas"] == 3          # the cache still has them
    left = {p.metadata.name: p.metadata.deletion_timestamp for p in (await f.fake.core_v1().pods("default").list()).items}
    # The bound pod is deleted gracefully (it waits for a kubelet); the unbound one is gone.
    assert left.keys() == {"ready", "not-ready"} and left["ready"] is None and left["not-ready"] is not None


async def test_delete_failure_sets_failed_delete(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(0))
    await f.add_pods(pod_dict("p", rs))
    f.fake.fail_on("delete", "pods", errors.InternalError("boom"))
    with pytest.raises(cu.PodDeleteError):
        await f.rsc.sync_replica_set(KEY)
    cond = f.status_writes()[-1]["conditions"][0]
    assert (cond["reason"], cond["message"]) == ("FailedDelete", "unable to delete pods: Internal error occurred: boom")
    assert f.rsc.expectations.satisfied_expectations("default/foobar")     # the failed delete was forgiven


async def test_delete_of_missing_pod_is_not_an_error(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(0))
    [pod] = await f.fake.seed({k: v for k, v in pod_dict("ghost", rs).items() if k != "status"})
    await f.fake.core_v1().pods("default").delete("ghost")
    f.factory.core_v1().pods().informer().get_indexer().add(pod)          # the cache lags
    await f.rsc.sync_replica_set(KEY)
    assert f.rsc.expectations.satisfied_expectations("default/foobar")


async def test_burst_replicas_limits_one_sync() -> None:
    f = await new_fixture(burst_replicas=10)
    await f.add_rs(rs_dict(25))
    f.rsc.pod_control = pod_control = cu.FakePodControl()
    await f.rsc.sync_replica_set(KEY)
    assert len(pod_control.templates) == 10


async def test_do_not_patch_pod_with_other_controller_ref(f: Fixture) -> None:
    """Upstream: TestDoNotPatchPodWithOtherControlRef"""
    await f.add_rs(rs_dict(2))
    other = apps_v1.ReplicaSet(metadata=meta_v1.ObjectMeta(name="AnotherRS", uid="other-uid"))
    await f.add_pods(pod_dict("pod", None))
    pod = f.factory.core_v1().pods().lister().pods("default").get("pod").deep_copy()
    pod.metadata.owner_references = [cu.new_controller_ref(other, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))]
    f.factory.core_v1().pods().informer().get_indexer().add(pod)
    f.rsc.pod_control = pod_control = cu.FakePodControl()
    await f.rsc.sync_replica_set(KEY)
    assert (len(pod_control.templates), len(pod_control.patches)) == (2, 0)


async def test_patch_pod_fails_requeues(f: Fixture) -> None:
    """Upstream: TestPatchPodFails — two orphans to adopt, both patches fail."""
    await f.add_rs(rs_dict(2))
    await f.add_pods(pod_dict("pod1", None), pod_dict("pod2", None))
    f.rsc.pod_control = pod_control = cu.FakePodControl(err=RuntimeError("fake Error"))
    f.rsc.queue.add(KEY)
    assert await f.rsc.process_next_work_item()
    assert len(pod_control.patches) == 2 and pod_control.templates == []
    assert f.rsc.queue.num_requeues(KEY) == 1                 # rate-limited requeue
    f.clock.step(1)
    assert queued(f.rsc) == [KEY]


async def test_adopts_orphans_via_live_get(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(1))
    await f.add_pods(pod_dict("orphan", None))
    await f.rsc.sync_replica_set(KEY)
    assert f.fake.verbs(include_reads=True) == [("get", "replicasets", ""), ("patch", "pods", ""),
                                                ("update", "replicasets", "status")]
    adopted = await f.fake.core_v1().pods("default").get("orphan")
    assert adopted.metadata.owner_references[0].uid == rs.metadata.uid
    assert f.status_writes()[-1]["replicas"] == 1


async def test_do_not_adopt_or_create_if_being_deleted(f: Fixture) -> None:
    """Upstream: TestDoNotAdoptOrCreateIfBeingDeleted"""
    await f.add_rs(rs_dict(2, finalizers=["example.com/hold"]), to_cache=False)
    await f.fake.apps_v1().replicasets("default").delete("foobar")
    deleting = await f.fake.apps_v1().replicasets("default").get("foobar")
    assert deleting.metadata.deletion_timestamp is not None
    f.factory.apps_v1().replicasets().informer().get_indexer().add(deleting)
    await f.add_pods(pod_dict("pod1", None))
    f.rsc.pod_control = pod_control = cu.FakePodControl()
    await f.rsc.sync_replica_set(KEY)
    assert (pod_control.templates, pod_control.patches) == ([], [])


async def test_do_not_adopt_or_create_if_being_deleted_race(f: Fixture) -> None:
    """Upstream: TestDoNotAdoptOrCreateIfBeingDeletedRace — the cache lags, the live GET knows."""
    cached = await f.add_rs(rs_dict(2, finalizers=["example.com/hold"]))
    await f.fake.apps_v1().replicasets("default").delete("foobar")
    assert cached.metadata.deletion_timestamp is None
    await f.add_pods(pod_dict("pod1", None))
    f.rsc.pod_control = pod_control = cu.FakePodControl()
    f.fake.clear_actions()
    with pytest.raises(RuntimeError, match="has just been deleted"):
        await f.rsc.sync_replica_set(KEY)
    assert (pod_control.templates, pod_control.patches) == ([], [])
    assert f.fake.verbs(include_reads=True) == [("get", "replicasets", "")]


async def test_release_pod_whose_labels_changed(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(1))
    await f.add_pods(pod_dict("mine", rs), pod_dict("relabelled", rs, labels={"foo": "other"}))
    await f.rsc.sync_replica_set(KEY)
    assert [(a.verb, a.name) for a in f.fake.actions if a.resource == "pods"] == [("patch", "relabelled")]
    assert not (await f.fake.core_v1().pods("default").get("relabelled")).metadata.owner_references


async def test_min_ready_seconds_requeue_and_availability(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(2, min_ready=10))
    now = f.clock.now()
    await f.add_pods(pod_dict("a", rs, ready=True, node="n", ready_since=now),
                     pod_dict("b", rs, ready=True, node="n", ready_since=now))
    await f.rsc.sync_replica_set(KEY)
    assert (f.status_writes()[-1]["readyReplicas"], f.status_writes()[-1]["availableReplicas"]) == (2, 0)
    assert f.rsc.queue.len() == 0
    f.clock.step(10)
    assert queued(f.rsc) == [KEY]                       # re-checked after minReadySeconds

    await f.refresh_rs()
    f.clock.step(1)                                     # strictly after readySince + 10
    await f.rsc.sync_replica_set(KEY)
    assert f.status_writes()[-1]["availableReplicas"] == 2
    f.clock.step(60)
    assert f.rsc.queue.len() == 0                       # all available: no further requeue


async def test_terminating_replicas_counted(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(1))
    [alive, going] = await f.add_pods(pod_dict("alive", rs), pod_dict("going", rs))
    going = going.deep_copy()
    going.metadata.deletion_timestamp = rfc3339(f.clock.now())
    f.factory.core_v1().pods().informer().get_indexer().add(going)
    await f.rsc.sync_replica_set(KEY)
    assert (f.status_writes()[-1]["replicas"], f.status_writes()[-1]["terminatingReplicas"]) == (1, 1)


async def test_rs_deleted_forgets_expectations(f: Fixture) -> None:
    f.rsc.expectations.expect_creations("default/foobar", 3)
    await f.rsc.sync_replica_set(KEY)                   # not in the lister
    assert f.rsc.expectations.get_expectations("default/foobar") is None
    assert f.fake.verbs(include_reads=True) == []


# --- handlers -----------------------------------------------------------------------------------

async def test_delete_final_state_unknown(f: Fixture) -> None:
    """Upstream: TestDeleteFinalStateUnknown"""
    rs = await f.add_rs(rs_dict(1))
    pod = types.from_dict(pod_dict("pod0", rs), core_v1.Pod)
    f.rsc.delete_pod(DeletedFinalStateUnknown("foo", pod))
    assert queued(f.rsc) == [KEY]
    f.rsc.delete_pod(DeletedFinalStateUnknown("foo", "garbage"))     # logged, ignored
    assert queued(f.rsc) == []


async def test_overlapping_rss_only_owner_enqueued(f: Fixture) -> None:
    """Upstream: TestOverlappingRSs"""
    rss = [await f.add_rs(rs_dict(1, name=f"rs{j}")) for j in range(1, 10)]
    pod = types.from_dict(pod_dict("pod", rss[3], phase="Pending"), core_v1.Pod)
    f.rsc.add_pod(pod)
    assert queued(f.rsc) == [ObjectName("default", "rs4")]


async def test_orphan_pod_wakes_matching_rss(f: Fixture) -> None:
    await f.add_rs(rs_dict(1, name="a"))
    await f.add_rs(rs_dict(1, name="b"))
    f.rsc.add_pod(types.from_dict(pod_dict("orphan", None), core_v1.Pod))
    assert sorted(queued(f.rsc)) == [ObjectName("default", "a"), ObjectName("default", "b")]
    assert f.rsc.expectations.get_expectations("default/a") is None      # no creation observed


async def test_deletion_timestamp_expectations(f: Fixture) -> None:
    """Upstream: TestDeletionTimestamp"""
    rs = await f.add_rs(rs_dict(1))
    rs_key = "default/foobar"
    pod = types.from_dict(pod_dict("pod0", rs, phase="Pending"), core_v1.Pod)
    pod.metadata.deletion_timestamp = rfc3339(f.clock.now())
    pod.metadata.resource_version = "1"
    f.rsc.expectations.expect_deletions(rs_key, [cu.pod_key(pod)])
    f.rsc.add_pod(pod)                               # counts as a deletion, not a creation
    assert queued(f.rsc) == [KEY]
    assert f.rsc.expectations.get_expectations(rs_key).fulfilled()

    old_pod = types.from_dict(pod_dict("pod0", rs, phase="Pending"), core_v1.Pod)
    old_pod.metadata.resource_version = "2"
    f.rsc.expectations.expect_deletions(rs_key, [cu.pod_key(pod)])
    f.rsc.update_pod(old_pod, pod)                   # deletionTimestamp appearing = a deletion
    assert queued(f.rsc) == [KEY]
    assert f.rsc.expectations.get_expectations(rs_key).fulfilled()

    second = types.from_dict(pod_dict("secondPod", rs, phase="Pending"), core_v1.Pod)
    f.rsc.expectations.expect_deletions(rs_key, [cu.pod_key(second)])
    old_pod.metadata.deletion_timestamp = rfc3339(f.clock.now())
    f.rsc.update_pod(old_pod, pod)                   # pod0 is not expected any more
    assert not f.rsc.expectations.get_expectations(rs_key).fulfilled()
    f.rsc.delete_pod(pod)
    assert not f.rsc.expectations.get_expectations(rs_key).fulfilled()
    f.rsc.delete_pod(second)
    assert f.rsc.expectations.get_expectations(rs_key).fulfilled()
    f.rsc.expectations._check_invariants()


async def test_update_pod_ready_with_min_ready_seconds_enqueues_later(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(1, min_ready=5))
    old = types.from_dict(pod_dict("p", rs, ready=False), core_v1.Pod)
    cur = types.from_dict(pod_dict("p", rs, ready=True, ready_since=f.clock.now()), core_v1.Pod)
    old.metadata.resource_version, cur.metadata.resource_version = "1", "2"
    f.rsc.update_pod(old, cur)
    assert queued(f.rsc) == [KEY]
    f.clock.step(5)
    assert f.rsc.queue.len() == 0
    f.clock.step(1)                                   # minReadySeconds + 1 s of skew margin
    assert queued(f.rsc) == [KEY]


async def test_update_pod_resync_and_controller_ref_change(f: Fixture) -> None:
    rs_a = await f.add_rs(rs_dict(1, name="a"))
    rs_b = await f.add_rs(rs_dict(1, name="b"))
    old = types.from_dict(pod_dict("p", rs_a), core_v1.Pod)
    old.metadata.resource_version = "1"
    f.rsc.update_pod(old, old)                        # resync: same resourceVersion
    assert queued(f.rsc) == []
    cur = types.from_dict(pod_dict("p", rs_b), core_v1.Pod)
    cur.metadata.resource_version = "2"
    f.rsc.update_pod(old, cur)
    assert queued(f.rsc) == [ObjectName("default", "a"), ObjectName("default", "b")]


async def test_update_rs_uid_change_is_a_delete(f: Fixture) -> None:
    rs = await f.add_rs(rs_dict(1))
    f.rsc.expectations.expect_creations("default/foobar", 1)
    recreated = rs.deep_copy()
    recreated.metadata.uid = "new-uid"
    f.rsc.update_rs(rs, recreated)
    assert f.rsc.expectations.get_expectations("default/foobar") is None
    assert queued(f.rsc) == [KEY]


async def test_get_replica_sets_with_same_controller(f: Fixture) -> None:
    """Upstream: TestGetReplicaSetsWithSameController"""
    some = await f.add_rs(rs_dict(1, name="rs1", owner_uid="123"))
    await f.add_rs(rs_dict(1, name="rs2", owner_uid="123"))
    await f.add_rs(rs_dict(1, name="rs3", owner_uid="456"))
    names = sorted(r.metadata.name for r in f.rsc.get_replica_sets_with_same_controller(some))
    assert names == ["rs1", "rs2"]
    lone = await f.add_rs(rs_dict(1, name="rs4"))
    assert f.rsc.get_replica_sets_with_same_controller(lone) == []


async def test_handle_err(f: Fixture) -> None:
    f.rsc.handle_err(RuntimeError("x"), KEY)
    f.rsc.handle_err(RuntimeError("x"), KEY)
    assert f.rsc.queue.num_requeues(KEY) == 2
    f.rsc.handle_err(None, KEY)
    assert f.rsc.queue.num_requeues(KEY) == 0


# --- pure helpers --------------------------------------------------------------------------------

class _Fail(Exception):
    pass


@pytest.mark.parametrize("count, call_limit, successes, fails, calls", [
    pytest.param(10, 0, 0, True, 1, id="callLimit = 0 (all fail)"),
    pytest.param(10, 10, 10, False, 10, id="callLimit = count (all succeed): 1+2+4+3"),
    pytest.param(10, 5, 5, True, 7, id="callLimit < count (some succeed): 1+2+4"),
])
async def test_slow_start_batch(count: int, call_limit: int, successes: int, fails: bool, calls: int) -> None:
    """Upstream: TestSlowStartBatch"""
    n = 0

    async def fn() -> None:
        nonlocal n
        n += 1
        if n > call_limit:
            raise _Fail("fake error")

    got, err = await cu.slow_start_batch(count, 1, fn)
    assert got == successes
    assert isinstance(err, _Fail) if fails else err is None
    assert n == calls


def _rank_pod(name: str, node: str = "", phase: str = "Pending", ready: bool | None = None) -> core_v1.Pod:
    return types.from_dict(pod_dict(name, None, phase=phase, ready=ready, node=node), core_v1.Pod)


UNSCHEDULED_PENDING = _rank_pod("unscheduled-pending-pod")
SCHEDULED_PENDING = _rank_pod("scheduled-pending-pod", "fake-node")
RUNNING_NOT_READY = _rank_pod("scheduled-running-not-ready-pod", "fake-node", "Running", False)
READY_NODE1 = _rank_pod("scheduled-running-ready-pod-on-node-1", "fake-node-1", "Running", True)
READY_NODE2 = _rank_pod("scheduled-running-ready-pod-on-node-2", "fake-node-2", "Running", True)


@pytest.mark.parametrize("pods, related, diff, expected", [
    pytest.param([], None, 0, [], id="len(pods) = 0"),
    pytest.param([RUNNING_NOT_READY, READY_NODE1], None, 2, [RUNNING_NOT_READY, READY_NODE1], id="diff = len(pods)"),
    pytest.param([READY_NODE1, RUNNING_NOT_READY], None, 1, [RUNNING_NOT_READY], id="diff < len(pods)"),
    pytest.param([READY_NODE1, READY_NODE1, READY_NODE2, RUNNING_NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING],
                 None, 6, [READY_NODE1, READY_NODE1, READY_NODE2, RUNNING_NOT_READY, SCHEDULED_PENDING,
                           UNSCHEDULED_PENDING], id="various, diff = len(pods): no sorting"),
    pytest.param([READY_NODE1, READY_NODE1, READY_NODE2, RUNNING_NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING],
                 [], 6, [READY_NODE1, READY_NODE1, READY_NODE2, RUNNING_NOT_READY, SCHEDULED_PENDING,
                         UNSCHEDULED_PENDING], id="various, diff = len(pods), relatedPods empty"),
    pytest.param([SCHEDULED_PENDING, UNSCHEDULED_PENDING], None, 1, [UNSCHEDULED_PENDING],
                 id="scheduled vs unscheduled"),
    pytest.param([READY_NODE1, RUNNING_NOT_READY, RUNNING_NOT_READY], None, 2, [RUNNING_NOT_READY, RUNNING_NOT_READY],
                 id="ready vs not-ready"),
    pytest.param([READY_NODE1, READY_NODE2], [READY_NODE1, READY_NODE2, READY_NODE2], 1, [READY_NODE2],
                 id="ready and colocated with another ready pod vs not colocated"),
    pytest.param([SCHEDULED_PENDING, RUNNING_NOT_READY], None, 1, [SCHEDULED_PENDING], id="pending vs running"),
    pytest.param([READY_NODE1, READY_NODE2, RUNNING_NOT_READY, SCHEDULED_PENDING, UNSCHEDULED_PENDING], None, 3,
                 [UNSCHEDULED_PENDING, SCHEDULED_PENDING, RUNNING_NOT_READY], id="various, diff < len(pods)"),
])
def test_get_pods_to_delete(pods: list[core_v1.Pod], related: list[core_v1.Pod] | None, diff: int,
                            expected: list[core_v1.Pod]) -> None:
    """Upstream: TestGetPodsToDelete"""
    original = list(pods)
    got = get_pods_to_delete(pods, pods if related is None else related, diff, 1_700_000_000.0)
    assert [p.metadata.name for p in got] == [p.metadata.name for p in expected]
    assert pods == original                       # the caller's list is not reordered


def test_deletion_cost_beats_rank() -> None:
    cheap = _rank_pod("cheap", "n1", "Running", True)
    cheap.metadata.annotations = {cu.POD_DELETION_COST: "-10"}
    doubled = _rank_pod("doubled", "n2", "Running", True)
    got = get_pods_to_delete([doubled, cheap], [doubled, doubled, cheap], 1, 1_700_000_000.0)
    assert [p.metadata.name for p in got] == ["cheap"]


def test_get_pod_keys() -> None:
    """Upstream: TestGetPodKeys"""
    assert get_pod_keys([]) == []
    assert get_pod_keys([_rank_pod("pod1"), _rank_pod("pod2")]) == ["default/pod1", "default/pod2"]


# --- in-process integration -----------------------------------------------------------------------

async def test_controller_runs_against_real_informers() -> None:
    """Real informers over the in-process API: an RS of 3 gets 3 pods and status.replicas 3;
    scaled to 1 it is back to 1 pod."""
    fake = await FakeClientset.new()
    factory = SharedInformerFactory(fake)
    rsc = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), fake,
                               recorder=FakeRecorder())
    want: dict[str, int] = {"replicas": 3}
    reached = asyncio.Event()

    def on_rs(_old: Any, new: Any = None) -> None:
        rs = new if new is not None else _old
        if rs.status is not None and rs.status.replicas == want["replicas"] and \
                rs.status.observed_generation == rs.metadata.generation:
            reached.set()

    factory.apps_v1().replicasets().informer().add_event_handler(ResourceEventHandlerFuncs(on_rs, on_rs))
    factory.start()
    run = asyncio.create_task(rsc.run(2))
    try:
        await fake.apps_v1().replicasets("default").create(rs_dict(3))
        await asyncio.wait_for(reached.wait(), timeout=10)
        pods = (await fake.core_v1().pods("default").list()).items
        assert len(pods) == 3

        reached.clear()
        want["replicas"] = 1
        await fake.apps_v1().replicasets("default").patch("foobar", {"spec": {"replicas": 1}}, "merge")
        await asyncio.wait_for(reached.wait(), timeout=10)
        assert len((await fake.core_v1().pods("default").list()).items) == 1
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await factory.shutdown()


@pytest.mark.parametrize("batch_rounds", [0, cu.WORK_QUEUE_BATCH_ROUNDS])
async def test_burst_of_pod_events_folds_and_status_converges(batch_rounds: int) -> None:
    """Real informers: 20 pods turn Ready one event-loop round apart (as kubelets report). The
    final status is upstream's (replicas, fullyLabeled, ready, available 20, observedGeneration)
    either way; without batch_rounds the idle worker syncs and writes status once per pod (21
    syncs, 20 writes), with it the events of 5 rounds fold into one sync (5 syncs, 4 writes)."""
    fake = await FakeClientset.new()
    factory = SharedInformerFactory(fake)
    rsc = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), fake,
                               recorder=FakeRecorder(), options=ReplicaSetControllerOptions(batch_rounds=batch_rounds))
    syncs = [0]
    sync = rsc.sync_handler

    async def counting(key: ObjectName) -> None:
        syncs[0] += 1
        await sync(key)
    rsc.sync_handler = counting
    seen: list[apps_v1.ReplicaSetStatus] = []
    done = asyncio.Event()

    def on_rs(_old: Any, new: Any = None) -> None:
        rs = new if new is not None else _old
        if rs.status is not None:
            seen.append(rs.status)
            if (rs.status.available_replicas or 0) == 20:
                done.set()

    factory.apps_v1().replicasets().informer().add_event_handler(ResourceEventHandlerFuncs(on_rs, on_rs))
    factory.start()
    run = asyncio.create_task(rsc.run(5))
    pods_client = fake.core_v1().pods("default")
    try:
        await fake.apps_v1().replicasets("default").create(rs_dict(20))
        for _ in range(200):
            if len((await pods_client.list()).items) == 20 and seen and seen[-1].replicas == 20:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        syncs[0], writes_before = 0, len(seen)
        ready = {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(1_700_000_000.0)}]}}
        for p in (await pods_client.list()).items:     # one after the other, as kubelets report
            await pods_client.patch(p.metadata.name, ready, "strategic", subresource="status")
            await asyncio.sleep(0)
        await asyncio.wait_for(done.wait(), timeout=10)
        await asyncio.sleep(0.05)
        rs = await fake.apps_v1().replicasets("default").get("foobar")
        st = rs.status
        assert (st.replicas, st.fully_labeled_replicas, st.ready_replicas, st.available_replicas) == (20, 20, 20, 20)
        assert st.observed_generation == rs.metadata.generation
        writes = len(seen) - writes_before
        if batch_rounds:
            assert syncs[0] <= 6 and writes <= 5, (syncs[0], writes)
        else:
            assert writes >= 10, writes           # what batch_rounds saves
    finally:
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await factory.shutdown()
