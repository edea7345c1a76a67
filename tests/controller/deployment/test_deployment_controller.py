"""deployment_controller.go: syncDeployment's order of precedence, handlers, ownership, retries,
and an in-process rollout against real informers with the ReplicaSet controller.

Fixture tests mirror upstream's deployment_controller_test.go: listers preloaded, one sync,
the recorded API actions compared with the expected ones.
"""
from __future__ import annotations

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import ObjectName, apps_v1, core_v1, meta_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.tools.cache import DeletedFinalStateUnknown
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.deployment import MAX_RETRIES
from kubeplane.controller.deployment.util import deployment_util as du

from deployment_testutil import (
    Cluster, Fixture, deployment_dict, hash_of, new_deployment, new_fixture, new_replica_set, owned_rs_dict, queued,
    rs_status,
)

KEY = ObjectName("default", "foo")


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


# --- syncDeployment ----------------------------------------------------------------------------------

async def test_sync_deployment_creates_replica_set(f: Fixture) -> None:
    """Upstream: TestSyncDeploymentCreatesReplicaSet — create RS, update status, update status.

    The second status write carries the resourceVersion read before the first (upstream
    discards the returned object), so the real API server answers Conflict; the queue's
    retry writes the status on the next sync."""
    await f.seed(deployment_dict("foo", 1))
    f.expect("create", "replicasets")
    f.expect("update", "deployments", "status")
    f.expect("update", "deployments", "status")
    with pytest.raises(errors.Conflict):
        await f.run()
    assert f.fake.verbs() == f.expected
    [rs] = await f.list_rss()
    assert rs.spec.replicas == 1 and rs.metadata.name == f"foo-{hash_of(rs.metadata.name)}"

    await f.refresh()
    f.fake.clear_actions()
    f.expected = [("update", "deployments", "status")]
    await f.run()
    d = await f.get_deployment()
    assert d.status.observed_generation == d.metadata.generation
    assert {c.type: (c.status, c.reason) for c in d.status.conditions} == {
        "Progressing": ("True", "NewReplicaSetCreated"), "Available": ("False", "MinimumReplicasUnavailable")}


async def test_sync_deployment_dont_do_anything_during_deletion(f: Fixture) -> None:
    """Upstream: TestSyncDeploymentDontDoAnythingDuringDeletion — exactly one status update."""
    [d] = await f.fake.seed({**deployment_dict("foo", 1), "metadata": {"name": "foo", "namespace": "default",
                                                                         "finalizers": ["example.com/hold"]}})
    await f.fake.apps_v1().deployments("default").delete("foo")
    f.fake.clear_actions()
    f.add_to_cache(await f.get_deployment())
    f.expect("update", "deployments", "status")
    await f.run()
    assert await f.list_rss() == []


async def test_dont_sync_deployments_with_empty_pod_selector(f: Fixture) -> None:
    """Upstream: TestDontSyncDeploymentsWithEmptyPodSelector (#23218): a warning, no action
    (the fake deployment has no generation to observe)."""
    d = new_deployment("foo", 1, selector={"foo": "bar"})
    d.spec.selector = meta_v1.LabelSelector()
    f.add_to_cache(d)
    await f.run()
    assert f.recorder.events == ["Warning SelectingAll This deployment is selecting all pods. "
                                 "A non-empty selector is required."]
    d2 = new_deployment("bar", 1)
    d2.spec.selector = meta_v1.LabelSelector()
    d2.metadata.generation = 2
    f.add_to_cache(d2)
    await f.dc.sync_handler(ObjectName("default", "bar"))       # only observedGeneration is written
    [body] = f.writes("update", "deployments", "status")
    assert body["status"] == {"observedGeneration": 2}


async def test_sync_deployment_deletion_race(f: Fixture) -> None:
    """Upstream: TestSyncDeploymentDeletionRace — the live copy is a different object: a GET
    before adopting, then an error; nothing is adopted."""
    [d] = await f.seed(deployment_dict("foo", 1), cache=False)
    stale = d.deep_copy()
    stale.metadata.uid = "an-older-incarnation"
    f.add_to_cache(stale)
    orphan = owned_rs_dict(d, "foo-orphan", 1)
    orphan["metadata"].pop("ownerReferences")
    await f.seed(orphan)
    with pytest.raises(Exception, match="is gone"):
        await f.dc.sync_handler(KEY)
    assert f.fake.verbs(include_reads=True) == [("get", "deployments", "")]


async def test_deleted_deployment_is_done(f: Fixture) -> None:
    await f.run("missing")
    assert f.fake.verbs(include_reads=True) == []


async def test_paused_deployment_syncs_only_and_sets_paused_condition(f: Fixture) -> None:
    """Paused beats everything but deletion: no new RS for a changed template, scaling still
    happens (TestScalePausedDeployment), and Progressing=Unknown DeploymentPaused is set."""
    [d] = await f.seed(deployment_dict("foo", 5, paused=True))
    old_template = types.to_dict(d.spec.template)
    old_template["spec"]["containers"][0]["image"] = "old"
    await f.seed(owned_rs_dict(d, "foo-old", 3, template=old_template, status=rs_status(3),
                               annotations={du.REVISION_ANNOTATION: "1", du.DESIRED_REPLICAS_ANNOTATION: "3"}))
    with pytest.raises(errors.Conflict):          # the paused condition was written first
        await f.run()
    assert f.fake.verbs() == [("update", "deployments", "status"), ("update", "replicasets", ""),
                              ("update", "deployments", "status")]
    [cond] = f.writes("update", "deployments", "status")[0]["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == \
        ("Progressing", "Unknown", "DeploymentPaused", "Deployment is paused")
    assert [(r.metadata.name, r.spec.replicas) for r in await f.list_rss()] == [("foo-old", 5)]
    assert f.recorder.events == ["Normal ScalingReplicaSet Scaled up replica set foo-old to 5 from 3"]

    # Resume: DeploymentResumed with a fresh time, then the rollout goes on.
    await f.refresh()
    d = await f.get_deployment()
    d.spec.paused = False
    f.fake.recorder.recording = False
    await f.fake.apps_v1().deployments("default").update(d)
    f.fake.recorder.recording = True
    await f.refresh()
    f.fake.clear_actions()
    f.clock.step(30)
    try:
        await f.dc.sync_handler(KEY)
    except errors.Conflict:
        pass
    cond = du.get_deployment_condition(types.from_dict(f.writes("update", "deployments", "status")[0]["status"],
                                                       apps_v1.DeploymentStatus), "Progressing")
    assert (cond.status, cond.reason, cond.message) == ("Unknown", "DeploymentResumed", "Deployment is resumed")
    assert f.writes("create", "replicasets")                    # the rollout resumed


async def test_paused_with_timed_out_condition_keeps_it(f: Fixture) -> None:
    [d] = await f.seed(deployment_dict("foo", 1, paused=True), cache=False)
    d.status = apps_v1.DeploymentStatus(conditions=[du.new_deployment_condition(
        "Progressing", "False", du.TIMED_OUT_REASON, "x", f.clock.now())])
    f.add_to_cache(d)
    await f.dc.sync_handler(KEY)
    for body in f.writes("update", "deployments", "status"):
        assert {c["reason"] for c in body["status"]["conditions"]} >= {du.TIMED_OUT_REASON}


async def test_scaling_event_beats_rollout(f: Fixture) -> None:
    """Template changed and replicas changed: sync() scales proportionally, no new RS yet."""
    [d] = await f.seed(deployment_dict("foo", 6))
    old_template = types.to_dict(d.spec.template)
    old_template["spec"]["containers"][0]["image"] = "old"
    await f.seed(owned_rs_dict(d, "foo-old", 3, template=old_template, status=rs_status(3),
                               annotations={du.REVISION_ANNOTATION: "1", du.DESIRED_REPLICAS_ANNOTATION: "3",
                                            du.MAX_REPLICAS_ANNOTATION: "4"}))
    await f.dc.sync_handler(KEY)
    assert f.writes("create", "replicasets") == []
    assert [(r.metadata.name, r.spec.replicas) for r in await f.list_rss()] == [("foo-old", 6)]


async def test_rollback_annotation_beats_scaling_and_rollout(f: Fixture) -> None:
    [d] = await f.seed(deployment_dict("foo", 4, annotations=None))
    d.metadata.annotations = {du.DEPRECATED_ROLLBACK_TO: "7"}
    f.fake.recorder.recording = False
    d = await f.fake.apps_v1().deployments("default").update(d)
    f.fake.recorder.recording = True
    f.add_to_cache(d)
    with pytest.raises(errors.Conflict):     # creating the new RS wrote status first (stale RV)
        await f.dc.sync_handler(KEY)
    assert f.fake.verbs() == [("create", "replicasets", ""), ("update", "deployments", "status"),
                              ("update", "deployments", "")]
    assert f.recorder.events[-1] == "Warning DeploymentRollbackRevisionNotFound Unable to find the revision to " \
                                    "rollback to."


async def test_unexpected_strategy_type(f: Fixture) -> None:
    d = new_deployment("foo", 1, selector={"foo": "bar"})
    d.spec.strategy.type = "Canary"
    f.add_to_cache(d)
    f.fake.recorder.recording = False
    await f.fake.seed(deployment_dict("foo", 1))
    f.fake.recorder.recording = True
    d.metadata.uid = (await f.get_deployment()).metadata.uid
    f.add_to_cache(d)
    with pytest.raises(ValueError, match="unexpected deployment strategy type: Canary"):
        await f.dc.sync_handler(KEY)


# --- ownership ------------------------------------------------------------------------------------------

async def test_get_replica_sets_for_deployment(f: Fixture) -> None:
    """Upstream: TestGetReplicaSetsForDeployment — same labels, ControllerRef decides."""
    d1, d2 = new_deployment("foo", 1, selector={"foo": "bar"}), new_deployment("bar", 1, selector={"foo": "bar"})
    for obj in (d1, d2, new_replica_set(d1, "rs1", 1), new_replica_set(d2, "rs2", 1)):
        f.add_to_cache(obj)
    assert [r.metadata.name for r in await f.dc.get_replica_sets_for_deployment(d1)] == ["rs1"]
    assert [r.metadata.name for r in await f.dc.get_replica_sets_for_deployment(d2)] == ["rs2"]
    assert f.fake.verbs(include_reads=True) == []


async def test_get_replica_sets_for_deployment_adopt_release(f: Fixture) -> None:
    """Upstream: TestGetReplicaSetsForDeploymentAdoptRelease — one live GET, adopt, release."""
    [d] = await f.seed(deployment_dict("foo", 1))
    adopt = owned_rs_dict(d, "rs-adopt", 1)
    adopt["metadata"].pop("ownerReferences")
    release = owned_rs_dict(d, "rs-release", 1, labels={"foo": "notbar"})
    release["spec"]["selector"] = {"matchLabels": {"foo": "notbar"}}
    release["spec"]["template"]["metadata"]["labels"] = {"foo": "notbar"}
    await f.seed(adopt, release)
    got = await f.dc.get_replica_sets_for_deployment(d)
    assert [r.metadata.name for r in got] == ["rs-adopt"]
    assert sorted((a.verb, a.name) for a in f.fake.actions) == [("get", "foo"), ("patch", "rs-adopt"),
                                                                ("patch", "rs-release")]
    by_name = {r.metadata.name: r for r in await f.list_rss()}
    assert cu.get_controller_of(by_name["rs-adopt"]).uid == d.metadata.uid
    assert not by_name["rs-release"].metadata.owner_references


@pytest.mark.parametrize("indexed", [True, False], ids=["pod index by controller", "namespace scan"])
async def test_get_pod_map_for_deployment(f: Fixture, indexed: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream: TestGetPodMapForReplicaSets — by ControllerRef; inactive pods kept; orphans not."""
    assert cu.POD_CONTROLLER_UID_INDEX in f.dc.pod_indexer.get_indexers()
    if not indexed:
        monkeypatch.setattr(f.dc.pod_indexer, "get_indexers", lambda: {})
    d = new_deployment("foo", 1, selector={"foo": "bar"})
    rs1, rs2 = new_replica_set(d, "rs1", 1), new_replica_set(d, "rs2", 1)

    def pod(name: str, owner: apps_v1.ReplicaSet | None, phase: str = "Running") -> core_v1.Pod:
        refs = [cu.new_controller_ref(owner, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))] if owner else None
        return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=name, namespace="default", labels={"foo": "bar"},
                                                       owner_references=refs),
                           status=core_v1.PodStatus(phase=phase))
    relabelled = pod("pod5", rs2)
    relabelled.metadata.labels = {"foo": "other"}
    for obj in (pod("pod1", rs1), pod("pod2", rs2), pod("pod3", None), pod("pod4", rs1, "Failed"), relabelled):
        f.add_to_cache(obj)
    pod_map = f.dc.get_pod_map_for_deployment(d, [rs1, rs2])
    assert {uid: sorted(p.metadata.name for p in pods) for uid, pods in pod_map.items()} == \
        {"uid-rs1": ["pod1", "pod4"], "uid-rs2": ["pod2"]}


# --- handlers -----------------------------------------------------------------------------------------

async def test_replica_set_handlers_enqueue_owner(f: Fixture) -> None:
    d, other = new_deployment("foo", 1, selector={"foo": "bar"}), new_deployment("bar", 1, selector={"foo": "bar"})
    f.add_to_cache(d)
    f.add_to_cache(other)
    owned = new_replica_set(d, "rs1", 1)
    owned.metadata.resource_version = "1"
    f.dc.add_replica_set(owned)
    assert queued(f.dc) == [KEY]
    cur = owned.deep_copy()
    f.dc.update_replica_set(owned, cur)                   # resync: same resourceVersion
    assert queued(f.dc) == []
    cur.metadata.resource_version = "2"
    f.dc.update_replica_set(owned, cur)
    assert queued(f.dc) == [KEY]
    f.dc.delete_replica_set(DeletedFinalStateUnknown("default/rs1", owned))
    assert queued(f.dc) == [KEY]
    wrong_uid = owned.deep_copy()
    wrong_uid.metadata.owner_references[0].uid = "someone-else"
    f.dc.add_replica_set(wrong_uid)
    assert queued(f.dc) == []
    # An orphan wakes every Deployment whose selector matches it.
    orphan = owned.deep_copy()
    orphan.metadata.owner_references = None
    f.dc.add_replica_set(orphan)
    assert sorted(queued(f.dc)) == [ObjectName("default", "bar"), KEY]
    # The controller ref moves from d to other: both are woken.
    moved = owned.deep_copy()
    moved.metadata.resource_version = "3"
    moved.metadata.owner_references = [cu.new_controller_ref(other, cu.GroupVersionKind("apps", "v1", "Deployment"))]
    f.dc.update_replica_set(owned, moved)
    assert sorted(queued(f.dc)) == [ObjectName("default", "bar"), KEY]
    f.dc.delete_replica_set("garbage")                     # logged, ignored
    assert queued(f.dc) == []


async def test_deployment_handlers(f: Fixture) -> None:
    d = new_deployment("foo", 1)
    f.dc.add_deployment(d)
    f.dc.update_deployment(d, d)
    assert queued(f.dc) == [KEY]
    f.dc.delete_deployment(DeletedFinalStateUnknown("default/foo", d))
    assert queued(f.dc) == [KEY]


@pytest.mark.parametrize("strategy,other_pods,enqueued", [
    pytest.param("Recreate", False, True, id="Recreate, last pod gone: enqueued"),
    pytest.param("Recreate", True, False, id="Recreate, pods left: not enqueued"),
    pytest.param("RollingUpdate", False, False, id="RollingUpdate: not enqueued"),
])
async def test_pod_deletion_enqueues_recreate_deployment(f: Fixture, strategy: str, other_pods: bool,
                                                         enqueued: bool) -> None:
    """Upstream: TestPodDeletionEnqueuesRecreateDeployment / ...DoesntEnqueue... (listers, no I/O)."""
    d = new_deployment("foo", 1, selector={"foo": "bar"})
    d.spec.strategy = apps_v1.DeploymentStrategy(type=strategy)
    r = new_replica_set(d, "foo-1", 1)
    pod = core_v1.Pod(metadata=meta_v1.ObjectMeta(name="p", namespace="default", labels={"foo": "bar"},
                                                  owner_references=[cu.new_controller_ref(
                                                      r, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))]))
    for obj in (d, r) + ((pod,) if other_pods else ()):
        f.add_to_cache(obj)
    calls = []
    f.dc.enqueue_deployment = calls.append
    f.dc.delete_pod(pod)
    assert [x.metadata.name for x in calls] == (["foo"] if enqueued else [])
    assert f.fake.verbs(include_reads=True) == []


async def test_handle_err_retries_then_drops(f: Fixture) -> None:
    """MAX_RETRIES rate-limited retries, then dropped (forgotten) until the next event."""
    err = errors.Conflict("apps", "deployments", "foo", errors.OPTIMISTIC_LOCK_MSG)
    for i in range(MAX_RETRIES):
        f.dc.handle_err(err, KEY)
        assert f.dc.queue.num_requeues(KEY) == i + 1
    f.dc.handle_err(err, KEY)
    assert f.dc.queue.num_requeues(KEY) == 0               # dropped: forgotten, not re-added
    f.dc.handle_err(err, KEY)
    f.dc.handle_err(None, KEY)
    assert f.dc.queue.num_requeues(KEY) == 0


async def test_worker_survives_sync_errors(f: Fixture) -> None:
    calls = []

    async def failing(key: ObjectName) -> None:
        calls.append(key)
        raise RuntimeError("boom")
    f.dc.sync_handler = failing
    f.dc.queue.add(KEY)
    assert await f.dc.process_next_work_item() is True
    assert calls == [KEY] and f.dc.queue.num_requeues(KEY) == 1


# --- in-process integration -----------------------------------------------------------------------------

async def test_rollout_in_process_keeps_rolling_invariants() -> None:
    """FakeClientset API server + real informers + the ReplicaSet controller + ours; a helper
    marks pods Ready. Create 3 -> new RS, 3 pods; change the image -> the rolling update
    completes, and at every observed step Σ RS spec.replicas <= replicas + maxSurge and the
    Deployment's availableReplicas >= replicas - maxUnavailable (25%/25% of 3: surge 1,
    unavailable 0, so never more than 4 pods planned and never fewer than 3 available)."""
    fake = await FakeClientset.new()
    c = Cluster(fake, workers=2)
    await c.start()
    try:
        await fake.apps_v1().deployments("default").create(deployment_dict("foo", 3, image="a"))
        await c.wait_for(lambda: c.rolled_out(image="a"))
        [first] = c.replica_sets()
        pods = (await fake.core_v1().pods("default").list()).items
        assert len(pods) == 3
        assert {p.metadata.labels["pod-template-hash"] for p in pods} == {hash_of(first.metadata.name)}
        assert first.metadata.annotations[du.REVISION_ANNOTATION] == "1"

        violations: list[str] = []
        steps: list[tuple[int, ...]] = []

        def check() -> None:
            total = sum(r.spec.replicas or 0 for r in c.replica_sets())
            d = c.deployment()
            available = (d.status.available_replicas or 0) if d is not None and d.status else 0
            steps.append((total, available))
            if total > 4:
                violations.append(f"{total} replicas planned")
            if available < 3:
                violations.append(f"only {available} available")
        c.observers.append(check)
        d = await fake.apps_v1().deployments("default").get("foo")
        d.spec.template.spec.containers[0].image = "b"
        await fake.apps_v1().deployments("default").update(d)
        await c.wait_for(lambda: c.rolled_out(image="b") and
                         all(r.spec.replicas == 0 for r in c.replica_sets() if r.metadata.uid == first.metadata.uid))
        assert violations == [] and len(steps) > 5

        d = c.deployment()
        st = d.status
        # What `kubectl rollout status` reads, and the settled conditions.
        assert (st.observed_generation, st.replicas, st.updated_replicas, st.available_replicas,
                st.ready_replicas, st.unavailable_replicas) == (d.metadata.generation, 3, 3, 3, 3, None)
        assert {cond.type: cond.reason for cond in st.conditions} == {
            "Available": "MinimumReplicasAvailable", "Progressing": "NewReplicaSetAvailable"}
        assert d.metadata.annotations[du.REVISION_ANNOTATION] == "2"
        new = next(r for r in c.replica_sets() if r.metadata.uid != first.metadata.uid)
        assert new.metadata.annotations[du.REVISION_ANNOTATION] == "2"
        events = c.recorder.events
        assert events[0] == f"Normal ScalingReplicaSet Scaled up replica set {first.metadata.name} to 3"
        assert f"Normal ScalingReplicaSet Scaled up replica set {new.metadata.name} to 1" in events
        assert f"Normal ScalingReplicaSet Scaled down replica set {first.metadata.name} to 0 from 1" in events
        pods = (await fake.core_v1().pods("default").list()).items
        assert sorted(p.metadata.labels["pod-template-hash"] for p in pods if p.metadata.deletion_timestamp is None) \
            == [hash_of(new.metadata.name)] * 3
    finally:
        await c.stop()


async def test_recreate_in_process_never_mixes_old_and_new() -> None:
    """e2e RecreateDeployment: never updatedReplicas > 0 while replicas != updatedReplicas."""
    fake = await FakeClientset.new()
    c = Cluster(fake, workers=2)
    await c.start()
    try:
        await fake.apps_v1().deployments("default").create(
            deployment_dict("foo", 2, image="a", strategy={"type": "Recreate"}))
        await c.wait_for(lambda: c.rolled_out(image="a"))
        mixed: list[apps_v1.DeploymentStatus] = []

        def check() -> None:
            d = c.deployment()
            if d is not None and d.status and (d.status.updated_replicas or 0) > 0 and \
                    d.status.replicas != d.status.updated_replicas:
                mixed.append(d.status)
        c.observers.append(check)
        d = await fake.apps_v1().deployments("default").get("foo")
        d.spec.template.spec.containers[0].image = "b"
        await fake.apps_v1().deployments("default").update(d)
        await c.wait_for(lambda: c.rolled_out(image="b"))
        assert mixed == []
        assert sorted(r.spec.replicas for r in c.replica_sets()) == [0, 2]
    finally:
        await c.stop()


async def test_progress_deadline_exceeded_then_recovers() -> None:
    """Integration TestFailedDeployment, with the deadline shortened by a fake 'now': pods
    never Ready -> ProgressDeadlineExceeded; mark them Ready -> NewReplicaSetAvailable."""
    fake = await FakeClientset.new()
    c = Cluster(fake, workers=2)
    c.ready_enabled = False
    await c.start()
    try:
        await fake.apps_v1().deployments("default").create(deployment_dict("foo", 2, progressDeadlineSeconds=30))
        # All pods exist (no more progress to report), none Ready.
        await c.wait_for(lambda: (c.deployment().status or apps_v1.DeploymentStatus()).replicas == 2)
        real_now = c.dc.clock.now
        c.dc.now = lambda: real_now() + 31                 # jump past the deadline
        c.dc.enqueue(c.deployment())

        def reason() -> str | None:
            cond = du.get_deployment_condition(c.deployment().status, "Progressing")
            return cond.reason if cond else None
        await c.wait_for(lambda: reason() == du.TIMED_OUT_REASON)
        cond = du.get_deployment_condition(c.deployment().status, "Progressing")
        assert cond.status == "False" and cond.message.endswith("has timed out progressing.")
        c.ready_enabled = True
        for pod in (await fake.core_v1().pods("default").list()).items:
            c.to_ready.put_nowait(pod)
        await c.wait_for(lambda: reason() == du.NEW_RS_AVAILABLE_REASON)
    finally:
        await c.stop()


async def test_controllers_join_informers_another_component_filled() -> None:
    """`up` starts the scheduler first, and it reads ReplicaSets (default spreading): the
    controllers then register on informers that already hold a Deployment and its ReplicaSet,
    which replay into the new handlers at once (a restart of the controller-manager crashed
    when a handler ran before the listers it reads were set)."""
    from kubeplane.client.informers import SharedInformerFactory
    from kubeplane.client.tools.record import FakeRecorder
    from kubeplane.controller.deployment import DeploymentController
    from kubeplane.controller.replicaset import ReplicaSetController
    fake = await FakeClientset.new()
    factory = SharedInformerFactory(fake)
    d = new_deployment("foo", 1)
    rs = new_replica_set(d, "foo-1", 1)
    factory.apps_v1().deployments().informer().get_indexer().add(d)
    factory.apps_v1().replicasets().informer().get_indexer().add(rs)
    dc = DeploymentController(factory.apps_v1().deployments(), factory.apps_v1().replicasets(),
                              factory.core_v1().pods(), fake, recorder=FakeRecorder())
    rsc = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), fake, recorder=FakeRecorder())
    assert ObjectName(d.metadata.namespace or "", "foo") in queued(dc)
    assert rsc.queue.len() == 1
