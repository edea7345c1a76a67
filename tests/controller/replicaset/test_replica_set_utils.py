"""ReplicaSet status arithmetic, conditions and the status write with one retry.

Tables reproduce upstream's replica_set_utils_test.go and the condition tests of replica_set_test.go.
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.controller.replicaset import replica_set_utils as rsu
from kubeplane.controller.replicaset.claimed_pods import ClaimedPods
from kubeplane.utils.clock import rfc3339

NOW = 1_700_000_000.0
FULL_LABELS = {"name": "foo", "type": "production"}


def new_rs(replicas: int, selector: dict[str, str], min_ready: int = 0,
           conditions: list[apps_v1.ReplicaSetCondition] | None = None) -> apps_v1.ReplicaSet:
    return apps_v1.ReplicaSet(
        metadata=meta_v1.ObjectMeta(name="foobar", namespace="default", uid="rs-uid", generation=1),
        spec=apps_v1.ReplicaSetSpec(replicas=replicas, min_ready_seconds=min_ready,
                                    selector=meta_v1.LabelSelector(match_labels=selector),
                                    template=core_v1.PodTemplateSpec(metadata=meta_v1.ObjectMeta(labels=FULL_LABELS))),
        status=apps_v1.ReplicaSetStatus(conditions=conditions))


def new_pod(name: str, rs: apps_v1.ReplicaSet, phase: str) -> core_v1.Pod:
    """Upstream newPod: labels = the RS selector; Running pods are Ready (no lastTransitionTime)."""
    conds = [core_v1.PodCondition(type="Ready", status="True")] if phase == "Running" else None
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=name, namespace="default",
                                                   labels=dict(rs.spec.selector.match_labels)),
                       status=core_v1.PodStatus(phase=phase, conditions=conds))


NOT_FULLY = new_rs(1, {"name": "foo"})
FULLY = new_rs(2, FULL_LABELS)
LONG_MIN_READY = new_rs(1, FULL_LABELS, min_ready=3600)


@pytest.mark.parametrize("rs, pods, want", [
    pytest.param(FULLY, [new_pod("pod1", FULLY, "Running")], (1, 1, 1, 1), id="1 fully labelled pod"),
    pytest.param(NOT_FULLY, [new_pod("pod1", NOT_FULLY, "Running")], (1, 0, 1, 1), id="1 not fully labelled pod"),
    pytest.param(FULLY, [new_pod("pod1", FULLY, "Running"), new_pod("pod2", FULLY, "Running")], (2, 2, 2, 2),
                 id="2 fully labelled pods"),
    pytest.param(NOT_FULLY, [new_pod("pod1", NOT_FULLY, "Running"), new_pod("pod2", NOT_FULLY, "Running")],
                 (2, 0, 2, 2), id="2 not fully labelled pods"),
    pytest.param(NOT_FULLY, [new_pod("pod1", NOT_FULLY, "Running"), new_pod("pod2", FULLY, "Running")], (2, 1, 2, 2),
                 id="1 fully labelled pod, 1 not fully labelled pod"),
    pytest.param(FULLY, [new_pod("pod1", FULLY, "Pending")], (1, 1, 0, 0), id="1 non-ready pod"),
    pytest.param(LONG_MIN_READY, [new_pod("pod1", LONG_MIN_READY, "Running")], (1, 1, 1, 0),
                 id="1 ready but non-available pod"),
])
def test_calculate_status(rs: apps_v1.ReplicaSet, pods: list[core_v1.Pod], want: tuple[int, int, int, int]) -> None:
    """Upstream: TestCalculateStatus"""
    st = rsu.calculate_status(rs, pods, None, None, NOW)
    assert (st.replicas, st.fully_labeled_replicas, st.ready_replicas, st.available_replicas) == want
    assert st.conditions is None and st.terminating_replicas is None


def test_calculate_status_available_after_min_ready_seconds() -> None:
    rs = new_rs(1, FULL_LABELS, min_ready=30)
    pod = new_pod("p", rs, "Running")
    pod.status.conditions[0].last_transition_time = rfc3339(NOW - 30)
    assert rsu.calculate_status(rs, [pod], None, None, NOW).available_replicas == 0    # 30 s: not strictly after
    assert rsu.calculate_status(rs, [pod], None, None, NOW + 1).available_replicas == 1


def test_calculate_status_terminating() -> None:
    rs = new_rs(1, FULL_LABELS)
    st = rsu.calculate_status(rs, [new_pod("a", rs, "Running")], [new_pod("b", rs, "Running")], None, NOW)
    assert (st.replicas, st.terminating_replicas) == (1, 1)


FAILURE = apps_v1.ReplicaSetCondition(type="ReplicaFailure", status="True")
RS2 = new_rs(2, {"name": "foo"})
FAILING_RS = new_rs(10, {"name": "foo"}, conditions=[FAILURE])


@pytest.mark.parametrize("rs, n_pods, err, want", [
    pytest.param(RS2, 1, "fake manageReplicasErr", [("ReplicaFailure", "True", "FailedCreate", "fake manageReplicasErr")],
                 id="manageReplicasErr != nil && failureCond == nil, diff < 0"),
    pytest.param(RS2, 3, "fake manageReplicasErr", [("ReplicaFailure", "True", "FailedDelete", "fake manageReplicasErr")],
                 id="manageReplicasErr != nil && failureCond == nil, diff > 0"),
    pytest.param(FAILING_RS, 1, None, None, id="manageReplicasErr == nil && failureCond != nil"),
    pytest.param(FAILING_RS, 1, "fake manageReplicasErr", [("ReplicaFailure", "True", None, None)],
                 id="manageReplicasErr != nil && failureCond != nil"),
    pytest.param(RS2, 1, None, None, id="manageReplicasErr == nil && failureCond == nil"),
])
def test_calculate_status_conditions(rs: apps_v1.ReplicaSet, n_pods: int, err: str | None, want: Any) -> None:
    """Upstream: TestCalculateStatusConditions"""
    pods = [new_pod(f"pod{i}", rs, "Running") for i in range(n_pods)]
    st = rsu.calculate_status(rs, pods, None, RuntimeError(err) if err else None, NOW)
    got = None if st.conditions is None else [(c.type, c.status, c.reason, c.message) for c in st.conditions]
    assert got == want
    if want and want[0][2]:
        assert st.conditions[0].last_transition_time == rfc3339(NOW)
    assert rs.status.conditions == ([FAILURE] if rs is FAILING_RS else None)     # input untouched


IMAGE_PULL = apps_v1.ReplicaSetCondition(type="ImagePullBackOff", status="True", reason="NonExistentImage")
OTHER = apps_v1.ReplicaSetCondition(type="ReplicaFailure", status="True", reason="OtherFailure")
ANOTHER = apps_v1.ReplicaSetCondition(type="ReplicaFailure", status="True", reason="AnotherFailure")


def test_get_condition() -> None:
    """Upstream: TestGetCondition"""
    status = apps_v1.ReplicaSetStatus(conditions=[OTHER])
    assert rsu.get_condition(status, "ReplicaFailure") == OTHER
    assert rsu.get_condition(status, "ImagePullBackOff") is None


@pytest.mark.parametrize("conditions, cond, want", [
    pytest.param(None, OTHER, [OTHER], id="set for the first time"),
    pytest.param([IMAGE_PULL], OTHER, [IMAGE_PULL, OTHER], id="simple set"),
    pytest.param([OTHER], ANOTHER, [ANOTHER], id="overwrite"),
])
def test_set_condition(conditions: Any, cond: apps_v1.ReplicaSetCondition, want: Any) -> None:
    """Upstream: TestSetCondition"""
    status = apps_v1.ReplicaSetStatus(conditions=conditions)
    rsu.set_condition(status, cond)
    assert status.conditions == want


@pytest.mark.parametrize("conditions, cond_type, want", [
    pytest.param(None, "ReplicaFailure", None, id="remove from empty status"),
    pytest.param([OTHER], "ReplicaFailure", None, id="simple remove"),
    pytest.param([OTHER], "ImagePullBackOff", [OTHER], id="doesn't remove anything"),
])
def test_remove_condition(conditions: Any, cond_type: str, want: Any) -> None:
    """Upstream: TestRemoveCondition"""
    status = apps_v1.ReplicaSetStatus(conditions=conditions)
    rsu.remove_condition(status, cond_type)
    assert status.conditions == want


# --- update_replica_set_status -----------------------------------------------------------------------

async def _stored_rs(fake: FakeClientset) -> apps_v1.ReplicaSet:
    [rs] = await fake.seed({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "foobar"},
                            "spec": {"replicas": 2, "selector": {"matchLabels": FULL_LABELS},
                                     "template": {"metadata": {"labels": FULL_LABELS},
                                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    return rs


async def test_update_status_writes_observed_generation() -> None:
    fake = await FakeClientset.new()
    rs = await _stored_rs(fake)
    c = fake.apps_v1().replicasets("default")
    updated = await rsu.update_replica_set_status(c, rs.deep_copy(), apps_v1.ReplicaSetStatus(replicas=2))
    assert (updated.status.replicas, updated.status.observed_generation) == (2, 1)
    assert fake.verbs() == [("update", "replicasets", "status")]

    fake.clear_actions()
    same = await rsu.update_replica_set_status(c, updated.deep_copy(), updated.status.deep_copy())
    assert same.status == updated.status and fake.verbs() == []          # steady state: no write


async def test_update_status_retries_once_after_get() -> None:
    fake = await FakeClientset.new()
    rs = await _stored_rs(fake)
    c = fake.apps_v1().replicasets("default")
    stale = rs.deep_copy()
    stale.metadata.resource_version = "1"                        # an old resourceVersion: conflict
    updated = await rsu.update_replica_set_status(c, stale, apps_v1.ReplicaSetStatus(replicas=1))
    assert updated.status.replicas == 1
    assert fake.verbs(include_reads=True) == [("update", "replicasets", "status"), ("get", "replicasets", ""),
                                              ("update", "replicasets", "status")]


async def test_update_status_gives_up_after_one_retry() -> None:
    fake = await FakeClientset.new()
    rs = await _stored_rs(fake)
    fake.fail_on("update", "replicasets", errors.InternalError("nope"))
    with pytest.raises(errors.InternalError):
        await rsu.update_replica_set_status(fake.apps_v1().replicasets("default"), rs.deep_copy(),
                                            apps_v1.ReplicaSetStatus(replicas=1))
    assert [v for v, *_ in fake.verbs(include_reads=True)] == ["update", "get", "update"]


def test_status_unchanged_needs_observed_generation() -> None:
    rs = types.from_dict({"metadata": {"name": "x", "generation": 2},
                          "status": {"replicas": 1, "observedGeneration": 1}}, apps_v1.ReplicaSet)
    assert not rsu._status_unchanged(rs, apps_v1.ReplicaSetStatus(replicas=1, observed_generation=1))


def counts(st: apps_v1.ReplicaSetStatus) -> tuple[Any, ...]:
    return st.replicas, st.fully_labeled_replicas, st.ready_replicas, st.available_replicas


def test_claimed_pods_count_as_calculate_status() -> None:
    """ClaimedPods (the controller's counts kept from sync to sync: a changed pod is removed
    and put again) gives calculate_status's counts, minReadySeconds included as time passes."""
    rs = new_rs(3, FULL_LABELS, min_ready=10)

    def pod(name: str, phase: str, labels: dict[str, str] | None = None, ready_at: float | None = NOW) -> core_v1.Pod:
        p = new_pod(name, FULLY, phase)
        if labels is not None:
            p.metadata.labels = labels
        if p.status.conditions and ready_at is not None:
            p.status.conditions[0].last_transition_time = rfc3339(ready_at)
        return p

    claimed = ClaimedPods((), rsu.template_labels_matcher(FULL_LABELS), 10)
    steps: list[tuple[float, dict[str, core_v1.Pod | None]]] = [
        (NOW, {"a": pod("a", "Pending"), "b": pod("b", "Pending"), "c": pod("c", "Running")}),
        (NOW + 5, {"a": pod("a", "Running", ready_at=NOW + 4)}),             # a became Ready
        (NOW + 11, {"c": None, "b": pod("b", "Running", {"name": "foo"})}),  # c gone, b relabelled, Ready
        (NOW + 15, {"d": pod("d", "Running", ready_at=None)}),               # Ready without a time: never available
        (NOW + 30, {}),
        (NOW + 20, {}),                                                       # the clock went back
    ]
    pods: dict[str, core_v1.Pod] = {}
    for now, changed in steps:
        for key, p in changed.items():
            claimed.remove(key)
            pods.pop(key, None)
            if p is not None:
                claimed.put_active(key, p)
                pods[key] = p
        want = rsu.calculate_status(rs, list(pods.values()), None, None, now)
        assert (len(claimed), claimed.fully_labeled, claimed.ready, claimed.available(now)) == counts(want), now
        assert sorted(p.metadata.name for p in claimed) == sorted(pods)
