"""The node lifecycle controller on a FakeClock, against the in-process API and real informers.

Each pass is driven by hand (monitor_node_health, do_no_execute_tainting_pass, the taint
manager's process_pending) so the assertions can sit between passes; the last tests run the
whole controller with run() and only move the clock.
Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller_test.go (TestMonitorNodeHealth*,
TestApplyNoExecuteTaints, TestSwapUnreachableNotReadyTaints, TestTaintsNodeByCondition,
TestComputeZoneState ...), tainteviction/taint_eviction_test.go.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest

from kubeplane.api import errors, types
from kubeplane.api.types import core_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller.nodelifecycle import NodeLifecycleController, NodeLifecycleOptions
from kubeplane.controller.nodelifecycle import node_lifecycle_controller as nlc_mod
from kubeplane.controller.replicaset import ReplicaSetController
from kubeplane.utils.clock import FakeClock, rfc3339, rfc3339_micro

T0 = 1_700_000_000.0
UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"


async def settle() -> None:
    """Let watch events reach the informers and spawned tasks run (no wall-clock time passes)."""
    for _ in range(60):
        await asyncio.sleep(0)


@dataclass
class Fixture:
    fake: FakeClientset
    clock: FakeClock
    factory: SharedInformerFactory
    nlc: NodeLifecycleController
    recorder: FakeRecorder

    # --- the kubelet's side ---------------------------------------------------------------------

    async def add_node(self, name: str, *, ready: str = "True", labels: dict[str, str] | None = None) -> None:
        now = rfc3339(self.clock.now())
        conds = [{"type": "Ready", "status": ready, "reason": "KubeletReady",
                  "message": "kubelet is posting ready status",
                  "lastHeartbeatTime": now, "lastTransitionTime": now}]
        for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            conds.append({"type": t, "status": "False", "reason": f"KubeletHas{t}", "lastHeartbeatTime": now,
                          "lastTransitionTime": now})
        await self.fake.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}},
                              "status": {"conditions": conds}})
        await self.fake.seed({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                              "metadata": {"name": name, "namespace": "kube-node-lease"},
                              "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                                       "renewTime": rfc3339_micro(self.clock.now())}})

    async def renew_lease(self, name: str) -> None:
        leases = self.fake.coordination_v1().leases("kube-node-lease")
        lease = await leases.get(name)
        lease.spec.renew_time = rfc3339_micro(self.clock.now())
        await leases.update(lease)

    async def post_ready(self, name: str, status: str) -> None:
        """The kubelet posts its Ready condition (heartbeat now; transition now if it changed)."""
        node = await self.fake.core_v1().nodes().get(name)
        now = rfc3339(self.clock.now())
        for c in node.status.conditions:
            if c.type == "Ready":
                if c.status != status:
                    c.last_transition_time = now
                c.status, c.last_heartbeat_time = status, now
                c.reason, c.message = ("KubeletReady", "ok") if status == "True" else ("KubeletNotReady", "down")
            else:
                c.status, c.last_heartbeat_time = "False", now
        await self.fake.core_v1().nodes().update_status(node)

    async def add_pod(self, name: str, node: str, *, tolerations: list[dict[str, Any]] | None = None,
                      ready: bool = False) -> core_v1.Pod:
        spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}
        if tolerations is not None:
            spec["tolerations"] = tolerations
        [pod] = await self.fake.seed({"apiVersion": "v1", "kind": "Pod",
                                      "metadata": {"name": name, "namespace": "default"}, "spec": spec})
        if ready:
            st = types.to_dict(pod)
            st["status"]["phase"] = "Running"
            st["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
            pod = await self.fake.core_v1().pods("default").update_status(types.from_dict(st, core_v1.Pod))
        return pod

    # --- reading the results ----------------------------------------------------------------------

    async def node(self, name: str) -> core_v1.Node:
        return await self.fake.core_v1().nodes().get(name)

    async def condition(self, name: str, cond_type: str = "Ready") -> core_v1.NodeCondition:
        node = await self.node(name)
        return next(c for c in node.status.conditions if c.type == cond_type)

    async def taints(self, name: str) -> list[tuple[str, str, str | None]]:
        node = await self.node(name)
        return sorted((t.key, t.effect, t.time_added) for t in (node.spec.taints if node.spec else None) or ())

    async def pod_deleting(self, name: str) -> bool:
        try:
            pod = await self.fake.core_v1().pods("default").get(name)
        except errors.NotFound:
            return True
        return pod.metadata.deletion_timestamp is not None

    # --- driving the controller --------------------------------------------------------------------

    async def pass_(self) -> None:
        """One monitor pass, then everything it triggers: the NoExecute tainting pass, the
        NoSchedule workers' queue, the taint manager's queues."""
        await settle()
        await self.nlc.monitor_node_health()
        await settle()
        await self.nlc.do_no_execute_tainting_pass()
        await self.drain()

    async def drain(self) -> None:
        await settle()
        while self.nlc.node_update_queue.len():
            name, _ = await self.nlc.node_update_queue.get()
            await self.nlc.do_no_schedule_tainting_pass(name)
            await self.nlc.reconcile_node_labels(name)
            self.nlc.node_update_queue.done(name)
            await settle()
        assert self.nlc.taint_manager is not None
        while await self.nlc.taint_manager.process_pending():
            pass
        await settle()

    async def step(self, seconds: float) -> None:
        self.clock.step(seconds)
        await settle()


async def new_fixture(**options: Any) -> Fixture:
    # The timelines in these tests are written for a 50 s grace period (upstream 1.32+); the
    # 40 s default has its own test below.
    options.setdefault("node_monitor_grace_period", 50.0)
    clock = FakeClock(start=T0)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    nlc = NodeLifecycleController(factory.core_v1().nodes(), factory.core_v1().pods(),
                                  factory.coordination_v1().leases(), fake, clock=clock, recorder=recorder,
                                  options=NodeLifecycleOptions(**options))
    factory.start()
    await factory.wait_for_cache_sync()
    return Fixture(fake, clock, factory, nlc, recorder)


@pytest.fixture
async def f() -> Any:
    fx = await new_fixture()
    yield fx
    if fx.nlc.taint_manager is not None:
        await fx.nlc.taint_manager.taint_eviction_queue.shutdown()
    await fx.factory.shutdown()


async def heartbeat_all(f: Fixture, *names: str) -> None:
    for n in names:
        await f.renew_lease(n)


# --- health: Unknown after the grace period ------------------------------------------------------

async def test_default_grace_period_is_40s() -> None:
    """40 s as upstream through 1.31 (1.32 raised it to 50 s; see NodeLifecycleOptions)."""
    opts = NodeLifecycleOptions()
    assert (opts.node_monitor_period, opts.node_monitor_grace_period,
            opts.node_startup_grace_period) == (5.0, 40.0, 60.0)
    assert (opts.node_eviction_rate, opts.secondary_node_eviction_rate, opts.large_cluster_size_threshold,
            opts.unhealthy_zone_threshold) == (0.1, 0.01, 50, 0.55)


async def test_default_grace_period_marks_a_silent_node_unknown_after_40s() -> None:
    f = await new_fixture(node_monitor_grace_period=NodeLifecycleOptions().node_monitor_grace_period)
    await f.add_node("n1")
    await f.add_node("n2")
    await f.pass_()                                  # t0: both observed
    for _ in range(8):                               # t0+40: n1 silent for exactly the grace period
        await f.step(5)
        await f.renew_lease("n2")
        await f.pass_()
    assert (await f.condition("n1")).status == "True"
    await f.step(5)
    await f.renew_lease("n2")
    await f.pass_()                                  # t0+45: past it
    assert (await f.condition("n1")).status == "Unknown"
    assert (await f.condition("n2")).status == "True"


async def test_node_with_renewed_lease_stays_ready(f: Fixture) -> None:
    """The kubelet posts status once, then only renews its lease: that is enough."""
    await f.add_node("n1")
    for _ in range(30):                              # 150 s, far past the grace period
        await f.pass_()
        await f.step(5)
        await f.renew_lease("n1")
    assert (await f.condition("n1")).status == "True"
    assert await f.taints("n1") == []
    assert f.fake.verbs() == [("update", "leases", "")] * 30     # the controller wrote nothing


async def test_stale_node_goes_unknown_after_grace_period_not_before(f: Fixture) -> None:
    await f.add_node("n1")
    await f.add_node("n2")
    await f.pass_()                                  # t0: both observed, probe timestamps = t0
    assert f.recorder.events == ["Normal RegisteredNode Node n1 event: Registered Node n1 in Controller",
                                 "Normal RegisteredNode Node n2 event: Registered Node n2 in Controller"]
    for _ in range(10):                              # t0+5 ... t0+50: n1 silent for exactly 50 s
        await f.step(5)
        await f.renew_lease("n2")
        await f.pass_()
    assert (await f.condition("n1")).status == "True"        # not *after* t0+50 yet
    await f.step(5)
    await f.renew_lease("n2")
    await f.pass_()                                  # t0+55
    ready = await f.condition("n1")
    assert (ready.status, ready.reason, ready.message) == ("Unknown", "NodeStatusUnknown",
                                                           "Kubelet stopped posting node status.")
    assert ready.last_transition_time == rfc3339(T0 + 55)
    assert ready.last_heartbeat_time == rfc3339(T0)           # heartbeats are the kubelet's to write
    for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
        c = await f.condition("n1", t)
        assert (c.status, c.reason) == ("Unknown", "NodeStatusUnknown")
    assert (await f.condition("n2")).status == "True"
    assert "Normal NodeNotReady Node n1 status is now: NodeNotReady" in f.recorder.events


async def test_node_that_never_posted_status_gets_never_updated_conditions(f: Fixture) -> None:
    """No Ready condition: the startup grace period (60 s) from creation applies."""
    await f.fake.seed({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bare"}})
    await f.add_node("n2")
    await f.pass_()
    await f.step(60)
    await heartbeat_all(f, "n2")
    await f.pass_()
    assert (await f.node("bare")).status.conditions is None        # not touched yet (status: Go's zero values)
    await f.step(1)
    await heartbeat_all(f, "n2")
    await f.pass_()
    ready = await f.condition("bare")
    assert (ready.status, ready.reason, ready.message) == ("Unknown", "NodeStatusNeverUpdated",
                                                           "Kubelet never posted node status.")


async def test_shortened_grace_period() -> None:
    f = await new_fixture(node_monitor_period=1.0, node_monitor_grace_period=4.0)
    try:
        await f.add_node("n1")
        await f.add_node("n2")
        await f.pass_()
        for _ in range(4):
            await f.step(1)
            await f.renew_lease("n2")
            await f.pass_()
        assert (await f.condition("n1")).status == "True"
        await f.step(1)
        await f.renew_lease("n2")
        await f.pass_()
        assert (await f.condition("n1")).status == "Unknown"
    finally:
        await f.factory.shutdown()


# --- taints ----------------------------------------------------------------------------------------

async def kill_n1(f: Fixture, *healthy: str) -> None:
    """n1 stops at t0; the others keep renewing. Returns at t0+60 with n1 tainted."""
    await f.pass_()
    for _ in range(12):
        await f.step(5)
        await heartbeat_all(f, *healthy)
        await f.pass_()


async def test_unreachable_node_is_tainted(f: Fixture) -> None:
    await f.add_node("n1")
    await f.add_node("n2")
    await f.pass_()
    for _ in range(11):                                # t0+55: Unknown written
        await f.step(5)
        await heartbeat_all(f, "n2")
        await f.pass_()
    # The pass that writes Unknown still observed Ready=True: only the NoSchedule taint so far.
    assert await f.taints("n1") == [(UNREACHABLE, "NoSchedule", rfc3339(T0 + 55))]
    await f.step(5)
    await heartbeat_all(f, "n2")
    await f.pass_()                                    # t0+60: observed Unknown -> queued, tainted
    assert await f.taints("n1") == [(UNREACHABLE, "NoExecute", rfc3339(T0 + 60)),
                                    (UNREACHABLE, "NoSchedule", rfc3339(T0 + 55))]
    assert await f.taints("n2") == []
    await f.step(5)
    await heartbeat_all(f, "n2")
    await f.pass_()                                    # no re-taint: timeAdded stays
    assert (await f.taints("n1"))[0] == (UNREACHABLE, "NoExecute", rfc3339(T0 + 60))


async def test_recovered_node_loses_taints_and_evictions_are_cancelled(f: Fixture) -> None:
    await f.add_node("n1")
    await f.add_node("n2")
    await f.add_pod("p", "n1")                         # tolerates unreachable for 300 s (admission)
    await kill_n1(f, "n2")
    assert len(await f.taints("n1")) == 2
    await f.step(100)
    await f.renew_lease("n1")
    await f.renew_lease("n2")
    await f.post_ready("n1", "True")
    await f.pass_()                                    # observed Ready=True -> untainted
    assert await f.taints("n1") == []
    assert (await f.condition("n1")).status == "True"
    assert "Normal TaintManagerEviction Cancelling deletion of Pod default/p" in f.recorder.events
    await f.step(300)
    await f.drain()
    assert not await f.pod_deleting("p")


async def test_not_ready_node_gets_not_ready_taints_swapped_to_unreachable(f: Fixture) -> None:
    """Upstream: TestSwapUnreachableNotReadyTaints"""
    await f.add_node("n1")
    await f.add_node("n2")
    await f.pass_()
    await f.step(5)
    await f.post_ready("n1", "False")                  # the kubelet says NotReady
    await heartbeat_all(f, "n1", "n2")
    await f.pass_()                                    # observed False -> queued -> tainted
    assert await f.taints("n1") == [(NOT_READY, "NoExecute", rfc3339(T0 + 5)),
                                    (NOT_READY, "NoSchedule", rfc3339(T0 + 5))]
    for _ in range(11):                                # then it goes silent: Unknown at t0+60
        await f.step(5)
        await heartbeat_all(f, "n2")
        await f.pass_()
    assert (await f.condition("n1")).status == "Unknown"
    await f.step(5)
    await heartbeat_all(f, "n2")
    await f.pass_()                                    # observed Unknown with not-ready taint: swapped at once
    assert await f.taints("n1") == [(UNREACHABLE, "NoExecute", rfc3339(T0 + 65)),
                                    (UNREACHABLE, "NoSchedule", rfc3339(T0 + 60))]


async def test_tainting_is_rate_limited_per_zone(f: Fixture) -> None:
    """Two of four nodes die together: 0.1 nodes/s with burst 1 -> the second taint 10 s later."""
    for n in ("n1", "n2", "n3", "n4"):
        await f.add_node(n)
    await f.pass_()
    for _ in range(12):
        await f.step(5)
        await heartbeat_all(f, "n3", "n4")
        await f.pass_()
    async def no_execute_tainted() -> list[str]:
        return [n for n in ("n1", "n2", "n3", "n4") if any(t[1] == "NoExecute" for t in await f.taints(n))]

    assert len(await no_execute_tainted()) == 1        # t0+60: the zone's one token
    await f.step(5)
    await heartbeat_all(f, "n3", "n4")
    await f.pass_()
    assert len(await no_execute_tainted()) == 1        # t0+65: half a token
    await f.step(5)
    await heartbeat_all(f, "n3", "n4")
    await f.pass_()
    assert await no_execute_tainted() == ["n1", "n2"]  # t0+70


async def test_whole_cluster_down_is_not_tainted(f: Fixture) -> None:
    """Every node of every zone not Ready: master disruption mode, no NoExecute taints."""
    await f.add_node("n1")
    await f.pass_()
    for _ in range(14):
        await f.step(5)
        await f.pass_()
    assert (await f.condition("n1")).status == "Unknown"
    assert [t for t in await f.taints("n1") if t[1] == "NoExecute"] == []
    assert f.nlc.zone_states == {"": nlc_mod.STATE_FULL_DISRUPTION}


async def test_no_schedule_taints_follow_conditions_and_cordon(f: Fixture) -> None:
    """Upstream: TestTaintsNodeByCondition"""
    await f.add_node("n1")
    await f.drain()
    node = await f.node("n1")
    node.status.conditions[1].status = "True"           # MemoryPressure
    await f.fake.core_v1().nodes().update_status(node)
    await f.fake.core_v1().nodes().patch("n1", {"spec": {"unschedulable": True}}, "merge")
    await f.drain()
    assert [(k, e) for k, e, _ in await f.taints("n1")] == [("node.kubernetes.io/memory-pressure", "NoSchedule"),
                                                           ("node.kubernetes.io/unschedulable", "NoSchedule")]
    await f.fake.core_v1().nodes().patch("n1", {"spec": {"unschedulable": False}}, "merge")
    await f.drain()
    assert [(k, e) for k, e, _ in await f.taints("n1")] == [("node.kubernetes.io/memory-pressure", "NoSchedule")]


async def test_beta_os_arch_labels_are_reconciled(f: Fixture) -> None:
    await f.add_node("n1", labels={"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                                   "beta.kubernetes.io/arch": "arm64"})
    await f.drain()
    labels = (await f.node("n1")).metadata.labels
    assert labels["beta.kubernetes.io/os"] == "linux" and labels["beta.kubernetes.io/arch"] == "amd64"


# --- pods ---------------------------------------------------------------------------------------------

async def test_pods_evicted_after_toleration_seconds(f: Fixture) -> None:
    await f.add_node("n1")
    await f.add_node("n2")
    await f.add_pod("default-300", "n1")              # admission: unreachable/not-ready for 300 s
    await f.add_pod("short", "n1", tolerations=[{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                                                 "tolerationSeconds": 60}])
    await f.add_pod("forever", "n1", tolerations=[{"operator": "Exists"}])
    await f.add_pod("elsewhere", "n2")
    await kill_n1(f, "n2")                            # unreachable:NoExecute seen at t0+60
    assert not any([await f.pod_deleting(p) for p in ("default-300", "short", "forever", "elsewhere")])
    await f.step(59)
    await f.drain()
    assert not await f.pod_deleting("short")
    await f.step(1)
    await f.drain()                                   # t0+120
    assert await f.pod_deleting("short")
    await f.step(238)
    await f.drain()
    assert not await f.pod_deleting("default-300")
    await f.step(1)
    await f.drain()                                   # t0+60+300 = t0+360 (239 + 60 + 1)
    assert not await f.pod_deleting("default-300")
    await f.step(1)
    await f.drain()
    assert await f.pod_deleting("default-300")
    assert not await f.pod_deleting("forever") and not await f.pod_deleting("elsewhere")
    pod = await f.fake.core_v1().pods("default").get("default-300")
    cond = next(c for c in pod.status.conditions if c.type == "DisruptionTarget")
    assert (cond.status, cond.reason, cond.message) == ("True", "DeletionByTaintManager",
                                                        "Taint manager: deleting due to NoExecute taint")
    assert pod.metadata.deletion_grace_period_seconds == 30          # graceful: the kubelet would finish
    evictions = [e for e in f.recorder.events if "TaintManagerEviction" in e]
    assert evictions == ["Normal TaintManagerEviction Marking for deletion Pod default/short",
                         "Normal TaintManagerEviction Marking for deletion Pod default/default-300"]


async def test_pod_not_tolerating_a_taint_is_deleted_at_once(f: Fixture) -> None:
    await f.add_node("n1")
    await f.add_pod("p", "n1")
    await f.add_pod("q", "n1", tolerations=[{"key": "dedicated", "operator": "Equal", "value": "db",
                                             "effect": "NoExecute"}])
    await f.drain()
    await f.fake.core_v1().nodes().patch("n1", {"spec": {"taints": [
        {"key": "dedicated", "value": "db", "effect": "NoExecute"}]}}, "merge")
    await f.drain()
    assert await f.pod_deleting("p")
    assert not await f.pod_deleting("q")
    assert f.recorder.events[-1] == "Normal TaintManagerEviction Marking for deletion Pod default/p"


async def test_pods_of_a_node_going_unknown_are_marked_not_ready(f: Fixture) -> None:
    """Upstream: MarkPodsNotReady, via TestMonitorNodeHealthMarkPodsNotReady."""
    await f.add_node("n1")
    await f.add_node("n2")
    await f.add_pod("p", "n1", ready=True)
    await f.pass_()
    for _ in range(11):
        await f.step(5)
        await heartbeat_all(f, "n2")
        await f.pass_()
    pod = await f.fake.core_v1().pods("default").get("p")
    [ready] = [c for c in pod.status.conditions if c.type == "Ready"]
    assert (ready.status, ready.last_transition_time) == ("False", rfc3339(T0 + 55))
    assert "Warning NodeNotReady Node is not ready" in f.recorder.events


# --- the whole thing, clock-driven -------------------------------------------------------------------

async def _advance(f: Fixture, seconds: float, tick: float = 0.5, renew: tuple[str, ...] = ()) -> None:
    for _ in range(round(seconds / tick)):
        f.clock.step(tick)
        for n in renew:
            await f.renew_lease(n)
        await settle()


async def test_run_replaces_pods_of_a_dead_node() -> None:
    """run() on a FakeClock with the ReplicaSet controller beside it: the pods of a dead node
    are evicted after 300 s (grace 4 s here) and the RS creates replacements."""
    f = await new_fixture(node_monitor_period=1.0, node_monitor_grace_period=4.0)
    rsc = ReplicaSetController(f.factory.apps_v1().replicasets(), f.factory.core_v1().pods(), f.fake,
                               clock=f.clock, recorder=FakeRecorder())
    f.factory.start()
    tasks = [asyncio.create_task(f.nlc.run(2)), asyncio.create_task(rsc.run(1))]
    try:
        await f.add_node("n1")
        await f.add_node("n2")
        await f.fake.apps_v1().replicasets("default").create({
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "x"}]}}}})
        await settle()
        pods = (await f.fake.core_v1().pods("default").list()).items
        assert len(pods) == 2
        for p in pods:                                    # the scheduler's part
            await f.fake.core_v1().pods("default").bind(p.metadata.name, "n1")
        await _advance(f, 10, renew=("n1", "n2"))
        await _advance(f, 10, renew=("n2",))              # n1 dies: Unknown, then tainted
        assert (await f.condition("n1")).status == "Unknown"
        assert any(t[:2] == (UNREACHABLE, "NoExecute") for t in await f.taints("n1"))
        await _advance(f, 280, tick=5, renew=("n2",))
        assert len([p for p in (await f.fake.core_v1().pods("default").list()).items
                    if p.metadata.deletion_timestamp is None]) == 2      # not yet evicted
        await _advance(f, 30, tick=5, renew=("n2",))
        pods = (await f.fake.core_v1().pods("default").list()).items
        terminating = [p for p in pods if p.metadata.deletion_timestamp is not None]
        active = [p for p in pods if p.metadata.deletion_timestamp is None]
        assert len(terminating) == 2 and all(p.spec.node_name == "n1" for p in terminating)
        assert len(active) == 2 and all(not p.spec.node_name for p in active)   # replacements, unscheduled
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await f.factory.shutdown()


async def test_deleted_node_and_its_empty_zone(f: Fixture) -> None:
    await f.add_node("a1", labels={"topology.kubernetes.io/zone": "a"})
    await f.add_node("b1", labels={"topology.kubernetes.io/zone": "b"})
    await f.pass_()
    assert set(f.nlc.zone_states) == {":\x00:a", ":\x00:b"}
    await f.fake.core_v1().nodes().delete("b1")
    await f.step(5)
    await f.renew_lease("a1")
    await f.pass_()
    assert f.recorder.events[-1] == "Normal RemovingNode Node b1 event: Removing Node b1 from Controller"
    assert f.nlc.zone_states == {":\x00:a": nlc_mod.STATE_NORMAL}
    assert set(f.nlc.known_node_set) == {"a1"}


async def test_a_restarted_controller_gives_stale_nodes_a_grace_period_from_its_own_start(f: Fixture) -> None:
    """After a control-plane restart every heartbeat is as old as the downtime: the nodes get
    a full grace period from the controller's first pass, not from their last heartbeat
    (upstream: tryUpdateNodeHealth's "Missing timestamp for Node. Assuming now")."""
    await f.add_node("back")
    await f.add_node("gone")
    await f.step(120)                                # down for two minutes: no pass ran
    await f.pass_()                                  # the new controller's first pass
    assert (await f.condition("back")).status == (await f.condition("gone")).status == "True"
    for _ in range(10):                              # "back"'s kubelet renews; "gone" stays silent
        await f.step(5)
        await f.renew_lease("back")
        await f.pass_()
    assert (await f.condition("gone")).status == "True"      # 50 s since the first pass, not after
    await f.step(5)
    await f.renew_lease("back")
    await f.pass_()
    assert (await f.condition("gone")).status == "Unknown"
    assert (await f.condition("back")).status == "True" and await f.taints("back") == []
