"""recreate.go: oldPodsRunning, scaling old RSs to 0, and whole Recreate syncs."""
from __future__ import annotations

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import ObjectName, apps_v1, core_v1, meta_v1
from kubeplane.controller.deployment import recreate
from kubeplane.controller.deployment.util import deployment_util as du

from deployment_testutil import NOW, Fixture, deployment_dict, new_fixture, owned_rs_dict, rs, rs_status

KEY = ObjectName("default", "foo")


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


def _pod(phase: str) -> core_v1.Pod:
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=f"p-{phase}"), status=core_v1.PodStatus(phase=phase))


def _with_status_replicas(name: str, n: int) -> apps_v1.ReplicaSet:
    r = rs(name, 0, None, NOW)
    r.status = apps_v1.ReplicaSetStatus(replicas=n)
    return r


@pytest.mark.parametrize("old_status_replicas,pod_map,expected", [
    pytest.param(None, {}, False, id="no old RSs"),
    pytest.param(1, {}, True, id="old RS reports running pods"),
    pytest.param(1, {"uid-old": []}, True, id="old RS without pods but non-zero status.replicas"),
    pytest.param(0, {"uid-old": []}, False, id="old RS without pods or status.replicas"),
    pytest.param(0, {"uid-old": [_pod("Failed"), _pod("Succeeded")]}, False, id="only terminal pods"),
    pytest.param(0, {"uid-old": [_pod("Unknown")]}, True, id="a pod in Unknown may still run"),
    pytest.param(0, {"uid-old": [_pod("Running")]}, True, id="a running pod"),
    pytest.param(0, {"uid-old": [_pod("Pending")]}, True, id="a pending pod"),
    pytest.param(0, {"uid-new": [_pod("Running")]}, False, id="pods of the new RS do not count"),
])
def test_old_pods_running(old_status_replicas: int | None, pod_map: dict, expected: bool) -> None:
    """Upstream: TestOldPodsRunning"""
    new = rs("new", 1, None, NOW)
    old_rss = [] if old_status_replicas is None else [_with_status_replicas("old", old_status_replicas)]
    assert recreate.old_pods_running(new, old_rss, pod_map) is expected


async def test_scale_down_old_replica_sets(f: Fixture) -> None:
    """Upstream: TestScaleDownOldReplicaSets — every active old RS to 0, with an event each."""
    [d] = await f.seed(deployment_dict("foo", 3, strategy={"type": "Recreate"}))
    [a, b] = await f.seed(owned_rs_dict(d, "foo-a", 3, status=rs_status(3)), owned_rs_dict(d, "foo-b", 0))
    old_rss = [a, b]
    assert await recreate.scale_down_old_replica_sets_for_recreate(f.dc, old_rss, d)
    assert [(x.body["metadata"]["name"], x.body["spec"]["replicas"]) for x in f.fake.actions] == [("foo-a", 0)]
    assert old_rss[0].spec.replicas == 0                    # replaced by the API's answer
    assert f.recorder.events == ["Normal ScalingReplicaSet Scaled down replica set foo-a to 0 from 3"]
    assert not await recreate.scale_down_old_replica_sets_for_recreate(f.dc, [old_rss[0], b], d)


async def test_rollout_recreate_waits_for_old_pods(f: Fixture) -> None:
    """Scale old to 0 -> wait while an old pod runs -> create the new RS at full size."""
    [d] = await f.seed(deployment_dict("foo", 3, strategy={"type": "Recreate"}))
    old_template = types.to_dict(d.spec.template)
    old_template["spec"]["containers"][0]["image"] = "old"
    [old] = await f.seed(owned_rs_dict(d, "foo-old", 1, template=old_template, status=rs_status(1),
                                       annotations={du.REVISION_ANNOTATION: "1", du.DESIRED_REPLICAS_ANNOTATION: "3"}))
    [pod] = await f.seed({"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "old-pod", "namespace": "default", "labels": {"foo": "bar"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "foo-old", "uid": old.metadata.uid,
                             "controller": True}]}, "spec": {"containers": [{"name": "c", "image": "old"}]}})
    try:
        await f.dc.sync_handler(KEY)
    except errors.Conflict:
        pass
    assert f.writes("create", "replicasets") == []
    assert f.recorder.events == ["Normal ScalingReplicaSet Scaled down replica set foo-old to 0 from 1"]

    # The RS controller removed the pod from its count, but the pod still runs (terminating).
    old = next(r for r in await f.list_rss())
    old.status = apps_v1.ReplicaSetStatus(observed_generation=old.metadata.generation)
    f.fake.recorder.recording = False
    await f.fake.apps_v1().replicasets("default").update_status(old)
    f.fake.recorder.recording = True
    await f.refresh()
    f.fake.clear_actions()
    await f.dc.sync_handler(KEY)
    assert f.writes("create", "replicasets") == []           # old pod still running

    f.factory.core_v1().pods().informer().get_indexer().delete(pod)
    try:
        await f.dc.sync_handler(KEY)
    except errors.Conflict:
        pass
    [created] = f.writes("create", "replicasets")
    assert created["spec"]["replicas"] == 3                   # Recreate: straight to replicas
    assert created["metadata"]["annotations"][du.REVISION_ANNOTATION] == "2"
    assert f.recorder.events[-1] == f"Normal ScalingReplicaSet Scaled up replica set {created['metadata']['name']} to 3"
