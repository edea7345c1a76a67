"""controller_ref_manager: the claim/adopt/release rules and the patches they send.

Tables reproduce upstream's pkg/controller/controller_ref_manager_test.go.
"""
from __future__ import annotations

import re

import orjson
import pytest

from kubeplane.api import errors, labels, types
from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.controller import controller_ref_manager as crm
from kubeplane.controller import controller_utils as cu

PRODUCTION = {"type": "production"}
TESTING = {"type": "testing"}
PRODUCTION_SELECTOR = labels.from_label_selector({"matchLabels": PRODUCTION})
FAKE_KIND = cu.GroupVersionKind("apps", "v1", "Fake")


def controller(uid: str | None = "123", namespace: str = "default", deleting: bool = False) -> apps_v1.ReplicaSet:
    return apps_v1.ReplicaSet(metadata=meta_v1.ObjectMeta(
        name="ctrl", namespace=namespace, uid=uid, deletion_timestamp="2024-01-01T00:00:00Z" if deleting else None))


def new_pod(name: str, label: dict[str, str], owner: apps_v1.ReplicaSet | None = None, *,
            namespace: str = "default", deleting: bool = False) -> core_v1.Pod:
    refs = [cu.new_controller_ref(owner, FAKE_KIND)] if owner is not None else None
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(
        name=name, namespace=namespace, labels=label, owner_references=refs, uid=f"uid-{name}",
        deletion_timestamp="2024-01-01T00:00:00Z" if deleting else None))


async def _allow() -> None:
    return None


def _case_other_controller() -> tuple:
    c, c2 = controller("123"), controller("AAAAA")
    return c, [new_pod("pod1", PRODUCTION, c), new_pod("pod2", PRODUCTION, c2)], ["pod1"], 0, ()


def _case(name: str) -> tuple:
    c = controller(None if name == "correct label" else "123", deleting=name.startswith("deleting"))
    if name == "correct label":
        return c, [new_pod("pod1", PRODUCTION), new_pod("pod2", TESTING)], ["pod1"], 1, ()
    if name == "deleting: no claims":
        return c, [new_pod("pod1", PRODUCTION), new_pod("pod2", PRODUCTION)], [], 0, ()
    if name == "deleting: keeps own, no new":
        return c, [new_pod("pod1", PRODUCTION, c), new_pod("pod2", PRODUCTION)], ["pod1"], 0, ()
    if name == "release on mismatch":
        return c, [new_pod("pod1", PRODUCTION, c), new_pod("pod2", TESTING, c)], ["pod1"], 1, ()
    if name == "orphans being deleted":
        return c, [new_pod("pod1", PRODUCTION, c, deleting=True), new_pod("pod2", PRODUCTION, deleting=True)], \
            ["pod1"], 0, ()
    if name == "finalizers":
        return c, [new_pod("pod1", PRODUCTION, c), new_pod("pod2", TESTING, c), new_pod("pod3", PRODUCTION)], \
            ["pod1", "pod3"], 2, ("foo-finalizer", "bar-finalizer")
    if name == "other namespace":
        return c, [new_pod("pod1", PRODUCTION), new_pod("pod2", PRODUCTION, namespace="fakens")], ["pod1"], 1, ()
    if name == "cluster-scoped":
        c = controller("123", namespace="")
        return c, [new_pod("pod1", PRODUCTION), new_pod("pod2", PRODUCTION, namespace="fakens")], \
            ["pod1", "pod2"], 2, ()
    raise KeyError(name)


@pytest.mark.parametrize("case", [
    pytest.param(lambda: _case("correct label"), id="Claim pods with correct label"),
    pytest.param(lambda: _case("deleting: no claims"), id="Controller marked for deletion can not claim pods"),
    pytest.param(lambda: _case("deleting: keeps own, no new"), id="Controller marked for deletion can not claim new pods"),
    pytest.param(_case_other_controller, id="Controller can not claim pods owned by another controller"),
    pytest.param(lambda: _case("release on mismatch"), id="Controller releases claimed pods when selector doesn't match"),
    pytest.param(lambda: _case("orphans being deleted"), id="Controller does not claim orphaned pods marked for deletion"),
    pytest.param(lambda: _case("finalizers"), id="Controller claims or release pods according to selector with finalizers"),
    pytest.param(lambda: _case("other namespace"), id="Controller does not claim pods of different namespace"),
    pytest.param(lambda: _case("cluster-scoped"), id="Cluster scoped controller claims pods of specified namespace"),
])
async def test_claim_pods(case) -> None:  # type: ignore[no-untyped-def]
    """Upstream: TestClaimPods"""
    ctrl, pods, claimed_names, patches, finalizers = case()
    pod_control = cu.FakePodControl()
    manager = crm.PodControllerRefManager(pod_control, ctrl, PRODUCTION_SELECTOR, FAKE_KIND, _allow, *finalizers)
    claimed = await manager.claim_pods(pods)
    assert [p.metadata.name for p in claimed] == claimed_names
    assert all(c in pods for c in claimed)                  # the very objects passed in
    assert len(pod_control.patches) == patches
    for patch in pod_control.patches:
        text = patch.decode()
        assert (ctrl.metadata.uid or "") in text
        for f in finalizers:
            assert f in text


@pytest.mark.parametrize("owner_uids, dependent_uid, finalizers, want", [
    (["ss1"], "ss2", [], b'{"metadata":{"uid":"ss2","ownerReferences":[{"$patch":"delete","uid":"ss1"}]}}'),
    (['ss1"hello'], "ss2", [],
     b'{"metadata":{"uid":"ss2","ownerReferences":[{"$patch":"delete","uid":"ss1\\"hello"}]}}'),
    (["ss1"], 'ss2"hello', [],
     b'{"metadata":{"uid":"ss2\\"hello","ownerReferences":[{"$patch":"delete","uid":"ss1"}]}}'),
    (["ss1", "ss2"], "ss2", [],
     b'{"metadata":{"uid":"ss2","ownerReferences":[{"$patch":"delete","uid":"ss1"},{"$patch":"delete","uid":"ss2"}]}}'),
    (["ss1", "ss2"], "ss2", ["f1"],
     b'{"metadata":{"uid":"ss2","ownerReferences":[{"$patch":"delete","uid":"ss1"},{"$patch":"delete","uid":"ss2"}],'
     b'"$deleteFromPrimitiveList/finalizers":["f1"]}}'),
])
def test_generate_patch_bytes_for_delete(owner_uids: list[str], dependent_uid: str, finalizers: list[str],
                                         want: bytes) -> None:
    """Upstream: TestGeneratePatchBytesForDelete"""
    assert crm.generate_delete_owner_ref_strategic_merge_bytes(dependent_uid, owner_uids, *finalizers) == want


def test_adopt_patch_shape() -> None:
    patch = crm.owner_ref_controller_patch(controller("123"), cu.GroupVersionKind("apps", "v1", "ReplicaSet"), "pod-uid")
    assert orjson.loads(patch) == {"metadata": {
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "ctrl", "uid": "123",
                             "controller": True, "blockOwnerDeletion": True}],
        "uid": "pod-uid"}}


async def test_can_adopt_runs_once_and_failure_blocks_every_adoption() -> None:
    calls = 0

    async def refuse() -> None:
        nonlocal calls
        calls += 1
        raise RuntimeError("gone")

    pod_control = cu.FakePodControl()
    manager = crm.PodControllerRefManager(pod_control, controller(), PRODUCTION_SELECTOR, FAKE_KIND, refuse)
    with pytest.raises(cu.AggregateError) as info:
        await manager.claim_pods([new_pod("a", PRODUCTION), new_pod("b", PRODUCTION)])
    assert calls == 1
    assert pod_control.patches == []
    assert str(info.value) == ("[can't adopt Pod default/a (uid-a): gone, can't adopt Pod default/b (uid-b): gone]")


@pytest.mark.parametrize("fresh_meta, message", [
    ({"deletion_timestamp": "2024-01-01T00:00:00Z"}, "default/ctrl has just been deleted at 2024-01-01T00:00:00Z"),
])
async def test_recheck_deletion_timestamp(fresh_meta: dict[str, str], message: str) -> None:
    fresh = controller()
    for k, v in fresh_meta.items():
        setattr(fresh.metadata, k, v)

    async def get() -> apps_v1.ReplicaSet:
        return fresh

    with pytest.raises(RuntimeError, match=message):
        await crm.recheck_deletion_timestamp(get)()

    async def fail() -> apps_v1.ReplicaSet:
        raise errors.NotFound("apps", "replicasets", "ctrl")

    not_found = 'can\'t recheck DeletionTimestamp: replicasets.apps "ctrl" not found'
    with pytest.raises(RuntimeError, match=f"^{re.escape(not_found)}$"):
        await crm.recheck_deletion_timestamp(fail)()


# --- against the real API (FakeClientset) -----------------------------------------------------------

async def _seed_pod(fake: FakeClientset, name: str, label: dict[str, str], owner_refs: list[dict] | None = None
                    ) -> core_v1.Pod:
    meta: dict = {"name": name, "namespace": "default", "labels": label}
    if owner_refs:
        meta["ownerReferences"] = owner_refs
    [pod] = await fake.seed({"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                             "spec": {"containers": [{"name": "c", "image": "x"}]}})
    return pod


async def _seed_rs(fake: FakeClientset) -> apps_v1.ReplicaSet:
    [rs] = await fake.seed({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "ctrl"},
                            "spec": {"replicas": 1, "selector": {"matchLabels": PRODUCTION},
                                     "template": {"metadata": {"labels": PRODUCTION},
                                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    return rs


RS_KIND = cu.GroupVersionKind("apps", "v1", "ReplicaSet")


async def test_adopt_keeps_non_controller_refs_and_release_removes_only_ours() -> None:
    fake = await FakeClientset.new()
    rs = await _seed_rs(fake)
    other = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "ss", "uid": "ss-uid"}
    pod = await _seed_pod(fake, "p", PRODUCTION, [other])
    control = cu.RealPodControl(fake, _NoEvents())
    manager = crm.PodControllerRefManager(control, rs, PRODUCTION_SELECTOR, RS_KIND, _allow)
    assert await manager.claim_pods([pod]) == [pod]
    adopted = await fake.core_v1().pods("default").get("p")
    # Order is the strategic-merge patcher's business; both refs must be there.
    assert sorted((r.kind, bool(r.controller)) for r in adopted.metadata.owner_references) == [
        ("ReplicaSet", True), ("StatefulSet", False)]

    relabelled = adopted.deep_copy()
    relabelled.metadata.labels = TESTING
    assert await manager.claim_pods([relabelled]) == []
    released = await fake.core_v1().pods("default").get("p")
    assert [r.kind for r in released.metadata.owner_references] == ["StatefulSet"]
    assert fake.verbs() == [("patch", "pods", ""), ("patch", "pods", "")]


async def test_release_ignores_not_found_and_invalid() -> None:
    fake = await FakeClientset.new()
    rs = await _seed_rs(fake)
    control = cu.RealPodControl(fake, _NoEvents())
    manager = crm.PodControllerRefManager(control, rs, PRODUCTION_SELECTOR, RS_KIND, _allow)
    ref = types.to_dict(cu.new_controller_ref(rs, RS_KIND))
    gone = core_v1.Pod(metadata=meta_v1.ObjectMeta(name="gone", namespace="default", uid="x", labels=TESTING,
                                                   owner_references=[cu.new_controller_ref(rs, RS_KIND)]))
    assert await manager.claim_pods([gone]) == []                        # NotFound: ignored
    pod = await _seed_pod(fake, "recreated", TESTING, [ref])
    stale = pod.deep_copy()
    stale.metadata.uid = "uid-of-an-earlier-incarnation"
    assert await manager.claim_pods([stale]) == []                       # Invalid (uid immutable): ignored
    assert (await fake.core_v1().pods("default").get("recreated")).metadata.owner_references[0].uid == rs.metadata.uid


async def test_claim_replica_sets() -> None:
    fake = await FakeClientset.new()
    d = apps_v1.Deployment(metadata=meta_v1.ObjectMeta(name="web", namespace="default", uid="d-uid"))
    [orphan, foreign] = await fake.seed(*(
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": n, "labels": PRODUCTION, **extra},
         "spec": {"replicas": 0, "selector": {"matchLabels": PRODUCTION},
                  "template": {"metadata": {"labels": PRODUCTION}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
        for n, extra in (("orphan", {}), ("foreign", {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "uid": "x-uid", "controller": True}]}))))
    manager = crm.ReplicaSetControllerRefManager(crm.RealRSControl(fake), d, PRODUCTION_SELECTOR,
                                                 cu.GroupVersionKind("apps", "v1", "Deployment"), _allow)
    claimed = await manager.claim_replica_sets([orphan, foreign])
    assert [r.metadata.name for r in claimed] == ["orphan"]
    body = fake.actions[0].body
    assert fake.verbs() == [("patch", "replicasets", "")]
    assert body["metadata"]["ownerReferences"][0] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                                      "uid": "d-uid", "controller": True, "blockOwnerDeletion": True}


class _NoEvents:
    def event(self, obj: object, type_: str, reason: str, message: str) -> None:
        raise AssertionError("claiming pods records no events")
