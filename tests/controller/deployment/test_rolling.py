"""rolling.go: the tables of upstream's rolling_test.go and whole rolling syncs."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import apps_v1
from kubeplane.controller.deployment import rolling
from kubeplane.controller.deployment.util import deployment_util as du

from deployment_testutil import Fixture, deployment_dict, new_deployment, new_fixture, owned_rs_dict, rs_status


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


def _rs_dict(name: str, replicas: int, available: int) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name, "namespace": "default",
                                                                         "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"replicas": max(replicas, available), "readyReplicas": available,
                       "availableReplicas": available, "observedGeneration": 1}}


async def _seed(f: Fixture, name: str, replicas: int, available: int) -> apps_v1.ReplicaSet:
    [r] = await f.fake.seed(_rs_dict(name, replicas, available))
    f.clock.step(60)                      # later seeds are newer
    return r


def _sizes(f: Fixture) -> dict[str, int]:
    return {a.body["metadata"]["name"]: a.body["spec"]["replicas"] for a in f.fake.actions if a.verb == "update"}


@pytest.mark.parametrize("max_surge,old_replicas,new_replicas,scale_expected,expected_new", [
    (0, 10, 0, False, None),
    (2, 10, 0, True, 2),
    (2, 5, 0, True, 7),
    (2, 10, 2, False, None),
    (2, 2, 11, True, 10),
])
async def test_reconcile_new_replica_set(f: Fixture, max_surge: int, old_replicas: int, new_replicas: int,
                                         scale_expected: bool, expected_new: int | None) -> None:
    """Upstream: TestDeploymentController_reconcileNewReplicaSet (deployment 10, maxUnavailable 0)"""
    old = await _seed(f, "foo-v1", old_replicas, old_replicas)
    new = await _seed(f, "foo-v2", new_replicas, new_replicas)
    d = new_deployment("foo", 10, None, max_surge, 0)
    scaled = await rolling.reconcile_new_replica_set(f.dc, [new, old], new, d)
    assert scaled is scale_expected
    assert _sizes(f) == ({"foo-v2": expected_new} if scale_expected else {})


@pytest.mark.parametrize("max_unavailable,old_replicas,new_replicas,ready_old,ready_new,scale_expected,expected_old", [
    (0, 10, 0, 10, 0, True, 9),
    (2, 10, 0, 10, 0, True, 8),
    (2, 10, 0, 8, 0, True, 8),          # cleanupUnhealthyReplicas removes the 2 unhealthy ones
    (2, 10, 0, 9, 0, True, 8),          # 1 unhealthy cleaned up, then 1 healthy scaled down
    (2, 8, 2, 8, 0, False, None),       # 10 - 8 - 2 = 0: nothing may go
])
async def test_reconcile_old_replica_sets(f: Fixture, max_unavailable: int, old_replicas: int, new_replicas: int,
                                          ready_old: int, ready_new: int, scale_expected: bool,
                                          expected_old: int | None) -> None:
    """Upstream: TestDeploymentController_reconcileOldReplicaSets (deployment 10, maxSurge 0)"""
    old = await _seed(f, "foo-old", old_replicas, ready_old)
    new = await _seed(f, "foo-new", new_replicas, ready_new)
    d = new_deployment("foo", 10, None, 0, max_unavailable)
    scaled = await rolling.reconcile_old_replica_sets(f.dc, [old, new], [old], new, d)
    assert scaled is scale_expected
    if scale_expected:
        assert _sizes(f) == {"foo-old": expected_old}
    else:
        assert f.fake.verbs() == []


@pytest.mark.parametrize("ready_pods,unhealthy_pods,max_cleanup_count,cleanup_count_expected", [
    (8, 2, 1, 1), (8, 2, 3, 2), (8, 2, 0, 0), (10, 0, 3, 0),
])
async def test_cleanup_unhealthy_replicas(f: Fixture, ready_pods: int, unhealthy_pods: int, max_cleanup_count: int,
                                          cleanup_count_expected: int) -> None:
    """Upstream: TestDeploymentController_cleanupUnhealthyReplicas (old RS 10; surge 2, unavailable 2)"""
    old = await _seed(f, "foo-v2", ready_pods + unhealthy_pods, ready_pods)
    d = new_deployment("foo", 10, None, 2, 2)
    _, cleaned = await rolling.cleanup_unhealthy_replicas(f.dc, [old], d, max_cleanup_count)
    assert cleaned == cleanup_count_expected
    assert _sizes(f) == ({"foo-v2": 10 - cleanup_count_expected} if cleanup_count_expected else {})


@pytest.mark.parametrize("max_unavailable,ready_pods,old_replicas,scale_expected,expected_old", [
    (0, 10, 10, True, 9),
    (2, 10, 10, True, 8),
    (2, 8, 10, False, None),
    (2, 10, 0, False, None),
    (2, 1, 10, False, None),
])
async def test_scale_down_old_replica_sets_for_rolling_update(f: Fixture, max_unavailable: int, ready_pods: int,
                                                              old_replicas: int, scale_expected: bool,
                                                              expected_old: int | None) -> None:
    """Upstream: TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate (deployment 10, surge 0)"""
    old = await _seed(f, "foo-v2", old_replicas, ready_pods)
    d = new_deployment("foo", 10, None, 0, max_unavailable)
    count = await rolling.scale_down_old_replica_sets_for_rolling_update(f.dc, [old], [old], d)
    if scale_expected:
        assert count > 0 and _sizes(f) == {"foo-v2": expected_old}
        assert f.recorder.events == [f"Normal ScalingReplicaSet Scaled down replica set foo-v2 to {expected_old} "
                                     f"from {old_replicas}"]
    else:
        assert count == 0 and f.fake.verbs() == []


async def test_scale_down_takes_oldest_first(f: Fixture) -> None:
    older, old = await _seed(f, "older", 3, 3), await _seed(f, "old", 3, 3)
    d = new_deployment("foo", 4, None, 0, 1)
    assert await rolling.scale_down_old_replica_sets_for_rolling_update(f.dc, [old, older], [old, older], d) == 3
    # 6 available - minAvailable 3 = 3, all taken from the oldest RS.
    assert [(a.body["metadata"]["name"], a.body["spec"]["replicas"]) for a in f.fake.actions] == [("older", 0)]


def test_max_scaled_down_worked_example() -> None:
    """reconcileOldReplicaSets' comment: 10 replicas, maxUnavailable 2, maxSurge 3."""
    assert rolling.max_scaled_down(13, 8, 5) == 0         # case 1: new pods crash-loop
    assert rolling.max_scaled_down(13, 8, 1) == 4         # case 1 after rollback
    assert rolling.max_scaled_down(13, 8, 0) == 5         # case 2: roll over


async def test_reconcile_old_swallows_update_errors(f: Fixture) -> None:
    """Upstream returns (false, nil) when a scale-down write fails."""
    old, new = await _seed(f, "foo-old", 10, 10), await _seed(f, "foo-new", 0, 0)
    f.fake.fail_on("update", "replicasets", errors.StatusError(500, "InternalError", "boom"))
    assert await rolling.reconcile_old_replica_sets(f.dc, [old, new], [old], new,
                                                    new_deployment("foo", 10, None, 0, 2)) is False


# --- whole rolling syncs -------------------------------------------------------------------------------

async def _step(f: Fixture) -> None:
    """One sync; a stale-resourceVersion Conflict on the second status write is upstream's
    behaviour (the returned object is discarded) and is retried by the queue."""
    try:
        await f.dc.sync_handler(f.dc.key_of(await f.get_deployment()))
    except errors.Conflict:
        pass
    await f.refresh()


async def _set_available(f: Fixture, name: str, available: int) -> None:
    """What the ReplicaSet controller would report once pods come up."""
    r = next(r for r in await f.list_rss() if r.metadata.name == name)
    r.status = apps_v1.ReplicaSetStatus(**{k: v for k, v in rs_status(r.spec.replicas, available).items()
                                           if k != "readyReplicas" and k != "availableReplicas"
                                           and k != "observedGeneration"},
                                        ready_replicas=available, available_replicas=available,
                                        observed_generation=r.metadata.generation)
    f.fake.recorder.recording = False
    try:
        await f.fake.apps_v1().replicasets("default").update_status(r)
    finally:
        f.fake.recorder.recording = True
    await f.refresh()


async def _rolled_deployment(f: Fixture, replicas: int, surge: Any, unavailable: Any) -> tuple[Any, Any]:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    [d] = await f.seed(deployment_dict("foo", replicas, strategy=strategy))
    old_template = types.to_dict(d.spec.template)
    old_template["spec"]["containers"][0]["image"] = "old"
    [old] = await f.seed(owned_rs_dict(d, "foo-old", replicas, template=old_template, status=rs_status(replicas),
                                       annotations={du.REVISION_ANNOTATION: "1",
                                                    du.DESIRED_REPLICAS_ANNOTATION: str(replicas)}))
    return d, old


def _specs(rss: list[apps_v1.ReplicaSet]) -> dict[str, int]:
    return {("old" if r.metadata.name == "foo-old" else "new"): r.spec.replicas for r in rss}


async def test_rollout_never_ready_settles_at_old_8_new_5(f: Fixture) -> None:
    """Spec §4.3 A / e2e proportional scaling: 10 replicas, surge 3, unavailable 2, new pods
    never available -> old 8, new 5, and further syncs change nothing."""
    await _rolled_deployment(f, 10, 3, 2)
    seen = []
    for _ in range(6):
        await _step(f)
        seen.append(_specs(await f.list_rss()))
    assert seen[0] == {"old": 8, "new": 3}                  # created with min(13 - 10, 10) = 3, then old -2
    assert seen[-1] == seen[-2] == {"old": 8, "new": 5}
    assert all(sum(s.values()) <= 13 for s in seen)
    new_name = next(r.metadata.name for r in await f.list_rss() if r.metadata.name != "foo-old")
    assert f.recorder.events == [f"Normal ScalingReplicaSet Scaled up replica set {new_name} to 3",
                                 "Normal ScalingReplicaSet Scaled down replica set foo-old to 8 from 10",
                                 f"Normal ScalingReplicaSet Scaled up replica set {new_name} to 5 from 3"]


async def test_rollout_surge_0_unavailable_1(f: Fixture) -> None:
    """Spec §4.3 C: 3 replicas, maxSurge 0, maxUnavailable 1: the new RS starts at 0 (no
    "Scaled up" event), old 3 -> 2, new 0 -> 1, and waits for availability."""
    await _rolled_deployment(f, 3, 0, 1)
    await _step(f)
    rss = await f.list_rss()
    new_name = next(r.metadata.name for r in rss if r.metadata.name != "foo-old")
    assert _specs(rss) == {"old": 2, "new": 0}
    await _step(f)
    assert _specs(await f.list_rss()) == {"old": 2, "new": 1}
    await _step(f)
    assert _specs(await f.list_rss()) == {"old": 2, "new": 1}          # new pod not available yet
    await _set_available(f, "foo-old", 2)                               # the RS controller caught up
    await _set_available(f, new_name, 1)
    await _step(f)
    assert _specs(await f.list_rss()) == {"old": 1, "new": 1}
    assert f.recorder.events[0] == "Normal ScalingReplicaSet Scaled down replica set foo-old to 2 from 3"


async def test_rollout_complete_runs_cleanup_and_status(f: Fixture) -> None:
    """When the stored status says complete, old RSs beyond revisionHistoryLimit are deleted."""
    [d] = await f.seed(deployment_dict("foo", 1, revisionHistoryLimit=0))
    old_template = types.to_dict(d.spec.template)
    old_template["spec"]["containers"][0]["image"] = "old"
    await f.seed(owned_rs_dict(d, "foo-old", 0, template=old_template, annotations={du.REVISION_ANNOTATION: "1"},
                               status={"observedGeneration": 1}))
    for _ in range(3):
        await _step(f)
    new = next(r for r in await f.list_rss() if r.metadata.name != "foo-old")
    await _set_available(f, new.metadata.name, 1)
    for _ in range(3):
        await _step(f)
    assert [r.metadata.name for r in await f.list_rss()] == [new.metadata.name]
    d = await f.get_deployment()
    st = d.status
    assert (st.observed_generation, st.replicas, st.updated_replicas, st.ready_replicas, st.available_replicas,
            st.unavailable_replicas) == (d.metadata.generation, 1, 1, 1, 1, None)
    assert {c.type: c.reason for c in st.conditions} == {"Available": "MinimumReplicasAvailable",
                                                         "Progressing": "NewReplicaSetAvailable"}
    assert d.metadata.annotations[du.REVISION_ANNOTATION] == "2"
