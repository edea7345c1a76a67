"""The DaemonSet controller: one daemon pod on every node that should run it.

Handlers enqueue DaemonSet keys (a node added or changed wakes the DaemonSets whose verdict
for it changed); sync_daemon_set records the template as a ControllerRevision, creates pods on
nodes missing one and deletes pods from nodes that should not run them (manage), rolls pods
to the current revision (rolling_update, update.py), and writes status.

Upstream: pkg/controller/daemon/daemon_controller.go
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, cast

from ...api import errors, labels
from ...api.nodeaffinity import get_required_node_affinity
from ...api.toleration import tolerates_taint
from ...api.types import ObjectName, apps_v1, core_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, object_from_tombstone
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339
from .. import controller_utils as cu
from ..controller_ref_manager import PodControllerRefManager, recheck_deletion_timestamp
from ..endpointslice.utils import is_pod_terminal
from ..history import RealHistory
from . import update
from .util import daemonset_util as util

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import ControllerRevisionLister, DaemonSetLister, NodeLister, PodLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# Upstream: BurstReplicas — the most pods created or deleted in one sync.
BURST_REPLICAS = 250
STATUS_UPDATE_RETRIES = 1          # upstream: StatusUpdateRetries
# Upstream: the failed-pod back-off, flowcontrol.NewBackOff(1s, 15m).
FAILED_POD_BACKOFF_INITIAL, FAILED_POD_BACKOFF_MAX = 1.0, 15 * 60.0
# Upstream's event reasons.
SELECTING_ALL_REASON = "SelectingAll"
FAILED_PLACEMENT_REASON = "FailedPlacement"
FAILED_DAEMON_POD_REASON = "FailedDaemonPod"
SUCCEEDED_DAEMON_POD_REASON = "SucceededDaemonPod"
CONTROLLER_KIND = cu.GroupVersionKind("apps", "v1", "DaemonSet")
CONTROLLER_NAME = "daemonset-controller"


class _LogRecorder:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event %s %s: %s", type_, reason, message)


class Backoff:
    """Per-key exponential back-off. Upstream: flowcontrol.Backoff (Next, Get, IsInBackOffSinceUpdate)."""

    def __init__(self, initial: float, max_: float) -> None:
        self.initial, self.max = initial, max_
        self.entries: dict[str, tuple[float, float]] = {}     # key -> (delay, last update)

    def get(self, key: str) -> float:
        return self.entries.get(key, (0.0, 0.0))[0]

    def next(self, key: str, now: float) -> None:
        entry = self.entries.get(key)
        if entry is None or now - entry[1] > 2 * self.max:      # idle long enough: start over
            self.entries[key] = (self.initial, now)
        else:
            self.entries[key] = (min(entry[0] * 2, self.max), now)

    def is_in_back_off_since_update(self, key: str, now: float) -> bool:
        entry = self.entries.get(key)
        return entry is not None and now - entry[1] < entry[0]

    def gc(self, now: float) -> None:
        """Upstream: GC — forget keys idle for twice the maximum."""
        for key, (_, last) in list(self.entries.items()):
            if now - last > 2 * self.max:
                del self.entries[key]


# --- node eligibility ---------------------------------------------------------------------------

def new_pod(ds: apps_v1.DaemonSet, node_name: str) -> core_v1.Pod:
    """The pod the DaemonSet would run on node_name, with the daemon tolerations. Upstream: NewPod"""
    template = ds.spec.template or core_v1.PodTemplateSpec()
    spec = (template.spec or core_v1.PodSpec()).deep_copy()
    meta = template.metadata.deep_copy() if template.metadata is not None else None
    pod = core_v1.Pod(metadata=meta, spec=spec)
    if pod.metadata is None:
        from ...api.types import meta_v1
        pod.metadata = meta_v1.ObjectMeta()
    pod.metadata.namespace = ds.metadata.namespace
    spec.node_name = node_name
    util.add_or_update_daemon_pod_tolerations(spec)
    return pod


_FACTS: dict[tuple[str, int], tuple[Any, list[core_v1.Toleration]]] = {}
_FACTS_LIMIT = 256
_last: list[Any] = [None, None]          # [the DaemonSet object last asked about, its facts]


def _facts(ds: apps_v1.DaemonSet) -> tuple[Any, list[core_v1.Toleration]]:
    """What eligibility needs of the DaemonSet's pod (its required node affinity and its
    tolerations), computed once per template (uid and generation: status writes do not
    change it) rather than once per node; the same cached object is answered at once."""
    if ds is _last[0]:
        return _last[1]
    key = (ds.metadata.uid or "", ds.metadata.generation or 0)
    facts = _FACTS.get(key) if key[0] and key[1] else None
    if facts is None:
        pod = new_pod(ds, "")
        facts = (get_required_node_affinity(pod), list(pod.spec.tolerations or []))
        if key[0] and key[1]:
            if len(_FACTS) >= _FACTS_LIMIT:
                _FACTS.clear()
            _FACTS[key] = facts
    _last[:] = [ds, facts]
    return facts


def _untolerated(taints: list[core_v1.Taint], tolerations: list[core_v1.Toleration], effects: tuple[str, ...]) -> bool:
    """Upstream: FindMatchingUntoleratedTaint(...) found one."""
    return any(t.effect in effects and not any(tolerates_taint(tol, t) for tol in tolerations) for t in taints)


def node_should_run_daemon_pod(node: core_v1.Node, ds: apps_v1.DaemonSet) -> tuple[bool, bool]:
    """(should run: a new daemon pod belongs there; should continue running: an existing one may
    stay). A pod fits a node by the template's nodeName, nodeSelector and required node
    affinity, and by tolerating its NoSchedule and NoExecute taints; a pod already there only
    has to tolerate the NoExecute ones. Upstream: NodeShouldRunDaemonPod, predicates"""
    template = ds.spec.template
    tmpl_node = template.spec.node_name if template is not None and template.spec is not None else None
    if tmpl_node and tmpl_node != node.metadata.name:
        return False, False
    required, tolerations = _facts(ds)
    if not required.match(node):
        return False, False
    taints = (node.spec.taints if node.spec else None) or []
    if _untolerated(taints, tolerations, ("NoExecute", "NoSchedule")):
        return False, not _untolerated(taints, tolerations, ("NoExecute",))
    return True, True


def _creation(pod: core_v1.Pod) -> float:
    ts = pod.metadata.creation_timestamp
    return parse_rfc3339(ts) if ts else 0.0


def pod_by_creation_timestamp_and_phase(pod: core_v1.Pod) -> tuple[bool, float, str]:
    """Sort key: scheduled pods first, then the oldest, then by name. Upstream: podByCreationTimestampAndPhase"""
    return (not (pod.spec and pod.spec.node_name), _creation(pod), pod.metadata.name or "")


def get_unscheduled_pods_without_node(nodes: list[core_v1.Node], node_to_daemon_pods: dict[str, list[core_v1.Pod]]
                                      ) -> list[str]:
    """Unscheduled pods meant for nodes that no longer exist (pod GC never sees them).
    Upstream: getUnscheduledPodsWithoutNode"""
    running = {n.metadata.name for n in nodes}
    return [p.metadata.name or "" for n, pods in node_to_daemon_pods.items() if n not in running
            for p in pods if not (p.spec and p.spec.node_name)]


def failed_pods_backoff_key(ds: apps_v1.DaemonSet, node_name: str) -> str:
    """Upstream: failedPodsBackoffKey"""
    return f"{ds.metadata.uid}/{ds.status.observed_generation if ds.status else 0}/{node_name}"


def _node_in_same_condition(old: list[core_v1.NodeCondition] | None, cur: list[core_v1.NodeCondition] | None) -> bool:
    """Upstream: nodeInSameCondition (heartbeat times aside)."""
    def key(conds: list[core_v1.NodeCondition] | None) -> set[tuple[str | None, str | None]]:
        return {(c.type, c.status) for c in conds or []}
    return key(old) == key(cur)


def should_ignore_node_update(old: core_v1.Node, cur: core_v1.Node) -> bool:
    """A node update that changes nothing but heartbeats and status. Upstream: shouldIgnoreNodeUpdate"""
    if not _node_in_same_condition(old.status.conditions if old.status else None,
                                   cur.status.conditions if cur.status else None):
        return False
    return old.metadata.labels == cur.metadata.labels and old.spec == cur.spec


class DaemonSetsController:
    """Upstream: DaemonSetsController"""

    def __init__(self, ds_informer: ResourceInformer[DaemonSetLister],
                 history_informer: ResourceInformer[ControllerRevisionLister], pod_informer: ResourceInformer[PodLister],
                 node_informer: ResourceInformer[NodeLister], client: Clientset, *, clock: Clock = REAL_CLOCK,
                 recorder: EventRecorder | None = None, burst_replicas: int = BURST_REPLICAS) -> None:
        self.client = client
        self.clock = clock
        self.recorder: EventRecorder = recorder if recorder is not None else cast("EventRecorder", _LogRecorder())
        self.burst_replicas = burst_replicas
        self.pod_control: cu.PodControlInterface = cu.RealPodControl(client, self.recorder)   # test seam
        self.expectations = cu.ControllerExpectations(clock)
        self.failed_pods_backoff = Backoff(FAILED_POD_BACKOFF_INITIAL, FAILED_POD_BACKOFF_MAX)
        self.queue: RateLimitingQueue[ObjectName] = RateLimitingQueue(
            RateLimitingQueueOptions(name="daemonset", clock=clock))
        self.ds_lister = ds_informer.lister()
        self.history_lister = history_informer.lister()
        self.pod_lister = pod_informer.lister()
        self.node_lister = node_informer.lister()
        self.history = RealHistory(client, self.history_lister)
        self._informers = [i.informer() for i in (ds_informer, history_informer, pod_informer, node_informer)]
        ds_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.add_daemonset, self.update_daemonset, self.delete_daemonset))
        history_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.add_history, self.update_history, self.delete_history))
        pod_inf = pod_informer.informer()
        pod_inf.add_event_handler(ResourceEventHandlerFuncs(self.add_pod, self.update_pod, self.delete_pod))
        cu.add_pod_controller_uid_indexer(pod_inf.get_indexer())
        self.pod_indexer = pod_inf.get_indexer()
        node_informer.informer().add_event_handler(ResourceEventHandlerFuncs(self.add_node, self.update_node, None))
        self.sync_handler = self.sync_daemon_set         # test seam
        # Within one sync: the node->pods map of each DaemonSet (by key), with the DaemonSet
        # object it was made for; dropped when the sync writes pods or ends.
        self._node_pods_memo: dict[str, tuple[apps_v1.DaemonSet, dict[str, list[core_v1.Pod]]]] = {}

    # --- run loop ------------------------------------------------------------------------------

    async def run(self, workers: int = 2) -> None:
        """Upstream: Run (--concurrent-daemonset-syncs, 2), with the back-off GC every minute."""
        log.info("Starting daemon sets controller")

        async def gc() -> None:
            while True:
                await self.clock.sleep(60.0)
                self.failed_pods_backoff.gc(self.clock.now())
        gc_task = asyncio.ensure_future(gc())
        try:
            await run_workers(self.queue, self._informers, self.worker, workers)
        finally:
            gc_task.cancel()

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: ObjectName) -> None:
        if err is None:
            self.queue.forget(key)
            return
        log.info("Error syncing daemon set", extra={"key": str(key), "err": str(err)})
        self.queue.add_rate_limited(key)

    def enqueue(self, ds: apps_v1.DaemonSet) -> None:
        self.queue.add(ObjectName(ds.metadata.namespace or "", ds.metadata.name or ""))

    def enqueue_after(self, ds: apps_v1.DaemonSet, after: float) -> None:
        self.queue.add_after(ObjectName(ds.metadata.namespace or "", ds.metadata.name or ""), after)

    # --- DaemonSet and history handlers -----------------------------------------------------------

    def add_daemonset(self, ds: apps_v1.DaemonSet) -> None:
        self.enqueue(ds)

    def update_daemonset(self, old: apps_v1.DaemonSet, cur: apps_v1.DaemonSet) -> None:
        if old.metadata.uid != cur.metadata.uid:
            self.delete_daemonset(DeletedFinalStateUnknown(cu.key_func(old), old))
        self.enqueue(cur)

    def delete_daemonset(self, obj: Any) -> None:
        """Upstream: deleteDaemonset — forget its expectations so a new one starts clean."""
        ds = object_from_tombstone(obj, apps_v1.DaemonSet)
        if ds is None:
            return
        key = cu.key_func(ds)
        self.expectations.delete_expectations(key)
        self.queue.add(ObjectName.parse(key))

    def _owner_of(self, obj: Any) -> apps_v1.DaemonSet | None:
        ref = cu.get_controller_of(obj)
        return self.resolve_controller_ref(obj.metadata.namespace, ref) if ref is not None else None

    def add_history(self, history: apps_v1.ControllerRevision) -> None:
        """Upstream: addHistory"""
        if history.metadata.deletion_timestamp is not None:
            self.delete_history(history)
            return
        if cu.get_controller_of(history) is not None:
            if (ds := self._owner_of(history)) is not None:
                self.enqueue(ds)
            return
        for ds in self.get_daemon_sets_for(history):
            self.enqueue(ds)

    def update_history(self, old: apps_v1.ControllerRevision, cur: apps_v1.ControllerRevision) -> None:
        """Upstream: updateHistory"""
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        cur_ref, old_ref = cu.get_controller_of(cur), cu.get_controller_of(old)
        if cur_ref != old_ref and old_ref is not None:
            if (ds := self._owner_of(old)) is not None:
                self.enqueue(ds)
        if cur_ref is not None:
            if (ds := self._owner_of(cur)) is not None:
                self.enqueue(ds)
            return
        if cur.metadata.labels != old.metadata.labels or cur_ref != old_ref:
            for ds in self.get_daemon_sets_for(cur):
                self.enqueue(ds)

    def delete_history(self, obj: Any) -> None:
        """Upstream: deleteHistory"""
        history = object_from_tombstone(obj, apps_v1.ControllerRevision)
        if history is not None and (ds := self._owner_of(history)) is not None:
            self.enqueue(ds)

    # --- pod handlers ----------------------------------------------------------------------------

    def add_pod(self, pod: core_v1.Pod) -> None:
        """Upstream: addPod"""
        if pod.metadata.deletion_timestamp is not None:
            self.delete_pod(pod)
            return
        if cu.get_controller_of(pod) is not None:
            if (ds := self._owner_of(pod)) is not None:
                self.expectations.creation_observed(cu.key_func(ds))
                self.enqueue(ds)
            return
        for ds in self.get_daemon_sets_for(pod):
            self.enqueue(ds)

    def update_pod(self, old: core_v1.Pod, cur: core_v1.Pod) -> None:
        """Upstream: updatePod"""
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        cur_ref = cu.get_controller_of(cur)
        if cur_ref is not None and cur_ref.kind != CONTROLLER_KIND.kind and cu.same_controller_ref(old, cur, cur_ref):
            return          # another kind's pod, before and after (being deleted or not): no DaemonSet resolves
        old_ref = cu.get_controller_of(old)
        if cur.metadata.deletion_timestamp is not None:
            self.delete_pod(cur)
            return
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
                self.enqueue_after(ds, min_ready + 1)      # one second of skew (#39785)
            return
        if cur.metadata.labels != old.metadata.labels or ref_changed:
            for ds in self.get_daemon_sets_for(cur):
                self.enqueue(ds)

    def delete_pod(self, obj: Any) -> None:
        """Upstream: deletePod"""
        pod = object_from_tombstone(obj, core_v1.Pod)
        if pod is None or cu.get_controller_of(pod) is None:
            return
        if (ds := self._owner_of(pod)) is not None:
            self.expectations.deletion_observed(cu.key_func(ds))
            self.enqueue(ds)

    # --- node handlers ---------------------------------------------------------------------------

    def add_node(self, node: core_v1.Node) -> None:
        """Upstream: addNode"""
        for ds in self.ds_lister.list():
            should_run, _ = node_should_run_daemon_pod(node, ds)
            if should_run:
                self.enqueue(ds)

    def update_node(self, old: core_v1.Node, cur: core_v1.Node) -> None:
        """Upstream: updateNode"""
        if should_ignore_node_update(old, cur):
            return
        for ds in self.ds_lister.list():
            if node_should_run_daemon_pod(old, ds) != node_should_run_daemon_pod(cur, ds):
                self.enqueue(ds)

    # --- lookups ---------------------------------------------------------------------------------

    def resolve_controller_ref(self, namespace: str | None, ref: Any) -> apps_v1.DaemonSet | None:
        """Upstream: resolveControllerRef"""
        if ref.kind != CONTROLLER_KIND.kind:
            return None
        try:
            ds = self.ds_lister.daemonsets(namespace or "").get(ref.name)
        except errors.NotFound:
            return None
        return ds if ds.metadata.uid == ref.uid else None

    def get_daemon_sets_for(self, obj: Any) -> list[apps_v1.DaemonSet]:
        """DaemonSets whose non-empty selector matches obj's labels. Upstream: getDaemonSetsForPod/History"""
        if not obj.metadata.labels:
            return []
        out = []
        for ds in self.ds_lister.daemonsets(obj.metadata.namespace or "").list():
            try:
                selector = cu.selector_from(ds.spec.selector)
            except errors.StatusError:
                continue
            if selector and labels.matches(selector, obj.metadata.labels):
                out.append(ds)
        return out

    async def get_daemon_pods(self, ds: apps_v1.DaemonSet) -> list[core_v1.Pod]:
        """Its pods, adopting matching orphans and releasing ours that stopped matching.
        Upstream: getDaemonPods"""
        selector = cu.selector_from(ds.spec.selector)
        pods = cu.filter_pods_by_owner(self.pod_indexer, ds.metadata, include_orphaned_pods=True)

        async def fresh() -> apps_v1.DaemonSet:
            got = await self.client.apps_v1().daemonsets(ds.metadata.namespace).get(ds.metadata.name)
            if got.metadata.uid != ds.metadata.uid:
                raise RuntimeError(f"original DaemonSet {ds.metadata.namespace}/{ds.metadata.name} is gone: got uid "
                                   f"{got.metadata.uid}, wanted {ds.metadata.uid}")
            return got
        cm = PodControllerRefManager(self.pod_control, ds, selector, CONTROLLER_KIND, recheck_deletion_timestamp(fresh))
        return await cm.claim_pods(pods)

    async def get_nodes_to_daemon_pods(self, ds: apps_v1.DaemonSet,
                                       include_deleted_terminal: bool) -> dict[str, list[core_v1.Pod]]:
        """Its pods by the node they are for (assigned or pinned by affinity); terminal pods
        being deleted left out unless asked. Upstream: getNodesToDaemonPods

        Upstream reads it again at each step of a sync (manage, rolling update, status); here
        the map of the sync's first step is reused until the sync creates or deletes a pod
        (a shallow copy: the rolling update adds empty entries; no step changes the lists): the
        same cache gives the same map, and claiming every pod again cost a fifth of the
        controller's time at 500 nodes."""
        key = cu.key_func(ds)
        memo = self._node_pods_memo.get(key)
        if not include_deleted_terminal and memo is not None and memo[0] is ds:
            return dict(memo[1])
        out: dict[str, list[core_v1.Pod]] = {}
        for pod in await self.get_daemon_pods(ds):
            if not include_deleted_terminal and is_pod_terminal(pod) and pod.metadata.deletion_timestamp is not None:
                continue
            try:
                node = util.get_target_node_name(pod)
            except ValueError:
                continue
            out.setdefault(node, []).append(pod)
        if not include_deleted_terminal:
            self._node_pods_memo[key] = (ds, dict(out))
        return out

    # --- the sync ----------------------------------------------------------------------------------

    async def sync_daemon_set(self, key: ObjectName) -> None:
        """Converge one DaemonSet.

        1. Gone: forget its expectations. An empty selector: a SelectingAll event, nothing else.
        2. Being deleted: nothing (its history may already be gone, status would be wrong).
        3. Record the template as the current ControllerRevision (constructHistory).
        4. Creates/deletes not yet observed: status only, observedGeneration kept.
        5. Otherwise manage pods, roll the update, clean up history, then status.
        Upstream: syncDaemonSet
        """
        ds_key = str(key)
        self._node_pods_memo.pop(ds_key, None)
        try:
            await self._sync_daemon_set(key, ds_key)
        finally:
            self._node_pods_memo.pop(ds_key, None)

    async def _sync_daemon_set(self, key: ObjectName, ds_key: str) -> None:
        try:
            ds = self.ds_lister.daemonsets(key.namespace).get(key.name)
        except errors.NotFound:
            self.expectations.delete_expectations(ds_key)
            return
        nodes = self.node_lister.list()
        sel = ds.spec.selector
        if sel is not None and not sel.match_labels and not sel.match_expressions:
            self.recorder.event(ds, "Warning", SELECTING_ALL_REASON,
                                "This daemon set is selecting all pods. A non-empty selector is required.")
            return
        if ds.metadata.deletion_timestamp is not None:
            return
        cur, old = await update.construct_history(self, ds)
        hash_ = (cur.metadata.labels or {}).get(util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY, "")
        if not self.expectations.satisfied_expectations(ds_key):
            await self.update_daemon_set_status(ds, nodes, hash_, False)
            return
        err: Exception | None = None
        try:
            await self.update_daemon_set(ds, nodes, hash_, ds_key, old)
        except Exception as e:
            err = e
        try:
            await self.update_daemon_set_status(ds, nodes, hash_, True)
        except Exception as status_err:
            if err is None:
                raise
            log.error("Failed to update status", extra={"ds": ds_key, "err": str(status_err)})
        if err is not None:
            raise err

    async def update_daemon_set(self, ds: apps_v1.DaemonSet, nodes: list[core_v1.Node], hash_: str, key: str,
                                old: list[apps_v1.ControllerRevision]) -> None:
        """Upstream: updateDaemonSet"""
        await self.manage(ds, nodes, hash_)
        if self.expectations.satisfied_expectations(key):
            strategy = ds.spec.update_strategy
            if strategy is None or strategy.type in (None, "RollingUpdate"):
                await update.rolling_update(self, ds, nodes, hash_)
        try:
            await update.cleanup_history(self, ds, old)
        except Exception as e:
            raise RuntimeError(f"failed to clean up revisions of DaemonSet: {e}") from e

    async def manage(self, ds: apps_v1.DaemonSet, nodes: list[core_v1.Node], hash_: str) -> None:
        """Create daemon pods on nodes that need one, delete those that should not be where they
        are. Upstream: manage"""
        node_to_daemon_pods = await self.get_nodes_to_daemon_pods(ds, False)
        nodes_needing: list[str] = []
        to_delete: list[str] = []
        for node in nodes:
            need, delete = self.pods_should_be_on_node(node, node_to_daemon_pods, ds, hash_)
            nodes_needing += need
            to_delete += delete
        to_delete += get_unscheduled_pods_without_node(nodes, node_to_daemon_pods)
        await self.sync_nodes(ds, to_delete, nodes_needing, hash_)

    def pods_should_be_on_node(self, node: core_v1.Node, node_to_daemon_pods: dict[str, list[core_v1.Pod]],
                               ds: apps_v1.DaemonSet, hash_: str) -> tuple[list[str], list[str]]:
        """(nodes needing a daemon pod, pods to delete) for one node:

        - should run, none there: create one;
        - may continue: delete failed pods (with back-off, so as not to fight a kubelet that
          rejects them) and succeeded ones; keep only the oldest running pod, or with surge the
          oldest new and oldest old pod until the new one is available;
        - may not continue: delete them all.
        Upstream: podsShouldBeOnNode
        """
        should_run, should_continue = node_should_run_daemon_pod(node, ds)
        name = node.metadata.name or ""
        daemon_pods = node_to_daemon_pods.get(name)
        needing: list[str] = []
        to_delete: list[str] = []
        if should_run and daemon_pods is None:
            return [name], []
        if should_continue:
            running = self._prune_finished(ds, name, daemon_pods or [], to_delete)
            if not util.allows_surge(ds):
                if len(running) > 1:            # the usual single pod needs no sort keys
                    running.sort(key=pod_by_creation_timestamp_and_phase)
                to_delete += [p.metadata.name or "" for p in running[1:]]
                return needing, to_delete
            if len(running) <= 1:
                if not running and should_run:
                    needing.append(name)       # surging: at least one live pod per node
                return needing, to_delete
            to_delete += self._surge_pods_to_delete(ds, running, hash_)
        elif daemon_pods:
            to_delete += [p.metadata.name or "" for p in daemon_pods if p.metadata.deletion_timestamp is None]
        return needing, to_delete

    def _prune_finished(self, ds: apps_v1.DaemonSet, node_name: str, pods: list[core_v1.Pod],
                        to_delete: list[str]) -> list[core_v1.Pod]:
        running = []
        for pod in pods:
            if pod.metadata.deletion_timestamp is not None:
                continue
            phase = pod.status.phase if pod.status else None
            if phase == "Failed":
                backoff_key = failed_pods_backoff_key(ds, node_name)
                now = self.clock.now()
                if self.failed_pods_backoff.is_in_back_off_since_update(backoff_key, now):
                    self.enqueue_after(ds, self.failed_pods_backoff.get(backoff_key))
                    continue
                self.failed_pods_backoff.next(backoff_key, now)
                self.recorder.event(ds, "Warning", FAILED_DAEMON_POD_REASON,
                                    f"Found failed daemon pod {pod.metadata.namespace}/{pod.metadata.name} on node "
                                    f"{node_name}, will try to kill it")
                to_delete.append(pod.metadata.name or "")
            elif phase == "Succeeded":
                self.recorder.event(ds, "Normal", SUCCEEDED_DAEMON_POD_REASON,
                                    f"Found succeeded daemon pod {pod.metadata.namespace}/{pod.metadata.name} on node "
                                    f"{node_name}, will try to delete it")
                to_delete.append(pod.metadata.name or "")
            else:
                running.append(pod)
        return running

    def _surge_pods_to_delete(self, ds: apps_v1.DaemonSet, running: list[core_v1.Pod], hash_: str) -> list[str]:
        """With surge, two pods may share a node only while the oldest new pod is not yet
        available and the oldest old one is still ready; everything else goes."""
        to_delete: list[str] = []
        oldest_new = oldest_old = None
        for pod in sorted(running, key=pod_by_creation_timestamp_and_phase):
            if (pod.metadata.labels or {}).get(util.DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY) == hash_:
                if oldest_new is None:
                    oldest_new = pod
                    continue
            elif oldest_old is None:
                oldest_old = pod
                continue
            to_delete.append(pod.metadata.name or "")
        if oldest_new is not None and oldest_old is not None:
            if not cu.is_pod_ready(oldest_old):
                to_delete.append(oldest_old.metadata.name or "")
            elif cu.is_pod_available(oldest_new, ds.spec.min_ready_seconds or 0, self.clock.now()):
                to_delete.append(oldest_old.metadata.name or "")
        return to_delete

    async def sync_nodes(self, ds: apps_v1.DaemonSet, pods_to_delete: list[str], nodes_needing: list[str],
                         hash_: str) -> None:
        """Create and delete at most burst_replicas pods each; creates in slow-start batches,
        each pod pinned to its node by node affinity (the scheduler binds it). Expectations are
        set first: the informer may deliver a pod before its create returns. Upstream: syncNodes"""
        ds_key = cu.key_func(ds)
        create_diff = min(len(nodes_needing), self.burst_replicas)
        delete_diff = min(len(pods_to_delete), self.burst_replicas)
        self.expectations.set_expectations(ds_key, create_diff, delete_diff)
        if create_diff or delete_diff:
            self._node_pods_memo.pop(ds_key, None)       # the next step reads the cache again
        errs: list[BaseException] = []
        template = util.create_pod_template(ds.spec.template or core_v1.PodTemplateSpec(),
                                            util.get_template_generation(ds), hash_)
        controller_ref = cu.new_controller_ref(ds, CONTROLLER_KIND)
        ns = ds.metadata.namespace or ""
        nodes = iter(nodes_needing[:create_diff])

        async def create_one() -> None:
            pod_template = template.deep_copy()
            pod_template.spec.affinity = util.replace_daemon_set_pod_node_name_node_affinity(
                pod_template.spec.affinity, next(nodes))
            try:
                await self.pod_control.create_pods(ns, pod_template, ds, controller_ref)
            except errors.StatusError as err:
                if cu.has_status_cause(err, cu.NAMESPACE_TERMINATING_CAUSE):
                    return                  # every later create fails the same way: not an error
                raise

        if create_diff:
            successful, err = await cu.slow_start_batch(create_diff, cu.SLOW_START_INITIAL_BATCH_SIZE, create_one)
            for _ in range(create_diff - successful):
                self.expectations.creation_observed(ds_key)   # failed or never attempted
            if err is not None:
                errs.append(err)

        async def delete_one(name: str) -> None:
            try:
                await self.pod_control.delete_pod(ns, name, ds)
            except Exception as err:
                self.expectations.deletion_observed(ds_key)
                if not isinstance(err, errors.NotFound):
                    raise
        results = await asyncio.gather(*(delete_one(n) for n in pods_to_delete[:delete_diff]), return_exceptions=True)
        errs += [r for r in results if isinstance(r, BaseException)]
        if (agg := cu.new_aggregate(errs)) is not None:
            raise agg

    async def update_daemon_set_status(self, ds: apps_v1.DaemonSet, nodes: list[core_v1.Node], hash_: str,
                                       update_observed_gen: bool) -> None:
        """Count, per node that should run it, whether a daemon pod is scheduled, ready,
        available and updated (its oldest pod), and the pods on nodes that should not run it.
        Upstream: updateDaemonSetStatus"""
        node_to_daemon_pods = await self.get_nodes_to_daemon_pods(ds, False)
        desired = current = misscheduled = ready = updated = available = 0
        now = self.clock.now()
        generation = util.get_template_generation(ds)
        min_ready = ds.spec.min_ready_seconds or 0
        for node in nodes:
            should_run, _ = node_should_run_daemon_pod(node, ds)
            pods = node_to_daemon_pods.get(node.metadata.name or "")
            if not should_run:
                misscheduled += bool(pods)
                continue
            desired += 1
            if not pods:
                continue
            current += 1
            pod = pods[0] if len(pods) == 1 else min(pods, key=pod_by_creation_timestamp_and_phase)
            if cu.is_pod_ready(pod):
                ready += 1
                if cu.is_pod_available(pod, min_ready, now):
                    available += 1
            if util.is_pod_updated(pod, hash_, generation):
                updated += 1
        counts = apps_v1.DaemonSetStatus(desired_number_scheduled=desired, current_number_scheduled=current,
                                         number_misscheduled=misscheduled, number_ready=ready,
                                         updated_number_scheduled=updated, number_available=available,
                                         number_unavailable=desired - available)
        try:
            await self.store_daemon_set_status(ds, counts, update_observed_gen)
        except errors.StatusError as err:
            raise RuntimeError(f"error storing status for daemon set {ds.metadata.name}: {err}") from err
        # A last line of defence against clock skew: look again after minReadySeconds.
        if min_ready > 0 and ready != available:
            self.enqueue_after(ds, float(min_ready))

    async def store_daemon_set_status(self, ds: apps_v1.DaemonSet, counts: apps_v1.DaemonSetStatus,
                                      update_observed_gen: bool) -> None:
        """Write the counts unless unchanged; one retry on a fresh copy. Upstream: storeDaemonSetStatus"""
        st = ds.status or apps_v1.DaemonSetStatus()
        fields = ("desired_number_scheduled", "current_number_scheduled", "number_misscheduled", "number_ready",
                  "updated_number_scheduled", "number_available", "number_unavailable")
        if all((getattr(st, f) or 0) == getattr(counts, f) for f in fields) and \
                (st.observed_generation or 0) >= (ds.metadata.generation or 0):
            return
        client = self.client.apps_v1().daemonsets(ds.metadata.namespace or "")
        to_update = ds.deep_copy()
        for i in range(STATUS_UPDATE_RETRIES + 1):
            if to_update.status is None:
                to_update.status = apps_v1.DaemonSetStatus()
            if update_observed_gen:
                to_update.status.observed_generation = ds.metadata.generation
            for f in fields:
                setattr(to_update.status, f, getattr(counts, f))
            try:
                await client.update_status(to_update)
                return
            except errors.StatusError:
                if i >= STATUS_UPDATE_RETRIES:
                    raise
            to_update = await client.get(ds.metadata.name)
