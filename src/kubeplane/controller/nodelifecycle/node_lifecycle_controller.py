"""The node lifecycle controller: notice dead nodes, mark them Unknown, taint them.

Every node_monitor_period it checks each node's health signals — the Ready condition's
lastHeartbeatTime and the node's Lease in kube-node-lease — against its own clock. A node
silent for longer than node_monitor_grace_period gets Ready (and the pressure conditions)
set to Unknown, "Kubelet stopped posting node status.". On the next pass the node joins its
zone's tainting queue, which adds node.kubernetes.io/unreachable:NoExecute (or not-ready
when Ready=False) at node_eviction_rate per zone; the taint eviction controller then deletes
the pods that do not tolerate it. Separately, every node change maps its conditions to
NoSchedule taints (taint-nodes-by-condition) so the scheduler avoids it.

Upstream: pkg/controller/nodelifecycle/node_lifecycle_controller.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...api import errors
from ...api.types import coordination_v1, core_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ...client.util.workqueue import Queue, QueueOptions
from ...client.util.workqueue.parallelizer import parallelize_until
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339, rfc3339
from .. import controller_utils as cu
from . import node_utils as nu
from . import taints as tu
from .rate_limited_queue import (
    EVICTION_RATE_LIMITER_BURST, NODE_EVICTION_PERIOD, RateLimitedTimedQueue, TimedValue, TokenBucketRateLimiter,
)
from .tainteviction import TaintEvictionController, pods_assigned_to_node_func

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import LeaseLister, NodeLister, PodLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

NODE_READY = "Ready"
NODE_MEMORY_PRESSURE = "MemoryPressure"
NODE_DISK_PRESSURE = "DiskPressure"
NODE_PID_PRESSURE = "PIDPressure"
NODE_NETWORK_UNAVAILABLE = "NetworkUnavailable"
TRUE, FALSE, UNKNOWN = nu.CONDITION_TRUE, nu.CONDITION_FALSE, nu.CONDITION_UNKNOWN

# The namespace of the kubelets' heartbeat Leases. Upstream: v1.NamespaceNodeLease.
NAMESPACE_NODE_LEASE = "kube-node-lease"

UNREACHABLE_TAINT_TEMPLATE = core_v1.Taint(key=tu.TAINT_NODE_UNREACHABLE, effect=tu.TAINT_EFFECT_NO_EXECUTE)
NOT_READY_TAINT_TEMPLATE = core_v1.Taint(key=tu.TAINT_NODE_NOT_READY, effect=tu.TAINT_EFFECT_NO_EXECUTE)

# Which condition status maps to which taint key. Upstream: nodeConditionToTaintKeyStatusMap.
NODE_CONDITION_TO_TAINT_KEY_STATUS_MAP: dict[str, dict[str, str]] = {
    NODE_READY: {FALSE: tu.TAINT_NODE_NOT_READY, UNKNOWN: tu.TAINT_NODE_UNREACHABLE},
    NODE_MEMORY_PRESSURE: {TRUE: tu.TAINT_NODE_MEMORY_PRESSURE},
    NODE_DISK_PRESSURE: {TRUE: tu.TAINT_NODE_DISK_PRESSURE},
    NODE_NETWORK_UNAVAILABLE: {TRUE: tu.TAINT_NODE_NETWORK_UNAVAILABLE},
    NODE_PID_PRESSURE: {TRUE: tu.TAINT_NODE_PID_PRESSURE},
}
# Upstream: taintKeyToNodeConditionMap.
TAINT_KEY_TO_NODE_CONDITION_MAP = {key: cond for cond, by_status in NODE_CONDITION_TO_TAINT_KEY_STATUS_MAP.items()
                                   for key in by_status.values()}

# Zone states. Upstream: ZoneState.
STATE_INITIAL = "Initial"
STATE_NORMAL = "Normal"
STATE_FULL_DISRUPTION = "FullDisruption"
STATE_PARTIAL_DISRUPTION = "PartialDisruption"

# Attempts of one node's status update per pass (re-reading the node between them).
# Upstream: NodeHealthUpdateRetry.
NODE_HEALTH_UPDATE_RETRY = 5

LABEL_NODE_DISRUPTION_EXCLUSION = "node.kubernetes.io/exclude-disruption"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"

# Beta labels kept equal to their stable counterparts. Upstream: labelReconcileInfo.
LABEL_RECONCILE_INFO = (("kubernetes.io/os", "beta.kubernetes.io/os", True),
                        ("kubernetes.io/arch", "beta.kubernetes.io/arch", True))


@dataclass(frozen=True, slots=True)
class NodeLifecycleOptions:
    """kube-controller-manager's flags for this controller (seconds, rates in nodes per second)."""

    node_monitor_period: float = 5.0                # --node-monitor-period
    # --node-monitor-grace-period: 40 s, the default through Kubernetes 1.31 and the figure our
    # issue asks for; 1.32 raised it to 50 s (above the HTTP/2 health check's 30 s + 15 s),
    # which matters for real networks, not for loopback and in-process kubelets.
    node_monitor_grace_period: float = 40.0
    node_startup_grace_period: float = 60.0         # --node-startup-grace-period
    node_eviction_rate: float = 0.1                 # --node-eviction-rate
    secondary_node_eviction_rate: float = 0.01      # --secondary-node-eviction-rate
    large_cluster_size_threshold: int = 50          # --large-cluster-size-threshold
    unhealthy_zone_threshold: float = 0.55          # --unhealthy-zone-threshold
    node_update_workers: int = 8                    # Upstream: nodeUpdateWorkerSize
    # Run the taint eviction controller inside this one (upstream, with the
    # SeparateTaintEvictionController feature off); False when it runs on its own.
    run_taint_eviction: bool = True


@dataclass
class NodeHealthData:
    """What this controller last saw of a node, with its own clock's times. Upstream: nodeHealthData"""

    probe_timestamp: float
    ready_transition_timestamp: float
    status: core_v1.NodeStatus | None
    lease: coordination_v1.Lease | None = None


def get_zone_key(node: core_v1.Node) -> str:
    """region + ":\\x00:" + zone from the topology labels (beta ones as fallback), "" if neither.

    Upstream: GetZoneKey (component-helpers/node/topology)
    """
    labels = node.metadata.labels or {}
    zone = labels.get(LABEL_TOPOLOGY_ZONE, labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE, ""))
    region = labels.get(LABEL_TOPOLOGY_REGION, labels.get(LABEL_FAILURE_DOMAIN_BETA_REGION, ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def is_node_excluded_from_disruption_checks(node: core_v1.Node) -> bool:
    """Upstream: isNodeExcludedFromDisruptionChecks"""
    return LABEL_NODE_DISRUPTION_EXCLUSION in (node.metadata.labels or {})


def _time(value: str | None) -> float | None:
    return parse_rfc3339(value) if value else None


class _LogRecorder:
    """Used when no recorder is given: events only go to the debug log."""

    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event", extra={"type": type_, "reason": reason, "note": message})

    def eventf(self, obj: Any, type_: str, reason: str, fmt: str, *args: Any) -> None:
        self.event(obj, type_, reason, fmt % args)


class NodeLifecycleController:
    """Manages nodes' health conditions and taints. Upstream: nodelifecycle.Controller"""

    def __init__(self, node_informer: ResourceInformer[NodeLister], pod_informer: ResourceInformer[PodLister],
                 lease_informer: ResourceInformer[LeaseLister], client: Clientset, *, clock: Clock = REAL_CLOCK,
                 recorder: EventRecorder | None = None,
                 options: NodeLifecycleOptions = NodeLifecycleOptions()) -> None:
        self.client = client
        self.clock = clock
        self.options = options
        self.recorder = recorder if recorder is not None else _LogRecorder()
        self.node_monitor_period = options.node_monitor_period
        self.node_monitor_grace_period = options.node_monitor_grace_period
        self.node_startup_grace_period = options.node_startup_grace_period
        self.eviction_limiter_qps = options.node_eviction_rate
        self.secondary_eviction_limiter_qps = options.secondary_node_eviction_rate
        self.large_cluster_threshold = options.large_cluster_size_threshold
        self.unhealthy_zone_threshold = options.unhealthy_zone_threshold

        self.known_node_set: dict[str, core_v1.Node] = {}
        # Per node: last observed health and when (our clock) we saw it change.
        self.node_health_map: dict[str, NodeHealthData] = {}
        # Per zone: nodes waiting for a NoExecute taint, drained at the zone's rate.
        self.zone_no_execute_tainter: dict[str, RateLimitedTimedQueue] = {}
        self.zone_states: dict[str, str] = {}
        # Nodes whose pods still have to be marked not ready (an earlier attempt failed).
        self.nodes_to_retry: set[str] = set()
        self.node_update_queue: Queue[str] = Queue(QueueOptions(name="node_lifecycle_controller"))

        self.node_lister = node_informer.lister()
        self.pod_lister = pod_informer.lister()
        self.lease_lister = lease_informer.lister()
        self._informers = (lease_informer.informer(), node_informer.informer(), pod_informer.informer())
        self.get_pods_assigned_to_node = pods_assigned_to_node_func(pod_informer)      # test seam
        self.taint_manager: TaintEvictionController | None = None
        if options.run_taint_eviction:
            self.taint_manager = TaintEvictionController(pod_informer, node_informer, client, clock=clock,
                                                         recorder=self.recorder)
        node_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            lambda n: self.node_update_queue.add(n.metadata.name),
            lambda _old, n: self.node_update_queue.add(n.metadata.name),
            self._on_node_delete))

    def _on_node_delete(self, obj: Any) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(node, core_v1.Node):
            self.nodes_to_retry.discard(node.metadata.name)

    # --- run loop -----------------------------------------------------------------------------

    async def run(self, workers: int | None = None) -> None:
        """Wait for the caches, then run the taint manager, the node update workers, the
        NoExecute tainting pass (every 100 ms) and the health monitor (every
        node_monitor_period) until cancelled. Upstream: Run
        """
        workers = workers or self.options.node_update_workers
        log.info("Starting controller", extra={"controller": "node-lifecycle-controller"})
        try:
            for inf in self._informers:
                if not inf.has_synced():
                    await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                if self.taint_manager is not None:
                    tg.create_task(self.taint_manager.run(), name="taint-eviction-controller")
                for i in range(workers):
                    tg.create_task(self.do_node_processing_pass_worker(), name=f"node-lifecycle-worker-{i}")
                tg.create_task(self._every(NODE_EVICTION_PERIOD, self.do_no_execute_tainting_pass),
                               name="node-lifecycle-noexecute-tainting")
                tg.create_task(self._every(self.node_monitor_period, self.monitor_node_health),
                               name="node-lifecycle-monitor")
        finally:
            self.node_update_queue.shut_down()
            log.info("Shutting down controller", extra={"controller": "node-lifecycle-controller"})

    async def _every(self, period: float, fn: Any) -> None:
        """Run fn now and then period after each run ends (wait.Until); errors are logged."""
        while True:
            try:
                await fn()
            except Exception as err:
                log.error("node lifecycle pass failed", extra={"pass": fn.__name__, "err": repr(err)})
            await self.clock.sleep(period)

    async def do_node_processing_pass_worker(self) -> None:
        """NoSchedule taints and label reconciliation for each changed node. Upstream: doNodeProcessingPassWorker"""
        while True:
            node_name, shutdown = await self.node_update_queue.get()
            if shutdown:
                return
            try:
                await self.do_no_schedule_tainting_pass(node_name)
            except Exception as err:
                log.error("Failed to taint NoSchedule on node, requeue it", extra={"node": node_name, "err": repr(err)})
            try:
                await self.reconcile_node_labels(node_name)
            except Exception as err:
                log.error("Failed to reconcile labels for node, requeue it",
                          extra={"node": node_name, "err": repr(err)})
            self.node_update_queue.done(node_name)

    # --- taint-nodes-by-condition (NoSchedule) ---------------------------------------------------

    async def do_no_schedule_tainting_pass(self, node_name: str) -> None:
        """Make the node's condition NoSchedule taints (and the unschedulable one) match its
        conditions (and spec.unschedulable). Upstream: doNoScheduleTaintingPass
        """
        try:
            node = self.node_lister.get(node_name)
        except errors.NotFound:
            return
        taints: list[core_v1.Taint] = []
        for cond in (node.status.conditions if node.status else None) or ():
            key = NODE_CONDITION_TO_TAINT_KEY_STATUS_MAP.get(cond.type or "", {}).get(cond.status or "")
            if key is not None:
                taints.append(core_v1.Taint(key=key, effect=tu.TAINT_EFFECT_NO_SCHEDULE))
        if node.spec is not None and node.spec.unschedulable:
            taints.append(core_v1.Taint(key=tu.TAINT_NODE_UNSCHEDULABLE, effect=tu.TAINT_EFFECT_NO_SCHEDULE))
        node_taints = tu.taint_set_filter(
            node.spec.taints if node.spec else None,
            lambda t: t.effect == tu.TAINT_EFFECT_NO_SCHEDULE and (
                t.key == tu.TAINT_NODE_UNSCHEDULABLE or t.key in TAINT_KEY_TO_NODE_CONDITION_MAP))
        to_add, to_del = tu.taint_set_diff(taints, node_taints)
        if not to_add and not to_del:
            return
        if not await nu.swap_node_controller_taint(self.client, self.clock, to_add, to_del, node):
            raise RuntimeError(f"failed to swap taints of node {node_name}")

    async def reconcile_node_labels(self, node_name: str) -> None:
        """Keep beta.kubernetes.io/{os,arch} equal to kubernetes.io/{os,arch}. Upstream: reconcileNodeLabels"""
        try:
            node = self.node_lister.get(node_name)
        except errors.NotFound:
            return
        labels = node.metadata.labels
        if not labels:
            return
        to_update: dict[str, str] = {}
        for primary, secondary, ensure_secondary in LABEL_RECONCILE_INFO:
            if primary not in labels:
                continue
            if secondary in labels and labels[secondary] != labels[primary]:
                to_update[secondary] = labels[primary]
            elif secondary not in labels and ensure_secondary:
                to_update[secondary] = labels[primary]
        if to_update:
            await nu.add_or_update_labels_on_node(self.client, node_name, to_update)

    # --- NoExecute tainting (rate limited per zone) ------------------------------------------------

    async def do_no_execute_tainting_pass(self) -> None:
        """Taint the due nodes of every zone queue: unreachable for Ready=Unknown, not-ready
        for Ready=False (the two exclude each other, as Ready's values do). Upstream: doNoExecuteTaintingPass
        """
        for zone in list(self.zone_no_execute_tainter):
            await self.zone_no_execute_tainter[zone].try_(self._taint_one)

    async def _taint_one(self, value: TimedValue) -> tuple[bool, float]:
        try:
            node = self.node_lister.get(value.value)
        except errors.NotFound:
            log.info("Node no longer present in nodeLister", extra={"node": value.value})
            return True, 0.0
        cond = nu.get_node_condition(node.status, NODE_READY)
        if cond is None:
            log.info("Failed to get NodeCondition from the node status", extra={"node": value.value})
            return False, 0.05
        if cond.status == FALSE:
            add, opposite = NOT_READY_TAINT_TEMPLATE, UNREACHABLE_TAINT_TEMPLATE
        elif cond.status == UNKNOWN:
            add, opposite = UNREACHABLE_TAINT_TEMPLATE, NOT_READY_TAINT_TEMPLATE
        else:
            log.debug("Node was in a taint queue, but it's ready now. Ignoring taint request",
                      extra={"node": value.value})
            return True, 0.0
        return await nu.swap_node_controller_taint(self.client, self.clock, [add], [opposite], node), 0.0

    # --- health monitoring -----------------------------------------------------------------------

    async def monitor_node_health(self) -> None:
        """One pass over all cached nodes: track new and deleted nodes, update each node's
        health (Unknown after the grace period), queue unhealthy nodes for NoExecute taints,
        mark pods of newly not-ready nodes not ready, then adjust zone eviction rates.
        Upstream: monitorNodeHealth
        """
        nodes = self.node_lister.list()
        added, deleted, new_zone_representatives = self.classify_nodes(nodes)
        for node in new_zone_representatives:
            self.add_pod_evictor_for_new_zone(node)
        for node in added:
            name = node.metadata.name
            log.info("Controller observed a new Node", extra={"node": name})
            nu.record_node_event(self.recorder, name, node.metadata.uid, cu.EVENT_TYPE_NORMAL, "RegisteredNode",
                                 f"Registered Node {name} in Controller")
            self.known_node_set[name] = node
            self.add_pod_evictor_for_new_zone(node)
            await self.mark_node_as_reachable(node)
        for node in deleted:
            name = node.metadata.name
            log.info("Controller observed a Node deletion", extra={"node": name})
            nu.record_node_event(self.recorder, name, node.metadata.uid, cu.EVENT_TYPE_NORMAL, "RemovingNode",
                                 f"Removing Node {name} from Controller")
            self.known_node_set.pop(name, None)

        zone_to_node_conditions: dict[str, list[core_v1.NodeCondition | None]] = {}
        # Marking pods not ready is one request per pod: nodes are handled concurrently.
        await parallelize_until(self.options.node_update_workers, nodes,
                                lambda node: self._update_node_health_and_pods(node, zone_to_node_conditions))
        await self.handle_disruption(zone_to_node_conditions, nodes)

    async def _update_node_health_and_pods(self, cached: core_v1.Node,
                                           zone_to_node_conditions: dict[str, list[Any]]) -> None:
        """The per-node step of monitorNodeHealth (upstream's updateNodeFunc)."""
        node = cached.deep_copy()
        name = node.metadata.name
        for attempt in range(NODE_HEALTH_UPDATE_RETRY):
            try:
                _, observed, current = await self.try_update_node_health(node)
                break
            except errors.StatusError as err:
                if attempt == NODE_HEALTH_UPDATE_RETRY - 1:
                    log.error("Update health of Node from Controller error, Skipping - no pods will be evicted",
                              extra={"node": name, "err": repr(err)})
                    return
                try:
                    node = await self.client.core_v1().nodes().get(name)
                except errors.StatusError:
                    log.error("Failed while getting a Node to retry updating node health. "
                              "Probably Node was deleted", extra={"node": name})
                    return
        if not is_node_excluded_from_disruption_checks(node):
            zone_to_node_conditions.setdefault(get_zone_key(node), []).append(current)
        if current is None:
            self.nodes_to_retry.discard(name)
            return
        pods = self.get_pods_assigned_to_node(name)
        await self.process_taint_base_eviction(node, observed)
        needs_retry = name in self.nodes_to_retry
        became_not_ready = current.status != TRUE and observed.status == TRUE
        if became_not_ready:
            nu.record_node_status_change(self.recorder, node, "NodeNotReady")   # once per transition
        if became_not_ready or (needs_retry and observed.status != TRUE):
            try:
                await nu.mark_pods_not_ready(self.client, self.recorder, self.clock, pods, name)
            except Exception as err:
                log.error("unable to mark all pods NotReady on node; queuing for retry",
                          extra={"node": name, "err": repr(err)})
                self.nodes_to_retry.add(name)
                return
        self.nodes_to_retry.discard(name)

    async def process_taint_base_eviction(self, node: core_v1.Node, observed: core_v1.NodeCondition) -> None:
        """Queue a not-ready/unreachable node for its NoExecute taint (swapping the other one
        at once if present); untaint a Ready node. Upstream: processTaintBaseEviction
        """
        node_taints = node.spec.taints if node.spec else None
        if observed.status == FALSE:
            if tu.taint_exists(node_taints, UNREACHABLE_TAINT_TEMPLATE):
                if not await nu.swap_node_controller_taint(self.client, self.clock, [NOT_READY_TAINT_TEMPLATE],
                                                           [UNREACHABLE_TAINT_TEMPLATE], node):
                    log.error("Failed to instantly swap UnreachableTaint to NotReadyTaint. "
                              "Will try again in the next cycle")
            elif self.mark_node_for_tainting(node, FALSE):
                log.info("Node is NotReady. Adding it to the Taint queue", extra={"node": node.metadata.name})
        elif observed.status == UNKNOWN:
            if tu.taint_exists(node_taints, NOT_READY_TAINT_TEMPLATE):
                if not await nu.swap_node_controller_taint(self.client, self.clock, [UNREACHABLE_TAINT_TEMPLATE],
                                                           [NOT_READY_TAINT_TEMPLATE], node):
                    log.error("Failed to instantly swap NotReadyTaint to UnreachableTaint. "
                              "Will try again in the next cycle")
            elif self.mark_node_for_tainting(node, UNKNOWN):
                log.info("Node is unresponsive. Adding it to the Taint queue", extra={"node": node.metadata.name})
        elif observed.status == TRUE:
            try:
                if await self.mark_node_as_reachable(node):
                    log.info("Node is healthy again, removed all taints", extra={"node": node.metadata.name})
            except Exception:
                log.error("Failed to remove taints from node. Will retry in next iteration",
                          extra={"node": node.metadata.name})

    async def try_update_node_health(self, node: core_v1.Node
                                     ) -> tuple[float, core_v1.NodeCondition, core_v1.NodeCondition | None]:
        """Refresh our record of the node's health signals; if none arrived for the grace
        period, write Ready/MemoryPressure/DiskPressure/PIDPressure = Unknown.

        node is a copy the caller owns: its status is changed in place. Returns (grace period,
        the Ready condition as observed before this call, the Ready condition now). Raises
        the status update's error (the caller re-reads the node and retries).

        Example (grace 40 s): lease renewed at 10:00:00 and seen by the 10:00:03 pass ->
        probe_timestamp 10:00:03; passes at 10:00:53 and before change nothing (not *after*
        10:00:53); the 10:00:58 pass writes Unknown with lastTransitionTime 10:00:58.
        Upstream: tryUpdateNodeHealth
        """
        now = self.clock.now()
        name = node.metadata.name
        creation = _time(node.metadata.creation_timestamp) or now
        node_health = self.node_health_map.get(name)
        if node.status is None:
            node.status = core_v1.NodeStatus()
        current = nu.get_node_condition(node.status, NODE_READY)
        if current is None:
            # The kubelet never posted status: pretend a Ready=Unknown as old as the node, and
            # give it the (longer) startup grace period.
            observed = core_v1.NodeCondition(type=NODE_READY, status=UNKNOWN,
                                             last_heartbeat_time=node.metadata.creation_timestamp,
                                             last_transition_time=node.metadata.creation_timestamp)
            grace_period = self.node_startup_grace_period
            if node_health is not None:
                node_health.status = node.status
            else:
                node_health = NodeHealthData(creation, creation, node.status)
        else:
            observed = current.deep_copy()
            grace_period = self.node_monitor_grace_period
        node_health = self._observe_status(node, node_health, current, now)

        # Always update the probe time if the node lease is renewed. A kubelet that renews its
        # lease but never posts status is thus taken to be healthy.
        observed_lease = self._get_lease(name)
        saved_lease = node_health.lease
        if observed_lease is not None and (saved_lease is None
                                           or _renew_time(saved_lease) < _renew_time(observed_lease)):
            node_health.lease = observed_lease
            node_health.probe_timestamp = now
        self.node_health_map[name] = node_health

        if now > node_health.probe_timestamp + grace_period:
            self._mark_conditions_unknown(node, now)
            current = nu.get_node_condition(node.status, NODE_READY)
            if current != observed:
                await self.client.core_v1().nodes().update_status(node)
                self.node_health_map[name] = NodeHealthData(node_health.probe_timestamp, now, node.status,
                                                            observed_lease)
        return grace_period, observed, current

    def _observe_status(self, node: core_v1.Node, node_health: NodeHealthData | None,
                        current: core_v1.NodeCondition | None, now: float) -> NodeHealthData:
        """Compare the node's Ready condition with the one we saved; a new heartbeat moves the
        probe timestamp (and the transition timestamp if Ready changed). Part of tryUpdateNodeHealth.
        """
        name = node.metadata.name
        saved = nu.get_node_condition(node_health.status, NODE_READY) if node_health is not None else None
        if node_health is None:
            log.info("Missing timestamp for Node. Assuming now as a timestamp", extra={"node": name})
            return NodeHealthData(now, now, node.status)
        if saved is None and current is not None:
            log.debug("Creating timestamp entry for newly observed Node", extra={"node": name})
            return NodeHealthData(now, now, node.status)
        if saved is not None and current is None:
            log.error("ReadyCondition was removed from Status of Node", extra={"node": name})
            return NodeHealthData(now, now, node.status)
        if saved is not None and current is not None and saved.last_heartbeat_time != current.last_heartbeat_time:
            transition = now if saved.last_transition_time != current.last_transition_time \
                else node_health.ready_transition_timestamp
            return NodeHealthData(now, transition, node.status)
        return node_health

    def _get_lease(self, name: str) -> coordination_v1.Lease | None:
        try:
            return self.lease_lister.leases(NAMESPACE_NODE_LEASE).get(name)
        except errors.NotFound:
            return None

    def _mark_conditions_unknown(self, node: core_v1.Node, now: float) -> None:
        """Ready and the pressure conditions become Unknown (NetworkUnavailable is the control
        plane's, left alone); missing ones are added as never updated.
        """
        assert node.status is not None
        conditions = node.status.conditions if node.status.conditions is not None else []
        node.status.conditions = conditions
        now_ts = rfc3339(now)
        for cond_type in (NODE_READY, NODE_MEMORY_PRESSURE, NODE_DISK_PRESSURE, NODE_PID_PRESSURE):
            cond = nu.get_node_condition(node.status, cond_type)
            if cond is None:
                log.info("Condition of node was never updated by kubelet",
                         extra={"node": node.metadata.name, "nodeConditionType": cond_type})
                conditions.append(core_v1.NodeCondition(
                    type=cond_type, status=UNKNOWN, reason="NodeStatusNeverUpdated",
                    message="Kubelet never posted node status.",
                    last_heartbeat_time=node.metadata.creation_timestamp, last_transition_time=now_ts))
            elif cond.status != UNKNOWN:
                cond.status = UNKNOWN
                cond.reason = "NodeStatusUnknown"
                cond.message = "Kubelet stopped posting node status."
                cond.last_transition_time = now_ts

    # --- zones and disruption ------------------------------------------------------------------

    def classify_nodes(self, all_nodes: list[core_v1.Node]
                       ) -> tuple[list[core_v1.Node], list[core_v1.Node], list[core_v1.Node]]:
        """(added: new to us, deleted: gone, new zone representatives: known nodes of a zone
        we have no state for). Upstream: classifyNodes
        """
        added, new_zone_representatives = [], []
        for node in all_nodes:
            if node.metadata.name not in self.known_node_set:
                added.append(node)
            elif get_zone_key(node) not in self.zone_states:
                new_zone_representatives.append(node)
        names = {n.metadata.name for n in all_nodes}
        deleted = [n for name, n in self.known_node_set.items() if name not in names]
        return added, deleted, new_zone_representatives

    def add_pod_evictor_for_new_zone(self, node: core_v1.Node) -> None:
        """Upstream: addPodEvictorForNewZone"""
        zone = get_zone_key(node)
        if zone not in self.zone_states:
            self.zone_states[zone] = STATE_INITIAL
            limiter = TokenBucketRateLimiter(self.eviction_limiter_qps, EVICTION_RATE_LIMITER_BURST, self.clock)
            self.zone_no_execute_tainter[zone] = RateLimitedTimedQueue(limiter, self.clock)
            log.info("Initializing eviction metric for zone", extra={"zone": zone})

    def mark_node_for_tainting(self, node: core_v1.Node, status: str) -> bool:
        """Queue the node for its NoExecute taint; True if it was not queued already.

        A node whose taint is missing (removed by someone) is forgotten first so it can be
        queued again. Upstream: markNodeForTainting
        """
        tainter = self.zone_no_execute_tainter[get_zone_key(node)]
        taints = node.spec.taints if node.spec else None
        if status == FALSE and not tu.taint_exists(taints, NOT_READY_TAINT_TEMPLATE):
            tainter.remove(node.metadata.name)
        if status == UNKNOWN and not tu.taint_exists(taints, UNREACHABLE_TAINT_TEMPLATE):
            tainter.remove(node.metadata.name)
        return tainter.add(node.metadata.name, node.metadata.uid or "")

    async def mark_node_as_reachable(self, node: core_v1.Node) -> bool:
        """Remove both NoExecute taints (no request unless the cached node has one) and
        forget the node in its tainting queue. Upstream: markNodeAsReachable
        """
        name = node.metadata.name
        await nu.remove_taint_off_node(self.client, name, node, UNREACHABLE_TAINT_TEMPLATE)
        await nu.remove_taint_off_node(self.client, name, node, NOT_READY_TAINT_TEMPLATE)
        tainter = self.zone_no_execute_tainter.get(get_zone_key(node))
        return tainter.remove(name) if tainter is not None else False

    def compute_zone_state(self, node_ready_conditions: list[core_v1.NodeCondition | None]) -> tuple[int, str]:
        """(not ready count, state): FullDisruption if none is Ready, PartialDisruption if more
        than 2 and at least unhealthy_zone_threshold of them are not Ready, else Normal.

        Example (threshold 0.55): 3 of 5 not ready -> 0.6 >= 0.55 -> PartialDisruption;
        2 of 3 -> Normal (not more than 2); 0 of 4 ready -> FullDisruption.
        Upstream: ComputeZoneState
        """
        ready = sum(1 for c in node_ready_conditions if c is not None and c.status == TRUE)
        not_ready = len(node_ready_conditions) - ready
        if ready == 0 and not_ready > 0:
            return not_ready, STATE_FULL_DISRUPTION
        if not_ready > 2 and not_ready / (not_ready + ready) >= self.unhealthy_zone_threshold:
            return not_ready, STATE_PARTIAL_DISRUPTION
        return not_ready, STATE_NORMAL

    def healthy_qps_func(self, node_num: int) -> float:
        """Upstream: HealthyQPSFunc"""
        return self.eviction_limiter_qps

    def reduced_qps_func(self, node_num: int) -> float:
        """Large zones slow down, small ones stop. Upstream: ReducedQPSFunc"""
        return self.secondary_eviction_limiter_qps if node_num > self.large_cluster_threshold else 0.0

    def set_limiter_in_zone(self, zone: str, zone_size: int, state: str) -> None:
        """Upstream: setLimiterInZone"""
        tainter = self.zone_no_execute_tainter[zone]
        if state == STATE_NORMAL:
            tainter.swap_limiter(self.eviction_limiter_qps)
        elif state == STATE_PARTIAL_DISRUPTION:
            tainter.swap_limiter(self.reduced_qps_func(zone_size))
        elif state == STATE_FULL_DISRUPTION:
            tainter.swap_limiter(self.healthy_qps_func(zone_size))

    async def handle_disruption(self, zone_to_node_conditions: dict[str, list[Any]],
                                nodes: list[core_v1.Node]) -> None:
        """Set each zone's tainting rate from its health.

        If every zone is fully disrupted, the likelier story is that this control plane lost
        its network, not that every node died: untaint all nodes and stop tainting until some
        node is Ready again ("master disruption mode"); on leaving it, restart every node's
        grace period from now. Upstream: handleDisruption
        """
        new_zone_states: dict[str, str] = {}
        all_are_fully_disrupted = True
        for zone, conds in zone_to_node_conditions.items():
            _, new_state = self.compute_zone_state(conds)
            if new_state != STATE_FULL_DISRUPTION:
                all_are_fully_disrupted = False
            new_zone_states[zone] = new_state
            if zone not in self.zone_states:
                log.error("Setting initial state for unseen zone", extra={"zone": zone})
                self.zone_states[zone] = STATE_INITIAL

        # Forget zones without nodes. (Upstream stops this loop at the first zone not fully
        # disrupted, so with Go's random map order a stale zone goes in some later pass; here
        # it goes at once, which also keeps "" states out of zone_states.)
        for zone in [z for z in self.zone_states if z not in zone_to_node_conditions]:
            del self.zone_states[zone]
        all_was_fully_disrupted = all(s == STATE_FULL_DISRUPTION for s in self.zone_states.values())

        if all_are_fully_disrupted and all_was_fully_disrupted:
            return
        if all_are_fully_disrupted:
            log.info("Controller detected that all Nodes are not-Ready. Entering master disruption mode")
            for node in nodes:
                try:
                    await self.mark_node_as_reachable(node)
                except Exception:
                    log.error("Failed to remove taints from Node", extra={"node": node.metadata.name})
            for zone in self.zone_states:
                self.zone_no_execute_tainter[zone].swap_limiter(0.0)
                self.zone_states[zone] = STATE_FULL_DISRUPTION
            return
        if all_was_fully_disrupted:
            log.info("Controller detected that some Nodes are Ready. Exiting master disruption mode")
            now = self.clock.now()
            for node in nodes:
                if (health := self.node_health_map.get(node.metadata.name)) is not None:
                    health.probe_timestamp = now
                    health.ready_transition_timestamp = now
            for zone in self.zone_states:
                self.set_limiter_in_zone(zone, len(zone_to_node_conditions[zone]), new_zone_states[zone])
                self.zone_states[zone] = new_zone_states[zone]
            return
        for zone, state in self.zone_states.items():
            new_state = new_zone_states[zone]
            if state == new_state:
                continue
            log.info("Controller detected that zone is now in new state", extra={"zone": zone, "newState": new_state})
            self.set_limiter_in_zone(zone, len(zone_to_node_conditions[zone]), new_state)
            self.zone_states[zone] = new_state


def _renew_time(lease: coordination_v1.Lease) -> float:
    renew = lease.spec.renew_time if lease.spec else None
    return parse_rfc3339(renew) if renew else 0.0
