"""The controller-manager's pod update handlers decide exactly as the code they replace.

Differential tests: each handler's fast path (an unchanged controller ref of another kind, the
RS lookup by key, the inlined comparisons) against the handler as it read before (kept below as
the reference, upstream's updatePod/deletePod/PodUpdated/addPod), on every pair of a matrix of
pod states: owners (none, another kind, the controller's own kind: found, UID mismatch,
missing), labels, deletion, the Job tracking finalizer, node, tolerations, conditions. What a
handler does is recorded (queue adds, expectations, metrics) and must be the same call for call.
"""
from __future__ import annotations

import itertools
from typing import Any

import pytest

from kubeplane.api.types import apps_v1, batch_v1, core_v1, from_dict, policy_v1
from kubeplane.api.types.base import ObjectName
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.cache import object_from_tombstone
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.daemon.daemon_controller import DaemonSetsController
from kubeplane.controller.disruption.disruption import DisruptionController
from kubeplane.controller.endpoint.endpoints_controller import EndpointsController
from kubeplane.controller.endpoint.util import get_services_to_update_on_pod_change
from kubeplane.controller.job import job_controller as jc
from kubeplane.controller.job.indexed_job_utils import JOB_TRACKING_FINALIZER, has_job_tracking_finalizer
from kubeplane.controller.nodelifecycle import tainteviction as te
from kubeplane.controller.replicaset.replica_set import ReplicaSetController
from kubeplane.controller.statefulset.stateful_set import StatefulSetController
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

NS = "ns"
TS = "2026-01-01T00:00:00Z"


class Rec:
    """Records every method called on it, with its arguments."""

    def __init__(self, log: list[Any], name: str) -> None:
        self._log, self._name = log, name

    def __getattr__(self, attr: str) -> Any:
        return lambda *a, **kw: self._log.append((self._name, attr, a, tuple(sorted(kw.items()))))

    def __len__(self) -> int:
        return 0


def recorded(ctrl: Any, *names: str) -> list[Any]:
    log: list[Any] = []
    for n in names:
        setattr(ctrl, n, Rec(log, n))
    return log


def owner(kind: str, name: str, uid: str, api_version: str = "apps/v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True,
            "blockOwnerDeletion": True}


def pod(rv: int, *, owners: list[dict[str, Any]] | None = None, labels: dict[str, str] | None = None,
        deleting: bool = False, finalizers: list[str] | None = None, node: str = "", ready: bool = False,
        phase: str = "Running", tolerations: list[dict[str, Any]] | None = None,
        disruption: str | None = None) -> core_v1.Pod:
    meta: dict[str, Any] = {"name": "p", "namespace": NS, "uid": "uid-p", "resourceVersion": str(rv),
                            "creationTimestamp": TS}
    if owners:
        meta["ownerReferences"] = owners
    if labels is not None:
        meta["labels"] = labels
    if deleting:
        meta |= {"deletionTimestamp": TS, "deletionGracePeriodSeconds": 30}
    if finalizers:
        meta["finalizers"] = finalizers
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
    if node:
        spec["nodeName"] = node
    if tolerations is not None:
        spec["tolerations"] = tolerations
    conds = [{"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": TS}]
    if disruption is not None:
        conds.append({"type": "DisruptionTarget", "status": "True", "reason": disruption,
                      "lastTransitionTime": TS})
    return from_dict({"metadata": meta, "spec": spec, "status": {"phase": phase, "conditions": conds}}, core_v1.Pod)


def owner_variants(kind: str, api_version: str) -> list[list[dict[str, Any]] | None]:
    """No owner; a ReplicaSet's (or, for the RS controller, a StatefulSet's) pods, also beside
    an owner that is no controller; the controller's own kind: its object, a UID mismatch, a
    missing name."""
    other = owner("StatefulSet", "s", "uid-s") if kind == "ReplicaSet" else owner("ReplicaSet", "rs", "uid-rs")
    other2 = {**other, "uid": other["uid"] + "2"}
    extra = {**owner("ConfigMap", "cm", "uid-cm", "v1"), "controller": False}    # not a controller
    return [None, [other], [other2], [extra, other], [owner(kind, "own", "uid-own", api_version)],
            [owner(kind, "own", "uid-stale", api_version)], [owner(kind, "gone", "uid-gone", api_version)]]


def pod_matrix(kind: str, api_version: str, *, finalizer: bool = False) -> list[core_v1.Pod]:
    out = []
    fins: list[list[str] | None] = [None, [JOB_TRACKING_FINALIZER]] if finalizer else [None]
    for i, (owners, lbls, deleting, fin, ready) in enumerate(itertools.product(
            owner_variants(kind, api_version), [{"app": "a"}, {"app": "b"}], [False, True], fins, [False, True])):
        out.append(pod(i + 2, owners=owners, labels=lbls, deleting=deleting, finalizers=fin, ready=ready,
                       phase="Succeeded" if fin and ready else "Running"))
    return out


def pairs(pods: list[core_v1.Pod]) -> list[tuple[core_v1.Pod, core_v1.Pod]]:
    """Every (old, cur), and each pod against itself (a resync: same resourceVersion)."""
    return [(a, b) for a in pods for b in pods]


async def factory() -> tuple[FakeClientset, SharedInformerFactory]:
    clock = FakeClock(1_700_000_000.0)
    fake = await FakeClientset.new(clock=clock)
    return fake, SharedInformerFactory(fake, clock=clock)


def seed(f: SharedInformerFactory, getter: str, kind: str, api: str, spec: dict[str, Any]) -> None:
    """The controller's own object "own" (uid-own) selecting app=a, in its informer's cache."""
    group = f.batch_v1() if api == "batch/v1" else f.apps_v1()
    obj = {"apiVersion": api, "kind": kind,
           "metadata": {"name": "own", "namespace": NS, "uid": "uid-own", "resourceVersion": "1"}, "spec": spec}
    inf = getattr(group, getter)().informer()
    t = {"ReplicaSet": apps_v1.ReplicaSet, "StatefulSet": apps_v1.StatefulSet, "DaemonSet": apps_v1.DaemonSet,
         "Job": batch_v1.Job}[kind]
    inf.get_indexer().add(from_dict(obj, t))


SELECTOR = {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}


# --- the handlers as they read before the fast paths (the reference) ------------------------------

def ref_rs_update_pod(self: ReplicaSetController, old: core_v1.Pod, cur: core_v1.Pod) -> None:
    if cur.metadata.resource_version == old.metadata.resource_version:
        return
    label_changed = cur.metadata.labels != old.metadata.labels
    if not label_changed:
        cur_ref = cu.get_controller_of(cur)
        if cur_ref is not None and cur_ref == cu.get_controller_of(old):
            if cur.metadata.deletion_timestamp is not None:
                ref_rs_delete_pod(self, cur)
            else:
                self._update_owned_pod(old, cur, cur_ref)
            return
    self._pod_updated(old, cur)
    if cur.metadata.deletion_timestamp is not None:
        ref_rs_delete_pod(self, cur)
        if label_changed:
            ref_rs_delete_pod(self, old)
        return
    cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
    ref_changed = cur_ref != old_ref
    if ref_changed and old_ref is not None:
        if (rs := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
            self.enqueue_rs(rs)
    if cur_ref is not None:
        self._update_owned_pod(old, cur, cur_ref)
        return
    if label_changed or ref_changed:
        for rs in self.get_pod_replica_sets(cur):
            self.enqueue_rs(rs)


def ref_rs_delete_pod(self: ReplicaSetController, obj: Any) -> None:
    p = object_from_tombstone(obj, core_v1.Pod)
    if p is None:
        return
    ref = cu.get_controller_of(p)
    if ref is None:
        self._orphan_deleted(p)
        return
    rs = self.resolve_controller_ref(p.metadata.namespace, ref)
    if rs is None:
        return
    rs_key = cu.key_func(rs)
    self._pod_changed(rs_key, p)
    self.expectations.deletion_observed(rs_key, cu.pod_key(p))
    self.enqueue_rs(rs)


def ref_ss_update_pod(self: StatefulSetController, old: core_v1.Pod, cur: core_v1.Pod) -> None:
    if cur.metadata.resource_version == old.metadata.resource_version:
        return
    label_changed = cur.metadata.labels != old.metadata.labels
    cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
    if cur_ref != old_ref and old_ref is not None:
        if (s := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
            self.enqueue_stateful_set(s)
    if cur_ref is not None:
        if (s := self.resolve_controller_ref(cur.metadata.namespace, cur_ref)) is None:
            return
        self.enqueue_stateful_set(s)
        min_ready = s.spec.min_ready_seconds or 0
        if not cu.is_pod_ready(old) and cu.is_pod_ready(cur) and min_ready > 0:
            self.enqueue_ss_after(s, min_ready + 1.0)
        return
    if label_changed or cur_ref != old_ref:
        for s in self.get_stateful_sets_for_pod(cur):
            self.enqueue_stateful_set(s)


def ref_ds_update_pod(self: DaemonSetsController, old: core_v1.Pod, cur: core_v1.Pod) -> None:
    if cur.metadata.resource_version == old.metadata.resource_version:
        return
    if cur.metadata.deletion_timestamp is not None:
        self.delete_pod(cur)
        return
    cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
    ref_changed = cur_ref != old_ref
    if ref_changed and old_ref is not None:
        if (ds := self._owner_of(old)) is not None:
            self.enqueue(ds)
    if cur_ref is not None:
        ds = self._owner_of(cur)
        if ds is None:
            return
        self.enqueue(ds)
        min_ready = ds.spec.min_ready_seconds or 0
        if not cu.is_pod_ready(old) and cu.is_pod_ready(cur) and min_ready > 0:
            self.enqueue_after(ds, min_ready + 1)
        return
    if cur.metadata.labels != old.metadata.labels or ref_changed:
        for ds in self.get_daemon_sets_for(cur):
            self.enqueue(ds)


def ref_job_update_pod(self: jc.JobController, old: core_v1.Pod, cur: core_v1.Pod) -> None:
    if (was := jc._finished_with_tracking_finalizer(old)) != (is_ := jc._finished_with_tracking_finalizer(cur)):
        jc.metrics.finished_pod_with_tracking_finalizer(was, is_)
    if cur.metadata.resource_version == old.metadata.resource_version:
        return
    if cur.metadata.deletion_timestamp is not None:
        self.delete_pod(cur, False)
        return
    finalizer_removed = not has_job_tracking_finalizer(cur)
    cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
    ref_changed = cur_ref != old_ref
    if ref_changed and old_ref is not None:
        if (job := self.resolve_controller_ref(old.metadata.namespace, old_ref)) is not None:
            if finalizer_removed:
                self.finalizer_expectations.finalizer_removal_observed(cu.key_func(job), cur.metadata.uid or "")
            self.enqueue_sync_job_batched(job)
    if cur_ref is not None:
        if (job := self.resolve_controller_ref(cur.metadata.namespace, cur_ref)) is not None:
            if finalizer_removed:
                self.finalizer_expectations.finalizer_removal_observed(cu.key_func(job), cur.metadata.uid or "")
            self.enqueue_sync_job_batched(job)
        return
    if has_job_tracking_finalizer(cur):
        self.enqueue_orphan_pod(cur)
    if cur.metadata.labels != old.metadata.labels or ref_changed:
        for job in self.get_pod_jobs(cur):
            self.enqueue_sync_job_batched(job)


def ref_pod_updated(self: te.TaintEvictionController, old: core_v1.Pod | None, new: core_v1.Pod | None) -> None:
    ref = new if new is not None else old
    if ref is None:
        return
    if old is not None and new is not None and te._node_of(old) == te._node_of(new) \
            and te._same_tolerations(old, new):
        return
    self.pod_update_queue.add(te._PodUpdate(ref.metadata.namespace or "", ref.metadata.name, te._node_of(ref)))
    self._wake.set()


def ref_disruption_add_pod(self: DisruptionController, p: Any) -> None:
    if (pdb := self.get_pdb_for_pod(p)) is not None:
        self.enqueue_pdb(pdb)
    has, clean_after = self.non_terminating_pod_has_stale_disruption_condition(p)
    if has:
        self.enqueue_stale_pod_disruption_cleanup(p, clean_after)


# --- the comparisons --------------------------------------------------------------------------------

def compare(fast: Any, slow: Any, names: tuple[str, ...], fast_fn: Any, slow_fn: Any,
            cases: list[tuple[Any, ...]]) -> int:
    """Run each case through both; the recorded calls must be equal. Returns how many cases
    did anything (so a test cannot pass by recording nothing)."""
    fast_log, slow_log = recorded(fast, *names), recorded(slow, *names)
    acted = 0
    for case in cases:
        fast_log.clear()
        slow_log.clear()
        fast_fn(*case)
        slow_fn(slow, *case)
        assert fast_log == slow_log, case
        acted += bool(fast_log)
    return acted


async def test_replica_set_update_and_delete_pod_as_before() -> None:
    fake, f = await factory()
    seed(f, "replicasets", "ReplicaSet", "apps/v1", {"replicas": 1, "minReadySeconds": 5, **SELECTOR})
    fast = ReplicaSetController(f.apps_v1().replicasets(), f.core_v1().pods(), fake)
    slow = ReplicaSetController(f.apps_v1().replicasets(), f.core_v1().pods(), fake)
    slow._rs_by_key = None                    # the reference resolves through the lister
    assert fast._rs_by_key is not None
    pods = pod_matrix("ReplicaSet", "apps/v1")
    for claimed in (False, True):
        for c in (fast, slow):
            c.claimed = {}
            if claimed:                       # a synced RS notes its changed pods
                from kubeplane.controller.replicaset.claimed_pods import ClaimedPods
                c.claimed = {f"{NS}/own": ClaimedPods((), lambda _labels: True, 0)}
        acted = compare(fast, slow, ("queue", "expectations"), fast.update_pod, ref_rs_update_pod, pairs(pods))
        assert acted > 100
        acted = compare(fast, slow, ("queue", "expectations"), fast.delete_pod, ref_rs_delete_pod,
                        [(p,) for p in pods])
        assert acted == 8                     # the pods of "own"
        if claimed:
            assert fast.claimed[f"{NS}/own"].dirty == slow.claimed[f"{NS}/own"].dirty == {f"{NS}/p"}


async def test_replica_set_queue_keys_of_pod_events_are_its_names_and_forgotten_with_it() -> None:
    """An owned pod's events enqueue the RS's ObjectName (made once per RS, _enqueue_key),
    equal to enqueue_rs's; the RS's delete drops it."""
    fake, f = await factory()
    seed(f, "replicasets", "ReplicaSet", "apps/v1", {"replicas": 1, **SELECTOR})
    rsc = ReplicaSetController(f.apps_v1().replicasets(), f.core_v1().pods(), fake)
    added: list[Any] = []
    rsc.queue.add = added.append                    # type: ignore[method-assign]
    owned = [p for p in pod_matrix("ReplicaSet", "apps/v1")
             if p.metadata.owner_references and p.metadata.owner_references[-1].uid == "uid-own"]
    rsc.update_pod(owned[0], owned[1])
    rsc.delete_pod(owned[1])
    rs = f.apps_v1().replicasets().informer().get_indexer().get_by_key(f"{NS}/own")
    rsc.enqueue_rs(rs)
    assert added == [ObjectName(NS, "own")] * 3 and all(type(k) is ObjectName for k in added)
    assert list(rsc._names) == [f"{NS}/own"]
    rsc.delete_rs(rs)
    assert rsc._names == {}


async def test_replica_set_resolve_controller_ref_by_key_as_the_lister() -> None:
    fake, f = await factory()
    seed(f, "replicasets", "ReplicaSet", "apps/v1", {"replicas": 1, **SELECTOR})
    fast = ReplicaSetController(f.apps_v1().replicasets(), f.core_v1().pods(), fake)
    slow = ReplicaSetController(f.apps_v1().replicasets(), f.core_v1().pods(), fake)
    slow._rs_by_key = None
    refs = [o[0] for o in owner_variants("ReplicaSet", "apps/v1") if o]
    for ns in (NS, "other", "", None):
        for r in refs:
            ref = from_dict({"metadata": {"name": "x", "ownerReferences": [r]}}, core_v1.Pod).metadata.owner_references[0]
            got, want = fast.resolve_controller_ref(ns, ref), slow.resolve_controller_ref(ns, ref)
            assert got is want
            assert (got is not None) == (ns == NS and r["uid"] == "uid-own")


async def test_stateful_set_update_pod_as_before() -> None:
    fake, f = await factory()
    seed(f, "statefulsets", "StatefulSet", "apps/v1", {"replicas": 1, "minReadySeconds": 5, "serviceName": "s",
                                                       **SELECTOR})

    def new() -> StatefulSetController:
        return StatefulSetController(f.core_v1().pods(), f.apps_v1().statefulsets(),
                                     f.core_v1().persistentvolumeclaims(), f.apps_v1().controllerrevisions(),
                                     fake)
    fast, slow = new(), new()
    assert compare(fast, slow, ("queue",), fast.update_pod, ref_ss_update_pod,
                   pairs(pod_matrix("StatefulSet", "apps/v1"))) > 100


async def test_daemon_set_update_pod_as_before() -> None:
    fake, f = await factory()
    seed(f, "daemonsets", "DaemonSet", "apps/v1", {"minReadySeconds": 5, **SELECTOR})

    def new() -> DaemonSetsController:
        return DaemonSetsController(f.apps_v1().daemonsets(), f.apps_v1().controllerrevisions(),
                                    f.core_v1().pods(), f.core_v1().nodes(), fake)
    fast, slow = new(), new()
    assert compare(fast, slow, ("queue", "expectations"), fast.update_pod, ref_ds_update_pod,
                   pairs(pod_matrix("DaemonSet", "apps/v1"))) > 100


async def test_job_update_pod_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    fake, f = await factory()
    seed(f, "jobs", "Job", "batch/v1", {"completions": 1, "parallelism": 1, **SELECTOR})

    def new() -> jc.JobController:
        return jc.JobController(f.core_v1().pods(), f.batch_v1().jobs(), fake)
    fast, slow = new(), new()
    metrics_log: list[Any] = []
    monkeypatch.setattr(jc.metrics, "finished_pod_with_tracking_finalizer", lambda *a: metrics_log.append(a))
    names = ("queue", "orphan_queue", "expectations", "finalizer_expectations")
    fast_log, slow_log = recorded(fast, *names), recorded(slow, *names)
    acted = 0
    for old, cur in pairs(pod_matrix("Job", "batch/v1", finalizer=True)):
        for c, fn, log in ((fast, fast.update_pod, fast_log), (slow, None, slow_log)):
            log.clear()
            start = len(metrics_log)
            if fn is None:
                ref_job_update_pod(c, old, cur)
            else:
                fn(old, cur)
            log.extend(("metric", m) for m in metrics_log[start:])
        assert fast_log == slow_log, (old, cur)
        acted += bool(fast_log)
    assert acted > 100


async def test_taint_eviction_pod_updated_as_before() -> None:
    fake, f = await factory()

    def new() -> te.TaintEvictionController:
        return te.TaintEvictionController(f.core_v1().pods(), f.core_v1().nodes(), fake)
    fast, slow = new(), new()
    tol = {"key": "k", "operator": "Exists", "effect": "NoExecute"}
    pods: list[Any] = [None]
    for i, (node, tols) in enumerate(itertools.product(["", "n1", "n2"], [None, [], [tol], [tol, tol]])):
        pods.append(pod(i + 2, node=node, tolerations=tols))
    no_spec = pod(99)
    no_spec.spec = None                       # type: ignore[assignment]
    pods.append(no_spec)
    assert compare(fast, slow, ("pod_update_queue", "_wake"), fast.pod_updated, ref_pod_updated,
                   pairs(pods)) > 50


async def test_disruption_add_and_update_pod_as_before() -> None:
    fake, f = await factory()

    def new() -> DisruptionController:
        return DisruptionController(f.core_v1().pods(), f.policy_v1().poddisruptionbudgets(),
                                    f.core_v1().replicationcontrollers(), f.apps_v1().replicasets(),
                                    f.apps_v1().deployments(), f.apps_v1().statefulsets(), fake)
    fast, slow = new(), new()
    pods = [pod(i + 2, labels=lbls, deleting=deleting, disruption=reason, phase=phase)
            for i, (lbls, deleting, reason, phase) in enumerate(itertools.product(
                [None, {"app": "a"}], [False, True], [None, "DeletionByTaintManager", "TerminationByKubelet"],
                ["Running", "Succeeded"]))]
    no_status = pod(99)
    no_status.status = None                   # type: ignore[assignment]
    pods.append(no_status)
    names = ("queue", "stale_pod_disruption_queue")
    cases = [(p,) for p in pods]
    assert compare(fast, slow, names, fast.add_pod, ref_disruption_add_pod, cases) > 0
    assert compare(fast, slow, names, lambda p: fast.update_pod(p, p),
                   lambda c, p: ref_disruption_add_pod(c, p), cases) > 0
    pdb = from_dict({"metadata": {"name": "b", "namespace": NS, "uid": "uid-b", "resourceVersion": "1"},
                     "spec": {"selector": {"matchLabels": {"app": "a"}}}}, policy_v1.PodDisruptionBudget)
    f.policy_v1().poddisruptionbudgets().informer().get_indexer().add(pdb)
    assert compare(fast, slow, names, fast.add_pod, ref_disruption_add_pod, cases) > 5


async def test_endpoints_update_pod_as_before() -> None:
    fake, f = await factory()
    ctrl = EndpointsController(f.core_v1().pods(), f.core_v1().services(), f.core_v1().endpoints(),
                               fake)
    log = recorded(ctrl, "queue")
    pods = [pod(i + 2, labels=lbls, ready=ready, deleting=deleting)
            for i, (lbls, ready, deleting) in enumerate(itertools.product(
                [{"app": "a"}, {"app": "b"}], [False, True], [False, True]))]
    svc = from_dict({"metadata": {"name": "svc", "namespace": NS, "uid": "uid-svc", "resourceVersion": "1"},
                     "spec": {"selector": {"app": "a"}}}, core_v1.Service)
    for with_service in (False, True):
        if with_service:
            f.core_v1().services().informer().get_indexer().add(svc)
        acted = 0
        for old, cur in pairs(pods):
            log.clear()
            ctrl.update_pod(old, cur)
            want = get_services_to_update_on_pod_change(ctrl.service_lister, old, cur)
            assert {a[0] for _, _, a, _ in log} == want and len(log) == len(want)
            acted += bool(log)
        assert (acted > 0) is with_service


def test_pod_controller_uid_index_as_get_controller_of() -> None:
    """The index function spells get_controller_of out: the controller's UID, or the orphan key."""
    for p in pod_matrix("ReplicaSet", "apps/v1"):
        ref = cu.get_controller_of(p)
        want = [ref.uid or ""] if ref is not None else [cu.orphan_pod_index_key_for_namespace(NS)]
        assert cu._pod_controller_uid_index(p) == want
