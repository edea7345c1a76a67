"""The DaemonSet controller: upstream's daemon_controller_test.go and update_test.go cases
(TestNodeShouldRunDaemonPod's table, launches, deletions, failed pods, status, rolling updates
with maxUnavailable and maxSurge, OnDelete, history), on the real API in-process: nodes in the
node cache, the DaemonSet, pods and revisions written through the fake clientset and fed back
into the caches as the informers would deliver them."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import ObjectName, apps_v1, core_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.daemon import DaemonSetsController, new_pod, node_should_run_daemon_pod
from kubeplane.controller.daemon.update import find_updated_pods_on_node, updated_desired_node_counts
from kubeplane.controller.daemon.util import daemonset_util as util
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0
KEY = ObjectName("default", "foo")
LABELS = {"name": "simple-daemon", "type": "production"}


def ds_dict(*, node_selector: dict[str, str] | None = None, affinity: Any = None, tolerations: Any = None,
            strategy: dict[str, Any] | None = None, image: str = "foo/bar", host_network: bool = False,
            node_name: str | None = None, min_ready: int = 0) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    if host_network:
        spec["hostNetwork"] = True
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "foo", "namespace": "default"},
            "spec": {"selector": {"matchLabels": LABELS}, "minReadySeconds": min_ready,
                     "updateStrategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                     "template": {"metadata": {"labels": LABELS}, "spec": spec}}}


def new_ds(**kw: Any) -> apps_v1.DaemonSet:
    d = ds_dict(**kw)
    d["metadata"].update(uid="ds-uid", resourceVersion=str(id(d)))
    return types.from_dict(d, apps_v1.DaemonSet)


def node(name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         unschedulable: bool = False) -> core_v1.Node:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return types.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
                            "spec": spec, "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                           core_v1.Node)


# --- TestNodeShouldRunDaemonPod -------------------------------------------------------------------

AFFINITY_FOO = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchExpressions": [{"key": "type", "operator": "In", "values": ["foo"]}]}]}}}


@pytest.mark.parametrize("ds_kw,the_node,want", [
    pytest.param({}, node("n"), (True, True), id="simple"),
    pytest.param({"node_name": "n"}, node("n"), (True, True), id="nodeName matches"),
    pytest.param({"node_name": "other"}, node("n"), (False, False), id="nodeName does not match"),
    pytest.param({"node_selector": {"type": "foo"}}, node("n", labels={"type": "foo"}), (True, True),
                 id="nodeSelector matches"),
    pytest.param({"node_selector": {"type": "foo"}}, node("n"), (False, False), id="nodeSelector does not match"),
    pytest.param({"affinity": AFFINITY_FOO}, node("n", labels={"type": "foo"}), (True, True),
                 id="node affinity matches"),
    pytest.param({"affinity": AFFINITY_FOO}, node("n", labels={"type": "bar"}), (False, False),
                 id="node affinity does not match"),
    pytest.param({}, node("n", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]), (False, True),
                 id="untolerated NoSchedule: only existing pods stay"),
    pytest.param({}, node("n", taints=[{"key": "k", "value": "v", "effect": "NoExecute"}]), (False, False),
                 id="untolerated NoExecute: nothing stays"),
    pytest.param({"tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}]},
                 node("n", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]), (True, True),
                 id="tolerated taint"),
    pytest.param({}, node("n", taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]), (True, True),
                 id="PreferNoSchedule is no bar"),
    pytest.param({}, node("n", unschedulable=True, taints=[{"key": util.TAINT_NODE_UNSCHEDULABLE,
                                                             "effect": "NoSchedule"}]), (True, True),
                 id="unschedulable node: tolerated"),
    pytest.param({}, node("n", taints=[{"key": util.TAINT_NODE_NOT_READY, "effect": "NoExecute"},
                                       {"key": util.TAINT_NODE_UNREACHABLE, "effect": "NoExecute"}]), (True, True),
                 id="not-ready and unreachable: tolerated"),
    pytest.param({}, node("n", taints=[{"key": util.TAINT_NODE_DISK_PRESSURE, "effect": "NoSchedule"},
                                       {"key": util.TAINT_NODE_MEMORY_PRESSURE, "effect": "NoSchedule"},
                                       {"key": util.TAINT_NODE_PID_PRESSURE, "effect": "NoSchedule"}]),
                 (True, True), id="pressure taints: tolerated"),
    pytest.param({}, node("n", taints=[{"key": util.TAINT_NODE_NETWORK_UNAVAILABLE, "effect": "NoSchedule"}]),
                 (False, True), id="network-unavailable: not tolerated without hostNetwork"),
    pytest.param({"host_network": True},
                 node("n", taints=[{"key": util.TAINT_NODE_NETWORK_UNAVAILABLE, "effect": "NoSchedule"}]),
                 (True, True), id="network-unavailable: tolerated with hostNetwork"),
])
def test_node_should_run_daemon_pod(ds_kw: dict[str, Any], the_node: core_v1.Node, want: tuple[bool, bool]) -> None:
    """TestNodeShouldRunDaemonPod"""
    assert node_should_run_daemon_pod(the_node, new_ds(**ds_kw)) == want


def test_new_pod_tolerations() -> None:
    """NewPod / AddOrUpdateDaemonPodTolerations: the six (seven with hostNetwork) tolerations,
    a user's toleration of the same identity replaced, not duplicated."""
    pod = new_pod(new_ds(tolerations=[{"key": util.TAINT_NODE_NOT_READY, "operator": "Exists",
                                       "effect": "NoExecute", "tolerationSeconds": 5}]), "n")
    got = [(t.key, t.operator, t.effect, t.toleration_seconds) for t in pod.spec.tolerations]
    assert got == [(util.TAINT_NODE_NOT_READY, "Exists", "NoExecute", None),
                   (util.TAINT_NODE_UNREACHABLE, "Exists", "NoExecute", None),
                   (util.TAINT_NODE_DISK_PRESSURE, "Exists", "NoSchedule", None),
                   (util.TAINT_NODE_MEMORY_PRESSURE, "Exists", "NoSchedule", None),
                   (util.TAINT_NODE_PID_PRESSURE, "Exists", "NoSchedule", None),
                   (util.TAINT_NODE_UNSCHEDULABLE, "Exists", "NoSchedule", None)]
    assert pod.spec.node_name == "n" and pod.metadata.namespace == "default"
    host = new_pod(new_ds(host_network=True), "n")
    assert host.spec.tolerations[-1].key == util.TAINT_NODE_NETWORK_UNAVAILABLE


def test_replace_node_name_affinity() -> None:
    """TestReplaceDaemonSetPodNodeNameNodeAffinity: required terms are replaced by the node's
    metadata.name; preferred ones kept."""
    affinity = types.from_dict({"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {
            "matchExpressions": [{"key": "c", "operator": "Exists"}]}}]}}, core_v1.Affinity)
    got = types.to_dict(util.replace_daemon_set_pod_node_name_node_affinity(affinity, "node-1"))
    assert got["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}
    assert len(got["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]) == 1
    assert types.to_dict(util.replace_daemon_set_pod_node_name_node_affinity(None, "n")) == {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}}}


@pytest.mark.parametrize("strategy,desired,want", [
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}, 2, (0, 1), id="1"),
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}}, 5, (0, 3), id="50% up"),
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "20%"}}, 8, (2, 0),
                 id="surge 20% of 8 rounds up"),
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}, 3, (0, 1),
                 id="neither: one unavailable"),
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}, 0, (0, 0),
                 id="no nodes"),
])
def test_updated_desired_node_counts(strategy: dict[str, Any], desired: int, want: tuple[int, int]) -> None:
    """TestGetUnavailableNumbers"""
    ds = new_ds(strategy=strategy)

    class Dsc:
        pass
    node_pods: dict[str, list[core_v1.Pod]] = {}
    surge, unavailable, n = updated_desired_node_counts(Dsc(), ds, [node(f"n{i}") for i in range(desired)],  # type: ignore[arg-type]
                                                        node_pods)
    assert (surge, unavailable, n) == (*want, desired)
    assert sorted(node_pods) == sorted(f"n{i}" for i in range(desired))


# --- sync fixture --------------------------------------------------------------------------------

@dataclass
class Fixture:
    fake: FakeClientset
    factory: SharedInformerFactory
    dsc: DaemonSetsController
    recorder: FakeRecorder
    clock: FakeClock

    def add_nodes(self, *nodes: core_v1.Node) -> None:
        for n in nodes:
            self.factory.core_v1().nodes().informer().get_indexer().update(n)

    async def create_ds(self, **kw: Any) -> apps_v1.DaemonSet:
        [ds] = await self.fake.seed(ds_dict(**kw))
        self.factory.apps_v1().daemonsets().informer().get_indexer().update(ds)
        return ds

    async def update_ds(self, **kw: Any) -> None:
        cur = types.to_dict(await self.fake.apps_v1().daemonsets("default").get("foo"))
        cur["spec"] = ds_dict(**kw)["spec"]
        self.fake.recorder.recording = False
        try:
            await self.fake.apps_v1().daemonsets("default").update(types.from_dict(cur, apps_v1.DaemonSet))
        finally:
            self.fake.recorder.recording = True
        await self.refresh()

    async def pods(self) -> list[core_v1.Pod]:
        return (await self.fake.core_v1().pods("default").list()).items or []

    async def refresh(self) -> None:
        """Deliver what is stored to the caches and the handlers, as the informers would."""
        pod_indexer = self.factory.core_v1().pods().informer().get_indexer()
        stored = {p.metadata.name: p for p in await self.pods()}
        for old in list(pod_indexer.list()):
            if old.metadata.name not in stored:
                pod_indexer.delete(old)
                self.dsc.delete_pod(old)
        for name, p in stored.items():
            known = pod_indexer.get_by_key(f"default/{name}")
            pod_indexer.update(p)
            if known is None:
                self.dsc.add_pod(p)
            else:
                self.dsc.update_pod(known, p)
        ds = await self.fake.apps_v1().daemonsets("default").get("foo")
        self.factory.apps_v1().daemonsets().informer().get_indexer().update(ds)
        hist = self.factory.apps_v1().controllerrevisions().informer().get_indexer()
        for h in list(hist.list()):
            hist.delete(h)
        for h in (await self.fake.apps_v1().controllerrevisions("default").list()).items or []:
            hist.add(h)

    async def sync(self) -> None:
        await self.dsc.sync_daemon_set(KEY)
        await self.refresh()

    async def run_pods(self, *, ready: bool = True) -> None:
        """Bind every unbound pod to its node and report it running (and ready)."""
        self.fake.recorder.recording = False
        try:
            for p in await self.pods():
                if not p.spec.node_name:
                    await self.fake.core_v1().pods("default").bind(p.metadata.name, util.get_target_node_name(p))
                    p = await self.fake.core_v1().pods("default").get(p.metadata.name)
                d = types.to_dict(p)
                if d.get("status", {}).get("phase") == "Running" and not ready:
                    continue
                d["status"] = {**d.get("status", {}), "phase": "Running", "conditions": [
                    {"type": "Ready", "status": "True" if ready else "False",
                     "lastTransitionTime": rfc3339(self.clock.now() - 100)}]}
                await self.fake.core_v1().pods("default").update_status(types.from_dict(d, core_v1.Pod))
        finally:
            self.fake.recorder.recording = True
        await self.refresh()

    async def kubelet_removes(self) -> None:
        """The kubelets finish the graceful deletions."""
        self.fake.recorder.recording = False
        for p in await self.pods():
            if p.metadata.deletion_timestamp is not None:
                await self.fake.core_v1().pods("default").delete(p.metadata.name, grace_period_seconds=0)
        self.fake.recorder.recording = True
        await self.refresh()

    async def fail_pod(self, name: str) -> None:
        p = types.to_dict(await self.fake.core_v1().pods("default").get(name))
        p["status"] = {**p.get("status", {}), "phase": "Failed"}
        self.fake.recorder.recording = False
        await self.fake.core_v1().pods("default").update_status(types.from_dict(p, core_v1.Pod))
        self.fake.recorder.recording = True
        await self.refresh()

    async def status(self) -> dict[str, Any]:
        return types.to_dict(await self.fake.apps_v1().daemonsets("default").get("foo")).get("status", {})

    def counts(self) -> tuple[int, int]:
        verbs = self.fake.verbs()
        return (verbs.count(("create", "pods", "")), verbs.count(("delete", "pods", "")))

    async def by_node(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for p in await self.pods():
            if p.metadata.deletion_timestamp is None:
                out.setdefault(util.get_target_node_name(p), []).append(
                    (p.metadata.labels or {}).get(util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY, ""))
        return out


@pytest.fixture
async def f() -> Fixture:
    clock = FakeClock(NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    dsc = DaemonSetsController(factory.apps_v1().daemonsets(), factory.apps_v1().controllerrevisions(),
                               factory.core_v1().pods(), factory.core_v1().nodes(), fake, clock=clock,
                               recorder=recorder)
    return Fixture(fake, factory, dsc, recorder, clock)


# --- daemon_controller_test.go ------------------------------------------------------------------

async def test_simple_daemon_set_launches_pods(f: Fixture) -> None:
    """TestSimpleDaemonSetLaunchesPods: one pod per node, pinned by node affinity (not
    nodeName: the scheduler binds it), labelled with the revision hash and template generation,
    with the daemon tolerations; a ControllerRevision records the template."""
    f.add_nodes(*(node(f"node-{i}") for i in range(5)))
    ds = await f.create_ds()
    await f.sync()
    assert f.counts() == (5, 0)
    pods = await f.pods()
    assert sorted(util.get_target_node_name(p) for p in pods) == [f"node-{i}" for i in range(5)]
    [rev] = (await f.fake.apps_v1().controllerrevisions("default").list()).items
    hash_ = rev.metadata.labels[util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY]
    assert rev.metadata.name == f"foo-{hash_}" and rev.revision == 1
    assert rev.metadata.owner_references[0].uid == ds.metadata.uid
    assert rev.data["spec"]["template"]["$patch"] == "replace"
    for p in pods:
        assert not p.spec.node_name
        assert p.metadata.labels == {**LABELS, util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY: hash_,
                                     util.DAEMON_SET_TEMPLATE_GENERATION_KEY: "1"}
        assert {t.key for t in p.spec.tolerations} >= {util.TAINT_NODE_NOT_READY, util.TAINT_NODE_UNSCHEDULABLE}
        [ref] = p.metadata.owner_references
        assert (ref.kind, ref.name, ref.controller) == ("DaemonSet", "foo", True)
    assert sorted(f.recorder.events)[0].startswith("Normal SuccessfulCreate Created pod: foo-")
    st = await f.status()
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st["observedGeneration"]) == (5, 0, 1)


async def test_burst_and_expectations(f: Fixture) -> None:
    """At most burstReplicas creates per sync; nothing more until they are observed."""
    f.dsc.burst_replicas = 3
    f.add_nodes(*(node(f"node-{i}") for i in range(5)))
    await f.create_ds()
    await f.dsc.sync_daemon_set(KEY)
    assert f.counts() == (3, 0)
    await f.dsc.sync_daemon_set(KEY)               # creates not observed: status only
    assert f.counts() == (3, 0)
    await f.refresh()
    await f.sync()
    assert f.counts() == (5, 0)


async def test_selector_and_tainted_nodes(f: Fixture) -> None:
    """TestSelectorDaemonLaunchesPods, TestTaintedNodeDaemonDoesNotLaunchIntolerantPod,
    TestNotReadyNodeDaemonDoesLaunchPod: only matching, tolerable nodes get a pod."""
    f.add_nodes(node("a", labels={"disk": "ssd"}), node("b"),
                node("c", labels={"disk": "ssd"}, taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
                node("d", labels={"disk": "ssd"}, taints=[{"key": util.TAINT_NODE_NOT_READY, "effect": "NoExecute"}]))
    await f.create_ds(node_selector={"disk": "ssd"})
    await f.sync()
    assert sorted(await f.by_node()) == ["a", "d"]


async def test_deals_with_existing_pods_and_misscheduled(f: Fixture) -> None:
    """TestDealsWithExistingPods / TestSelectorDaemonDeletesUnselectedPods: a node with two
    pods keeps the oldest; a node the selector no longer picks loses its pod."""
    f.add_nodes(node("a", labels={"disk": "ssd"}), node("b", labels={"disk": "ssd"}))
    await f.create_ds(node_selector={"disk": "ssd"})
    await f.sync()
    await f.run_pods()
    # A second pod on a, made by hand with the DaemonSet's template (an orphan it adopts).
    [pa] = [p for p in await f.pods() if p.spec.node_name == "a"]
    twin = types.to_dict(pa)
    twin["metadata"] = {"name": "twin", "namespace": "default", "labels": pa.metadata.labels}
    twin.pop("status", None)
    f.clock.step(10)
    await f.fake.seed(twin)
    f.add_nodes(node("b"))                         # b loses its label
    await f.refresh()
    f.fake.clear_actions()
    await f.sync()
    deleted = [a.name for a in f.fake.actions if a.verb == "delete" and a.resource == "pods"]
    assert "twin" in deleted and len(deleted) == 2
    st = await f.status()                          # counted before the deletions are observed
    assert (st["desiredNumberScheduled"], st.get("numberMisscheduled", 0)) == (1, 1)
    await f.kubelet_removes()
    await f.sync()
    st = await f.status()
    assert (st["desiredNumberScheduled"], st.get("numberMisscheduled", 0)) == (1, 0)


async def test_failed_pod_killed_with_backoff(f: Fixture) -> None:
    """TestDaemonKillFailedPods / TestDaemonKillFailedPodsBackoff: a failed pod is deleted with
    a FailedDaemonPod event; the next failure on that node within the back-off waits."""
    f.add_nodes(node("a"))
    await f.create_ds()
    await f.sync()
    await f.run_pods()
    [p] = await f.pods()
    await f.fail_pod(p.metadata.name)
    f.fake.clear_actions()
    await f.sync()
    assert f.counts() == (0, 1)
    assert any(e.startswith(f"Warning FailedDaemonPod Found failed daemon pod default/{p.metadata.name} on node a, "
                            "will try to kill it") for e in f.recorder.events)
    await f.sync()                                 # manage recreates it
    await f.run_pods()
    [p2] = await f.pods()
    await f.fail_pod(p2.metadata.name)
    f.fake.clear_actions()
    await f.sync()
    assert f.counts() == (0, 0)                    # in back-off (1 s)
    f.clock.step(2)
    await f.sync()
    assert f.counts() == (0, 1)


async def test_succeeded_pod_deleted(f: Fixture) -> None:
    f.add_nodes(node("a"))
    await f.create_ds()
    await f.sync()
    await f.run_pods()
    [p] = await f.pods()
    d = types.to_dict(p)
    d["status"]["phase"] = "Succeeded"
    await f.fake.core_v1().pods("default").update_status(types.from_dict(d, core_v1.Pod))
    await f.refresh()
    f.fake.clear_actions()
    await f.sync()
    assert f.counts() == (0, 1)
    assert any(e.startswith("Normal SucceededDaemonPod") for e in f.recorder.events)


async def test_status_counts(f: Fixture) -> None:
    """TestNumberReadyStatus / TestObservedGeneration: ready, available, updated, misscheduled."""
    f.add_nodes(node("a"), node("b"), node("c"))
    await f.create_ds()
    await f.sync()
    await f.run_pods(ready=False)
    await f.sync()
    st = await f.status()
    assert (st["desiredNumberScheduled"], st["currentNumberScheduled"], st.get("numberReady", 0),
            st["updatedNumberScheduled"], st["numberUnavailable"]) == (3, 3, 0, 3, 3)
    await f.run_pods()
    await f.sync()
    st = await f.status()
    assert (st["numberReady"], st["numberAvailable"], st.get("numberUnavailable", 0)) == (3, 3, 0)
    f.add_nodes(node("c", taints=[{"key": "evict", "effect": "NoExecute"}]))
    await f.sync()
    await f.sync()
    assert sorted(await f.by_node()) == ["a", "b"]


async def test_empty_selector_warns(f: Fixture) -> None:
    f.add_nodes(node("a"))
    ds = new_ds()
    ds.spec.selector = types.from_dict({}, type(ds.spec.selector))
    f.factory.apps_v1().daemonsets().informer().get_indexer().update(ds)
    await f.dsc.sync_daemon_set(KEY)
    assert f.recorder.events == ["Warning SelectingAll This daemon set is selecting all pods. "
                                 "A non-empty selector is required."]
    assert f.fake.verbs() == []


# --- handlers --------------------------------------------------------------------------------------

async def test_node_handlers(f: Fixture) -> None:
    """TestUpdateNode / addNode: a node wakes the DaemonSet only when its verdict changes."""
    await f.create_ds(node_selector={"disk": "ssd"})
    queued = lambda: f.dsc.queue.len()   # noqa: E731
    f.dsc.add_node(node("x"))
    assert queued() == 0
    f.dsc.add_node(node("y", labels={"disk": "ssd"}))
    assert queued() == 1
    f.dsc.queue._queue.clear()
    f.dsc.queue._dirty.clear()
    f.dsc.update_node(node("y", labels={"disk": "ssd"}), node("y", labels={"disk": "ssd", "z": "1"}))
    assert queued() == 0
    f.dsc.update_node(node("y", labels={"disk": "ssd"}),
                      node("y", labels={"disk": "ssd"}, taints=[{"key": "k", "effect": "NoSchedule"}]))
    assert queued() == 1


# --- update_test.go -----------------------------------------------------------------------------

async def roll(f: Fixture, max_syncs: int = 40, *, ready: bool = True) -> list[tuple[int, int]]:
    """Sync until nothing changes, pods run (and turn ready) between syncs; the (creates,
    deletes) of each sync."""
    steps = []
    for _ in range(max_syncs):
        f.fake.clear_actions()
        await f.sync()
        c = f.counts()
        await f.kubelet_removes()
        await f.run_pods(ready=ready)
        if c == (0, 0):
            if steps and steps[-1] == (0, 0):
                break
        steps.append(c)
    while steps and steps[-1] == (0, 0):
        steps.pop()
    return steps


async def test_rolling_update_max_unavailable(f: Fixture) -> None:
    """TestDaemonSetUpdatesPods: 5 nodes, maxUnavailable 2: each round deletes at most 2 old
    pods, manage replaces them; in the end every pod has the new hash, the new revision is 2."""
    f.add_nodes(*(node(f"node-{i}") for i in range(5)))
    await f.create_ds(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}})
    await roll(f)
    await f.update_ds(image="foo/bar2", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}})
    steps = await roll(f)
    assert all(d <= 2 for _, d in steps) and sum(d for _, d in steps) == 5 and sum(c for c, _ in steps) == 5
    revs = sorted((r.revision, r.metadata.labels[util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY])
                  for r in (await f.fake.apps_v1().controllerrevisions("default").list()).items)
    assert [r for r, _ in revs] == [1, 2]
    assert all(hashes == [revs[-1][1]] for hashes in (await f.by_node()).values())
    st = await f.status()
    assert (st["updatedNumberScheduled"], st["numberAvailable"]) == (5, 5)


async def test_rolling_update_not_ready_new_pods_stall(f: Fixture) -> None:
    """TestDaemonSetUpdatesWhenNewPosIsNotReady: new pods that never turn ready hold the update
    at maxUnavailable."""
    f.add_nodes(*(node(f"node-{i}") for i in range(5)))
    await f.create_ds()
    await roll(f)
    await f.update_ds(image="foo/bar2")
    await roll(f, ready=False)
    hashes = [h for hs in (await f.by_node()).values() for h in hs]
    assert len(set(hashes)) == 2 and len(hashes) == 5


async def test_rolling_update_max_surge(f: Fixture) -> None:
    """TestDaemonSetUpdatesPodsWithMaxSurge: the new pod starts beside the old one (at most
    maxSurge nodes at a time) and the old one goes once the new one is available."""
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 2}}
    f.add_nodes(*(node(f"node-{i}") for i in range(5)))
    await f.create_ds(strategy=strategy)
    await roll(f)
    await f.update_ds(image="foo/bar2", strategy=strategy)
    f.fake.clear_actions()
    await f.sync()
    assert f.counts() == (2, 0)
    assert sorted(len(v) for v in (await f.by_node()).values()) == [1, 1, 1, 2, 2]
    await roll(f)
    by_node = await f.by_node()
    assert all(len(v) == 1 for v in by_node.values()) and len({v[0] for v in by_node.values()}) == 1


async def test_on_delete_strategy(f: Fixture) -> None:
    """OnDelete: a template change replaces nothing until a pod is deleted by hand."""
    f.add_nodes(node("a"), node("b"))
    await f.create_ds(strategy={"type": "OnDelete"})
    await roll(f)
    await f.update_ds(image="foo/bar2", strategy={"type": "OnDelete"})
    assert await roll(f) == []
    [p, _] = sorted(await f.pods(), key=lambda p: p.spec.node_name)
    await f.fake.core_v1().pods("default").delete(p.metadata.name)
    await f.refresh()
    await roll(f)
    hashes = await f.by_node()
    assert hashes["a"] != hashes["b"]


async def test_history_rollback_and_cleanup(f: Fixture) -> None:
    """constructHistory: a rollback to an old template renumbers its revision instead of making
    a new one; revisionHistoryLimit prunes old revisions no pod runs."""
    f.add_nodes(node("a"))
    await f.create_ds()
    await roll(f)
    await f.update_ds(image="v2")
    await roll(f)
    await f.update_ds()                            # back to foo/bar
    await roll(f)
    revs = {r.metadata.labels[util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY]: r.revision
            for r in (await f.fake.apps_v1().controllerrevisions("default").list()).items}
    assert sorted(revs.values()) == [2, 3] and len(revs) == 2
    ds = types.to_dict(await f.fake.apps_v1().daemonsets("default").get("foo"))
    ds["spec"]["revisionHistoryLimit"] = 0
    await f.fake.apps_v1().daemonsets("default").update(types.from_dict(ds, apps_v1.DaemonSet))
    await f.refresh()
    await f.sync()
    assert [r.revision for r in (await f.fake.apps_v1().controllerrevisions("default").list()).items] == [3]


def test_find_updated_pods_on_node() -> None:
    """TestFindUpdatedPodsOnNode"""
    ds = new_ds()

    def p(name: str, hash_: str, deleted: bool = False) -> core_v1.Pod:
        meta: dict[str, Any] = {"name": name, "labels": {util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY: hash_}}
        if deleted:
            meta["deletionTimestamp"] = rfc3339(NOW)
        return types.from_dict({"metadata": meta}, core_v1.Pod)
    new, old, ok = find_updated_pods_on_node(ds, [p("n", "h"), p("o", "x"), p("gone", "x", True)], "h")
    assert (new.metadata.name, old.metadata.name, ok) == ("n", "o", True)
    assert find_updated_pods_on_node(ds, [p("n1", "h"), p("n2", "h")], "h")[2] is False
    assert find_updated_pods_on_node(ds, [p("o1", "x"), p("o2", "y")], "h")[2] is False
    assert find_updated_pods_on_node(ds, None, "h") == (None, None, True)



async def test_one_claim_per_quiet_sync(f: Fixture) -> None:
    """A sync that writes no pod claims the DaemonSet's pods once (manage, rolling update and
    status share the node->pods map); one that writes reads them again after."""
    f.add_nodes(node("a"), node("b"))
    await f.create_ds()
    await roll(f)
    calls = 0
    real = f.dsc.get_daemon_pods

    async def counting(ds: Any) -> Any:
        nonlocal calls
        calls += 1
        return await real(ds)
    f.dsc.get_daemon_pods = counting  # type: ignore[method-assign]
    await f.sync()
    assert calls == 1
    f.add_nodes(node("c"))
    calls = 0
    await f.sync()                                 # creates on c: status reads again
    assert calls == 2
