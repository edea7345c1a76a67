"""Tables of upstream's pkg/controller/deployment/util/deployment_util_test.go (and hash)."""
from __future__ import annotations

import re

import pytest

from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.controller.deployment.util import deployment_util as du
from kubeplane.controller.deployment.util import hash as h
from kubeplane.controller.deployment.util.replicaset_util import (
    filter_active_replica_sets, sort_by_creation_timestamp, sort_by_size_newer, sort_by_size_older,
)
from kubeplane.utils.clock import rfc3339

from deployment_testutil import NOW, new_deployment, rs

# --- ResolveFenceposts / MaxUnavailable / MinAvailable / MaxSurge --------------------------------


@pytest.mark.parametrize("max_surge,max_unavailable,desired,surge,unavailable", [
    pytest.param("0%", "0%", 0, 0, 1, id="0%/0% of 0 -> fencepost 1"),
    pytest.param("39%", "39%", 10, 4, 3, id="surge rounds up, unavailable down"),
    pytest.param(None, "39%", 10, 0, 3, id="nil surge"),
    pytest.param("39%", None, 10, 4, 0, id="nil unavailable"),
    pytest.param(None, None, 10, 0, 1, id="nil/nil -> fencepost 1"),
    pytest.param("25%", "25%", 10, 3, 2, id="defaults of 10"),
    pytest.param("25%", "25%", 1, 1, 0, id="defaults of 1"),
    pytest.param("25%", "25%", 4, 1, 1, id="defaults of 4"),
    pytest.param("25%", "25%", 3, 1, 0, id="defaults of 3"),
])
def test_resolve_fenceposts(max_surge: str | None, max_unavailable: str | None, desired: int, surge: int,
                            unavailable: int) -> None:
    """Upstream: TestResolveFenceposts (+ the spec's worked defaults)"""
    assert du.resolve_fenceposts(max_surge, max_unavailable, desired) == (surge, unavailable)


@pytest.mark.parametrize("max_surge,max_unavailable", [("oops", "39%"), ("55%", "urg")])
def test_resolve_fenceposts_errors(max_surge: str, max_unavailable: str) -> None:
    with pytest.raises(ValueError, match="invalid value for IntOrString"):
        du.resolve_fenceposts(max_surge, max_unavailable, 10)


def _unavail_deployment(replicas: int, max_unavailable: int | str) -> apps_v1.Deployment:
    return new_deployment("foo", replicas, max_surge=1, max_unavailable=max_unavailable)


@pytest.mark.parametrize("replicas,max_unavailable,expected", [
    (10, 5, 5), (10, 10, 10), (5, 10, 5), (0, 10, 0), (10, "50%", 5), (10, "100%", 10), (5, "100%", 5),
])
def test_max_unavailable(replicas: int, max_unavailable: int | str, expected: int) -> None:
    """Upstream: TestMaxUnavailable"""
    assert du.max_unavailable(_unavail_deployment(replicas, max_unavailable)) == expected


def test_max_unavailable_and_surge_recreate() -> None:
    d = new_deployment("foo", 10)
    d.spec.strategy = apps_v1.DeploymentStrategy(type="Recreate")
    assert (du.max_unavailable(d), du.max_surge(d), du.min_available(d)) == (0, 0, 0)


@pytest.mark.parametrize("replicas,max_unavailable,expected", [
    (10, 5, 5), (10, 10, 0), (5, 10, 0), (0, 10, 0), (10, "60%", 4), (10, "100%", 0), (5, "100%", 0),
])
def test_min_available(replicas: int, max_unavailable: int | str, expected: int) -> None:
    """Upstream: TestMinAvailable"""
    assert du.min_available(_unavail_deployment(replicas, max_unavailable)) == expected


# --- NewRSNewReplicas ---------------------------------------------------------------------------


@pytest.mark.parametrize("strategy,dep_replicas,new_rs_replicas,max_surge,expected", [
    pytest.param("RollingUpdate", 1, 5, 1, 5, id="can not scale up - to newRSReplicas"),
    pytest.param("RollingUpdate", 6, 2, 10, 6, id="scale up - to depReplicas"),
    pytest.param("Recreate", 3, 1, 1, 3, id="recreate - to depReplicas"),
])
def test_new_rs_new_replicas(strategy: str, dep_replicas: int, new_rs_replicas: int, max_surge: int,
                             expected: int) -> None:
    """Upstream: TestNewRSNewReplicas (another RS of 5 exists; maxUnavailable 1)"""
    d = new_deployment("nginx", dep_replicas, max_surge=max_surge, max_unavailable=1)
    d.spec.strategy.type = strategy
    new_rs, rs5 = rs("new", new_rs_replicas, None, NOW), rs("rs5", 5, None, NOW)
    assert du.new_rs_new_replicas(d, [rs5], new_rs) == expected


def test_new_rs_new_replicas_worked_example() -> None:
    """Spec §4.3 A: 10 replicas, surge 3; old 10, new 0 -> 3; old 8, new 3 -> 5; then capped."""
    d = new_deployment("foo", 10, max_surge=3, max_unavailable=2)
    new = rs("new", 0, None, NOW)
    assert du.new_rs_new_replicas(d, [rs("old", 10, None, NOW), new], new) == 3
    new3 = rs("new", 3, None, NOW)
    assert du.new_rs_new_replicas(d, [rs("old", 8, None, NOW), new3], new3) == 5
    new5 = rs("new", 5, None, NOW)
    assert du.new_rs_new_replicas(d, [rs("old", 8, None, NOW), new5], new5) == 5


def test_new_rs_new_replicas_errors() -> None:
    d = new_deployment("foo", 1)
    d.spec.strategy.type = "Foo"
    with pytest.raises(ValueError, match="deployment type Foo isn't supported"):
        du.new_rs_new_replicas(d, [], rs("n", 0, None, NOW))
    d = new_deployment("foo", 1)
    d.spec.strategy.rolling_update.max_surge = None
    with pytest.raises(ValueError, match="nil value for IntOrString"):
        du.new_rs_new_replicas(d, [], rs("n", 0, None, NOW))


# --- conditions ---------------------------------------------------------------------------------

def _cond(t: str, status: str, reason: str) -> apps_v1.DeploymentCondition:
    return apps_v1.DeploymentCondition(type=t, status=status, reason=reason)


def test_get_set_remove_condition() -> None:
    """Upstream: TestGetCondition, TestSetCondition, TestRemoveCondition"""
    progressing, available = _cond("Progressing", "False", "ForSomeReason"), _cond("Available", "True", "Awesome")
    st = apps_v1.DeploymentStatus(conditions=[progressing, available])
    assert du.get_deployment_condition(st, "Available") is available
    assert du.get_deployment_condition(st, "ReplicaFailure") is None
    st = apps_v1.DeploymentStatus()
    du.set_deployment_condition(st, available)
    assert st.conditions == [available]                                   # set for the first time
    st = apps_v1.DeploymentStatus(conditions=[_cond("Progressing", "False", "ForSomeReason")])
    du.set_deployment_condition(st, _cond("Available", "True", "Awesome"))
    assert [c.type for c in st.conditions] == ["Progressing", "Available"]  # simple set: appended
    progressing2 = _cond("Progressing", "True", "BecauseItIs")
    du.set_deployment_condition(st, progressing2)
    assert [c.type for c in st.conditions] == ["Available", "Progressing"]  # overwrite moves it to the end
    du.remove_deployment_condition(st, "ReplicaFailure")
    assert len(st.conditions) == 2                                        # doesn't remove anything
    du.remove_deployment_condition(st, "Progressing")
    du.remove_deployment_condition(st, "Available")
    assert st.conditions is None


def test_set_condition_keeps_times() -> None:
    """Same status and reason: a no-op; same status, new reason: lastTransitionTime kept."""
    st = apps_v1.DeploymentStatus()
    du.set_deployment_condition(st, du.new_deployment_condition("Progressing", "True", "A", "m1", NOW))
    du.set_deployment_condition(st, du.new_deployment_condition("Progressing", "True", "A", "m2", NOW + 60))
    [c] = st.conditions
    assert (c.message, c.last_update_time) == ("m1", rfc3339(NOW))
    du.set_deployment_condition(st, du.new_deployment_condition("Progressing", "True", "B", "m3", NOW + 60))
    [c] = st.conditions
    assert (c.reason, c.last_transition_time, c.last_update_time) == ("B", rfc3339(NOW), rfc3339(NOW + 60))
    du.set_deployment_condition(st, du.new_deployment_condition("Progressing", "False", "C", "m4", NOW + 120))
    assert st.conditions[0].last_transition_time == rfc3339(NOW + 120)


# --- DeploymentComplete / Progressing / TimedOut -----------------------------------------------------

@pytest.mark.parametrize("desired,current,updated,available,max_unavailable,max_surge,expected", [
    pytest.param(5, 5, 5, 4, 1, 0, False, id="min but not all pods available"),
    pytest.param(5, 5, 5, 3, 1, 0, False, id="min availability not honored"),
    pytest.param(5, 5, 5, 5, 0, 0, True, id="complete"),
    pytest.param(5, 5, 4, 5, 0, 0, False, id="all available but not updated"),
    pytest.param(1, 2, 1, 1, 0, 1, False, id="still running old pods"),
    pytest.param(1, 1, 1, 0, 1, 1, False, id="one replica never comes up"),
])
def test_deployment_complete(desired: int, current: int, updated: int, available: int, max_unavailable: int,
                             max_surge: int, expected: bool) -> None:
    """Upstream: TestDeploymentComplete"""
    d = new_deployment("foo", desired, max_surge=max_surge, max_unavailable=max_unavailable)
    d.status = apps_v1.DeploymentStatus(replicas=current, updated_replicas=updated, available_replicas=available)
    assert du.deployment_complete(d, d.status) is expected


@pytest.mark.parametrize("old,new,expected", [
    pytest.param((10, 4, 4, 4), (10, 6, 4, 4), True, id="updated pods"),
    pytest.param((10, 4, 4, 4), (10, 4, 4, 4), False, id="not progressing"),
    pytest.param((10, 4, 6, 6), (8, 4, 6, 6), True, id="old pods removed"),
    pytest.param((10, 7, 3, 3), (10, 6, 3, 3), False, id="less new pods"),
    pytest.param((10, 4, 7, 7), (8, 8, 5, 5), True, id="less overall but more new pods"),
    pytest.param((10, 10, 9, 8), (10, 10, 10, 8), True, id="more ready pods"),
    pytest.param((10, 10, 10, 9), (10, 10, 10, 10), True, id="more available pods"),
])
def test_deployment_progressing(old: tuple[int, int, int, int], new: tuple[int, int, int, int],
                                expected: bool) -> None:
    """Upstream: TestDeploymentProgressing (current, updated, ready, available)"""
    def status(t: tuple[int, int, int, int]) -> apps_v1.DeploymentStatus:
        return apps_v1.DeploymentStatus(replicas=t[0], updated_replicas=t[1], ready_replicas=t[2],
                                        available_replicas=t[3])
    d = new_deployment("foo", 10)
    d.status = status(old)
    assert du.deployment_progressing(d, status(new)) is expected


T0 = 1_451_606_400.0            # 2016-01-01T00:00:00Z


@pytest.mark.parametrize("reason,pds,from_,now,expected", [
    pytest.param("", None, T0 + 69, T0 + 80, False, id="nil progressDeadlineSeconds"),
    pytest.param("", du.MAX_INT32, T0 + 69, T0 + 80, False, id="infinite progressDeadlineSeconds"),
    pytest.param("", 10, T0 + 69, T0 + 80, True, id="10s: 00:01:20 - 00:01:09 = 11s"),
    pytest.param("", 10, T0 + 71, T0 + 80, False, id="10s: 00:01:20 - 00:01:11 = 9s"),
    pytest.param("", 10, T0 + 70, T0 + 80, False, id="exactly at the deadline is not yet past it"),
    pytest.param(du.NEW_RS_AVAILABLE_REASON, 10, None, T0 + 80, False, id="previous status complete"),
    pytest.param(du.TIMED_OUT_REASON, 10, T0 + 79, T0 + 80, True, id="already timed out"),
])
def test_deployment_timed_out(reason: str, pds: int | None, from_: float | None, now: float,
                              expected: bool) -> None:
    """Upstream: TestDeploymentTimedOut"""
    d = apps_v1.Deployment(metadata=meta_v1.ObjectMeta(name="foo"),
                           spec=apps_v1.DeploymentSpec(progress_deadline_seconds=pds),
                           status=apps_v1.DeploymentStatus(conditions=[apps_v1.DeploymentCondition(
                               type="Progressing", status="True", reason=reason,
                               last_update_time=rfc3339(from_) if from_ is not None else None)]))
    assert du.deployment_timed_out(d, d.status, now) is expected


# --- annotations and revisions -------------------------------------------------------------------

def test_annotation_utils() -> None:
    """Upstream: TestAnnotationUtils — revisions 11..20 with a 5-char history limit."""
    d = new_deployment("nginx", 1)
    d.metadata.annotations[du.REVISION_ANNOTATION] = "1"
    r = rs("nginx-rs", 0, None, NOW)
    for i in range(10, 20):
        next_revision = str(i + 1)
        du.set_new_replica_set_annotations(d, r, next_revision, True, 5)
        if i >= 12:
            assert r.metadata.annotations[du.REVISION_HISTORY_ANNOTATION] == f"{i - 1},{i}"
        assert r.metadata.annotations[du.REVISION_ANNOTATION] == next_revision
    assert du.set_replicas_annotations(r, 10, 11)
    assert (r.metadata.annotations[du.DESIRED_REPLICAS_ANNOTATION],
            r.metadata.annotations[du.MAX_REPLICAS_ANNOTATION]) == ("10", "11")
    assert not du.set_replicas_annotations(r, 10, 11)
    r.metadata.annotations[du.DESIRED_REPLICAS_ANNOTATION] = "1"
    r.spec.replicas = 1
    r.status = apps_v1.ReplicaSetStatus(available_replicas=1)
    assert du.is_saturated(d, r)
    r.status.available_replicas = 0
    assert not du.is_saturated(d, r)


def test_set_new_replica_set_annotations_copies_and_skips() -> None:
    d = new_deployment("foo", 3, max_surge=1, max_unavailable=0)
    d.metadata.annotations = {"test": "should-copy-to-replica-set", "kubernetes.io/change-cause": "v2",
                              du.LAST_APPLIED_CONFIG_ANNOTATION: "{}", du.REVISION_ANNOTATION: "7",
                              du.DEPRECATED_ROLLBACK_TO: "1", "empty": ""}
    r = rs("foo-1", 0, None, NOW)
    assert du.set_new_replica_set_annotations(d, r, "3", False, 2000)
    assert r.metadata.annotations == {"test": "should-copy-to-replica-set", "kubernetes.io/change-cause": "v2",
                                      du.REVISION_ANNOTATION: "3", du.DESIRED_REPLICAS_ANNOTATION: "3",
                                      du.MAX_REPLICAS_ANNOTATION: "4"}
    # A higher revision on the RS is kept (old RSs were deleted); nothing else changed.
    r.metadata.annotations[du.REVISION_ANNOTATION] = "9"
    assert not du.set_new_replica_set_annotations(d, r, "3", True, 2000)
    assert r.metadata.annotations[du.REVISION_ANNOTATION] == "9"
    # An unparsable revision on the RS: upstream gives up (returns false).
    r.metadata.annotations[du.REVISION_ANNOTATION] = "x"
    assert not du.set_new_replica_set_annotations(d, r, "3", True, 2000)


def test_revision_history_first_append() -> None:
    r = rs("foo-1", 0, None, NOW)
    r.metadata.annotations = {du.REVISION_ANNOTATION: "1"}
    du.set_new_replica_set_annotations(new_deployment("foo", 1), r, "3", True, 2000)
    assert r.metadata.annotations[du.REVISION_HISTORY_ANNOTATION] == "1"
    du.set_new_replica_set_annotations(new_deployment("foo", 1), r, "5", True, 2000)
    assert r.metadata.annotations[du.REVISION_HISTORY_ANNOTATION] == "1,3"


@pytest.mark.parametrize("annotations,expected", [
    pytest.param(None, True, id="annotations nil"),
    pytest.param({du.DESIRED_REPLICAS_ANNOTATION: "8", du.MAX_REPLICAS_ANNOTATION: "20"}, True, id="desired"),
    pytest.param({du.DESIRED_REPLICAS_ANNOTATION: "10", du.MAX_REPLICAS_ANNOTATION: "16"}, True, id="max"),
    pytest.param({du.DESIRED_REPLICAS_ANNOTATION: "10", du.MAX_REPLICAS_ANNOTATION: "20"}, False, id="no update"),
])
def test_replicas_annotations_need_update(annotations: dict[str, str] | None, expected: bool) -> None:
    """Upstream: TestReplicasAnnotationsNeedUpdate"""
    r = rs("hello", 1, {"foo": "bar"}, None)
    r.metadata.annotations = annotations
    assert du.replicas_annotations_need_update(r, 10, 20) is expected


@pytest.mark.parametrize("annotations,value,valid,err", [
    pytest.param(None, 0, False, None, id="invalid empty"),
    pytest.param({"test": "invalid"}, 0, False, "invalid syntax", id="invalid"),
    pytest.param({"test": "-1"}, 0, False, "invalid syntax", id="invalid negative"),
    pytest.param({"test": "0"}, 0, True, None, id="valid zero"),
    pytest.param({"test": "13"}, 13, True, None, id="valid"),
    pytest.param({"test": str(du.MAX_INT32)}, du.MAX_INT32, True, None, id="valid max"),
    pytest.param({"test": str(du.MAX_INT32 + 1)}, 0, False, "out of range", id="invalid max out of range"),
    pytest.param({"test": str(2**32)}, 0, False, "out of range", id="invalid max out of range 2"),
])
def test_get_non_negative_int32_from_annotation(annotations: dict[str, str] | None, value: int, valid: bool,
                                                err: str | None) -> None:
    """Upstream: TestGetNonNegativeInt32FromAnnotation"""
    r = rs("r", 1, None, None)
    r.metadata.annotations = annotations
    got_value, got_valid, got_err = du.get_non_negative_int32_from_annotation(r, "test")
    assert (got_value, got_valid) == (value, valid)
    assert (got_err is None) == (err is None) and (err is None or err in got_err)


def test_max_and_last_revision() -> None:
    def with_rev(name: str, v: str | None) -> apps_v1.ReplicaSet:
        r = rs(name, 0, None, NOW)
        r.metadata.annotations = {du.REVISION_ANNOTATION: v} if v is not None else None
        return r
    rss = [with_rev("a", "1"), with_rev("b", "3"), with_rev("c", "2"), with_rev("d", "junk"), with_rev("e", None), None]
    assert (du.max_revision(rss), du.last_revision(rss)) == (3, 2)
    assert (du.max_revision([with_rev("a", "5")]), du.last_revision([with_rev("a", "5")])) == (5, 0)
    assert du.last_revision([with_rev("a", "4"), with_rev("b", "4")]) == 4
    # e2e: an adopted RS pre-annotated with a huge revision makes the next one +1.
    assert du.max_revision([with_rev("x", "3546343826724305832")]) + 1 == 3546343826724305833


# --- proportions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("d_replicas,d_status_replicas,d_surge,rs_replicas,annotations,expected", [
    pytest.param(0, 0, 0, 10, None, -10, id="empty deployment always scales to 0"),
    pytest.param(10, 0, 0, 5, None, 0, id="annotation missing, no status: no scale"),
    pytest.param(10, 0, 0, 5, {du.MAX_REPLICAS_ANNOTATION: "0"}, 0, id="annotation 0, no status: no scale"),
    pytest.param(120, 100, 0, 50, None, 10, id="missing annotation: status.replicas base"),
    pytest.param(120, 100, 0, 50, {du.MAX_REPLICAS_ANNOTATION: "0"}, 10, id="zero annotation: status base"),
    pytest.param(120, 0, 0, 50, {du.MAX_REPLICAS_ANNOTATION: "100"}, 10, id="up by 1/5"),
    pytest.param(120, 0, 10, 50, {du.MAX_REPLICAS_ANNOTATION: "110"}, 9, id="up by 1/5 with surge"),
    pytest.param(10, 0, 0, 6, {du.MAX_REPLICAS_ANNOTATION: "12"}, -1, id="down by 1/6"),
    pytest.param(100, 0, 10, 50, {du.MAX_REPLICAS_ANNOTATION: "130"}, -8, id="down by 1/6 with surge"),
])
def test_get_replica_set_fraction(d_replicas: int, d_status_replicas: int, d_surge: int, rs_replicas: int,
                                  annotations: dict[str, str] | None, expected: int) -> None:
    """Upstream: TestGetReplicaSetFraction"""
    d = new_deployment("nginx", d_replicas, max_surge=d_surge, max_unavailable=1)
    d.status = apps_v1.DeploymentStatus(replicas=d_status_replicas)
    r = rs("r", rs_replicas, None, NOW)
    r.metadata.annotations = annotations
    assert du.get_replica_set_fraction(r, d) == expected


def test_round_half_away_from_zero() -> None:
    """integer.RoundToInt32, not Python's banker's rounding: 2.5 -> 3 (TestScale "4 -> 5")."""
    assert [du.round_to_int32(x) for x in (2.5, 3.5, -2.5, 2.4, -0.4)] == [3, 4, -3, 2, 0]


# --- finding replica sets -------------------------------------------------------------------------

def _template(name: str, node: str, annotations: dict[str, str], labels: dict[str, str]) -> core_v1.PodTemplateSpec:
    return core_v1.PodTemplateSpec(metadata=meta_v1.ObjectMeta(name=name, annotations=annotations, labels=labels),
                                   spec=core_v1.PodSpec(node_name=node))


H = du.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY


@pytest.mark.parametrize("former,latter,expected", [
    pytest.param(("foo", "n", {}, {H: "v1", "something": "else"}), ("foo", "n", {}, {H: "v1", "something": "else"}),
                 True, id="same spec, same labels"),
    pytest.param(("foo", "n", {}, {H: "v1", "something": "else"}), ("foo", "n", {}, {H: "v2", "something": "else"}),
                 True, id="only the hash differs"),
    pytest.param(("foo", "n", {}, {"something": "else"}), ("foo", "n", {}, {H: "v2", "something": "else"}),
                 True, id="former has no hash"),
    pytest.param(("foo", "n", {}, {"something": "else"}), ("foo", "n", {}, {H: "v2"}),
                 False, id="labels differ, former no hash"),
    pytest.param(("foo", "n", {}, {H: "v1"}), ("foo", "n", {}, {H: "v1", "something": "else"}),
                 False, id="labels differ, same hash"),
    pytest.param(("foo", "n", {"former": "value"}, {H: "v1"}), ("foo", "n", {"latter": "value"}, {H: "v1"}),
                 False, id="different spec, same labels"),
    pytest.param(("foo", "n1", {}, {"something": "else"}), ("foo", "n2", {}, {"nothing": "else"}),
                 False, id="different spec, different labels"),
])
def test_equal_ignore_hash(former: tuple, latter: tuple, expected: bool) -> None:
    """Upstream: TestEqualIgnoreHash (both orders; inputs unchanged)"""
    t1, t2 = _template(*former), _template(*latter)
    before = (t1.deep_copy(), t2.deep_copy())
    assert du.equal_ignore_hash(t1, t2) is expected
    assert du.equal_ignore_hash(t2, t1) is expected
    assert (t1, t2) == before


def _generate_rs(d: apps_v1.Deployment, name: str, created: float, hash_: str | None = None) -> apps_v1.ReplicaSet:
    t = d.spec.template.deep_copy()
    if hash_:
        t.metadata.labels[H] = hash_
    return apps_v1.ReplicaSet(metadata=meta_v1.ObjectMeta(name=name, uid=f"uid-{name}", creation_timestamp=rfc3339(created)),
                              spec=apps_v1.ReplicaSetSpec(replicas=0, template=t))


def test_find_new_and_old_replica_sets() -> None:
    """Upstream: TestFindNewReplicaSet, TestFindOldReplicaSets"""
    d = new_deployment("nginx", 1, selector={"name": "nginx"})
    new_rs = _generate_rs(d, "new", NOW + 60, "hash")
    new_rs.spec.replicas = 1
    new_rs_dup = _generate_rs(d, "dup", NOW, "different-hash")
    old_d = new_deployment("nginx", 1, selector={"name": "nginx"})
    old_d.spec.template.spec.containers[0].name = "nginx-old-1"
    old_rs = _generate_rs(old_d, "old", NOW - 60)
    assert du.find_new_replica_set(d, [new_rs, old_rs]) is new_rs
    assert du.find_new_replica_set(d, [new_rs, old_rs, new_rs_dup]) is new_rs_dup      # the oldest wins
    assert du.find_new_replica_set(d, [old_rs]) is None
    assert du.find_old_replica_sets(d, [new_rs, old_rs]) == ([], [old_rs])
    assert du.find_old_replica_sets(d, [old_rs]) == ([], [old_rs])
    assert du.find_old_replica_sets(d, [old_rs, new_rs, new_rs_dup]) == ([new_rs], [old_rs, new_rs])
    assert du.find_old_replica_sets(d, [new_rs]) == ([], [])


def test_replica_counts_and_terminating() -> None:
    """Upstream: TestGetReplicaCountForReplicaSets (newest table, with terminatingReplicas)"""
    def mk(name: str, spec: int, status: int, terminating: int | None, observed: int) -> apps_v1.ReplicaSet:
        r = rs(name, spec, None, NOW)
        r.status = apps_v1.ReplicaSetStatus(replicas=status, terminating_replicas=terminating,
                                            observed_generation=observed)
        return r
    rs1, rs2 = mk("rs1", 1, 2, 3, 1), mk("rs2", 2, 3, 1, 0)
    rs3, rs4 = mk("rs3", 3, 0, None, 0), mk("rs4", 1, 1, None, 1)
    for sets, count, actual, terminating in [([rs1], 1, 2, 3), ([rs1, rs2], 3, 5, 4), ([rs3], 3, 0, 0),
                                             ([rs1, rs2, rs3], 6, 5, 4), ([rs4], 1, 1, None),
                                             ([rs1, rs2, rs3, rs4], 7, 6, None)]:
        assert du.get_replica_count_for_replica_sets(sets) == count
        assert du.get_actual_replica_count_for_replica_sets(sets) == actual
        assert du.get_terminating_replica_count_for_replica_sets(sets) == terminating


def test_find_active_or_latest() -> None:
    new = rs("new", 0, None, NOW + 2)
    old1, old2 = rs("old1", 0, None, NOW), rs("old2", 0, None, NOW + 1)
    assert du.find_active_or_latest(None, []) is None
    assert du.find_active_or_latest(new, [old1, old2]) is new                  # none active: the new one
    assert du.find_active_or_latest(None, [old1, old2]) is old2                # none active: the newest old
    active = rs("active", 2, None, NOW)
    assert du.find_active_or_latest(new, [active, old2]) is active
    assert du.find_active_or_latest(rs("n", 1, None, NOW), [active]) is None   # two active: proportional


def test_sort_orders() -> None:
    a, b, c = rs("a", 2, None, NOW), rs("b", 2, None, NOW + 1), rs("c", 5, None, NOW + 2)
    assert [r.metadata.name for r in sort_by_creation_timestamp([c, b, a])] == ["a", "b", "c"]
    assert [r.metadata.name for r in sort_by_size_newer([a, b, c])] == ["c", "b", "a"]
    assert [r.metadata.name for r in sort_by_size_older([c, b, a])] == ["c", "a", "b"]
    same1, same2 = rs("x", 1, None, NOW), rs("y", 1, None, NOW)                # equal times: by name
    assert [r.metadata.name for r in sort_by_size_older([same2, same1])] == ["x", "y"]
    assert [r.metadata.name for r in sort_by_size_newer([same1, same2])] == ["y", "x"]
    assert [r.metadata.name for r in filter_active_replica_sets([a, None, rs("z", 0, None, NOW)])] == ["a"]


def test_get_deployments_for_replica_set() -> None:
    """Upstream: TestGetDeploymentsForReplicaSet"""
    from kubeplane.client.clientset import Clientset
    from kubeplane.client.informers import SharedInformerFactory
    factory = SharedInformerFactory(Clientset(None))  # type: ignore[arg-type]   # never started
    inf = factory.apps_v1().deployments()
    ds = []
    for i in range(3):
        d = new_deployment(f"deployment-{i}", 1, selector={"app": f"test-{i}"})
        ds.append(d)
        inf.informer().get_indexer().add(d)
    empty = new_deployment("empty", 1)
    empty.spec.selector = meta_v1.LabelSelector()
    inf.informer().get_indexer().add(empty)                     # must match nothing, not everything
    for i in range(5):
        r = rs(f"test-replicaSet-{i}", 1, None, NOW)
        r.metadata.labels = {"app": f"test-{i}", "label": f"label-{i}"}
        assert du.get_deployments_for_replica_set(inf.lister(), r) == (ds[i:i + 1] if i < 3 else [])


# --- pod-template-hash ------------------------------------------------------------------------------

def test_safe_encode_string_alphabet() -> None:
    """rand.SafeEncodeString on a decimal digest: 0->4 ... 9->f; spec example 1828506010."""
    assert h.safe_encode_string("0123456789") == "456789bcdf"
    assert h.safe_encode_string("1828506010") == "5d6d94b454"


def test_fnv32a_reference_values() -> None:
    """FNV-1a 32 reference vectors (offset basis for "", "a" -> 0xe40c292c)."""
    assert h.fnv32a(b"") == 2166136261
    assert h.fnv32a(b"a") == 0xE40C292C
    assert h.fnv32a(b"foobar") == 0xBF9CF968


def test_compute_hash_format_determinism_and_collision_count() -> None:
    d = new_deployment("foo", 1, selector={"foo": "bar"})
    t = d.spec.template
    plain = h.compute_hash(t, None)
    assert re.fullmatch(r"[4-9bcdf]{1,10}", plain)
    assert h.compute_hash(t.deep_copy(), None) == plain                 # deterministic
    assert h.compute_hash(t, 0) != plain                                # nil != 0
    assert len({h.compute_hash(t, n) for n in (None, 0, 1, 2, 3)}) == 5
    other = t.deep_copy()
    other.spec.containers[0].image = "foo/baz"
    assert h.compute_hash(other, None) != plain
    assert h.collision_count_bytes(1) == b"\x01\x00\x00\x00\x00\x00\x00\x00"
    # The digest is fed the collision bytes after the template bytes.
    digest = h.fnv32a(h.collision_count_bytes(1), h.fnv32a(h.canonical_bytes(t)))
    assert h.compute_hash(t, 1) == h.safe_encode_string(str(digest))


def test_normalised_template_cached_per_template_object() -> None:
    """Server objects (a resourceVersion) are normalised once per template object; a replaced
    template is normalised anew; hand-built objects every time (tests edit them in place)."""
    d = new_deployment("nginx", 1, selector={"name": "nginx"})
    d.metadata.resource_version = "5"
    first = du.normalised_template(d)
    assert du.normalised_template(d) is first
    assert first == du._template_without_hash(d.spec.template)
    copy = d.deep_copy()                       # a sync's copy: a new template object, same form
    assert du.normalised_template(copy) == first and du.normalised_template(copy) is not first
    other = new_deployment("nginx", 1, selector={"name": "nginx"})
    other.spec.template.spec.containers[0].image = "nginx:2"
    du.set_from_replica_set_template(d, _generate_rs(other, "x", NOW, "h").spec.template)   # rollback's edit
    assert du.normalised_template(d) == du._template_without_hash(other.spec.template) != first
    hand_built = new_deployment("nginx", 1, selector={"name": "nginx"})
    before = du.normalised_template(hand_built)
    hand_built.spec.template.spec.containers[0].image = "nginx:3"
    assert du.normalised_template(hand_built) != before


def test_find_new_replica_set_with_server_objects() -> None:
    """TestFindNewReplicaSet's answers hold when the templates' forms come from the cache."""
    d = new_deployment("nginx", 1, selector={"name": "nginx"})
    new_rs = _generate_rs(d, "new", NOW + 60, "hash")
    new_rs_dup = _generate_rs(d, "dup", NOW, "different-hash")
    old_d = new_deployment("nginx", 1, selector={"name": "nginx"})
    old_d.spec.template.spec.containers[0].name = "nginx-old-1"
    old_rs = _generate_rs(old_d, "old", NOW - 60)
    for i, obj in enumerate((d, new_rs, new_rs_dup, old_rs)):
        obj.metadata.resource_version = str(i + 1)
    for _ in range(2):                         # cold, then cached
        assert du.find_new_replica_set(d, [new_rs, old_rs]) is new_rs
        assert du.find_new_replica_set(d, [new_rs, old_rs, new_rs_dup]) is new_rs_dup
        assert du.find_new_replica_set(d, [old_rs]) is None
        assert du.find_old_replica_sets(d, [new_rs, old_rs]) == ([], [old_rs])


def test_share_normalised_template() -> None:
    d = new_deployment("nginx", 1, selector={"name": "nginx"})
    d.metadata.resource_version = "7"
    copy = d.deep_copy()
    du.share_normalised_template(copy, d)
    assert du.normalised_template(copy) is du.normalised_template(d)
    hand_built = new_deployment("nginx", 1, selector={"name": "nginx"})
    copy = hand_built.deep_copy()
    du.share_normalised_template(copy, hand_built)          # not a server object: nothing shared
    copy.spec.template.spec.containers[0].image = "nginx:9"
    assert du.normalised_template(copy) != du.normalised_template(hand_built)
