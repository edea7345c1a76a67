"""The StatefulSet control loop, step by step against the real API server.

Facts from upstream's pkg/controller/statefulset/stateful_set_control_test.go: CreatesPods,
ScaleUp/ScaleDown (ordered, one pod per step, waiting for health), ReplacesPods, burst
(Parallel) creation and deletion, RecreatesFailedPod, the update strategies (RollingUpdate
with partition and maxUnavailable, OnDelete), PVC retention policies (WhenDeleted/WhenScaled
owner refs), ordinals.start, minReadySeconds, revision history truncation and rollback to an
equal revision; plus the identities of stateful_set_utils_test.go.
"""
from __future__ import annotations

from typing import AsyncIterator

import pytest
from statefulset_testutil import Harness, sts_dict

from kubeplane.api.types import ObjectName

from kubeplane.api import errors
from kubeplane.controller import history
from kubeplane.controller.statefulset import stateful_set_utils as ssu


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = await Harness.new()
    try:
        yield harness
    finally:
        await harness.close()


async def test_ordered_ready_creates_one_pod_per_step(h: Harness) -> None:
    await h.create(sts_dict(3))
    await h.sync()
    assert await h.pod_names() == ["web-0"]
    await h.sync()                                  # web-0 not Running and Ready: nothing more
    assert await h.pod_names() == ["web-0"]
    await h.set_pod_status("web-0", "Running", False)
    await h.settle()
    await h.sync()
    assert await h.pod_names() == ["web-0"]
    await h.run_and_ready()
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1"]
    await h.converge()
    assert h.writes("create", "pods") == ["web-0", "web-1", "web-2"]
    st = (await h.get_set()).status
    assert (st.replicas, st.ready_replicas, st.available_replicas, st.current_replicas, st.updated_replicas) == \
        (3, 3, 3, 3, 3)
    assert st.current_revision == st.update_revision and st.observed_generation == 1 and st.collision_count == 0


async def test_identity_labels_hostname_and_claims(h: Harness) -> None:
    await h.create(sts_dict(2, claims=True))
    await h.converge()
    pods = await h.pods()
    [rev] = await h.revisions()
    for i, pod in enumerate(pods):
        assert pod.metadata.labels == {"app": "web", ssu.STATEFUL_SET_POD_NAME_LABEL: f"web-{i}",
                                       ssu.POD_INDEX_LABEL: str(i), ssu.STATEFUL_SET_REVISION_LABEL: rev.metadata.name}
        assert (pod.spec.hostname, pod.spec.subdomain) == (f"web-{i}", "nginx")
        [vol] = pod.spec.volumes
        assert (vol.name, vol.persistent_volume_claim.claim_name) == ("www", f"www-web-{i}")
        ref = pod.metadata.owner_references[0]
        assert (ref.kind, ref.name, ref.controller, ref.block_owner_deletion) == ("StatefulSet", "web", True, True)
    claims = sorted(await h.claims(), key=lambda c: c.metadata.name)
    assert [c.metadata.name for c in claims] == ["www-web-0", "www-web-1"]
    assert all(c.metadata.labels == {"app": "web"} and not c.metadata.owner_references for c in claims)
    assert h.recorder.events[:2] == ["Normal SuccessfulCreate create Claim www-web-0 Pod web-0 in StatefulSet web success",
                                     "Normal SuccessfulCreate create Pod web-0 in StatefulSet web successful"]
    assert rev.metadata.name.startswith("web-") and rev.revision == 1
    assert rev.data["spec"]["template"]["$patch"] == "replace"


async def test_ordered_scale_down_highest_first_waiting_for_health(h: Harness) -> None:
    await h.create(sts_dict(3))
    await h.converge()
    await h.patch_set({"spec": {"replicas": 1}})
    await h.set_pod_status("web-0", "Running", False)     # an unhealthy remaining replica blocks scale-down
    await h.settle()
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1", "web-2"]
    await h.run_and_ready()
    for left in (["web-0", "web-1"], ["web-0"]):
        await h.sync()
        assert await h.pod_names() == left
    await h.patch_set({"spec": {"replicas": 0}})
    await h.sync()
    assert h.writes("delete", "pods") == ["web-2", "web-1", "web-0"]
    assert "Normal SuccessfulDelete delete Pod web-2 in StatefulSet web successful" in h.recorder.events


async def test_parallel_creates_and_deletes_all_at_once(h: Harness) -> None:
    await h.create(sts_dict(3, parallel=True))
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1", "web-2"]
    await h.patch_set({"spec": {"replicas": 1}})
    await h.sync()                                         # no readiness needed in burst mode
    assert await h.pod_names() == ["web-0"]


async def test_recreates_failed_pod(h: Harness) -> None:
    await h.create(sts_dict(2))
    await h.converge()
    await h.set_pod_status("web-1", "Failed")
    await h.settle()
    await h.sync()
    assert await h.pod_names() == ["web-0"]              # deleted first; recreated on the next sync
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1"]


async def test_replaces_deleted_pod_with_same_identity(h: Harness) -> None:
    await h.create(sts_dict(3, claims=True))
    await h.converge()
    old = {p.metadata.name: p.metadata.uid for p in await h.pods()}
    await h.delete_pod("web-1")
    await h.sync()
    pods = {p.metadata.name: p for p in await h.pods()}
    assert set(pods) == {"web-0", "web-1", "web-2"} and pods["web-1"].metadata.uid != old["web-1"]
    assert pods["web-1"].spec.volumes[0].persistent_volume_claim.claim_name == "www-web-1"
    assert len(await h.claims()) == 3                     # the claim is reused, not re-created


async def test_ordinals_start(h: Harness) -> None:
    await h.create(sts_dict(2, ordinals={"start": 5}, claims=True))
    await h.converge()
    assert await h.pod_names() == ["web-5", "web-6"]
    assert [p.metadata.labels[ssu.POD_INDEX_LABEL] for p in await h.pods()] == ["5", "6"]
    await h.patch_set({"spec": {"ordinals": {"start": 6}}})
    await h.converge()
    assert await h.pod_names() == ["web-6", "web-7"]


async def test_min_ready_seconds_gates_the_next_pod(h: Harness) -> None:
    await h.create(sts_dict(2, minReadySeconds=30))
    await h.sync()
    await h.set_pod_status("web-0", "Running", True, ready_since=h.clock.now())
    await h.settle()
    await h.sync()
    assert await h.pod_names() == ["web-0"]
    st = (await h.get_set()).status
    assert (st.ready_replicas, st.available_replicas) == (1, 0)
    h.clock.step(31)
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1"]
    assert (await h.get_set()).status.available_replicas == 1


def _image(pod: object) -> str:
    return pod.spec.containers[0].image        # type: ignore[attr-defined]


async def test_rolling_update_replaces_from_highest_ordinal(h: Harness) -> None:
    await h.create(sts_dict(3))
    await h.converge()
    [first] = await h.revisions()
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1"]      # web-2 deleted first
    st = (await h.get_set()).status
    assert st.current_revision == first.metadata.name and st.update_revision != first.metadata.name
    assert (st.current_replicas, st.updated_replicas) == (2, 0)
    await h.sync()
    assert _image((await h.pods())[2]) == "nginx:2"
    await h.sync()                                        # web-2 not ready yet: wait
    assert await h.pod_names() == ["web-0", "web-1", "web-2"]
    await h.converge()
    assert [_image(p) for p in await h.pods()] == ["nginx:2"] * 3
    assert h.writes("delete", "pods") == ["web-2", "web-1", "web-0"]
    st = (await h.get_set()).status
    assert st.current_revision == st.update_revision and st.current_replicas == st.updated_replicas == 3


async def test_rolling_update_partition(h: Harness) -> None:
    await h.create(sts_dict(3, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}))
    await h.converge()
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    await h.converge()
    assert [_image(p) for p in await h.pods()] == ["nginx:1", "nginx:1", "nginx:2"]
    st = (await h.get_set()).status
    assert (st.current_replicas, st.updated_replicas) == (2, 1) and st.current_revision != st.update_revision
    # A pod below the partition that is deleted comes back at the current revision.
    await h.delete_pod("web-0")
    await h.converge()
    assert _image((await h.pods())[0]) == "nginx:1"
    await h.patch_set({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}})
    await h.converge()
    assert [_image(p) for p in await h.pods()] == ["nginx:2"] * 3
    assert (await h.get_set()).status.current_revision == (await h.get_set()).status.update_revision


async def test_rolling_update_max_unavailable(h: Harness) -> None:
    await h.create(sts_dict(5, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}))
    await h.converge()
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1", "web-2"]     # two at once, highest first
    st = (await h.get_set()).status
    assert st.current_replicas == 3
    await h.set_pod_status("web-0", "Running", False)              # one unavailable: one more may go
    await h.settle()
    h.fake.clear_actions()
    await h.sync()                                                 # web-0 not ready: creates wait (ordered)
    assert h.writes("delete", "pods") == []
    await h.run_and_ready()
    await h.converge()
    assert [_image(p) for p in await h.pods()] == ["nginx:2"] * 5


async def test_max_unavailable_percentage_rounds_down_to_at_least_one() -> None:
    assert ssu.get_stateful_set_max_unavailable("10%", 5) == 1
    assert ssu.get_stateful_set_max_unavailable("50%", 5) == 2
    assert ssu.get_stateful_set_max_unavailable(None, 5) == 1
    assert ssu.get_stateful_set_max_unavailable(3, 5) == 3


async def test_on_delete_updates_only_deleted_pods(h: Harness) -> None:
    await h.create(sts_dict(2, updateStrategy={"type": "OnDelete"}))
    await h.converge()
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    await h.converge()
    assert [_image(p) for p in await h.pods()] == ["nginx:1", "nginx:1"]
    assert h.writes("delete", "pods") == []
    await h.delete_pod("web-1")
    await h.converge()
    assert [_image(p) for p in await h.pods()] == ["nginx:1", "nginx:2"]
    st = (await h.get_set()).status
    assert (st.current_replicas, st.updated_replicas) == (1, 1) and st.current_revision != st.update_revision


async def test_rollback_reuses_the_equal_revision(h: Harness) -> None:
    await h.create(sts_dict(1))
    await h.converge()
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    await h.converge()
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}}})
    await h.converge()
    revs = history.sort_controller_revisions(await h.revisions())
    assert [r.revision for r in revs] == [2, 3]           # the first revision renumbered, not copied
    st = (await h.get_set()).status
    assert st.update_revision == revs[-1].metadata.name and _image((await h.pods())[0]) == "nginx:1"


async def test_revision_history_limit_keeps_live_revisions(h: Harness) -> None:
    await h.create(sts_dict(1, revisionHistoryLimit=1))
    await h.converge()
    for image in ("nginx:2", "nginx:3", "nginx:4"):
        await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
        await h.converge()
    revs = history.sort_controller_revisions(await h.revisions())
    assert [r.revision for r in revs] == [3, 4]         # the live one and one of history


async def test_retention_when_deleted_delete_owns_claims_by_set() -> None:
    h = await Harness.new()
    try:
        s = await h.create(sts_dict(2, claims=True, persistentVolumeClaimRetentionPolicy={
            "whenDeleted": "Delete", "whenScaled": "Retain"}))
        await h.converge()
        for c in await h.claims():
            [ref] = c.metadata.owner_references
            assert (ref.kind, ref.uid, ref.controller) == ("StatefulSet", s.metadata.uid, True)
    finally:
        await h.close()


async def test_retention_when_scaled_delete_hands_condemned_claims_to_pods() -> None:
    h = await Harness.new()
    try:
        s = await h.create(sts_dict(2, claims=True, persistentVolumeClaimRetentionPolicy={
            "whenDeleted": "Delete", "whenScaled": "Delete"}))
        await h.converge()
        uids = {p.metadata.name: p.metadata.uid for p in await h.pods()}
        await h.patch_set({"spec": {"replicas": 1}})
        await h.sync()
        claims = {c.metadata.name: c for c in await h.claims()}
        # The condemned pod's claim is now owned by the pod (collected with it), not the set.
        [ref] = claims["www-web-1"].metadata.owner_references
        assert (ref.kind, ref.uid) == ("Pod", uids["web-1"])
        [ref] = claims["www-web-0"].metadata.owner_references
        assert (ref.kind, ref.uid) == ("StatefulSet", s.metadata.uid)
        assert await h.pod_names() == ["web-0"]
    finally:
        await h.close()


async def test_retain_policy_leaves_claims_unowned(h: Harness) -> None:
    await h.create(sts_dict(2, claims=True))
    await h.converge()
    await h.patch_set({"spec": {"replicas": 0}})
    await h.converge()
    assert await h.pod_names() == [] and len(await h.claims()) == 2
    assert all(not c.metadata.owner_references for c in await h.claims())


async def test_adopts_orphan_pod_and_releases_non_matching(h: Harness) -> None:
    await h.create(sts_dict(1))
    await h.converge()
    pod = (await h.pods())[0]
    await h.fake.core_v1().pods("default").patch("web-0", {"metadata": {"labels": {"app": "other"}}}, "strategic")
    await h.settle()
    events = len(h.recorder.events)
    with pytest.raises(errors.AlreadyExists):          # released, and its name is still taken
        await h.sync()
    released = {p.metadata.name: p for p in await h.pods()}["web-0"]
    assert not released.metadata.owner_references and released.metadata.uid == pod.metadata.uid
    assert len(h.recorder.events) == events            # AlreadyExists: no event


async def test_deleted_set_is_a_no_op(h: Harness) -> None:
    await h.sync()
    assert h.fake.verbs() == []


# --- upstream's stateful_set_compatibility_test.go ------------------------------------------------

KEY_TEST = ObjectName("default", "test")
COMPAT_TEMPLATE = {"metadata": {"annotations": {"test": "value"}, "labels": {"app": "foo"}},
                   "spec": {"containers": [{"image": "test", "name": "test"}]}}
# The 1.33 revision's data, byte for byte (with the "creationTimestamp": null 1.34 stopped writing).
RAW_1_33 = ('{"spec":{"template":{"$patch":"replace","metadata":{"annotations":{"test":"value"},"creationTimestamp":'
            'null,"labels":{"app":"foo"}},"spec":{"containers":[{"image":"test","imagePullPolicy":"Always","name":'
            '"test","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File"}],'
            '"dnsPolicy":"ClusterFirst","restartPolicy":"Always","schedulerName":"default-scheduler","securityContext":'
            '{},"terminationGracePeriodSeconds":30}}}}')


def _compat_set() -> dict[str, object]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "test", "namespace": "default", "labels": {"sslabel": "value"}},
            "spec": {"selector": {"matchLabels": {"app": "foo"}}, "template": COMPAT_TEMPLATE,
                     "volumeClaimTemplates": [{"metadata": {"name": "test", "labels": {"key": "value"},
                                                            "annotations": {"key": "value"}},
                                               "spec": {"accessModes": ["ReadWriteOnce"],
                                                        "resources": {"requests": {"storage": "1Gi"}}}}]}}


async def test_revision_name_is_upstreams_hash_of_the_defaulted_template(h: Harness) -> None:
    """1.34+: the same defaulted template hashes to test-776999688b (compatibility_revision_1.34.0.json)."""
    await h.create(_compat_set())
    await h.sync(KEY_TEST)
    [rev] = await h.revisions()
    assert rev.metadata.name == "test-776999688b"
    assert rev.metadata.labels == {"app": "foo", history.CONTROLLER_REVISION_HASH_LABEL: "776999688b"}
    assert history.raw_data(rev.data) == RAW_1_33.replace('"creationTimestamp":null,', "").encode()


async def test_a_1_33_revision_causes_no_rollout(h: Harness) -> None:
    """Upstream: TestStatefulSetCompatibility — a set, pod, claim and revision as 1.33 left them:
    one sync writes nothing (no new revision, no pod or status change)."""
    import orjson
    [s] = await h.fake.seed(_compat_set())
    rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": orjson.loads(RAW_1_33),
           "metadata": {"name": "test-c77f6d978", "namespace": "default",
                        "labels": {"app": "foo", history.CONTROLLER_REVISION_HASH_LABEL: "c77f6d978"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "test",
                                             "uid": s.metadata.uid, "controller": True, "blockOwnerDeletion": True}]}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "test-test-0", "namespace": "default", "labels": {"app": "foo", "key": "value"}},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                    "storageClassName": "standard", "volumeName": "pv"}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "test-0", "namespace": "default", "annotations": {"test": "value"},
                        "labels": {"app": "foo", ssu.POD_INDEX_LABEL: "0",
                                   ssu.STATEFUL_SET_REVISION_LABEL: "test-c77f6d978",
                                   ssu.STATEFUL_SET_POD_NAME_LABEL: "test-0"},
                        "ownerReferences": rev["metadata"]["ownerReferences"]},  # type: ignore[index]
           "spec": {"containers": [{"image": "test", "name": "test"}], "hostname": "test-0",
                    "volumes": [{"name": "test", "persistentVolumeClaim": {"claimName": "test-test-0"}}]}}
    await h.fake.seed(rev, pvc, pod)
    await h.set_pod_status("test-0", "Running", True)
    await h._quiet(h.fake.apps_v1().statefulsets("default").patch("test", {"status": {
        "availableReplicas": 1, "collisionCount": 0, "currentReplicas": 1, "currentRevision": "test-c77f6d978",
        "observedGeneration": 1, "replicas": 1, "updateRevision": "test-c77f6d978", "updatedReplicas": 1,
        "readyReplicas": 1}}, "merge", subresource="status"))
    await h.settle()
    h.fake.clear_actions()
    await h.sync(KEY_TEST)
    assert h.fake.verbs() == []
    assert [r.metadata.name for r in await h.revisions()] == ["test-c77f6d978"]


async def test_without_semantic_comparison_a_1_33_revision_rolls() -> None:
    h = await Harness.new()
    h.ssc.control.semantic_revision_comparison = False
    try:
        import orjson
        [s] = await h.fake.seed(_compat_set())
        old = history.new_controller_revision(s, ssu.CONTROLLER_KIND, {"app": "foo"}, orjson.loads(RAW_1_33), 1, 0)
        old.metadata.namespace = "default"
        await h.fake.seed(old)
        await h.settle()
        await h.sync(KEY_TEST)
        assert sorted(r.metadata.name for r in await h.revisions()) == ["test-776999688b", "test-c77f6d978"]
    finally:
        await h.close()


async def test_huge_replicas_build_only_what_a_sync_touches(h: Harness) -> None:
    """replicas 2^31-1 (valid): an OrderedReady sync creates web-0 and waits, without building a
    pod per ordinal (upstream's slice would hold billions)."""
    await h.create(sts_dict(2**31 - 1))
    await h.sync()
    await h.run_and_ready()
    await h.sync()
    assert await h.pod_names() == ["web-0", "web-1"]
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    await h.sync()                                       # web-1 not ready: ordered creation waits
    assert await h.pod_names() == ["web-0", "web-1"]
    st = (await h.get_set()).status
    assert (st.replicas, st.ready_replicas, st.current_replicas, st.updated_replicas) == (2, 1, 2, 0)


async def test_create_pod_failure_records_event_and_still_writes_status(h: Harness) -> None:
    """Upstream: CreatePodFailure — the error is returned (the key is retried) after status."""
    await h.create(sts_dict(2))
    h.fake.fail_on("create", "pods", errors.StatusError(500, "InternalError", "boom"), times=1)
    with pytest.raises(errors.StatusError, match="boom"):
        await h.sync()
    assert h.recorder.events == ["Warning FailedCreate create Pod web-0 in StatefulSet web failed error: boom"]
    assert h.writes("update", "statefulsets", "status") == ["web"]
    assert await h.pod_names() == []
    await h.sync()
    assert await h.pod_names() == ["web-0"]


async def test_delete_pod_failure_on_scale_down_records_event(h: Harness) -> None:
    """Upstream: ScaleDownDeleteError"""
    await h.create(sts_dict(2))
    await h.converge()
    await h.patch_set({"spec": {"replicas": 1}})
    h.fake.fail_on("delete", "pods", errors.StatusError(500, "InternalError", "nope"), times=1)
    with pytest.raises(errors.StatusError, match="nope"):
        await h.sync()
    assert h.recorder.events[-1] == "Warning FailedDelete delete Pod web-1 in StatefulSet web failed error: nope"
    await h.sync()
    assert await h.pod_names() == ["web-0"]


async def test_rolling_update_gauges_follow_max_unavailable(h: Harness) -> None:
    """statefulset_controller_statefulset_{max_unavailable,unavailable_replicas}: set by each
    rolling-update step, gone with the StatefulSet."""
    from prometheus_client import REGISTRY

    def gauge(name: str) -> float | None:
        return REGISTRY.get_sample_value(f"statefulset_controller_statefulset_{name}", {
            "statefulset_namespace": "default", "statefulset_name": "web", "pod_management_policy": "OrderedReady"})
    await h.create(sts_dict(5, updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}))
    await h.converge()
    await h.patch_set({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})
    await h.sync()
    assert (gauge("max_unavailable"), gauge("unavailable_replicas")) == (2, 0)
    await h.fake.apps_v1().statefulsets("default").delete("web")
    await h.settle()
    await h.sync()
    assert (gauge("max_unavailable"), gauge("unavailable_replicas")) == (None, None)
