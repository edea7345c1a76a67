"""The disruption controller: upstream's disruption_test.go cases with its fixture's shape —
objects put straight into the informers' caches, dc.sync(key), and the status the controller
would write captured through the get_updater seam (upstream's pdbStates) — plus the stale
DisruptionTarget cleanup and the real status write on the fake clientset."""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import apps_v1, core_v1, meta_v1, policy_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.disruption import DisruptionController, finders
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0
FOO_BAR = {"foo": "bar"}


@dataclass
class Recorder:
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


@dataclass
class Fixture:
    dc: DisruptionController
    factory: SharedInformerFactory
    clock: FakeClock
    fake: FakeClientset
    recorder: Recorder
    written: dict[str, dict[str, Any]] = field(default_factory=dict)      # upstream: pdbStates

    def add(self, obj: Any) -> Any:
        informer = {core_v1.Pod: self.factory.core_v1().pods(),
                    policy_v1.PodDisruptionBudget: self.factory.policy_v1().poddisruptionbudgets(),
                    core_v1.ReplicationController: self.factory.core_v1().replicationcontrollers(),
                    apps_v1.ReplicaSet: self.factory.apps_v1().replicasets(),
                    apps_v1.Deployment: self.factory.apps_v1().deployments(),
                    apps_v1.StatefulSet: self.factory.apps_v1().statefulsets()}[type(obj)]
        informer.informer().get_indexer().update(obj)
        return obj

    async def sync(self, key: str = "default/foo") -> None:
        await self.dc.sync(key)
        # The next sync sees what was written, as the informer would deliver it.
        if key in self.written:
            self.add(types.from_dict(self.written[key], policy_v1.PodDisruptionBudget))

    def status(self, key: str = "default/foo") -> tuple[int, int, int, int, dict[str, str]]:
        """(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods, disruptedPods).
        Upstream: VerifyPdbStatus."""
        s = self.written[key]["status"]
        return (s["disruptionsAllowed"], s["currentHealthy"], s["desiredHealthy"], s["expectedPods"],
                s.get("disruptedPods") or {})

    def allowed(self, key: str = "default/foo") -> int:
        return int(self.written[key]["status"]["disruptionsAllowed"])

    def condition(self, key: str = "default/foo") -> dict[str, Any]:
        [c] = [c for c in self.written[key]["status"]["conditions"] if c["type"] == "DisruptionAllowed"]
        return c


@pytest.fixture
async def f() -> Fixture:
    clock = FakeClock(NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = Recorder()
    dc = DisruptionController(factory.core_v1().pods(), factory.policy_v1().poddisruptionbudgets(),
                              factory.core_v1().replicationcontrollers(), factory.apps_v1().replicasets(),
                              factory.apps_v1().deployments(), factory.apps_v1().statefulsets(), fake,
                              clock=clock, recorder=recorder)  # type: ignore[arg-type]
    fx = Fixture(dc, factory, clock, fake, recorder)

    async def record(pdb: dict[str, Any]) -> None:
        pdb["metadata"]["resourceVersion"] = str(int(pdb["metadata"].get("resourceVersion") or "0") + 1)
        fx.written[f"{pdb['metadata']['namespace']}/{pdb['metadata']['name']}"] = pdb
    dc.get_updater = lambda: record
    return fx


# --- builders (upstream's newPod, newMinAvailablePodDisruptionBudget, ...) --------------------------

def meta(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": "default", "uid": str(uuid.uuid4()), "resourceVersion": "18", **extra}


def pdb(min_available: Any = None, max_unavailable: Any = None, selector: Any = None, **status: Any) -> Any:
    spec: dict[str, Any] = {"selector": {"matchLabels": FOO_BAR} if selector is None else selector}
    if min_available is not None:
        spec["minAvailable"] = min_available
    if max_unavailable is not None:
        spec["maxUnavailable"] = max_unavailable
    return types.from_dict({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                            "metadata": meta("foo", generation=1), "spec": spec, "status": status},
                           policy_v1.PodDisruptionBudget)


def pod(name: str, ready: bool = True, owner: Any = None, labels: Any = None, **extra_meta: Any) -> Any:
    m = meta(name, labels=FOO_BAR if labels is None else labels, **extra_meta)
    if owner is not None:
        m["ownerReferences"] = [{"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.metadata.name,
                                 "uid": owner.metadata.uid, "controller": True}]
    conds = [{"type": "Ready", "status": "True"}] if ready else []
    return types.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": {"containers": []},
                            "status": {"conditions": conds}}, core_v1.Pod)


def workload(cls: Any, api_version: str, kind: str, replicas: int, name: str = "foobar", owner: Any = None) -> Any:
    m = meta(name, labels=FOO_BAR)
    if owner is not None:
        m["ownerReferences"] = [{"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.metadata.name,
                                 "uid": owner.metadata.uid, "controller": True}]
    selector: Any = FOO_BAR if kind == "ReplicationController" else {"matchLabels": FOO_BAR}
    return types.from_dict({"apiVersion": api_version, "kind": kind, "metadata": m,
                            "spec": {"replicas": replicas, "selector": selector}}, cls)


def rs(replicas: int, owner: Any = None) -> Any:
    return workload(apps_v1.ReplicaSet, "apps/v1", "ReplicaSet", replicas, owner=owner)


def rc(replicas: int, name: str = "foobar") -> Any:
    return workload(core_v1.ReplicationController, "v1", "ReplicationController", replicas, name)


# --- upstream's cases ------------------------------------------------------------------------------

async def test_no_selector(f: Fixture) -> None:
    """TestNoSelector: an empty selector selects every pod (policy/v1)."""
    f.add(pdb(min_available=3, selector={}))
    await f.sync()
    assert f.status() == (0, 0, 3, 0, {})
    f.add(pod("yo-yo-yo", labels={}))
    await f.sync()
    assert f.status() == (0, 1, 3, 1, {})


async def test_unavailable(f: Fixture) -> None:
    """TestUnavailable: the counts follow the pods, and an unready pod is not healthy."""
    f.add(pdb(min_available=3))
    await f.sync()
    pods = []
    for i in range(4):
        assert f.status() == (0, i, 3, i, {})
        pods.append(f.add(pod(f"yo-yo-yo {i}")))
        await f.sync()
    assert f.status() == (1, 4, 3, 4, {})
    f.add(pod("yo-yo-yo 0", ready=False))
    await f.sync()
    assert f.status() == (0, 3, 3, 4, {})


async def test_integer_max_unavailable(f: Fixture) -> None:
    """TestIntegerMaxUnavailable: no disruption for pods without a controller."""
    f.add(pdb(max_unavailable=1))
    await f.sync()
    assert f.allowed() == 0
    f.add(pod("naked"))
    await f.sync()
    assert f.allowed() == 0


@pytest.mark.parametrize("max_unavailable,first,second", [
    pytest.param(2, (0, 1, 5, 7, {}), (0, 1, 3, 5, {}), id="TestIntegerMaxUnavailableWithScaling"),
    pytest.param("30%", (0, 1, 4, 7, {}), (0, 1, 2, 3, {}), id="TestPercentageMaxUnavailableWithScaling"),
])
async def test_max_unavailable_with_scaling(f: Fixture, max_unavailable: Any, first: Any, second: Any) -> None:
    f.add(pdb(max_unavailable=max_unavailable))
    r = f.add(rs(7))
    f.add(pod("pod", owner=r))
    await f.sync()
    assert f.status() == first
    scaled = types.to_dict(r)
    scaled["spec"]["replicas"] = second[3]
    f.add(types.from_dict(scaled, apps_v1.ReplicaSet))
    await f.sync()
    assert f.status() == second


async def test_naked_pod_and_unmanaged_events(f: Fixture) -> None:
    """TestNakedPod, TestStatusForUnmanagedPod, TestTotalUnmanagedPods: a percentage over a pod
    without a controller allows nothing, is no sync error, and says so in an event."""
    f.add(pdb(min_available="28%"))
    await f.sync()
    assert f.allowed() == 0
    p = f.add(pod("unmanaged"))
    await f.sync()
    assert f.allowed() == 0 and f.condition()["reason"] == "InsufficientPods"    # no SyncFailed
    assert await finders.get_expected_scale(f.dc, [p]) == (0, ["unmanaged"])
    assert ("Warning", "UnmanagedPods",
            "Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string"
            "{foo: bar,},MatchExpressions:[]LabelSelectorRequirement{},}) were found to be unmanaged. As a result, "
            "the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To "
            "account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value."
            ) in f.recorder.events


async def test_replica_set(f: Fixture) -> None:
    """TestReplicaSet: the scale of a ReplicaSet without a Deployment counts."""
    f.add(pdb(min_available="20%"))
    f.add(pod("pod", owner=f.add(rs(10))))
    await f.sync()
    assert f.status() == (0, 1, 2, 10, {})


async def test_multiple_controllers(f: Fixture) -> None:
    """TestMultipleControllers: no controller -> nothing allowed; one RC -> 1."""
    f.add(pdb(min_available="1%"))
    for i in range(2):
        f.add(pod(f"pod {i}"))
    await f.sync()
    assert f.allowed() == 0
    c = f.add(rc(1, "rc 1"))
    for i in range(2):
        f.add(pod(f"pod {i}", owner=c))
    await f.sync()
    assert f.allowed() == 1


async def test_replication_controller(f: Fixture) -> None:
    """TestReplicationController: 34% of 3 rounds up to 2; a rogue pod without a controller
    still counts as healthy."""
    both = {"foo": "bar", "baz": "quux"}
    f.add(pdb(min_available="34%"))
    c = f.add(rc(3))
    await f.sync()
    assert f.status() == (0, 0, 0, 0, {})
    for i in range(3):
        f.add(pod(f"foobar {i}", owner=c, labels=both))
        await f.sync()
        assert f.status() == ((0, i + 1, 2, 3, {}) if i < 2 else (1, 3, 2, 3, {}))
    f.add(pod("rogue"))
    await f.sync()
    assert f.allowed() == 2


async def test_stateful_set_controller(f: Fixture) -> None:
    """TestStatefulSetController: the same with a StatefulSet."""
    f.add(pdb(min_available="34%"))
    ss = f.add(workload(apps_v1.StatefulSet, "apps/v1", "StatefulSet", 3))
    await f.sync()
    assert f.status() == (0, 0, 0, 0, {})
    for i in range(3):
        f.add(pod(f"foobar {i}", owner=ss))
        await f.sync()
        assert f.status() == ((0, i + 1, 2, 3, {}) if i < 2 else (1, 3, 2, 3, {}))


async def test_deployment(f: Fixture) -> None:
    """The Deployment's replicas count, not its ReplicaSet's (getPodDeployment)."""
    d = f.add(workload(apps_v1.Deployment, "apps/v1", "Deployment", 4))
    r = f.add(rs(2, owner=d))
    f.add(pdb(max_unavailable=1))
    for i in range(3):
        f.add(pod(f"p{i}", owner=r))
    await f.sync()
    assert f.status() == (0, 3, 3, 4, {})
    f.add(pod("p3", owner=r))
    await f.sync()
    assert f.status() == (1, 4, 3, 4, {})
    assert f.condition()["reason"] == "SufficientPods" and f.condition()["status"] == "True"


async def test_pdb_not_exist(f: Fixture) -> None:
    """TestPDBNotExist."""
    f.add(pdb(min_available="67%"))
    await f.dc.sync("default/notExist")
    assert f.written == {}


async def test_update_disrupted_pods(f: Fixture) -> None:
    """TestUpdateDisruptedPods: an approval leaves disruptedPods once its pod is being deleted, is
    gone, or 2 minutes have passed; the one left is rechecked when it would expire."""
    now = rfc3339(NOW)
    f.add(pdb(min_available=1, disruptedPods={"p1": now, "p2": rfc3339(NOW - 300), "p3": now, "notthere": now}))
    f.add(pod("p1", deletionTimestamp=now))
    f.add(pod("p2"))
    f.add(pod("p3"))
    await f.sync()
    assert f.status() == (0, 1, 1, 3, {"p3": now})
    f.clock.step(119)
    assert len(f.dc.recheck_queue) == 0
    f.clock.step(2)
    assert len(f.dc.recheck_queue) == 1


async def test_basic_finder_functions(f: Fixture) -> None:
    """TestBasicFinderFunctions: each finder answers for its own kind and UID only."""
    r, c = f.add(rs(10)), f.add(rc(12))
    ss = f.add(workload(apps_v1.StatefulSet, "apps/v1", "StatefulSet", 14))
    d = f.add(workload(apps_v1.Deployment, "apps/v1", "Deployment", 16, name="dep"))
    r_of_d = f.add(workload(apps_v1.ReplicaSet, "apps/v1", "ReplicaSet", 5, name="rs-of-d", owner=d))
    ref = lambda o: pod("x", owner=o).metadata.owner_references[0]          # noqa: E731
    assert (await finders.get_pod_replica_set(f.dc, ref(r), "default")).scale == 10
    assert await finders.get_pod_replica_set(f.dc, ref(r_of_d), "default") is None
    assert (await finders.get_pod_deployment(f.dc, ref(r_of_d), "default")).scale == 16
    assert (await finders.get_pod_replication_controller(f.dc, ref(c), "default")).scale == 12
    assert (await finders.get_pod_stateful_set(f.dc, ref(ss), "default")).scale == 14
    wrong_uid = ref(r)
    wrong_uid.uid = "other"
    assert await finders.get_pod_replica_set(f.dc, wrong_uid, "default") is None
    assert await finders.get_pod_stateful_set(f.dc, ref(r), "default") is None


async def test_scale_finder_without_scale_subresource(f: Fixture) -> None:
    """TestScaleFinderNoResource: a controller kind without /scale is an error."""
    ref = types.from_dict({"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "u", "controller": True},
                          meta_v1.OwnerReference)
    with pytest.raises(ValueError, match="configmaps does not implement the scale subresource"):
        await finders.get_scale_controller(f.dc, ref, "default")


async def test_unknown_controller_kind_fails_safe(f: Fixture) -> None:
    """A pod whose controller cannot be found fails the sync: the fail-safe status allows nothing,
    with the SyncFailed reason."""
    f.add(pdb(min_available="50%", disruptionsAllowed=3))
    ref = {"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "u", "controller": True}
    p = types.to_dict(pod("p"))
    p["metadata"]["ownerReferences"] = [ref]
    f.add(types.from_dict(p, core_v1.Pod))
    await f.sync()
    assert f.allowed() == 0
    assert f.condition()["reason"] == "SyncFailed"
    assert f.condition()["message"] == 'no matches for kind "Widget" in group "example.com"'


async def test_multiple_pdbs_for_a_pod_warn(f: Fixture) -> None:
    f.add(pdb(min_available=1))
    other = types.to_dict(pdb(min_available=1))
    other["metadata"]["name"] = "bar"
    f.add(types.from_dict(other, policy_v1.PodDisruptionBudget))
    f.dc.add_pod(pod("p"))
    assert [e[1] for e in f.recorder.events] == ["MultiplePodDisruptionBudgets"]
    assert len(f.dc.queue) == 1


async def test_no_status_write_when_nothing_changed(f: Fixture) -> None:
    f.add(pdb(min_available=1))
    f.add(pod("p"))
    await f.sync()
    first = f.written["default/foo"]
    f.written.clear()
    await f.sync()
    assert f.written == {}, "an up-to-date status is not written again"
    assert first["status"]["observedGeneration"] == 1


# --- stale DisruptionTarget conditions -----------------------------------------------------------

def doomed_pod(since: float, reason: str = "EvictionByEvictionAPI", **status: Any) -> Any:
    p = types.to_dict(pod("p"))
    p["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True", "reason": reason,
                                      "lastTransitionTime": rfc3339(since)})
    p["status"].update(status)
    return types.from_dict(p, core_v1.Pod)


@pytest.mark.parametrize("p,expect", [
    pytest.param(doomed_pod(NOW - 30), (True, 90.0), id="recent: cleaned in 90 s"),
    pytest.param(doomed_pod(NOW - 300), (True, 0.0), id="old: cleaned now"),
    pytest.param(doomed_pod(NOW, "TerminationByKubelet"), (False, 0.0), id="the kubelet's: kept"),
    pytest.param(doomed_pod(NOW, phase="Failed"), (False, 0.0), id="terminal pod: kept"),
    pytest.param(pod("p"), (False, 0.0), id="no condition"),
])
async def test_stale_disruption_condition(f: Fixture, p: Any, expect: Any) -> None:
    assert f.dc.non_terminating_pod_has_stale_disruption_condition(p) == expect


async def test_sync_stale_pod_disruption_resets_the_condition(f: Fixture) -> None:
    """Upstream: syncStalePodDisruption — the condition goes False, on the API server."""
    [stored] = await f.fake.seed({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                                 "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    d = types.to_dict(stored)
    d["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                                  "message": "Eviction API: evicting", "lastTransitionTime": rfc3339(NOW - 300)}]
    stored = await f.fake.core_v1().pods("default").update_status(types.from_dict(d, core_v1.Pod))
    f.add(stored)
    await f.dc.sync_stale_pod_disruption("default/p")
    got = types.to_dict(await f.fake.core_v1().pods("default").get("p"))
    [cond] = [c for c in got["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert cond["status"] == "False" and "reason" not in cond and cond["lastTransitionTime"] == rfc3339(NOW)


async def test_status_is_written_through_the_api(f: Fixture) -> None:
    """The real updater: the status lands on the budget through pods' API server."""
    [stored] = await f.fake.seed({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                 "metadata": {"name": "foo", "namespace": "default"},
                                 "spec": {"minAvailable": 1, "selector": {"matchLabels": FOO_BAR}}})
    f.add(stored)
    f.add(pod("a"))
    f.add(pod("b"))
    f.dc.get_updater = lambda: f.dc.write_pdb_status
    await f.dc.sync("default/foo")
    got = types.to_dict(await f.fake.policy_v1().poddisruptionbudgets("default").get("foo"))["status"]
    assert {k: got[k] for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods",
                                "observedGeneration")} == {"disruptionsAllowed": 1, "currentHealthy": 2,
                                                           "desiredHealthy": 1, "expectedPods": 2,
                                                           "observedGeneration": 1}
    assert got["conditions"] == [{"type": "DisruptionAllowed", "status": "True", "observedGeneration": 1,
                                  "lastTransitionTime": rfc3339(NOW), "reason": "SufficientPods", "message": ""}]
