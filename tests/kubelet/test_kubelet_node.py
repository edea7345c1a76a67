"""Node registration, Lease heartbeats and node status cadence; status manager coalescing."""
from __future__ import annotations

from kubeplane.api.types import core_v1, meta_v1
from kubeplane.testing.fake import FakeClientset
from kubeplane.kubelet.node_status import needs_report, node_ip, pod_cidr
from kubeplane.kubelet.status.status_manager import StatusManager, merge_diff
from kubeplane.utils.clock import FakeClock

from kubelet_testutil import advance


async def test_node_registration_fields(make_env) -> None:
    env = await make_env(nodes=3)
    n = await env.cs.core_v1().nodes().get("node-2")
    assert n.metadata.labels["kubernetes.io/hostname"] == "node-2"
    assert n.metadata.labels["kubernetes.io/os"] == "linux" and n.metadata.labels["kubernetes.io/arch"] == "amd64"
    assert n.status.capacity == {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    assert n.status.allocatable == n.status.capacity
    assert [(a.type, a.address) for a in n.status.addresses] == [("InternalIP", "172.18.0.4"), ("Hostname", "node-2")]
    info = n.status.node_info
    assert info.kubelet_version == "v1.37.0-kubeplane"
    assert info.container_runtime_version == "kubeplane-sim://0.1.0"
    assert (info.operating_system, info.architecture) == ("linux", "amd64") and info.os_image and info.kernel_version
    assert [(c.type, c.status, c.reason) for c in n.status.conditions] == [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"), ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"), ("Ready", "True", "KubeletReady")]
    assert n.status.conditions[3].message == "kubelet is posting ready status"
    assert n.status.daemon_endpoints.kubelet_endpoint.port == 10250
    assert n.spec.pod_cidr == "10.244.2.0/24"


def test_addresses_and_cidrs_for_many_nodes() -> None:
    assert [node_ip(i) for i in (0, 253, 254, 999)] == ["172.18.0.2", "172.18.0.255", "172.18.1.0", "172.18.3.233"]
    assert [pod_cidr(i) for i in (0, 255, 256, 999)] == ["10.244.0.0/24", "10.244.255.0/24", "10.245.0.0/24",
                                                        "10.247.231.0/24"]
    assert len({node_ip(i) for i in range(1000)}) == 1000


async def test_lease_created_with_owner_and_renewed_every_10s(make_env) -> None:
    env = await make_env(nodes=2)
    await advance(env.clock, 6)                    # node i of N starts at i * 10 s / N: node-1 at 5 s
    lease = await env.cs.coordination_v1().leases("kube-node-lease").get("node-0")
    node = await env.cs.core_v1().nodes().get("node-0")
    assert lease.spec.holder_identity == "node-0" and lease.spec.lease_duration_seconds == 40
    (ref,) = lease.metadata.owner_references
    assert (ref.api_version, ref.kind, ref.name, ref.uid) == ("v1", "Node", "node-0", node.metadata.uid)
    env.cs.clear_actions()
    await advance(env.clock, 60, step=1)
    updates = [a for a in env.cs.actions if a.resource == "leases" and a.verb == "update"]
    assert len(updates) == 12                      # 2 nodes x one renewal per 10 s
    renewed = await env.cs.coordination_v1().leases("kube-node-lease").get("node-0")
    assert renewed.spec.renew_time > lease.spec.renew_time


async def test_node_status_written_every_5_minutes_when_unchanged(make_env) -> None:
    env = await make_env(nodes=1)
    env.cs.clear_actions()
    await advance(env.clock, 299, step=1)
    assert not [a for a in env.cs.actions if a.resource == "nodes"]
    await advance(env.clock, 11, step=1)
    patches = [a for a in env.cs.actions if a.resource == "nodes" and a.verb == "patch"]
    assert len(patches) == 1 and patches[0].subresource == "status"
    beats = {c["lastHeartbeatTime"] for c in patches[0].body["status"]["conditions"]}
    assert len(beats) == 1


def test_needs_report_ignores_heartbeat_times() -> None:
    old = {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "a"}]}
    beat = {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "b"}]}
    down = {"conditions": [{"type": "Ready", "status": "False", "lastHeartbeatTime": "b"}]}
    assert not needs_report(old, beat, last_report=0, now=290)
    assert needs_report(old, beat, last_report=0, now=300)
    assert needs_report(old, down, last_report=0, now=10)


async def _pod(cs: FakeClientset) -> core_v1.Pod:
    (p,) = await cs.seed(core_v1.Pod(metadata=meta_v1.ObjectMeta(name="web", namespace="default"),
                                     spec=core_v1.PodSpec(node_name="n", containers=[core_v1.Container(name="c", image="i")])))
    return p


async def test_status_manager_coalesces_and_skips_unchanged() -> None:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    p = await _pod(cs)
    sm = StatusManager(cs, clock=clock)
    for phase in ("Pending", "Pending", "Running"):
        sm.set_pod_status(p, {"phase": phase, "conditions": [{"type": "Ready", "status": "False"}]})
    assert sm.queue.len() == 1
    await sm.sync_pod(p.metadata.uid)
    patches = [a for a in cs.actions if a.verb == "patch"]
    assert len(patches) == 1 and patches[0].body["status"]["phase"] == "Running"
    assert patches[0].body["metadata"] == {"uid": p.metadata.uid}
    cond = patches[0].body["status"]["conditions"][0]
    assert cond["lastTransitionTime"] == "2020-09-13T12:26:40Z" and cond["lastProbeTime"] is None
    await sm.sync_pod(p.metadata.uid)              # nothing changed: no second write
    assert len([a for a in cs.actions if a.verb == "patch"]) == 1
    clock.step(30)
    sm.set_pod_status(p, {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    await sm.sync_pod(p.metadata.uid)
    last = [a for a in cs.actions if a.verb == "patch"][-1].body["status"]
    assert last["conditions"][0]["lastTransitionTime"] == "2020-09-13T12:27:10Z"
    assert "phase" not in last                     # only what changed is sent
    stored = await cs.core_v1().pods("default").get("web")
    assert stored.status.start_time == "2020-09-13T12:26:40Z" and stored.spec.containers[0].image == "i"


def test_merge_diff_nulls_removed_keys_and_replaces_lists() -> None:
    old = {"a": 1, "s": {"waiting": {"reason": "X"}}, "l": [1, 2]}
    new = {"s": {"running": {"startedAt": "t"}}, "l": [1]}
    assert merge_diff(old, new) == {"a": None, "s": {"waiting": None, "running": {"startedAt": "t"}}, "l": [1]}
    assert merge_diff(new, new) == {}


async def test_status_write_keeps_the_conditions_the_kubelet_does_not_own() -> None:
    """An eviction set DisruptionTarget after the kubelet computed the status: the write (which
    replaces the conditions whole) keeps it, as upstream's mergePodStatus."""
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    p = await _pod(cs)
    target = core_v1.PodCondition(type="DisruptionTarget", status="True", reason="EvictionByEvictionAPI",
                                  message="Eviction API: evicting")
    stored = core_v1.Pod(metadata=p.metadata, spec=p.spec, status=core_v1.PodStatus(conditions=[target]))
    sm = StatusManager(cs, clock=clock, get_pod=lambda uid: stored)
    sm.set_pod_status(p, {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    await sm.sync_pod(p.metadata.uid)
    (patch,) = [a for a in cs.actions if a.verb == "patch"]
    assert [c["type"] for c in patch.body["status"]["conditions"]] == ["DisruptionTarget", "Ready"]
    assert patch.body["status"]["conditions"][0]["reason"] == "EvictionByEvictionAPI"
    await sm.sync_pod(p.metadata.uid)              # nothing changed since: no second write
    assert len([a for a in cs.actions if a.verb == "patch"]) == 1


async def test_a_new_node_gets_the_next_pod_cidr_no_other_node_has() -> None:
    """A second kubelet (`kubeplane kubelet` joined to `up`) does not take the podCIDRs of the
    cluster's other Nodes; a Node that exists keeps its own; a range another interface of the
    machine holds (the runtime says so) is skipped too."""
    from kubeplane.kubelet.kubelet import Kubelet
    from kubeplane.kubelet.runtime.sim import SimRuntime
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    for name, cidr in (("up-0", "10.244.0.0/24"), ("up-1", "10.244.1.0/24"), ("mine-1", "10.244.7.0/24")):
        await cs.core_v1().nodes().create(core_v1.Node(metadata=meta_v1.ObjectMeta(name=name),
                                                       spec=core_v1.NodeSpec(pod_cidr=cidr, pod_cidrs=[cidr])))
    runtime = SimRuntime(profile="default", clock=clock)
    kl = Kubelet(cs, node_names=["mine-0", "mine-1", "mine-2"], runtime=runtime, clock=clock)
    assert await kl._pod_cidrs() == ["10.244.2.0/24", "10.244.3.0/24", "10.244.4.0/24"]
    runtime.pod_cidr_in_use = lambda: (lambda node, cidr: cidr == "10.244.2.0/24")   # type: ignore[attr-defined]
    await kl.register_nodes()
    cidrs = {n.metadata.name: n.spec.pod_cidr for n in (await cs.core_v1().nodes().list()).items}
    assert cidrs == {"up-0": "10.244.0.0/24", "up-1": "10.244.1.0/24", "mine-0": "10.244.3.0/24",
                     "mine-1": "10.244.7.0/24", "mine-2": "10.244.5.0/24"}


def test_lease_renewal_leaves_the_cached_lease_as_it_was() -> None:
    from kubeplane.api.types import coordination_v1
    from kubeplane.kubelet.nodelease import new_lease, renewed

    node = core_v1.Node(metadata=meta_v1.ObjectMeta(name="node-0", uid="u"))
    lease = new_lease(node, 1600000000.0)
    lease.spec.holder_identity = "someone-else"
    out = renewed(lease, "node-0", 1600000010.25)
    assert (out.spec.renew_time, out.spec.holder_identity) == ("2020-09-13T12:26:50.250000Z", "node-0")
    assert out.spec.lease_duration_seconds == 40 and out.metadata == lease.metadata
    assert (lease.spec.renew_time, lease.spec.holder_identity) == ("2020-09-13T12:26:40.000000Z", "someone-else")
    assert renewed(coordination_v1.Lease(metadata=lease.metadata), "n", 0.0).spec.renew_time == \
        "1970-01-01T00:00:00.000000Z"


async def test_heartbeats_due_within_the_timer_slack_go_in_one_wake_up(make_env) -> None:
    """Nodes due within TIMER_SLACK of each other renew together (at most that early); each
    still renews once per period."""
    from kubeplane.kubelet.kubelet import TIMER_SLACK, KubeletOptions
    from kubeplane.utils.clock import parse_rfc3339

    period = 1.0
    env = await make_env(nodes=40, options=KubeletOptions(heartbeat_period=period))   # one due every 25 ms
    await advance(env.clock, 2 * period, step=0.01)
    env.cs.clear_actions()
    wakeups = 0
    sleep = env.clock.sleep

    async def counting(seconds: float) -> None:
        nonlocal wakeups
        wakeups += 1
        await sleep(seconds)
    env.clock.sleep = counting                     # type: ignore[method-assign]
    await advance(env.clock, 10 * period, step=0.01)
    updates = [a for a in env.cs.actions if a.resource == "leases" and a.verb == "update"]
    assert abs(len(updates) - 10 * 40) <= 1        # once per period each (one may sit on the edge)
    times: dict[str, list[float]] = {}
    for a in updates:
        times.setdefault(a.name, []).append(parse_rfc3339(a.body["spec"]["renewTime"]))
    assert len(times) == 40
    # each renewal at most TIMER_SLACK early (+ the 10 ms steps of the fake clock), never late
    assert all(abs(b - a - period) <= TIMER_SLACK + 0.011 for ts in times.values() for a, b in zip(ts, ts[1:]))
    assert all(abs(ts[-1] - ts[0] - period * (len(ts) - 1)) <= TIMER_SLACK + 0.011 for ts in times.values())
    assert wakeups <= 10 * 40 / 2 + 2              # at least two per wake-up (slack 50 ms, 25 ms apart)
    assert TIMER_SLACK <= period / 10


async def test_status_patches_go_in_process_uncopied_and_stay_the_kubelets() -> None:
    """In process the status manager hands its patches over (no copy): the server stores their
    values, and what it adds (an old condition's observedGeneration, preserved by the status
    strategy) lands in the stored pod only, never in the status the manager keeps as written."""
    from kubeplane.api import types
    from kubeplane.apiserver.inprocess import InProcessTransport
    from kubeplane.apiserver.server import APIServer
    from kubeplane.client.clientset import Clientset
    from kubeplane.storage import new_storage
    from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

    api = APIServer(new_storage("memory"), options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    sent: list[dict] = []

    class Spy(InProcessTransport):
        async def request(self, method, path, query=None, body=None, content_type="application/json"):  # type: ignore[no-untyped-def]
            if method == "PATCH":
                sent.append(body)
            return await super().request(method, path, query, body, content_type)

    cs = Clientset(Spy(api))
    pods = cs.core_v1().pods("default")
    p = await pods.create(types.from_dict({"metadata": {"name": "web"}, "spec": {
        "nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}}, core_v1.Pod))
    await pods.patch("web", {"status": {"observedGeneration": 1, "conditions": [
        {"type": "Ready", "status": "False", "observedGeneration": 1}]}}, "merge", subresource="status")
    sm = StatusManager(cs, clock=FakeClock())
    status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "t"}]}
    sm.set_pod_status(p, status)
    await sm.sync_pod(p.metadata.uid)
    assert sent[-1]["status"]["conditions"] is sm.written[p.metadata.uid]["conditions"]   # not copied
    stored = await pods.get("web")
    assert [(c.type, c.status, c.observed_generation) for c in stored.status.conditions] == [("Ready", "True", 1)]
    assert sm.written[p.metadata.uid]["conditions"] == [{"type": "Ready", "status": "True", "lastTransitionTime": "t"}]


async def test_status_write_queue_wakes_one_writer_per_pod_and_retries_on_its_clock() -> None:
    """The status manager's queue (upstream's workqueue semantics, Add signalling one waiter):
    a pod is written by one writer at a time, adds coalesce, a pod re-added while written is
    written again once done, a failed write is retried RETRY_AFTER later, and each add wakes
    one idle writer (not all of them)."""
    import asyncio

    from kubeplane.kubelet.status.status_manager import RETRY_AFTER

    clock = FakeClock()
    q = StatusManager(await FakeClientset.new(clock=clock), clock=clock).queue
    woken: list[str] = []

    async def writer(name: str) -> None:
        while not (got := await q.get())[1]:
            woken.append(f"{name}:{got[0]}")

    writers = [asyncio.create_task(writer(f"w{i}")) for i in range(4)]
    await asyncio.sleep(0)
    assert len(q._waiters) == 4
    q.add("a")
    q.add("a")                                      # coalesces
    assert q.len() == 1 and sum(not f.done() for f in q._waiters) == 3     # one writer woken
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert woken == ["w0:a"] and q._processing == {"a"}
    q.add("a")                                      # while being written: again when done
    assert q.len() == 0
    q.done("a")
    assert q.len() == 1
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert [w.split(":")[1] for w in woken] == ["a", "a"]
    q.done("a")
    q.add_after("b", RETRY_AFTER)
    await asyncio.sleep(0)
    clock.step(RETRY_AFTER / 2)
    await asyncio.sleep(0)
    assert q.len() == 0 and len(woken) == 2
    clock.step(RETRY_AFTER / 2)
    for _ in range(4):
        await asyncio.sleep(0)
    assert woken[-1].endswith(":b")
    q.done("b")
    q.add_after("c", RETRY_AFTER)                   # dropped by the shutdown
    await asyncio.sleep(0)
    q.shut_down()
    await asyncio.gather(*writers)
    assert q._num_waiting() == 0 and q.len() == 0


async def test_status_manager_run_writes_each_pod_and_retries_a_failed_write() -> None:
    import asyncio

    from kubeplane.kubelet.status.status_manager import RETRY_AFTER

    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    p = await _pod(cs)
    sm = StatusManager(cs, clock=clock, workers=3)
    calls = {"n": 0}
    sync = sm.sync_pod

    async def flaky(uid: str) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("the API server is away")
        await sync(uid)

    sm.sync_pod = flaky                             # type: ignore[method-assign]
    task = asyncio.create_task(sm.run())
    await asyncio.sleep(0)
    sm.set_pod_status(p, {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    for _ in range(5):
        await asyncio.sleep(0)
    assert calls["n"] == 1 and sm.writes == 0 and sm.pending(p.metadata.uid)
    clock.step(RETRY_AFTER)
    for _ in range(10):
        await asyncio.sleep(0)
    assert calls["n"] == 2 and sm.writes == 1 and not sm.pending(p.metadata.uid)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
