"""The StatefulSet controller's handlers and sync plumbing.

Facts from upstream's pkg/controller/statefulset/stateful_set_test.go: TestStatefulSetController
AddPod/AddPodOrphan/AddPodNoSet, UpdatePod (same RV ignored, label change to orphan, ControllerRef
change), DeletePod/DeletePodOrphan/DeletePodTombstone, GetStatefulSetsForPod (overlapping sets,
oldest first), adoption of orphan revisions, and the minReadySeconds re-check.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import types
from kubeplane.api.types import ObjectName, apps_v1, core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.cache import DeletedFinalStateUnknown
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.statefulset import StatefulSetController
from kubeplane.controller.statefulset import stateful_set_utils as ssu
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0


def new_set(name: str = "foo", uid: str = "uid-foo", *, created: float = NOW, min_ready: int = 0,
            labels: dict[str, str] | None = None) -> apps_v1.StatefulSet:
    """Upstream: newStatefulSet"""
    sel = labels or {"foo": "bar"}
    return types.from_dict({
        "metadata": {"name": name, "namespace": "default", "uid": uid, "resourceVersion": "1",
                     "creationTimestamp": rfc3339(created)},
        "spec": {"replicas": 3, "minReadySeconds": min_ready, "selector": {"matchLabels": sel},
                 "serviceName": "svc", "template": {"metadata": {"labels": sel},
                                                    "spec": {"containers": [{"name": "c", "image": "x"}]}},
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}},
        apps_v1.StatefulSet)


def new_pod(s: apps_v1.StatefulSet | None, ordinal: int, *, rv: str = "1", owned: bool = True,
            labels: dict[str, str] | None = None, ready: bool = False) -> core_v1.Pod:
    """Upstream: newStatefulSetPod (owned) or an orphan with the set's labels."""
    name = f"{s.metadata.name if s else 'foo'}-{ordinal}"
    d: dict[str, Any] = {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}-{rv}",
                                      "resourceVersion": rv, "labels": labels or {"foo": "bar"}},
                         "spec": {"containers": [{"name": "c", "image": "x"}]},
                         "status": {"phase": "Running"}}
    if ready:
        d["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    if s is not None and owned:
        d["metadata"]["ownerReferences"] = [types.to_dict(cu.new_controller_ref(s, ssu.CONTROLLER_KIND))]
    return types.from_dict(d, core_v1.Pod)


async def _controller() -> tuple[StatefulSetController, SharedInformerFactory, FakeClock]:
    clock = FakeClock(start=NOW)
    fake = await FakeClientset.new(clock=clock)
    f = SharedInformerFactory(fake)
    ssc = StatefulSetController(f.core_v1().pods(), f.apps_v1().statefulsets(), f.core_v1().persistentvolumeclaims(),
                                f.apps_v1().controllerrevisions(), fake, clock=clock, recorder=FakeRecorder())
    return ssc, f, clock


def _add_sets(f: SharedInformerFactory, *sets: apps_v1.StatefulSet) -> None:
    for s in sets:
        f.apps_v1().statefulsets().informer().get_indexer().add(s)


def queued(ssc: StatefulSetController) -> list[ObjectName]:
    out = []
    while ssc.queue.len():
        key = ssc.queue._queue.popleft()
        ssc.queue._dirty.discard(key)
        out.append(key)
    return out


FOO = ObjectName("default", "foo")


async def test_add_pod_enqueues_its_controller() -> None:
    ssc, f, _ = await _controller()
    s = new_set()
    _add_sets(f, s)
    ssc.add_pod(new_pod(s, 0))
    assert queued(ssc) == [FOO]


async def test_add_orphan_pod_enqueues_every_matching_set() -> None:
    ssc, f, _ = await _controller()
    s1, s2, s3 = new_set("foo"), new_set("bar", "uid-bar"), new_set("baz", "uid-baz", labels={"other": "x"})
    _add_sets(f, s1, s2, s3)
    ssc.add_pod(new_pod(None, 0))
    assert sorted(k.name for k in queued(ssc)) == ["bar", "foo"]


async def test_add_pod_of_unknown_set_does_nothing() -> None:
    ssc, f, _ = await _controller()
    ssc.add_pod(new_pod(new_set(), 0))
    assert queued(ssc) == []


async def test_update_pod_same_resource_version_is_ignored() -> None:
    ssc, f, _ = await _controller()
    s = new_set()
    _add_sets(f, s)
    pod = new_pod(s, 0)
    ssc.update_pod(pod, pod)
    assert queued(ssc) == []
    ssc.update_pod(pod, new_pod(s, 0, rv="2"))
    assert queued(ssc) == [FOO]


async def test_update_pod_released_to_orphan_wakes_old_owner_and_matching_sets() -> None:
    ssc, f, _ = await _controller()
    s1, s2 = new_set("foo"), new_set("bar", "uid-bar", labels={"new": "x"})
    _add_sets(f, s1, s2)
    old = new_pod(s1, 0)
    cur = new_pod(s1, 0, rv="2", owned=False, labels={"new": "x"})
    ssc.update_pod(old, cur)
    assert sorted(k.name for k in queued(ssc)) == ["bar", "foo"]


async def test_pod_becoming_ready_rechecks_after_min_ready_seconds() -> None:
    ssc, f, clock = await _controller()
    s = new_set(min_ready=10)
    _add_sets(f, s)
    ssc.update_pod(new_pod(s, 0), new_pod(s, 0, rv="2", ready=True))
    assert queued(ssc) == [FOO]
    clock.step(10)
    assert queued(ssc) == []
    clock.step(1.1)                          # minReadySeconds + 1 s of skew
    assert queued(ssc) == [FOO]


async def test_delete_pod_and_tombstone_enqueue_the_owner() -> None:
    ssc, f, _ = await _controller()
    s = new_set()
    _add_sets(f, s)
    pod = new_pod(s, 0)
    ssc.delete_pod(pod)
    assert queued(ssc) == [FOO]
    ssc.delete_pod(DeletedFinalStateUnknown("default/foo-0", pod))
    assert queued(ssc) == [FOO]
    ssc.delete_pod(new_pod(None, 1))          # an orphan: nobody cares
    assert queued(ssc) == []


async def test_get_stateful_sets_for_pod_oldest_first() -> None:
    ssc, f, _ = await _controller()
    newer, older = new_set("a", "uid-a", created=NOW + 10), new_set("b", "uid-b", created=NOW)
    _add_sets(f, newer, older)
    assert [x.metadata.name for x in ssc.get_stateful_sets_for_pod(new_pod(None, 0))] == ["b", "a"]


async def test_resolve_controller_ref_checks_kind_and_uid() -> None:
    ssc, f, _ = await _controller()
    s = new_set()
    _add_sets(f, s)
    ref = cu.new_controller_ref(s, ssu.CONTROLLER_KIND)
    assert ssc.resolve_controller_ref("default", ref) is s
    ref.uid = "other"
    assert ssc.resolve_controller_ref("default", ref) is None
    ref.uid, ref.kind = "uid-foo", "ReplicaSet"
    assert ssc.resolve_controller_ref("default", ref) is None


def test_parent_name_and_ordinal() -> None:
    """Upstream: TestGetParentNameAndOrdinal"""
    def pod(name: str) -> core_v1.Pod:
        return core_v1.Pod(metadata=types.meta_v1.ObjectMeta(name=name))
    assert ssu.get_parent_name_and_ordinal(pod("foo-2")) == ("foo", 2)
    assert ssu.get_parent_name_and_ordinal(pod("foo-bar-12")) == ("foo-bar", 12)
    assert ssu.get_parent_name_and_ordinal(pod("foo")) == ("", -1)
    assert ssu.get_parent_name_and_ordinal(pod("foo-")) == ("", -1)
    assert ssu.get_parent_name_and_ordinal(pod("foo-99999999999")) == ("foo", -1)     # beyond int32


def test_identity_and_storage_matches() -> None:
    """Upstream: TestIdentityMatches, TestStorageMatches"""
    s = new_set()
    s.spec.volume_claim_templates = [core_v1.PersistentVolumeClaim(metadata=types.meta_v1.ObjectMeta(name="www"))]
    pod = ssu.new_stateful_set_pod(s, 1)
    assert ssu.identity_matches(s, pod) and ssu.storage_matches(s, pod)
    wrong = pod.deep_copy()
    wrong.metadata.labels[ssu.STATEFUL_SET_POD_NAME_LABEL] = "foo-2"
    assert not ssu.identity_matches(s, wrong)
    wrong = pod.deep_copy()
    wrong.metadata.namespace = "other"
    assert not ssu.identity_matches(s, wrong)
    wrong = pod.deep_copy()
    wrong.spec.volumes[0].persistent_volume_claim.claim_name = "www-foo-2"
    assert not ssu.storage_matches(s, wrong)
    ssu.update_storage(s, wrong)
    assert ssu.storage_matches(s, wrong)
    assert (pod.spec.hostname, pod.spec.subdomain, pod.metadata.generate_name) == ("foo-1", "svc", None)


def test_new_versioned_pod_partition() -> None:
    """Upstream: TestNewVersionedStatefulSetPod — below the partition at the current revision."""
    cur, upd = new_set(), new_set()
    cur.spec.update_strategy.rolling_update.partition = 2
    upd.spec.template.spec.containers[0].image = "y"
    assert ssu.get_pod_revision(ssu.new_versioned_stateful_set_pod(cur, upd, "r1", "r2", 1)) == "r1"
    pod = ssu.new_versioned_stateful_set_pod(cur, upd, "r1", "r2", 2)
    assert ssu.get_pod_revision(pod) == "r2" and pod.spec.containers[0].image == "y"


def test_claim_owner_refs_follow_the_policy() -> None:
    """Upstream: TestIsClaimOwnerUpToDate / TestUpdateClaimOwnerRefForSetAndPod (a subset)."""
    cases = [("Retain", "Retain", False, (False, False)), ("Retain", "Delete", False, (True, False)),
             ("Delete", "Retain", False, (False, False)), ("Delete", "Retain", True, (False, True)),
             ("Delete", "Delete", False, (True, False)), ("Delete", "Delete", True, (False, True))]
    for when_scaled, when_deleted, scaled_down, (want_set, want_pod) in cases:
        s = new_set()
        s.spec.persistent_volume_claim_retention_policy = apps_v1.StatefulSetPersistentVolumeClaimRetentionPolicy(
            when_scaled=when_scaled, when_deleted=when_deleted)
        pod = new_pod(s, 5 if scaled_down else 1)
        claim = core_v1.PersistentVolumeClaim(metadata=types.meta_v1.ObjectMeta(name="www-foo-1"))
        up_to_date = ssu.is_claim_owner_up_to_date(claim, s, pod)
        assert up_to_date == (not want_set and not want_pod), (when_scaled, when_deleted, scaled_down)
        ssu.update_claim_owner_ref_for_set_and_pod(claim, s, pod)
        assert (ssu.has_owner_ref(claim, s), ssu.has_owner_ref(claim, pod)) == (want_set, want_pod)
        assert ssu.is_claim_owner_up_to_date(claim, s, pod)
