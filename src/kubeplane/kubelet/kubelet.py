"""The kubelet: hosts N nodes in one process and runs the pods bound to them (simulated or as processes).

    kl = Kubelet(clientset, node_names=["kubeplane-node-0"], runtime=SimRuntime(clock=clock), clock=clock)
    await kl.run()                        # until cancelled

One pod informer serves every node of the process (handlers keep pods whose spec.nodeName
is ours); one status manager, one set of pod workers, one prober manager and one heartbeat
loop serve them all, so a node costs a few dicts and two writes every 10 s (its Lease) and
one every 5 min (its status).

A pod's life, as upstream (seed 003, step 6): sandbox -> PodReadyToStartContainers, init
containers in order -> Initialized, app containers -> ContainersReady and Ready; on deletion
the containers get deletionGracePeriodSeconds to stop, the final status is written, then
the pod is deleted with gracePeriodSeconds=0 and a uid precondition.

Upstream: pkg/kubelet/kubelet.go (Run, syncLoop handlers HandlePodAdditions/Updates/
Removes, SyncPod, SyncTerminatingPod, SyncTerminatedPod).
"""
from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

import msgspec

from ..api import errors
from ..api.types import core_v1, to_dict
from ..client.clientset import Clientset
from ..client.tools.cache.store import DeletedFinalStateUnknown
from ..utils.clock import REAL_CLOCK, Clock
from . import metrics
from .backoff import Backoff
from .kubelet_pods import generate_api_pod_status
from .kuberuntime_manager import INITIAL_BACK_OFF, MAX_CONTAINER_BACK_OFF, BackoffState, compute_pod_actions, format_pod
from .metrics import CREATE, TERMINATED, UPDATE, ProbeSeries
from .node_status import (
    NODE_STATUS_REPORT_FREQUENCY, NodeOptions, keep_transition_times, needs_report, new_node, node_ip, pod_cidr,
    with_heartbeat,
)
from .nodelease import RENEW_INTERVAL, LeaseRenewer
from .pod_startup_latency_tracker import PodStartupLatencyTracker
from .pod_workers import PodWorkers
from .prober import ProbeManager
from .runtime import CREATED, CREATING, RUNNING, PodStatus, Runtime
from .status import generate
from .status.status_manager import StatusManager

log = logging.getLogger(__name__)

DEFAULT_TERMINATION_GRACE = 30
MAX_STEPS_PER_SYNC = 10               # sandbox, init containers finishing at once, ... then yield

_COUNTERS = metrics.COUNTERS          # started pods and containers, counted in sync_pod (bound once: hot)

# A heartbeat this close to due goes now, with the others due as soon. Event-loop timers have
# millisecond resolution (libuv's, under uvloop): sleeping for the last fraction of a
# millisecond returned at once and re-slept, about seven loop wake-ups per heartbeat, most of
# the CPU of 1,000 idle nodes. 1,000 nodes are due every 10 ms: a wake-up sends the ~5 due in
# the next 50 ms, each at most 50 ms early (a Lease lasts 40 s; upstream's renewals drift by
# each one's request time).
TIMER_SLACK = 0.05


@dataclass(frozen=True)
class KubeletOptions:
    node: NodeOptions = field(default_factory=NodeOptions)
    pod_workers: int = 1                 # syncs only compute and call the runtime: one is plenty
    status_workers: int = 8              # concurrent status writes
    heartbeat_concurrency: int = 32      # concurrent Lease / node status writes
    heartbeat_period: float = RENEW_INTERVAL   # lease renewal and node status check, seconds
    cluster_dns: tuple[str, ...] = ("10.96.0.10",)   # --cluster-dns: `up`'s kube-dns (network/dns.py)
    cluster_domain: str = "cluster.local"            # --cluster-domain (kubeadm's)
    resolv_conf: str = "/etc/resolv.conf"   # --resolv-conf
    streaming_connection_idle_timeout: float = 4 * 3600.0   # seconds; --streaming-connection-idle-timeout (0: none)


@dataclass
class _NodeState:
    index: int
    node: core_v1.Node                   # as registered (uid known)
    ip: str
    lease: LeaseRenewer
    status: dict[str, Any]               # last reported status (wire dict)
    last_report: float
    recorder: Any = None
    clientset: Any = None                # the node's own (it writes as system:node:<name>)


class Kubelet:
    def __init__(self, clientset: Clientset, *, node_names: list[str], runtime: Runtime,
                 clock: Clock = REAL_CLOCK, options: KubeletOptions = KubeletOptions(),
                 factory: Any = None, broadcaster: Any = None,
                 node_registry: dict[str, Any] | None = None,
                 clientset_for: Callable[[str], Clientset] | None = None) -> None:
        self.clientset, self.runtime, self.clock, self.options = clientset, runtime, clock, options
        # Each node's requests go out as that node (system:node:<name>, which the node authorizer
        # and NodeRestriction limit to its own objects); by default all share `clientset`. The
        # pod informer, serving every node of the process, stays on `clientset`.
        self.clientset_for: Callable[[str], Clientset] = clientset_for or (lambda node: self.clientset)
        self.node_names = list(node_names)
        self.node_set = set(node_names)
        self.nodes: dict[str, _NodeState] = {}
        self.pods: dict[str, core_v1.Pod] = {}           # uid -> latest pod bound to one of our nodes
        self.broadcaster = broadcaster
        self._owns_factory = factory is None     # a shared factory (`kubeplane up`) is stopped by its owner
        if factory is None:
            from ..client.informers import SharedInformerFactory
            factory = SharedInformerFactory(clientset, clock=clock)
        self._factory = factory
        self.pod_informer = factory.core_v1().pods()
        self.pod_workers = PodWorkers(self.sync, clock=clock, workers=options.pod_workers)
        self.status_manager = StatusManager(clientset, clock=clock, workers=options.status_workers,
                                            get_pod=self.pods.get, clientset_for=clientset_for)
        self.prober = ProbeManager(runtime, clock=clock, on_change=self.pod_workers.enqueue,
                                   on_unhealthy=self._kill_unhealthy)
        self.startup = PodStartupLatencyTracker(clock)
        self.node_registry = node_registry      # the API server's node name -> NodeConnection (pods/log)
        self.backoff = BackoffState(Backoff(INITIAL_BACK_OFF, MAX_CONTAINER_BACK_OFF, clock=clock),
                                    Backoff(INITIAL_BACK_OFF, MAX_CONTAINER_BACK_OFF, clock=clock))
        self.heartbeat_writes = 0
        self._syncing = ""                      # the uid whose sync is running (syncs never await)
        self._synced: dict[str, PodStatus] = {}   # uid -> the runtime status its last status was computed from
        self._held: dict[str, list[tuple[Any, core_v1.ObjectReference, str, str, str]]] = {}   # uid -> events
        self.status_manager.on_synced = self._send_held_events
        runtime.set_event_handler(self._on_runtime_change)
        if hasattr(runtime, "events"):
            runtime.events = self._record_runtime_event    # type: ignore[attr-defined]
        if getattr(runtime, "lookup", False) is None:
            runtime.lookup = self._lookup                  # type: ignore[attr-defined]
            if hasattr(runtime, "node_lookup"):
                runtime.node_lookup = self._lookup_for
        if hasattr(runtime, "dns_configurer"):         # the pods' resolv.conf
            from .network.dns import Configurer, PodEventRecorder
            runtime.dns_configurer = Configurer(PodEventRecorder(self._recorder_for), None, [],
                                                list(options.cluster_dns), options.cluster_domain, options.resolv_conf)
            if options.resolv_conf:                    # upstream: at the start of syncLoop
                runtime.dns_configurer.check_limits_for_resolv_conf()
        # The process runtime's volumes: what they are read from, and pod metadata changes for
        # its downwardAPI files (None for the sim runtime: nothing per update).
        self._pod_metadata_changed: Callable[[Any], None] | None = getattr(runtime, "pod_metadata_changed", None)
        if getattr(runtime, "volume_source", False) is None:
            from .volumemanager.source import APIVolumeSource
            runtime.volume_source = APIVolumeSource(self.clientset_for, clock)   # type: ignore[attr-defined]

    @property
    def informer_factory(self) -> Any:
        """The informers the kubelet starts (its own, or the shared one it was given): the
        kube-proxy of a standalone kubelet adds its Services and EndpointSlices there."""
        return self._factory

    # --- lifecycle ---------------------------------------------------------------------------

    async def run(self) -> None:
        """Register the nodes, take up the pods a previous kubelet left, then sync pods and
        heartbeat until cancelled. Upstream: Kubelet.Run"""
        await self.register_nodes()
        self.pod_informer.informer().add_event_handler(self)
        self.pod_informer.informer().share_unchanged_specs()     # needs_sync compares specs
        metrics.register(self)
        try:
            async with asyncio.TaskGroup() as tg:
                self._factory.start()
                tg.create_task(self.heartbeat_loop())
                await self.pod_informer.informer().wait_synced()
                self.restore_pods()             # before any sync: pods go on where they were
                tg.create_task(self.pod_workers.run())
                tg.create_task(self.status_manager.run())
        finally:
            metrics.unregister(self)
            self.prober.stop()
            self._unregister_connections()
            from .loopback_server import stop_for
            with contextlib.suppress(Exception):     # nothing may keep the runtime below from closing
                await stop_for(self)                # nodes/proxy's server, if one was started
            aclose, close = getattr(self.runtime, "aclose", None), getattr(self.runtime, "close", None)
            try:
                if aclose is not None:
                    await aclose()           # stops real processes: SIGTERM, then SIGKILL
                elif close is not None:
                    close()
            finally:
                if self._owns_factory:
                    await self._factory.shutdown()

    @property
    def probe_series(self) -> list[ProbeSeries]:
        """The probe workers' prober_* series (metrics.ProberCollector reads them)."""
        return list(self.prober.series.values())

    def restore_pods(self) -> None:
        """Take up every pod of ours where the last kubelet left it, before any sync.

        After a restart (of this process or of `kubeplane up`) the informer's first list holds
        the pods bound to our nodes; the runtime takes up what it still has of each (see
        Runtime.restore_pod), all at once so that IPs in use are known before a new pod gets
        one. Probe results are taken over from the status for the attempts still running:
        upstream starts readiness at Failure and startup at unknown, so a restart flips every
        probed pod unready until its next probe (kubernetes#100277, #125397); here a
        container keeps the readiness and started flags it had until a probe says otherwise
        (as kubernetes#84104 proposed). What the runtime still holds of pods no longer bound to
        us (deleted while we were down) is stopped and forgotten by their first sync.
        Upstream: Kubelet.Run's initial sync against the CRI, HandlePodCleanups.
        """
        for uid, pod in self.pods.items():
            if not self.runtime.restore_pod(pod):
                continue
            rt = self.runtime.pod_status(uid)
            if rt is not None:
                self.prober.restore_pod(pod, rt)
        for uid in self.runtime.list_pods():
            if uid not in self.pods:
                self.pod_workers.enqueue(uid)   # gone from the API meanwhile: its sync stops it

    async def register_nodes(self) -> None:
        """Create every Node (adopting existing ones) and tell the runtime about it.

        Upstream: registerWithAPIServer / tryRegisterWithAPIServer
        """
        sem = asyncio.Semaphore(self.options.heartbeat_concurrency)
        cidrs = await self._pod_cidrs()

        async def one(i: int, name: str) -> None:
            async with sem:
                await self._register(i, name, cidrs[i])
        await asyncio.gather(*(one(i, n) for i, n in enumerate(self.node_names)))

    async def _pod_cidrs(self) -> list[str]:
        """The podCIDR each of our nodes gets if it is new (a Node that exists keeps its own):
        the next /24 that no other Node has, from pod_cidr(index) on, as the node IPAM
        controller's range allocator would give it (kubeplane runs none), so that a standalone
        kubelet joined to `up` does not take the podCIDRs of up's nodes. Upstream: the range
        allocator (pkg/controller/nodeipam/ipam/range_allocator.go)."""
        try:
            nodes = (await self.clientset.core_v1().nodes().list()).items
        except (errors.StatusError, OSError):
            nodes = []                       # not allowed to list: by index, as before
        mine = set(self.node_names)
        used = {c for n in nodes if (n.metadata.name or "") not in mine and n.spec
                for c in (n.spec.pod_cidrs or ([n.spec.pod_cidr] if n.spec.pod_cidr else []))}
        # The process runtime's pod network: a range another kubeplane's bridge holds on this
        # machine is taken too (else that node's pods would share the host's network).
        in_use = getattr(self.runtime, "pod_cidr_in_use", None)
        taken = in_use() if in_use is not None else (lambda node, cidr: False)
        out, j = [], 0
        for i, name in enumerate(self.node_names):
            j = max(j, i)
            while pod_cidr(j) in used or taken(name, pod_cidr(j)):
                j += 1
            out.append(pod_cidr(j))
            used.add(pod_cidr(j))
        return out

    async def _register(self, i: int, name: str, cidr: str = "") -> None:
        now = self.clock.now()
        runtime_version = f"{self.runtime.name}://{self.runtime.version}"
        # A real address when there is one: the kubelet server's, or the host's where the
        # process runtime really runs the pods (127.0.0.1); else the simulated 172.18.x.y.
        ip = self.options.node.address or getattr(self.runtime, "host_ip", "") or node_ip(i)
        node = new_node(name, i, self.options.node, runtime_version=runtime_version, now=now, address=ip,
                        cidr=cidr)
        cs = self.clientset_for(name)
        nodes = cs.core_v1().nodes()
        try:
            stored = await nodes.create(node)
        except errors.AlreadyExists:
            existing = (await nodes.get(name)).deep_copy()
            existing.status = keep_transition_times(node.status, existing.status)
            stored = await nodes.update_status(existing)
        self.runtime.add_node(name, ip, (stored.spec.pod_cidr if stored.spec else None) or cidr or pod_cidr(i))
        recorder = self.broadcaster.new_recorder("kubelet", name) if self.broadcaster is not None else None
        self.nodes[name] = _NodeState(i, stored, ip, LeaseRenewer(cs, stored),
                                      to_dict(stored.status), now, recorder, cs)
        if self.node_registry is not None:
            self.node_registry[name] = self

    def _unregister_connections(self) -> None:
        if self.node_registry is not None:
            for name in self.nodes:
                if self.node_registry.get(name) is self:
                    del self.node_registry[name]

    # --- resource metrics (the API server's metrics.k8s.io reads them) -------------------------

    def resource_usage(self, node: str) -> Any:
        """(the node's usage, its running pods' usage): kubelet/resource_usage.py."""
        from .resource_usage import ProcessMeter, node_usage
        if getattr(self.runtime, "container_pids", None) is not None and not hasattr(self, "_meter"):
            self._meter = ProcessMeter(self.runtime)       # measured: the process runtime
        return node_usage(self.pods.values(), node, getattr(self, "_meter", None))

    # --- nodes/proxy (the API server's NodeConnection) -----------------------------------------

    async def kubelet_server(self) -> tuple[int, str]:
        """(port, token) of this kubelet's HTTPS server on loopback, started on the first call
        (loopback_server.py)."""
        from .loopback_server import start_for
        return await start_for(self)

    # --- pods/log (the API server's NodeConnection) -------------------------------------------

    def container_logs(self, namespace: str, pod: str, uid: str, opts: Any) -> AsyncIterator[bytes]:
        """One container's output (opts: a pods/log LogOptions). Errors are raised before the
        first byte. Upstream: Kubelet.GetKubeletContainerLogs
        """
        p = self.pods.get(uid)
        if p is None or p.metadata.name != pod or p.metadata.namespace != namespace:
            raise errors.NotFound("", "pods", pod)
        logs = getattr(self.runtime, "container_logs", None)
        if logs is None:
            raise errors.BadRequest(f"runtime {self.runtime.name} keeps no container logs")
        return logs(uid, pod, opts)

    async def stream(self, kind: str, namespace: str, pod: str, container: str, query: Any, headers: Any,
                     conn: Any) -> None:
        """pods/exec, attach, portforward on a taken-over connection (the API server's
        NodeConnection for in-process kubelets; kubelet/streaming)."""
        from . import streaming
        await streaming.serve(self, kind, namespace, pod, container, query, headers, conn)

    async def _lookup(self, kind: str, namespace: str, name: str, node: str = "") -> dict[str, str] | None:
        """A ConfigMap's data or a Secret's decoded data, for container environments (read as
        the node whose pod needs it: the node authorizer allows only those)."""
        from .runtime.process.env import decode_secret
        plural = "configmaps" if kind == "ConfigMap" else "secrets"
        cs = self.clientset_for(node) if node else self.clientset
        try:
            obj = await getattr(cs.core_v1(), plural)(namespace).get(name)
        except errors.NotFound:
            return None
        return dict(obj.data or {}) if kind == "ConfigMap" else decode_secret(obj.data)

    def _lookup_for(self, node: str) -> Any:
        """The runtime's look-up for the pods of one node."""
        async def lookup(kind: str, namespace: str, name: str) -> dict[str, str] | None:
            return await self._lookup(kind, namespace, name, node)
        return lookup

    # --- heartbeats ------------------------------------------------------------------------

    async def heartbeat_loop(self) -> None:
        """Renew every node's Lease and check its status once per period, spread evenly.

        Node i of N ticks at offset i * period / N, so 1,000 nodes with a 10 s period make
        100 Lease writes per second in an even stream rather than 1,000 at once.
        Upstream: the nodelease controller and syncNodeStatus loops, one pair per kubelet.
        """
        period = self.options.heartbeat_period
        start = self.clock.monotonic()
        n = max(1, len(self.nodes))
        heap = [(start + i * period / n, i, name) for i, name in enumerate(self.nodes)]
        heapq.heapify(heap)
        sem = asyncio.Semaphore(self.options.heartbeat_concurrency)
        pending: set[asyncio.Task[None]] = set()
        try:
            while heap:
                due, i, name = heap[0]
                wait = due - self.clock.monotonic()
                if wait > TIMER_SLACK:
                    await self.clock.sleep(wait)
                    continue
                heapq.heapreplace(heap, (due + period, i, name))
                task = asyncio.ensure_future(self._heartbeat(self.nodes[name], sem))
                pending.add(task)
                task.add_done_callback(pending.discard)
        finally:
            for t in pending:
                t.cancel()

    async def _heartbeat(self, ns: _NodeState, sem: asyncio.Semaphore) -> None:
        async with sem:
            now = self.clock.now()
            try:
                await ns.lease.sync(now)
                self.heartbeat_writes += 1
                await self.update_node_status(ns, now)
            except Exception as err:
                log.warning("Heartbeat failed", extra={"node": ns.node.metadata.name, "err": repr(err)})

    async def update_node_status(self, ns: _NodeState, now: float) -> bool:
        """Write the node's status if it changed or 5 minutes have passed. Upstream: tryUpdateNodeStatus

        The status a node computes is the one it last reported but for the heartbeat times (its
        conditions, capacity and addresses are fixed: no setter changes them), so it has not
        changed (nodeStatusHasChanged ignores heartbeats) and only the report frequency makes a
        write; the heartbeat status is built for that write alone.
        """
        if now - ns.last_report < NODE_STATUS_REPORT_FREQUENCY:
            return False                  # = not needs_report(ns.status, with_heartbeat(ns.status, now), ...)
        new = with_heartbeat(ns.status, now)
        if not needs_report(ns.status, new, ns.last_report, now):
            return False
        await ns.clientset.core_v1().nodes().patch(ns.node.metadata.name, {"status": {"conditions": new["conditions"]}},
                                                   "merge", subresource="status")
        self.heartbeat_writes += 1
        ns.status, ns.last_report = new, now
        return True

    # --- informer handlers (tiny, synchronous) ----------------------------------------------

    def on_add(self, obj: Any, is_in_initial_list: bool = False) -> None:
        if obj.spec is not None and obj.spec.node_name in self.node_set:
            uid = obj.metadata.uid
            seen = uid in self.pods
            self.pods[uid] = obj
            if not seen:
                self.startup.pod_seen(obj)
            self.pod_workers.enqueue(uid, UPDATE if seen else CREATE)

    def on_update(self, old: Any, new: Any) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        uid = new.metadata.uid
        if self._pod_metadata_changed is not None and (old.metadata.labels != new.metadata.labels
                                                       or old.metadata.annotations != new.metadata.annotations):
            self._pod_metadata_changed(new)
        if uid in self.startup.pods:
            self.startup.observed_pod_on_watch(new)
        reported = self.status_manager.get_pod_status(uid) if uid in self.pods else None
        if reported is not None and not needs_sync(old, new, reported.get("podIP")):
            self.pods[uid] = new          # e.g. our own status write coming back: nothing to do
            return
        self.on_add(new)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        uid = obj.metadata.uid if obj is not None and obj.metadata else None
        if uid in self.pods:
            del self.pods[uid]
            self.pod_workers.enqueue(uid)

    # --- syncs ------------------------------------------------------------------------------

    async def sync(self, uid: str) -> str | None:
        """Dispatch one pod to the sync its state calls for; "terminated" when the pod was gone
        (kubelet_pod_worker_duration_seconds' type for that sync). Upstream: podWorkers.podWorkerLoop
        """
        pod = self.pods.get(uid)
        self._syncing = uid
        self._synced.pop(uid, None)          # set again by _set_status: a sync that raised leaves none
        try:
            if pod is None:
                self.sync_terminated_pod(uid)
            elif pod.metadata.deletion_timestamp:
                self.sync_terminating_pod(pod)
            else:
                self.sync_pod(pod)
        finally:
            self._syncing = ""
        self._send_held_events(uid)
        return TERMINATED if pod is None else None

    def _on_runtime_change(self, uid: str) -> None:
        """The runtime's change events (our PLEG) wake the pod's worker, except those a sync
        causes itself (sandbox created, container started or stopped): a sync reads the
        runtime's status again after acting and steps on until nothing is left to do, so
        syncing once more would only repeat it (it was 3 of the 6.5 status computations per
        pod of a density run). Likewise a change that leaves what a sync reads as it was
        when the pod's status was last computed (a container going from Creating to
        Created, a sim container's probe outcome) would compute the same again: 1 of the 3
        syncs per pod of a density run with the default profile's delays.
        """
        if uid == self._syncing:
            return
        seen = self._synced.get(uid)
        if seen is not None:
            rt = self.runtime.pod_status(uid)
            if rt is not None and same_for_sync(rt, seen):
                return
        self.pod_workers.enqueue(uid)

    def sync_pod(self, pod: core_v1.Pod) -> None:
        """Take the pod's next step, then report its status. Upstream: Kubelet.SyncPod"""
        uid = pod.metadata.uid or ""
        rt = self.runtime.pod_status(uid) or PodStatus(uid)
        for _ in range(MAX_STEPS_PER_SYNC):
            actions = compute_pod_actions(pod, rt, self.backoff)
            if actions.create_sandbox:
                _COUNTERS.started_pods += 1             # Upstream: SyncPod's StartedPodsTotal
                try:
                    self.runtime.run_pod_sandbox(pod)
                except Exception:
                    _COUNTERS.started_pods_errors += 1
                    raise
            for c, attempt, init in actions.start:
                if init:
                    _COUNTERS.started_init_containers += 1
                else:
                    _COUNTERS.started_containers += 1
                self.runtime.start_container(pod, c, init=init, attempt=attempt)
            self._report_back_off(pod, actions.back_off_events)
            if actions.requeue_after is not None:
                self.pod_workers.enqueue_after(uid, actions.requeue_after)
            if not (actions.create_sandbox or actions.start):
                break
            # Only these change what the runtime reports; a sandbox that is ready at once lets
            # the containers start in the same sync, as upstream's SyncPod does.
            rt = self.runtime.pod_status(uid) or rt
        else:
            self.pod_workers.enqueue(uid)        # still stepping: go on in the next sync
        if actions.terminal:
            self.runtime.stop_pod_sandbox(uid)
            self.prober.remove_pod(uid)
            rt = self.runtime.pod_status(uid) or rt
        else:
            self.prober.update_pod(pod, rt)
        self._set_status(pod, rt, actions.waiting)

    def sync_terminating_pod(self, pod: core_v1.Pod) -> None:
        """Stop the containers within the grace period; once all have stopped, report the
        final status and let the status manager delete the pod. Upstream: SyncTerminatingPod
        """
        uid = pod.metadata.uid or ""
        rt = self.runtime.pod_status(uid) or PodStatus(uid)
        grace = pod.metadata.deletion_grace_period_seconds
        if grace is None:
            grace = (pod.spec.termination_grace_period_seconds if pod.spec else None) or DEFAULT_TERMINATION_GRACE
        for c in _all_containers(pod):
            st = rt.latest(c.name or "")
            if st is not None and st.state in (CREATING, CREATED, RUNNING):
                self.runtime.stop_container(st.id, float(grace))
        rt = self.runtime.pod_status(uid) or rt
        if any((st := rt.latest(c.name or "")) is not None and st.state == RUNNING for c in _all_containers(pod)):
            self._set_status(pod, rt, {})
            return
        self.runtime.stop_pod_sandbox(uid)
        self.prober.remove_pod(uid)
        self._set_status(pod, self.runtime.pod_status(uid) or rt, {}, terminal=True)
        self.status_manager.mark_pod_deletable(pod)

    def sync_terminated_pod(self, uid: str) -> None:
        """The pod is gone from the API server: forget it everywhere. Upstream: SyncTerminatedPod + cleanup"""
        self.runtime.remove_pod(uid)
        self.prober.remove_pod(uid)
        self.startup.delete_pod_startup_state(uid)
        self._synced.pop(uid, None)
        self.status_manager.remove_orphaned_statuses(uid)
        self.backoff.forget_pod(uid)

    def _set_status(self, pod: core_v1.Pod, rt: PodStatus, waiting: dict[str, tuple[str, str]], *,
                    terminal: bool = False) -> None:
        ns = self.nodes.get(pod.spec.node_name or "") if pod.spec else None
        host_ip = getattr(self.runtime, "host_ip", "") or (ns.ip if ns else "")
        status = generate_api_pod_status(pod, rt, node_ip=host_ip, is_ready=self.prober.is_ready,
                                         waiting=waiting, terminal=terminal, is_started=self.prober.is_started)
        if status.get("phase") == "Running" and pod.metadata.uid in self.startup.pods:
            self.startup.record_running(pod.metadata.uid, status)
        self.status_manager.set_pod_status(pod, status)
        self._synced[pod.metadata.uid or ""] = rt

    def _kill_unhealthy(self, uid: str, cid: str, name: str, probe_type: str) -> None:
        """A liveness or startup probe failed: kill the container; computePodActions then
        restarts it if the restart policy allows. Upstream: computePodActions' liveness branch
        and killContainer's "Killing" event.
        """
        pod = self.pods.get(uid)
        if pod is None or pod.metadata.deletion_timestamp:
            return
        c = next((c for c in pod.spec.containers or () if c.name == name), None)
        probe = getattr(c, f"{probe_type}_probe", None) if c is not None else None
        grace = probe.termination_grace_period_seconds if probe is not None else None
        if grace is None:
            grace = pod.spec.termination_grace_period_seconds
        if grace is None:
            grace = DEFAULT_TERMINATION_GRACE
        self.runtime.stop_container(cid, float(grace),
                                    message=f"Container {name} failed {probe_type} probe, will be restarted")
        self.pod_workers.enqueue(uid)

    # --- events -----------------------------------------------------------------------------

    def _recorder_for(self, uid: str) -> Any:
        pod = self.pods.get(uid)
        ns = self.nodes.get(pod.spec.node_name or "") if pod is not None and pod.spec else None
        return ns.recorder if ns is not None else None

    def _record_runtime_event(self, ref: core_v1.ObjectReference, type_: str, reason: str, message: str) -> None:
        """Record a runtime event (Pulled, Created, Started, Killing ...) once the pod's status
        shows the change it reports.

        An event is held while a sync of the pod is running or queued, or a status of it is
        still to be written, and sent after that write. The pod's status is what a restarted
        kubelet resumes the pod from (sim runtime): a Started event recorded before the status
        showing the container running would be recorded again after a kill -9 in between,
        when the container starts over. An event whose change shows nowhere in the status
        (Pulled: the container is still "ContainerCreating") goes out at once.
        """
        uid = ref.uid or ""
        if reason == "Pulling" or reason == "Pulled" and uid in self.startup.pulling:
            self._record_pull(uid, reason)
        recorder = self._recorder_for(uid)
        if recorder is None:
            return
        if uid in self._held or self._status_pending(uid):
            self._held.setdefault(uid, []).append((recorder, ref, type_, reason, message))
        else:
            recorder.event(ref, type_, reason, message)

    def _record_pull(self, uid: str, reason: str) -> None:
        """Image pulls, for the startup SLI (which leaves them out). Upstream: the image
        manager's RecordImageStartedPulling / RecordImageFinishedPulling around a pull."""
        if reason == "Pulling":
            self.startup.record_image_started_pulling(uid)
        else:
            self.startup.record_image_finished_pulling(uid)

    def _status_pending(self, uid: str) -> bool:
        return uid == self._syncing or self.pod_workers.pending(uid) or self.status_manager.pending(uid)

    def _send_held_events(self, uid: str) -> None:
        """After a sync or a status write of the pod: send its held events, in order, once
        nothing about it is left to compute or write."""
        if uid not in self._held or (self._status_pending(uid) and uid in self.pods):
            return
        for recorder, ref, type_, reason, message in self._held.pop(uid):
            recorder.event(ref, type_, reason, message)

    def _report_back_off(self, pod: core_v1.Pod, items: list[tuple[core_v1.Container, str]]) -> None:
        """One BackOff event per crashed attempt. Upstream: doBackOff's Eventf."""
        recorder = self._recorder_for(pod.metadata.uid or "")
        for c, cid in items:
            if not self.backoff.first_time(self.backoff.back_off_reported, pod.metadata.uid or "", cid):
                continue
            if recorder is not None:
                ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name=pod.metadata.name,
                                              namespace=pod.metadata.namespace, uid=pod.metadata.uid,
                                              field_path=f"spec.containers{{{c.name}}}")
                recorder.event(ref, "Warning", "BackOff",
                               f"Back-off restarting failed container {c.name} in pod {format_pod(pod)}")


def needs_sync(old: core_v1.Pod, new: core_v1.Pod, reported_pod_ip: str | None = None) -> bool:
    """Whether an update can change what a sync of the pod does.

    A sync reads the spec, the metadata, and from the status only what
    generate_api_pod_status carries over: conditions the kubelet does not own (readiness
    gates), qosClass, and podIP (kept while the sandbox reports none). Anything else in
    the status is the kubelet's own report (the status manager diffs against its cache,
    not the pod), so an update that changes nothing else, typically our own status write
    coming back through the watch, would sync to the same result. A podIP that is the
    one the kubelet last reported (reported_pod_ip) is that report coming back.
    Everything else a sync depends on (runtime, probes, back-off timers) enqueues the pod
    itself when it changes.

    Upstream: checkAndUpdatePod (config/config.go) treats a status-only change as a
    reconcile, and HandlePodReconcile syncs only when readiness needs it.
    """
    if old.spec is not new.spec and old.spec != new.spec:   # the informer hands an unchanged spec over as is
        return True
    om, nm = old.metadata, new.metadata
    if msgspec.structs.replace(nm, resource_version=om.resource_version, managed_fields=om.managed_fields) != om:
        return True
    os_, ns = old.status or core_v1.PodStatus(), new.status or core_v1.PodStatus()
    return (os_.qos_class != ns.qos_class
            or (os_.pod_ip != ns.pod_ip and (ns.pod_ip or None) != (reported_pod_ip or None))
            # equal conditions have equal foreign ones: compared in C first (half of a rolling
            # update's pod updates keep them; filtering both lists is ~6.5k instructions)
            or (os_.conditions != ns.conditions and _foreign_conditions(os_) != _foreign_conditions(ns)))


def same_for_sync(a: PodStatus, b: PodStatus) -> bool:
    """Whether a sync reads the same from two runtime statuses of a pod (equal: equal syncs).

    Everything must be equal, except that a Creating and a Created container look alike:
    the kubelet treats them the same everywhere (computePodActions waits for both, the API
    shows both as waiting/ContainerCreating, termination stops both, probes start at
    Running) and reads nothing else of them (image and imageID are reported from Running
    on). Example: a container pulled and created (imageID now set, state Created) reads as
    it did while Creating. Runtime statuses are snapshots (never changed once returned),
    so one kept from a sync can be compared later; the sim runtime hands out the same
    ContainerStatus while a container is unchanged, which `is` settles at once.
    """
    if a is b:                  # the sim runtime hands out one PodStatus while nothing changed
        return True
    if a.sandbox != b.sandbox or len(a.containers) != len(b.containers):
        return False
    for x, y in zip(a.containers, b.containers):
        if x is y:
            continue
        if x.state in _NOT_STARTED and y.state in _NOT_STARTED:
            if x.id != y.id or x.name != y.name or x.attempt != y.attempt or x.init != y.init:
                return False
        elif x != y:
            return False
    return True


_NOT_STARTED = (CREATING, CREATED)


def _foreign_conditions(status: core_v1.PodStatus) -> list[core_v1.PodCondition]:
    return [c for c in status.conditions or () if c.type not in _KUBELET_CONDITIONS]


_KUBELET_CONDITIONS = frozenset(generate.KUBELET_CONDITIONS)


def _all_containers(pod: core_v1.Pod) -> list[Any]:
    """Init, app and ephemeral containers (what termination stops)."""
    spec = pod.spec or core_v1.PodSpec()
    return list(spec.init_containers or ()) + list(spec.containers or ()) + list(spec.ephemeral_containers or ())
