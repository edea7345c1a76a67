"""sync.go: proportional scaling (TestScale), history cleanup, status, the new ReplicaSet.

Tables reproduce upstream's pkg/controller/deployment/sync_test.go; writes go to the real
API server behind FakeClientset and are asserted as recorded actions.
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import apps_v1
from kubeplane.controller.deployment import sync
from kubeplane.controller.deployment.util import deployment_util as du
from kubeplane.utils.clock import rfc3339

from deployment_testutil import (
    NOW, Fixture, deployment_dict, hash_of, new_deployment, new_fixture, new_rs_with_status, owned_rs_dict, rs,
    rs_status,
)


@pytest.fixture
async def f() -> Fixture:
    return await new_fixture()


def _rs_dict(name: str, replicas: int, available: int, annotations: dict[str, str]) -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "labels": labels, "annotations": annotations},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": available,
                       "observedGeneration": 1}}


def _scale_case(id_: str, d: tuple, old_d: tuple, new: tuple | None, olds: list[tuple], expected_new: int | None,
                expected_old: list[int], wasnt_updated: set[str] = frozenset(),  # type: ignore[assignment]
                desired: dict[str, int] | None = None, template_changed: bool = False) -> Any:
    return pytest.param(d, old_d, new, olds, expected_new, expected_old, set(wasnt_updated), desired or {},
                        template_changed, id=id_)


# (replicas, maxSurge, maxUnavailable) of the deployment and the old deployment; RSs are
# (name, replicas[, available]); v1 is the oldest, v3 the newest.
SCALE_CASES = [
    _scale_case("normal scaling event: 10 -> 12", (12,), (10,), ("foo-v1", 10), [], 12, []),
    _scale_case("normal scaling event: 10 -> 5", (5,), (10,), ("foo-v1", 10), [], 5, []),
    _scale_case("proportional scaling: 5 -> 10", (10,), (5,), ("foo-v2", 2), [("foo-v1", 3)], 4, [6]),
    _scale_case("proportional scaling: 5 -> 3", (3,), (5,), ("foo-v2", 2), [("foo-v1", 3)], 1, [2]),
    _scale_case("proportional scaling: 9 -> 4", (4,), (9,), ("foo-v2", 8), [("foo-v1", 1)], 4, [0]),
    _scale_case("proportional scaling: 7 -> 10", (10,), (7,), ("foo-v3", 2), [("foo-v2", 3), ("foo-v1", 2)],
                3, [4, 3]),
    _scale_case("proportional scaling: 13 -> 8", (8,), (13,), ("foo-v3", 2), [("foo-v2", 8), ("foo-v1", 3)],
                1, [5, 2]),
    _scale_case("leftover distribution: 3 -> 4", (4,), (3,), ("foo-v3", 1), [("foo-v2", 1), ("foo-v1", 1)],
                2, [1, 1]),
    _scale_case("leftover distribution: 3 -> 2", (2,), (3,), ("foo-v3", 1), [("foo-v2", 1), ("foo-v1", 1)],
                1, [1, 0]),
    _scale_case("proportional scaling (no new rs): 4 -> 5", (5,), (4,), None, [("foo-v2", 2), ("foo-v1", 2)],
                None, [3, 2]),
    _scale_case("proportional scaling: 6 -> 0", (0,), (6,), ("foo-v3", 3), [("foo-v2", 2), ("foo-v1", 1)],
                0, [0, 0]),
    _scale_case("proportional scaling: 0 -> 6", (6,), (6,), ("foo-v3", 0), [("foo-v2", 0), ("foo-v1", 0)],
                6, [0, 0], {"foo-v2", "foo-v1"}),
    _scale_case("failed rs update", (5,), (5,), ("foo-v3", 2), [("foo-v2", 1), ("foo-v1", 1)],
                2, [2, 1], {"foo-v3", "foo-v1"}, {"foo-v2": 3}),
    _scale_case("deployment with surge pods", (20, 2), (10, 2), ("foo-v2", 6), [("foo-v1", 6)], 11, [11]),
    _scale_case("change both surge and size", (50, 6), (10, 3), ("foo-v2", 5), [("foo-v1", 8)], 22, [34]),
    _scale_case("change both size and template", (14,), (10,), None, [("foo-v2", 7), ("foo-v1", 3)],
                None, [10, 4], template_changed=True),
    _scale_case("saturated but broken new replica set does not affect old pods", (2, 1, 1), (2, 1, 1),
                ("foo-v2", 2, 0), [("foo-v1", 1)], 2, [1]),
]


@pytest.mark.parametrize("d_args,old_d_args,new,olds,expected_new,expected_old,wasnt_updated,desired,"
                         "template_changed", SCALE_CASES)
async def test_scale(f: Fixture, d_args: tuple, old_d_args: tuple, new: tuple | None, olds: list[tuple],
                     expected_new: int | None, expected_old: list[int], wasnt_updated: set[str],
                     desired: dict[str, int], template_changed: bool) -> None:
    """Upstream: TestScale (every row); annotations come from the old deployment's size."""
    def deployment(args: tuple) -> apps_v1.Deployment:
        replicas, surge, unavail = (*args, None, None)[:3]
        return new_deployment("foo", replicas, None, surge, unavail, {"foo": "bar"})
    d, old_d = deployment(d_args), deployment(old_d_args)
    if template_changed:
        d.spec.template.metadata.labels["another"] = "label"
    specs = ([new] if new else []) + olds
    stored: dict[str, apps_v1.ReplicaSet] = {}
    for spec in sorted(specs, key=lambda s: s[0]):                       # v1 first: the oldest
        name, replicas, available = (*spec, spec[1])[:3]
        want = desired.get(name, old_d.spec.replicas)
        ann = {du.DESIRED_REPLICAS_ANNOTATION: str(want), du.MAX_REPLICAS_ANNOTATION: str(want + du.max_surge(old_d))}
        [stored[name]] = await f.fake.seed(_rs_dict(name, replicas, available, ann))
        f.clock.step(3600)
    new_rs = stored[new[0]] if new else None
    old_rss = [stored[o[0]] for o in olds]

    await sync.scale(f.dc, d, new_rs, old_rss)

    updates = {a.body["metadata"]["name"]: a.body for a in f.fake.actions if a.verb == "update"}
    assert not (set(updates) & wasnt_updated)
    size = {n: (updates[n]["spec"]["replicas"] if n in updates else stored[n].spec.replicas) for n in stored}
    if new is not None:
        assert size[new[0]] == expected_new
    assert [size[o[0]] for o in olds] == expected_old
    for body in updates.values():            # every write also records the new size and max
        ann = body["metadata"]["annotations"]
        assert ann[du.DESIRED_REPLICAS_ANNOTATION] == str(d.spec.replicas)
        assert ann[du.MAX_REPLICAS_ANNOTATION] == str(d.spec.replicas + du.max_surge(d))


async def test_scale_events_and_write_order(f: Fixture) -> None:
    """Scaling up: largest first, newer first on ties; events carry "from <old>" (modern text)."""
    d, old_d = new_deployment("foo", 10, selector={"foo": "bar"}), new_deployment("foo", 7)
    ann = {du.DESIRED_REPLICAS_ANNOTATION: "7", du.MAX_REPLICAS_ANNOTATION: "7"}
    stored = {}
    for name, n in (("foo-v1", 2), ("foo-v2", 3), ("foo-v3", 2)):
        [stored[name]] = await f.fake.seed(_rs_dict(name, n, n, ann))
        f.clock.step(60)
    await sync.scale(f.dc, d, stored["foo-v3"], [stored["foo-v2"], stored["foo-v1"]])
    assert [a.body["metadata"]["name"] for a in f.fake.actions] == ["foo-v2", "foo-v3", "foo-v1"]
    assert f.recorder.events == ["Normal ScalingReplicaSet Scaled up replica set foo-v2 to 4 from 3",
                                 "Normal ScalingReplicaSet Scaled up replica set foo-v3 to 3 from 2",
                                 "Normal ScalingReplicaSet Scaled up replica set foo-v1 to 3 from 2"]
    assert old_d.spec.replicas == 7


async def test_scale_e2e_proportional_example(f: Fixture) -> None:
    """e2e "deployment should support proportional scaling": old 8 and new 5 (max 13), 10 -> 30 -> 20 and 13."""
    d = new_deployment("foo", 30, max_surge=3, max_unavailable=2, selector={"foo": "bar"})
    ann = {du.DESIRED_REPLICAS_ANNOTATION: "10", du.MAX_REPLICAS_ANNOTATION: "13"}
    [old] = await f.fake.seed(_rs_dict("foo-v1", 8, 8, ann))
    f.clock.step(60)
    [new] = await f.fake.seed(_rs_dict("foo-v2", 5, 0, ann))
    await sync.scale(f.dc, d, new, [old])
    assert {a.body["metadata"]["name"]: a.body["spec"]["replicas"] for a in f.fake.actions} == \
        {"foo-v1": 20, "foo-v2": 13}


async def test_scale_saturated_new_rs_scales_old_to_zero(f: Fixture) -> None:
    d = new_deployment("foo", 2, max_surge=1, max_unavailable=1, selector={"foo": "bar"})
    ann = {du.DESIRED_REPLICAS_ANNOTATION: "2", du.MAX_REPLICAS_ANNOTATION: "3"}
    [old] = await f.fake.seed(_rs_dict("foo-v1", 1, 1, ann))
    [new] = await f.fake.seed(_rs_dict("foo-v2", 2, 2, ann))
    await sync.scale(f.dc, d, new, [old])
    assert [(a.body["metadata"]["name"], a.body["spec"]["replicas"]) for a in f.fake.actions] == [("foo-v1", 0)]
    assert f.recorder.events == ["Normal ScalingReplicaSet Scaled down replica set foo-v1 to 0 from 1"]


# --- cleanupDeployment --------------------------------------------------------------------------

@pytest.mark.parametrize("old_rss,limit,expected_deletions", [
    ([("foo-1", 0, 0), ("foo-2", 0, 0), ("foo-3", 0, 0)], 1, 2),
    ([("foo-1", 0, 0), ("foo-2", 0, 1), ("foo-3", 1, 0), ("foo-4", 1, 1)], 0, 1),
    ([("foo-1", 0, 0), ("foo-2", 0, 0)], 0, 2),
    ([("foo-1", 1, 1), ("foo-2", 1, 1)], 0, 0),
    ([("deleted", 0, 0)], 0, 0),
    ([("foo-1", 0, 0), ("foo-2", 0, 0), ("foo-3", 0, 0)], du.MAX_INT32, 0),
])
async def test_cleanup_deployment(f: Fixture, old_rss: list[tuple[str, int, int]], limit: int,
                                  expected_deletions: int) -> None:
    """Upstream: TestDeploymentController_cleanupDeployment (only deletions are counted)."""
    rss = [new_rs_with_status(n, spec, status, {"foo": "bar"}) for n, spec, status in old_rss]
    for r in rss:
        if r.metadata.name == "deleted":
            r.metadata.deletion_timestamp = rfc3339(NOW)
    d = new_deployment("foo", 1, limit, selector={"foo": "bar"})
    await sync.cleanup_deployment(f.dc, rss, d)
    assert len([a for a in f.fake.actions if a.verb == "delete"]) == expected_deletions


@pytest.mark.parametrize("rss,limit,expected", [
    pytest.param([("foo-1", 0, -60, "1"), ("foo-2", 0, 0, "2")], 1, {"foo-1"}, id="rs1 < rs2"),
    pytest.param([("foo-1", 0, -60, "2"), ("foo-2", 0, 0, "1")], 1, {"foo-2"}, id="rs2 < rs1"),
    pytest.param([("foo-1", 0, -60, "1"), ("foo-2", 0, 0, "")], 1, {"foo-2"}, id="rs2 has no revision"),
    pytest.param([("foo-1", 0, -60, ""), ("foo-2", 0, 0, "2")], 1, {"foo-1"}, id="rs1 has no revision"),
    pytest.param([("foo-1", 1, -60, "1"), ("foo-2", 0, 0, "2"), ("foo-3", 0, 60, "3")], 1, {"foo-2"},
                 id="rs1 has replicas"),
    pytest.param([("foo-1", 1, -60, "1"), ("foo-2", 1, 0, "2"), ("foo-3", 0, 60, "3")], 1, set(),
                 id="rs1 and rs2 have replicas"),
    pytest.param([("foo-1", 0, -60, "3"), ("foo-2", 0, 0, "1"), ("foo-3", 0, 60, "4"), ("foo-4", 0, 120, "2")], 2,
                 {"foo-2", "foo-4"}, id="rs2 < rs4 < rs1 < rs3"),
])
async def test_cleanup_deployment_order(f: Fixture, rss: list[tuple[str, int, float, str]], limit: int,
                                        expected: set[str]) -> None:
    """Upstream: TestDeploymentController_cleanupDeploymentOrder (lowest revision goes first)."""
    old_rss = []
    for name, replicas, offset, revision in rss:
        r = rs(name, replicas, {"foo": "bar"}, NOW + offset)
        r.metadata.annotations = {du.REVISION_ANNOTATION: revision} if revision else None
        r.status = apps_v1.ReplicaSetStatus(replicas=replicas)
        old_rss.append(r)
    await sync.cleanup_deployment(f.dc, old_rss, new_deployment("foo", 1, limit, selector={"foo": "bar"}))
    assert {a.name for a in f.fake.actions if a.verb == "delete" and a.resource == "replicasets"} == expected


async def test_cleanup_skips_unobserved_generation_and_stops_on_error(f: Fixture) -> None:
    a, b = new_rs_with_status("a", 0, 0, None), new_rs_with_status("b", 0, 0, None)
    a.metadata.generation = 2                      # its controller has not observed generation 2
    await sync.cleanup_deployment(f.dc, [a, b], new_deployment("foo", 1, 0))
    assert [x.name for x in f.fake.actions if x.verb == "delete"] == ["b"]      # b's NotFound is ignored
    f.fake.clear_actions()
    f.fake.fail_on("delete", "replicasets", errors.StatusError(500, "InternalError", "boom"))
    with pytest.raises(errors.StatusError, match="boom"):
        await sync.cleanup_deployment(f.dc, [new_rs_with_status("c", 0, 0, None), b], new_deployment("foo", 1, 0))
    assert len([x for x in f.fake.actions if x.verb == "delete"]) == 1          # the first error stops the loop


# --- calculateStatus ---------------------------------------------------------------------------------

def test_calculate_status_fields() -> None:
    """Every status field: sums over RS status, updated = new RS, unavailable from spec, Available."""
    d = new_deployment("foo", 10, max_surge=3, max_unavailable=2)
    d.metadata.generation = 4
    foreign = apps_v1.DeploymentCondition(type="StatusUpdate", status="True", reason="E2E", message="Set from e2e test")
    d.status = apps_v1.DeploymentStatus(collision_count=2, conditions=[foreign])
    old, new = rs("old", 8, None, NOW, available=8), rs("new", 5, None, NOW, available=0)
    old.status = apps_v1.ReplicaSetStatus(replicas=8, ready_replicas=8, available_replicas=8, observed_generation=1,
                                          terminating_replicas=1)
    new.status = apps_v1.ReplicaSetStatus(replicas=4, ready_replicas=1, available_replicas=0, observed_generation=1,
                                          terminating_replicas=0)
    st = sync.calculate_status([old, new], new, d, NOW)
    assert (st.observed_generation, st.replicas, st.updated_replicas, st.ready_replicas, st.available_replicas,
            st.unavailable_replicas, st.collision_count, st.terminating_replicas) == (4, 12, 4, 9, 8, 5, 2, 1)
    assert [c.type for c in st.conditions] == ["StatusUpdate", "Available"]     # foreign conditions are kept
    assert (st.conditions[1].status, st.conditions[1].reason, st.conditions[1].message) == \
        ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    assert d.status.conditions == [foreign]                                     # the input is not modified
    old.status.available_replicas = 7
    st = sync.calculate_status([old, new], new, d, NOW)
    assert (st.conditions[1].status, st.conditions[1].reason, st.conditions[1].message) == \
        ("False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability.")


def test_calculate_status_omits_zero_counts() -> None:
    """Deployment status counts are omitempty upstream: a fresh status sends no zeros."""
    d = new_deployment("foo", 0)
    d.metadata.generation = 1
    st = sync.calculate_status([None], None, d, NOW)
    assert types.to_dict(st) == {"observedGeneration": 1, "terminatingReplicas": 0, "conditions": [
        {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
         "message": "Deployment has minimum availability.", "lastUpdateTime": rfc3339(NOW),
         "lastTransitionTime": rfc3339(NOW)}]}
    more_available = rs("x", 2, None, NOW, available=3)       # scaling down: unavailable floors at 0
    assert sync.calculate_status([more_available], None, d, NOW).unavailable_replicas is None
    no_terminating = sync.calculate_status([None], None, d, NOW, with_terminating_replicas=False)
    assert no_terminating.terminating_replicas is None


# --- getNewReplicaSet ---------------------------------------------------------------------------------

async def test_new_replica_set_is_created_with_annotations(f: Fixture) -> None:
    """Name <d>-<hash>; hash label on labels, selector and template; annotations; controller ref."""
    [d] = await f.seed(deployment_dict("foo", 4, annotations=None))
    d.metadata.annotations = {"test": "should-copy-to-replica-set", du.LAST_APPLIED_CONFIG_ANNOTATION: "{}"}
    new_rs, old_rss = await sync.get_all_replica_sets_and_sync_revision(f.dc, d, [], True)
    [body] = f.writes("create", "replicasets")
    h = hash_of(new_rs.metadata.name)
    meta = body["metadata"]
    assert meta["labels"] == {"foo": "bar", "pod-template-hash": h}
    assert body["spec"]["selector"] == {"matchLabels": {"foo": "bar", "pod-template-hash": h}}
    assert body["spec"]["template"]["metadata"]["labels"] == {"foo": "bar", "pod-template-hash": h}
    assert body["spec"]["replicas"] == 4
    assert meta["annotations"] == {"test": "should-copy-to-replica-set", du.REVISION_ANNOTATION: "1",
                                   du.DESIRED_REPLICAS_ANNOTATION: "4", du.MAX_REPLICAS_ANNOTATION: "5"}
    assert meta["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "foo",
                                        "uid": d.metadata.uid, "controller": True, "blockOwnerDeletion": True}]
    assert f.recorder.events == [f"Normal ScalingReplicaSet Scaled up replica set {new_rs.metadata.name} to 4"]
    [status_body] = f.writes("update", "deployments", "status")
    assert status_body["metadata"]["annotations"][du.REVISION_ANNOTATION] == "1"
    [cond] = status_body["status"]["conditions"]
    assert (cond["type"], cond["status"], cond["reason"], cond["message"]) == \
        ("Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{new_rs.metadata.name}"')
    assert old_rss == []


async def test_existing_new_replica_set_gets_revision_bump_and_history(f: Fixture) -> None:
    """Rolling back to an old template: its RS becomes new again with revision max+1 and history."""
    [d] = await f.seed(deployment_dict("foo", 1, minReadySeconds=5))
    old_template = types.to_dict(d.spec.template)
    old_template["spec"]["containers"][0]["image"] = "other"
    [same, other] = await f.seed(
        owned_rs_dict(d, "foo-a", 1, annotations={du.REVISION_ANNOTATION: "1"}),
        owned_rs_dict(d, "foo-b", 0, template=old_template, annotations={du.REVISION_ANNOTATION: "2"}))
    new_rs, old_rss = await sync.get_all_replica_sets_and_sync_revision(f.dc, d, [same, other], False)
    assert [o.metadata.name for o in old_rss] == ["foo-b"]
    assert f.fake.verbs() == [("update", "replicasets", "")]          # d's revision follows next sync
    ann = new_rs.metadata.annotations
    assert (ann[du.REVISION_ANNOTATION], ann[du.REVISION_HISTORY_ANNOTATION]) == ("3", "1")
    assert new_rs.spec.min_ready_seconds == 5                          # minReadySeconds synced to the new RS
    await f.refresh()
    f.fake.clear_actions()
    new_rs, _ = await sync.get_all_replica_sets_and_sync_revision(f.dc, d, await f.list_rss(), False)
    [body] = f.writes("update", "deployments", "status")
    assert body["metadata"]["annotations"][du.REVISION_ANNOTATION] == "3"
    [cond] = body["status"]["conditions"]
    assert (cond["reason"], cond["message"]) == ("FoundNewReplicaSet", 'Found new replica set "foo-a"')


async def test_hash_collision_bumps_collision_count(f: Fixture) -> None:
    """AlreadyExists with someone else's RS: collisionCount nil -> 1, the error is returned, and
    the next attempt uses another name (TestDeploymentHashCollision)."""
    [d] = await f.seed(deployment_dict("foo", 1))
    squatter = sync.new_replica_set_object(d, None)
    squatter.metadata.owner_references = None
    squatter.spec.template.spec.termination_grace_period_seconds = 5
    await f.seed(squatter)
    with pytest.raises(errors.AlreadyExists):
        await sync.get_all_replica_sets_and_sync_revision(f.dc, d, [], True)
    assert f.fake.verbs() == [("create", "replicasets", ""), ("update", "deployments", "status")]
    assert f.writes("update", "deployments", "status")[0]["status"]["collisionCount"] == 1
    d = await f.get_deployment()
    assert d.status.collision_count == 1
    f.fake.clear_actions()
    new_rs, _ = await sync.get_all_replica_sets_and_sync_revision(f.dc, d, [], True)
    assert new_rs.metadata.name != squatter.metadata.name
    assert hash_of(new_rs.metadata.name) == hash_of(sync.new_replica_set_object(d, 1).metadata.name)


async def test_already_exists_own_rs_is_adopted_as_new(f: Fixture) -> None:
    """A slow cache: the RS we try to create is already ours with our template -> used as is."""
    [d] = await f.seed(deployment_dict("foo", 1))
    mine = sync.new_replica_set_object(d, None)
    mine.spec.replicas = 1
    await f.seed(mine)                                     # in the lister, but not passed in rs_list
    new_rs, _ = await sync.get_all_replica_sets_and_sync_revision(f.dc, d, [], True)
    assert new_rs.metadata.name == mine.metadata.name
    assert f.recorder.events == []                         # no "Scaled up" for an existing RS
    assert f.fake.verbs() == [("create", "replicasets", ""), ("update", "deployments", "status")]
    assert "conditions" not in f.writes("update", "deployments", "status")[0].get("status", {})


async def test_create_error_sets_replica_set_create_error(f: Fixture) -> None:
    [d] = await f.seed(deployment_dict("foo", 1))
    f.fake.fail_on("create", "replicasets", errors.StatusError(403, "Forbidden", "exceeded quota: q"))
    with pytest.raises(errors.StatusError, match="exceeded quota"):
        await sync.get_all_replica_sets_and_sync_revision(f.dc, d, [], True)
    name = sync.new_replica_set_object(d, None).metadata.name
    msg = f'Failed to create new replica set "{name}": exceeded quota: q'
    [cond] = f.writes("update", "deployments", "status")[0]["status"]["conditions"]
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "ReplicaSetCreateError", msg)
    assert f.recorder.events == [f"Warning ReplicaSetCreateError {msg}"]


async def test_namespace_terminating_create_error_is_not_reported(f: Fixture) -> None:
    [d] = await f.seed(deployment_dict("foo", 1))
    err = errors.StatusError(403, "Forbidden", "namespace default is being terminated",
                             {"causes": [{"reason": "NamespaceTerminating"}]})
    f.fake.fail_on("create", "replicasets", err)
    with pytest.raises(errors.StatusError):
        await sync.get_all_replica_sets_and_sync_revision(f.dc, d, [], True)
    assert f.fake.verbs() == [("create", "replicasets", "")] and f.recorder.events == []
    f.dc.handle_err(err, f.dc.key_of(d))                  # and handle_err forgets, not retries
    assert f.dc.queue.num_requeues(f.dc.key_of(d)) == 0 and not f.dc.queue._num_waiting()


# --- isScalingEvent ---------------------------------------------------------------------------------

async def test_is_scaling_event(f: Fixture) -> None:
    [d] = await f.seed(deployment_dict("foo", 5))
    [r] = await f.seed(owned_rs_dict(d, "foo-a", 3, annotations={du.REVISION_ANNOTATION: "1",
                                                                  du.DESIRED_REPLICAS_ANNOTATION: "3"},
                                     status=rs_status(3)))
    d.metadata.annotations = {du.REVISION_ANNOTATION: "1"}
    assert await sync.is_scaling_event(f.dc, d, [r])
    d.spec.replicas = 3
    assert not await sync.is_scaling_event(f.dc, d, [r])
    r.metadata.annotations.pop(du.DESIRED_REPLICAS_ANNOTATION)      # no annotation: not a scaling event
    d.spec.replicas = 5
    assert not await sync.is_scaling_event(f.dc, d, [r])
