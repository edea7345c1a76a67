"""The pod garbage collector: force-deletes pods nobody else will.

Every 20 s it deletes, oldest (evicted first) beyond --terminated-pod-gc-threshold, finished
pods; terminating pods on not-ready nodes tainted node.kubernetes.io/out-of-service; pods
bound to nodes that no longer exist (after a 40 s quarantine and a live GET, so a node the
informer has not seen yet is not mistaken for a deleted one); and terminating pods that were
never scheduled (no kubelet will ever finish them). A pod not yet Succeeded/Failed is first
marked Failed (with a DisruptionTarget condition for orphans), so controllers counting
failures (Jobs) see why it went, then deleted with grace period 0.

Upstream: pkg/controller/podgc/gc_controller.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from ...api import errors
from ...api.types import core_v1
from ...client.util.workqueue import DelayingQueue, DelayingQueueOptions
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339, rfc3339
from ..nodelifecycle.node_utils import get_node_condition
from ..nodelifecycle.taints import TAINT_NODE_OUT_OF_SERVICE
from . import metrics

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import NodeLister, PodLister

log = logging.getLogger(__name__)

GC_CHECK_PERIOD = 20.0          # seconds between GC passes. Upstream: gcCheckPeriod
QUARANTINE_TIME = 40.0          # how long a missing node may take to show up. Upstream: quarantineTime
FIELD_MANAGER = "PodGC"         # Upstream: fieldManager
DISRUPTION_TARGET = "DisruptionTarget"


@dataclass(frozen=True, slots=True)
class PodGCControllerOptions:
    # --terminated-pod-gc-threshold: finished pods kept before the oldest are deleted (<= 0: never).
    terminated_pod_threshold: int = 12500
    gc_check_period: float = GC_CHECK_PERIOD
    quarantine_time: float = QUARANTINE_TIME


class PodGCController:
    """Upstream: PodGCController"""

    def __init__(self, client: Clientset, pod_informer: ResourceInformer[PodLister],
                 node_informer: ResourceInformer[NodeLister], *, clock: Clock = REAL_CLOCK,
                 options: PodGCControllerOptions = PodGCControllerOptions()) -> None:
        self.client, self.clock, self.options = client, clock, options
        self.pod_lister, self.node_lister = pod_informer.lister(), node_informer.lister()
        self._informers = (pod_informer.informer(), node_informer.informer())
        # Nodes seen on pods but missing from the informer, waiting out their quarantine.
        self.node_queue: DelayingQueue[str] = DelayingQueue(DelayingQueueOptions(name="orphaned_pods_nodes",
                                                                                 clock=clock))

    async def run(self) -> None:
        """Wait for the caches, then collect every gc_check_period until cancelled. Upstream: Run"""
        log.info("Starting GC controller")
        try:
            for inf in self._informers:
                if not inf.has_synced():
                    await inf.wait_synced()
            while True:
                try:
                    await self.gc()
                except Exception:
                    log.exception("pod GC pass failed")
                await self.clock.sleep(self.options.gc_check_period)
        finally:
            self.node_queue.shut_down()
            log.info("Shutting down GC controller")

    async def gc(self) -> None:
        """One pass. Upstream: gc"""
        pods = self.pod_lister.list()
        nodes = self.node_lister.list()
        if self.options.terminated_pod_threshold > 0:
            await self.gc_terminated(pods)
        await self.gc_terminating(pods)
        await self.gc_orphaned(pods, nodes)
        await self.gc_unscheduled_terminating(pods)

    async def gc_terminated(self, pods: Sequence[core_v1.Pod]) -> None:
        """Delete the oldest finished pods beyond the threshold, evicted ones first.

        Example: threshold 12500, 12503 Succeeded/Failed pods -> the 3 oldest go.
        Upstream: gcTerminated
        """
        terminated = [p for p in pods if is_pod_terminated(p)]
        delete_count = len(terminated) - self.options.terminated_pod_threshold
        if delete_count <= 0:
            return
        log.info("Garbage collecting pods", extra={"numPods": delete_count})
        terminated.sort(key=_eviction_and_creation_order)
        await self._delete_all(terminated[:delete_count], metrics.TERMINATED)

    async def gc_terminating(self, pods: Sequence[core_v1.Pod]) -> None:
        """Force-delete terminating pods on not-ready nodes tainted out-of-service (their
        kubelet is gone for good). Upstream: gcTerminating
        """
        out: list[core_v1.Pod] = []
        for pod in pods:
            if pod.metadata.deletion_timestamp is None:
                continue
            try:
                node = self.node_lister.get((pod.spec.node_name if pod.spec else None) or "")
            except errors.NotFound:
                continue
            ready = get_node_condition(node.status, "Ready")
            out_of_service = any(t.key == TAINT_NODE_OUT_OF_SERVICE for t in (node.spec.taints if node.spec else None) or ())
            if (ready is None or ready.status != "True") and out_of_service:
                out.append(pod)
        if out:
            out.sort(key=_eviction_and_creation_order)
            await self._delete_all(out, metrics.TERMINATING_OUT_OF_SERVICE)

    async def gc_orphaned(self, pods: Sequence[core_v1.Pod], nodes: Sequence[core_v1.Node]) -> None:
        """Delete pods bound to nodes that were deleted. Upstream: gcOrphaned"""
        existing = {n.metadata.name for n in nodes}
        for pod in pods:
            node = (pod.spec.node_name if pod.spec else None) or ""
            if node and node not in existing:
                self.node_queue.add_after(node, self.options.quarantine_time)
        deleted = await self.discover_deleted_nodes(existing)
        for pod in pods:
            node = (pod.spec.node_name if pod.spec else None) or ""
            if node not in deleted:
                continue
            log.info("Found orphaned Pod assigned to the Node, deleting",
                     extra={"pod": f"{pod.metadata.namespace}/{pod.metadata.name}", "node": node})
            cond = {"type": DISRUPTION_TARGET, "status": "True", "reason": "DeletionByPodGC",
                    "message": "PodGC: node no longer exists"}
            await self._mark_failed_and_delete_logged(pod, cond, metrics.ORPHANED)

    async def discover_deleted_nodes(self, existing: set[str]) -> set[str]:
        """The quarantined nodes still missing, confirmed by a live GET. Upstream: discoverDeletedNodes"""
        deleted: set[str] = set()
        while self.node_queue.len() > 0:
            name, shutdown = await self.node_queue.get()
            if shutdown:
                break
            try:
                if name not in existing and not await self.check_if_node_exists(name):
                    deleted.add(name)
            except Exception as err:       # asked again next pass if still needed
                log.info("Error while getting node", extra={"node": name, "err": repr(err)})
            finally:
                self.node_queue.done(name)
        return deleted

    async def check_if_node_exists(self, name: str) -> bool:
        """Upstream: checkIfNodeExists"""
        try:
            await self.client.core_v1().nodes().get(name)
        except errors.NotFound:
            return False
        return True

    async def gc_unscheduled_terminating(self, pods: Sequence[core_v1.Pod]) -> None:
        """Force-delete terminating pods never bound to a node. Upstream: gcUnscheduledTerminating"""
        for pod in pods:
            if pod.metadata.deletion_timestamp is None or (pod.spec and pod.spec.node_name):
                continue
            log.info("Found unscheduled terminating Pod not assigned to any Node, deleting",
                     extra={"pod": f"{pod.metadata.namespace}/{pod.metadata.name}"})
            await self._mark_failed_and_delete_logged(pod, None, metrics.UNSCHEDULED_TERMINATING)

    async def _delete_all(self, pods: Sequence[core_v1.Pod], reason: str) -> None:
        await asyncio.gather(*(self._mark_failed_and_delete_logged(p, None, reason) for p in pods))

    async def _mark_failed_and_delete_logged(self, pod: core_v1.Pod, condition: dict[str, str] | None,
                                             reason: str) -> None:
        ns = pod.metadata.namespace or ""
        metrics.DELETING_PODS.labels(ns, reason).inc()
        try:
            await self.mark_failed_and_delete_pod_with_condition(pod, condition)
        except errors.NotFound:
            pass                               # ignore not founds, as upstream
        except Exception as err:
            metrics.DELETING_PODS_ERRORS.labels(ns, reason).inc()
            log.info("Failed to delete pod", extra={"pod": f"{pod.metadata.namespace}/{pod.metadata.name}",
                                                    "err": repr(err)})

    async def mark_failed_and_delete_pod_with_condition(self, pod: core_v1.Pod,
                                                        condition: dict[str, str] | None) -> None:
        """Mark a pod that has not finished Failed (server-side apply of phase and condition
        as the PodGC field manager), then delete it with grace period 0.

        An orphan's phase would otherwise stay Running forever: no kubelet will report it.
        Upstream: markFailedAndDeletePodWithCondition
        """
        pods = self.client.core_v1().pods(pod.metadata.namespace or "")
        log.info("PodGC is force deleting Pod", extra={"pod": f"{pod.metadata.namespace}/{pod.metadata.name}"})
        phase = pod.status.phase if pod.status else None
        if phase not in ("Succeeded", "Failed"):
            status: dict[str, object] = {"phase": "Failed"}
            if condition is not None:
                status["conditions"] = [{**condition, "lastTransitionTime": rfc3339(self.clock.now())}]
            apply = {"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": pod.metadata.name, "namespace": pod.metadata.namespace}, "status": status}
            await pods.patch(pod.metadata.name or "", apply, "apply", subresource="status",
                             field_manager=FIELD_MANAGER, force=True)
        await pods.delete(pod.metadata.name or "", grace_period_seconds=0)


def is_pod_terminated(pod: core_v1.Pod) -> bool:
    """Any phase but Pending, Running and Unknown. Upstream: isPodTerminated"""
    return (pod.status.phase if pod.status else None) not in ("Pending", "Running", "Unknown")


def _eviction_and_creation_order(pod: core_v1.Pod) -> tuple[bool, float, str]:
    """Evicted pods first, then oldest first, names breaking ties. Upstream: byEvictionAndCreationTimestamp"""
    st = pod.status
    evicted = st is not None and st.phase == "Failed" and st.reason == "Evicted"
    created = parse_rfc3339(pod.metadata.creation_timestamp) if pod.metadata.creation_timestamp else 0.0
    return (not evicted, created, pod.metadata.name or "")
