"""controller_utils: expectations, pod control, pod filtering and the scale-down ranking.

Tables reproduce upstream's pkg/controller/controller_utils_test.go.
"""
from __future__ import annotations

import random
import re

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kubeplane.api import errors, types
from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller import controller_utils as cu
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0


# --- expectations ------------------------------------------------------------------------------

def test_controller_expectations_surpassed_then_ttl() -> None:
    """Upstream: TestControllerExpectations (its 30 s TTL is our fixed 5 minutes)."""
    clock = FakeClock()
    e = cu.ControllerExpectations(clock)
    adds, dels = 10, 30
    e.set_expectations("default/foobar", adds, dels)
    for _ in range(adds + 1):
        e.creation_observed("default/foobar")
    assert not e.satisfied_expectations("default/foobar"), "deletes still expected"
    for _ in range(dels + 1):
        e.deletion_observed("default/foobar")
    exp = e.get_expectations("default/foobar")
    assert exp is not None and exp.get_expectations() == (-1, -1)
    assert e.satisfied_expectations("default/foobar")

    # Old expectations are cleared because of the TTL.
    e.set_expectations("default/foobar", 1, 2)
    assert e.get_expectations("default/foobar").get_expectations() == (1, 2)
    assert not e.satisfied_expectations("default/foobar")
    clock.step(cu.EXPECTATIONS_TIMEOUT)
    assert not e.satisfied_expectations("default/foobar"), "exactly 5 minutes is not yet expired"
    clock.step(1)
    assert e.satisfied_expectations("default/foobar")
    e._check_invariants()


def test_no_expectations_means_satisfied() -> None:
    e = cu.ControllerExpectations(FakeClock())
    assert e.satisfied_expectations("ns/never-set")
    e.lower_expectations("ns/never-set", 1, 1)          # no-op, no entry appears
    assert e.get_expectations("ns/never-set") is None


@pytest.mark.parametrize("num_replicas", [2, 1, 0, 5])
def test_uid_expectations(num_replicas: int) -> None:
    """Upstream: TestUIDExpectations"""
    uid_exp = cu.UIDTrackingControllerExpectations(cu.ControllerExpectations(FakeClock()))
    rc_key = f"default/rc-{num_replicas}"
    pod_keys = [f"default/pod{i}-rc-{num_replicas}" for i in range(5)]
    uid_exp.expect_deletions(rc_key, pod_keys)
    assert not uid_exp.satisfied_expectations(rc_key)
    for p in pod_keys:
        uid_exp.deletion_observed(rc_key, p)
        uid_exp._check_invariants()
    assert uid_exp.satisfied_expectations(rc_key)
    uid_exp.delete_expectations(rc_key)
    assert uid_exp.get_uids(rc_key) is None


def test_uid_expectations_count_each_pod_once() -> None:
    """A graceful delete is seen twice (update with deletionTimestamp, then DELETE)."""
    uid_exp = cu.UIDTrackingControllerExpectations(cu.ControllerExpectations(FakeClock()))
    uid_exp.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    uid_exp.deletion_observed("ns/rs", "ns/a")
    uid_exp.deletion_observed("ns/rs", "ns/a")
    uid_exp.deletion_observed("ns/rs", "ns/unrelated")
    assert uid_exp.get_expectations("ns/rs").get_expectations() == (0, 1)
    assert not uid_exp.satisfied_expectations("ns/rs")


class ExpectationsMachine(RuleBasedStateMachine):
    """Mix every expectations operation with clock steps; compare with a plain model."""

    keys = st.sampled_from(["ns/a", "ns/b"])

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.e = cu.ControllerExpectations(self.clock)
        self.model: dict[str, list[float]] = {}      # key -> [add, del, set_at]

    @rule(key=keys, add=st.integers(0, 5), dele=st.integers(0, 5))
    def set(self, key: str, add: int, dele: int) -> None:
        self.e.set_expectations(key, add, dele)
        self.model[key] = [add, dele, self.clock.monotonic()]

    @rule(key=keys)
    def creation_observed(self, key: str) -> None:
        self.e.creation_observed(key)
        if key in self.model:
            self.model[key][0] -= 1

    @rule(key=keys)
    def deletion_observed(self, key: str) -> None:
        self.e.deletion_observed(key)
        if key in self.model:
            self.model[key][1] -= 1

    @rule(key=keys, add=st.integers(0, 3))
    def raise_expectations(self, key: str, add: int) -> None:
        self.e.raise_expectations(key, add, 0)
        if key in self.model:
            self.model[key][0] += add

    @rule(key=keys)
    def delete(self, key: str) -> None:
        self.e.delete_expectations(key)
        self.model.pop(key, None)

    @rule(seconds=st.sampled_from([1.0, 60.0, 299.0, 300.0, 301.0]))
    def step(self, seconds: float) -> None:
        self.clock.step(seconds)

    @invariant()
    def matches_model(self) -> None:
        self.e._check_invariants()
        for key in ("ns/a", "ns/b"):
            m = self.model.get(key)
            want = m is None or (m[0] <= 0 and m[1] <= 0) or self.clock.monotonic() - m[2] > cu.EXPECTATIONS_TIMEOUT
            assert self.e.satisfied_expectations(key) == want


TestExpectationsStateful = ExpectationsMachine.TestCase
TestExpectationsStateful.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)


# --- pod control -------------------------------------------------------------------------------

def new_replica_set(name: str = "foobar", replicas: int = 1) -> apps_v1.ReplicaSet:
    return types.from_dict({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"name": "foo", "type": "production"}},
                 "template": {"metadata": {"labels": {"name": "foo", "type": "production"},
                                           "annotations": {"note": "x"}, "finalizers": ["example.com/f"]},
                              "spec": {"containers": [{"name": "c", "image": "foo/bar"}],
                                       "nodeSelector": {"baz": "blah"}}}},
    }, apps_v1.ReplicaSet)


async def seeded(fake: FakeClientset, rs: apps_v1.ReplicaSet) -> apps_v1.ReplicaSet:
    [stored] = await fake.seed(rs)
    return stored


async def test_create_pods_builds_pod_from_template() -> None:
    """Upstream: TestCreatePodsWithGenerateName ("Create pod"), against the real API."""
    fake = await FakeClientset.new()
    rs = await seeded(fake, new_replica_set())
    recorder = FakeRecorder()
    ref = cu.new_controller_ref(rs, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))
    await cu.RealPodControl(fake, recorder).create_pods("default", rs.spec.template, rs, ref)

    assert fake.verbs() == [("create", "pods", "")]
    body = fake.actions[0].body
    assert body["metadata"]["generateName"] == "foobar-"
    assert body["metadata"]["labels"] == {"name": "foo", "type": "production"}
    assert body["metadata"]["annotations"] == {"note": "x"}
    assert body["metadata"]["finalizers"] == ["example.com/f"]
    assert body["metadata"]["ownerReferences"] == [{
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "foobar", "uid": rs.metadata.uid,
        "controller": True, "blockOwnerDeletion": True}]
    assert body["spec"]["nodeSelector"] == {"baz": "blah"}
    pods = (await fake.core_v1().pods("default").list()).items
    assert len(pods) == 1 and pods[0].metadata.name.startswith("foobar-")
    assert recorder.events == [f"Normal SuccessfulCreate Created pod: {pods[0].metadata.name}"]


async def test_create_pods_with_generate_name() -> None:
    """Upstream: TestCreatePodsWithGenerateName ("Create pod with generate name")."""
    fake = await FakeClientset.new()
    rs = await seeded(fake, new_replica_set())
    ref = cu.new_controller_ref(rs, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))
    await cu.RealPodControl(fake, FakeRecorder()).create_pods_with_generate_name(
        "default", rs.spec.template, rs, ref, "hello-")
    assert fake.actions[0].body["metadata"]["generateName"] == "hello-"


async def test_create_pods_without_labels_fails_before_any_request() -> None:
    fake = await FakeClientset.new()
    rs = await seeded(fake, new_replica_set())
    template = rs.spec.template.deep_copy()
    template.metadata.labels = None
    ref = cu.new_controller_ref(rs, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))
    with pytest.raises(ValueError, match="unable to create pods, no labels"):
        await cu.RealPodControl(fake, FakeRecorder()).create_pods("default", template, rs, ref)
    assert fake.verbs() == []


async def test_create_pods_failure_records_failed_create() -> None:
    fake = await FakeClientset.new()
    rs = await seeded(fake, new_replica_set())
    fake.fail_on("create", "pods", errors.Forbidden('pods "x" is forbidden: exceeded quota'))
    recorder = FakeRecorder()
    ref = cu.new_controller_ref(rs, cu.GroupVersionKind("apps", "v1", "ReplicaSet"))
    with pytest.raises(errors.Forbidden):
        await cu.RealPodControl(fake, recorder).create_pods("default", rs.spec.template, rs, ref)
    assert recorder.events == ['Warning FailedCreate Error creating: pods "x" is forbidden: exceeded quota']


def _ref(**changes: object) -> meta_v1.OwnerReference:
    ref = cu.new_controller_ref(new_replica_set(), cu.GroupVersionKind("apps", "v1", "ReplicaSet"))
    for k, v in changes.items():
        setattr(ref, k, v)
    return ref


@pytest.mark.parametrize("ref, msg", [
    (None, "controllerRef is nil"),
    (_ref(api_version=""), "controllerRef has empty APIVersion"),
    (_ref(kind=""), "controllerRef has empty Kind"),
    (_ref(controller=False), "controllerRef.Controller is not set to true"),
    (_ref(block_owner_deletion=None), "controllerRef.BlockOwnerDeletion is not set"),
])
def test_validate_controller_ref(ref: meta_v1.OwnerReference | None, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        cu.validate_controller_ref(ref)


async def test_delete_pods_allows_missing() -> None:
    """Upstream: TestDeletePodsAllowsMissing — NotFound comes back unwrapped, no event."""
    fake = await FakeClientset.new()
    recorder = FakeRecorder()
    with pytest.raises(errors.NotFound):
        await cu.RealPodControl(fake, recorder).delete_pod("default", "podName", new_replica_set())
    assert recorder.events == []


async def test_delete_pod_events() -> None:
    fake = await FakeClientset.new()
    rs = await seeded(fake, new_replica_set())
    [pod] = await fake.seed({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "default"},
                             "spec": {"containers": [{"name": "c", "image": "x"}]}})
    recorder = FakeRecorder()
    control = cu.RealPodControl(fake, recorder)
    await control.delete_pod("default", "p1", rs)
    assert recorder.events == ["Normal SuccessfulDelete Deleted pod: p1"]
    fake.fail_on("delete", "pods", errors.InternalError("etcd down"))
    message = "unable to delete pods: Internal error occurred: etcd down"
    with pytest.raises(cu.PodDeleteError, match=f"^{re.escape(message)}$"):
        await control.delete_pod("default", "p2", rs)
    assert recorder.events[-1] == "Warning FailedDelete Error deleting: Internal error occurred: etcd down"


@pytest.mark.parametrize("name, prefix", [
    ("web", "web-"),
    ("a" * 253, "a" * 253 + "-"),      # upstream's maskTrailingDash quirk: still 253 once masked
    ("a" * 254, "a" * 254),            # invalid as a prefix: the bare name is used
])
def test_get_pods_prefix(name: str, prefix: str) -> None:
    assert cu.get_pods_prefix(name) == prefix


# --- filtering ----------------------------------------------------------------------------------

def pod(name: str, node: str = "", phase: str | None = None, ready: bool | None = None, *,
        ready_since: float | None = None, created: float | None = None, restarts: list[int] | None = None,
        annotations: dict[str, str] | None = None, deleting: bool = False, uid: str | None = None) -> core_v1.Pod:
    conditions = None
    if ready is not None:
        conditions = [core_v1.PodCondition(type="Ready", status="True" if ready else "False",
                                           last_transition_time=rfc3339(ready_since) if ready_since else None)]
    return core_v1.Pod(
        metadata=meta_v1.ObjectMeta(name=name, namespace="default", uid=uid, annotations=annotations,
                                    creation_timestamp=rfc3339(created) if created else None,
                                    deletion_timestamp=rfc3339(NOW) if deleting else None),
        spec=core_v1.PodSpec(node_name=node or None),
        status=core_v1.PodStatus(phase=phase, conditions=conditions, container_statuses=(
            [core_v1.ContainerStatus(name=f"c{i}", restart_count=r) for i, r in enumerate(restarts)]
            if restarts is not None else None)))


def test_count_terminating_pods() -> None:
    """Upstream: TestCountTerminatingPods"""
    pods = [pod("p0", phase="Succeeded"), pod("p1", phase="Failed"), pod("p2", phase="Pending", deleting=True),
            pod("p3", phase="Running", deleting=True), pod("p4", phase="Running"), pod("p5", phase="Running"),
            pod("p6", phase="Running")]
    assert cu.count_terminating_pods(pods) == 2
    assert [p.metadata.name for p in cu.filter_terminating_pods(pods)] == ["p2", "p3"]


def test_active_pod_filtering() -> None:
    """Upstream: TestActivePodFiltering"""
    pods = [pod("pod-1", phase="Succeeded"), pod("pod-2", phase="Failed"), pod("pod-3", phase="Running"),
            pod("pod-4", phase="Running"), pod("pod-5", phase="Running"), pod("pod-6", phase="Running", deleting=True)]
    assert sorted(p.metadata.name for p in cu.filter_active_pods(pods)) == ["pod-3", "pod-4", "pod-5"]


def owned_pod(name: str, namespace: str, owner_uid: str | None, *, controller: bool = True) -> core_v1.Pod:
    refs = [meta_v1.OwnerReference(api_version="apps/v1", kind="ReplicaSet", name="rs", uid=owner_uid,
                                   controller=controller)] if owner_uid else None
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=name, namespace=namespace, owner_references=refs))


@pytest.mark.parametrize("indexed", [True, False], ids=["index", "namespace scan"])
def test_filter_pods_by_owner(indexed: bool) -> None:
    """Upstream: FilterPodsByOwner over the PodControllerUIDIndex — the owner's pods, plus the
    orphans of its namespace when asked; pods of other controllers and other namespaces' orphans
    never. Without the index, a scan of the namespace gives the same pods."""
    from kubeplane.client.tools.cache import NAMESPACE_INDEX, Indexer, meta_namespace_index_func
    indexer = Indexer(indexers={NAMESPACE_INDEX: meta_namespace_index_func})
    if indexed:
        assert cu.add_pod_controller_uid_indexer(indexer)
        assert cu.add_pod_controller_uid_indexer(indexer)            # a second controller: no conflict
    for p in (owned_pod("mine-1", "ns", "uid-a"), owned_pod("mine-2", "ns", "uid-a"),
              owned_pod("theirs", "ns", "uid-b"), owned_pod("orphan", "ns", None),
              owned_pod("not-a-controller-ref", "ns", "uid-a", controller=False),
              owned_pod("orphan-elsewhere", "other", None)):
        indexer.add(p)
    owner = meta_v1.ObjectMeta(name="rs", namespace="ns", uid="uid-a")
    names = lambda orphans: sorted(p.metadata.name for p in cu.filter_pods_by_owner(indexer, owner, orphans))  # noqa: E731
    assert names(False) == ["mine-1", "mine-2"]
    assert names(True) == ["mine-1", "mine-2", "not-a-controller-ref", "orphan"]


def test_pod_controller_uid_index_joins_a_filled_informer() -> None:
    """An informer another component started first (the scheduler's pods) is indexed as it is."""
    from kubeplane.client.tools.cache import Indexer
    indexer = Indexer()
    indexer.add(owned_pod("p", "ns", "uid-a"))
    assert cu.add_pod_controller_uid_indexer(indexer) is True
    assert [p.metadata.name for p in indexer.by_index(cu.POD_CONTROLLER_UID_INDEX, "uid-a")] == ["p"]


@pytest.mark.parametrize("min_ready, ready_since, now, want", [
    pytest.param(0, NOW, NOW, True, id="minReadySeconds 0: ready is available"),
    pytest.param(10, NOW, NOW + 10, False, id="exactly minReadySeconds later: not yet (strictly before)"),
    pytest.param(10, NOW, NOW + 11, True, id="after minReadySeconds"),
    pytest.param(10, None, NOW + 100, False, id="no lastTransitionTime never becomes available"),
])
def test_is_pod_available(min_ready: int, ready_since: float | None, now: float, want: bool) -> None:
    assert cu.is_pod_available(pod("p", "n", "Running", True, ready_since=ready_since), min_ready, now) is want


def test_not_ready_pod_is_not_available() -> None:
    assert not cu.is_pod_available(pod("p", "n", "Running", False, ready_since=NOW), 0, NOW)


@pytest.mark.parametrize("value, cost", [
    ("10", 10), ("-5", -5), ("0", 0), ("+10", 0), ("008", 0), ("", 0), ("abc", 0), ("2147483648", 0),
    ("-2147483648", -2147483648), ("1_0", 0),
])
def test_deletion_cost_annotation(value: str, cost: int) -> None:
    assert cu.get_deletion_cost_from_pod_annotations({cu.POD_DELETION_COST: value}) == cost


# --- ranking -----------------------------------------------------------------------------------

def test_sorting_active_pods() -> None:
    """Upstream: TestSortingActivePods"""
    then = NOW - 30 * 86400
    pods = [
        pod("unscheduled", "", "Pending"),
        pod("scheduledButPending", "bar", "Pending"),
        pod("unknownPhase", "foo", "Unknown"),
        pod("runningButNotReady", "foo", "Running"),
        pod("runningNoLastTransitionTime", "foo", "Running", True, restarts=[3, 0]),
        pod("runningWithLastTransitionTime", "foo", "Running", True, ready_since=NOW, restarts=[3, 0]),
        pod("runningLongerTime", "foo", "Running", True, ready_since=then, restarts=[3, 0]),
        pod("lowerContainerRestartCount", "foo", "Running", True, ready_since=then, created=NOW, restarts=[2, 1]),
        pod("oldest", "foo", "Running", True, ready_since=then, created=then, restarts=[2, 1]),
    ]
    want = [p.metadata.name for p in pods]
    rng = random.Random(7)
    for _ in range(20):
        shuffled = pods[:]
        rng.shuffle(shuffled)
        cu.sort_active_pods(shuffled)
        assert [p.metadata.name for p in shuffled] == want


_THEN_1_MONTH, _THEN_2H, _THEN_5H, _THEN_8H = NOW - 30 * 86400, NOW - 2 * 3600, NOW - 5 * 3600, NOW - 8 * 3600


def rpod(name: str, node: str, phase: str, ready: bool, restarts: int, ready_since: float | None,
         created: float | None, annotations: dict[str, str] | None = None) -> core_v1.Pod:
    p = pod(name, node, phase, True if ready else None, ready_since=ready_since, created=created,
            restarts=[restarts] if ready else None, annotations=annotations)
    return p


UNSCHEDULED = rpod("unscheduled", "", "Pending", False, 0, None, None)
SCHEDULED_PENDING = rpod("pending", "node", "Pending", False, 0, None, None)
UNKNOWN_PHASE = rpod("unknown-phase", "node", "Unknown", False, 0, None, None)
RUNNING_NOT_READY = rpod("not-ready", "node", "Running", False, 0, None, None)
READY_NO_LTT = rpod("ready-no-last-transition-time", "node", "Running", True, 0, None, None)
READY_NOW = rpod("ready-now", "node", "Running", True, 0, NOW, NOW)
READY_THEN = rpod("ready-then", "node", "Running", True, 0, _THEN_1_MONTH, _THEN_1_MONTH)
READY_HIGH_RESTARTS = rpod("ready-high-restarts", "node", "Running", True, 9001, NOW, NOW)
READY_NOW_CREATED_THEN = rpod("ready-now-created-then", "node", "Running", True, 0, NOW, _THEN_1_MONTH)
LOW_COST = rpod("low-deletion-cost", "node", "Running", True, 0, NOW, _THEN_1_MONTH, {cu.POD_DELETION_COST: "10"})
HIGH_COST = rpod("high-deletion-cost", "node", "Running", True, 0, NOW, _THEN_1_MONTH, {cu.POD_DELETION_COST: "100"})
UNSCHEDULED_5H = rpod("unscheduled-5-hours", "", "Pending", False, 0, _THEN_5H, _THEN_5H)
UNSCHEDULED_8H = rpod("unscheduled-10-hours", "", "Pending", False, 0, _THEN_8H, _THEN_8H)
READY_2H = rpod("ready-2-hours", "", "Running", True, 0, _THEN_2H, _THEN_1_MONTH)
READY_5H = rpod("ready-5-hours", "", "Running", True, 0, _THEN_5H, _THEN_1_MONTH)
READY_8H = rpod("ready-10-hours", "", "Running", True, 0, _THEN_8H, _THEN_1_MONTH)


@pytest.mark.parametrize("p1, p2", [
    (UNSCHEDULED, None), (SCHEDULED_PENDING, None), (UNKNOWN_PHASE, None), (RUNNING_NOT_READY, None),
    (READY_NOW_CREATED_THEN, None), (READY_NOW, None), (READY_THEN, None), (READY_HIGH_RESTARTS, None),
    (UNSCHEDULED_5H, UNSCHEDULED_8H),          # same log2 age band, equal (empty) UIDs
    (READY_5H, READY_8H),
])
def test_sorting_active_pods_with_ranks_equality(p1: core_v1.Pod, p2: core_v1.Pod | None) -> None:
    """Upstream: TestSortingActivePodsWithRanks (equality tests)"""
    ranked = cu.ActivePodsWithRanks(pods=[p1, p2 or p1], rank=[1, 1], now=NOW)
    assert not ranked.less(0, 1) and not ranked.less(1, 0)


@pytest.mark.parametrize("lesser, greater, deletion_cost", [
    ((UNSCHEDULED, 1), (SCHEDULED_PENDING, 2), True),
    ((UNSCHEDULED, 2), (SCHEDULED_PENDING, 1), True),
    ((SCHEDULED_PENDING, 1), (UNKNOWN_PHASE, 2), True),
    ((UNKNOWN_PHASE, 1), (RUNNING_NOT_READY, 2), True),
    ((RUNNING_NOT_READY, 1), (READY_NO_LTT, 1), True),
    ((READY_NO_LTT, 1), (READY_NOW, 1), True),
    ((READY_NOW, 2), (READY_NO_LTT, 1), True),
    ((READY_NOW, 1), (READY_THEN, 1), True),
    ((READY_NOW, 2), (READY_THEN, 1), True),
    ((READY_HIGH_RESTARTS, 1), (READY_NOW, 1), True),
    ((READY_NOW, 2), (READY_HIGH_RESTARTS, 1), True),
    ((READY_NOW, 1), (READY_NOW_CREATED_THEN, 1), True),
    ((READY_NOW_CREATED_THEN, 2), (READY_NOW, 1), True),
    ((LOW_COST, 2), (HIGH_COST, 1), True),
    ((HIGH_COST, 2), (LOW_COST, 1), False),
    ((READY_2H, 1), (READY_5H, 1), True),
])
def test_sorting_active_pods_with_ranks_inequality(lesser: tuple[core_v1.Pod, int], greater: tuple[core_v1.Pod, int],
                                                   deletion_cost: bool) -> None:
    """Upstream: TestSortingActivePodsWithRanks (inequality tests)"""
    ranked = cu.ActivePodsWithRanks(pods=[lesser[0], greater[0]], rank=[lesser[1], greater[1]], now=NOW,
                                    pod_deletion_cost=deletion_cost)
    assert ranked.less(0, 1)
    assert not ranked.less(1, 0)


def test_same_log_band_broken_by_uid() -> None:
    a = pod("a", "n", "Running", True, ready_since=_THEN_5H, uid="bbb")
    b = pod("b", "n", "Running", True, ready_since=_THEN_8H, uid="aaa")
    ranked = cu.ActivePodsWithRanks(pods=[a, b], rank=[1, 1], now=NOW)
    ranked.sort()
    assert [p.metadata.name for p in ranked.pods] == ["b", "a"]        # UID "aaa" < "bbb"
    unscaled = cu.ActivePodsWithRanks(pods=[b, a], rank=[1, 1], now=NOW, logarithmic_scale_down=False)
    unscaled.sort()
    assert [p.metadata.name for p in unscaled.pods] == ["a", "b"]      # ready for less time first


def test_logarithmic_rank_diff() -> None:
    assert cu.logarithmic_rank_diff(_THEN_2H, _THEN_5H, NOW) == -2        # ranks 42 and 44
    assert cu.logarithmic_rank_diff(_THEN_5H, _THEN_8H, NOW) == 0         # both 44
    assert cu.logarithmic_rank_diff(NOW, _THEN_2H, NOW) == -1 - 42        # zero age ranks -1
