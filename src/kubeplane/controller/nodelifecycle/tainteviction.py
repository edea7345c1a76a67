"""The taint eviction controller: delete pods from nodes with NoExecute taints they do not tolerate.

A pod that does not tolerate every NoExecute taint of its node is deleted at once; a pod whose
tolerations all carry tolerationSeconds is deleted when the shortest runs out, counted from
when this controller first saw the taint (upstream does not read the taint's timeAdded); a
toleration without tolerationSeconds tolerates forever. Removing the taints (or the pod
changing node) cancels a scheduled deletion.

Node and pod events only queue names; a single worker handles node updates before pod
updates, so the tainted-node map is fresh when a pod is judged. Deletions run as timers on
the injected clock (TimedWorkerQueue).

Upstream: pkg/controller/tainteviction/taint_eviction.go and timed_workers.go
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple, Sequence

from ...api import errors, types
from ...api.types import ObjectName, core_v1
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ...client.util.workqueue import Queue, QueueOptions
from ...utils.clock import REAL_CLOCK, Clock
from .. import controller_utils as cu
from . import node_utils
from . import taints as tu

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.listers import NodeLister, PodLister
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# Attempts to condition-and-delete one pod, RETRY_DELAY apart. Upstream: retries, 10 ms sleep.
RETRIES = 5
RETRY_DELAY = 0.01

# The pod indexer's index of pods by spec.nodeName. Upstream: nodeNameKeyIndex ("spec.nodeName").
NODE_NAME_KEY_INDEX = "spec.nodeName"

DISRUPTION_TARGET = "DisruptionTarget"
DELETION_BY_TAINT_MANAGER_REASON = "DeletionByTaintManager"
DELETION_BY_TAINT_MANAGER_MESSAGE = "Taint manager: deleting due to NoExecute taint"
TAINT_MANAGER_EVICTION_REASON = "TaintManagerEviction"


def _node_name_index(obj: Any) -> list[str]:
    node = obj.spec.node_name if getattr(obj, "spec", None) is not None else None
    return [node] if node else []


def pods_assigned_to_node_func(pod_informer: ResourceInformer[PodLister]) -> Callable[[str], list[core_v1.Pod]]:
    """A lookup of the cached pods bound to a node, by the spec.nodeName index.

    The returned pods are the cache's: never modify them.
    Upstream: the getPodsAssignedToNode closure of NewNodeLifecycleController / tainteviction.New
    """
    indexer = pod_informer.informer().get_indexer()
    if NODE_NAME_KEY_INDEX not in indexer.get_indexers():
        indexer.add_indexers({NODE_NAME_KEY_INDEX: _node_name_index})
    return lambda node_name: indexer.by_index(NODE_NAME_KEY_INDEX, node_name)


# --- timed workers ----------------------------------------------------------------------------------

@dataclass
class TimedWorker:
    """One scheduled deletion. Upstream: TimedWorker"""

    created_at: float
    fire_at: float
    task: asyncio.Task[None]

    def cancel(self) -> None:
        self.task.cancel()


WorkFunc = Callable[[ObjectName, float], Awaitable[None]]


class TimedWorkerQueue:
    """Deletions keyed by "ns/name", each fired once at its time on the clock.

    workers[key] is the pending TimedWorker, or None once the work has fired successfully
    (or was due at once): keeping the key stops the same pod being scheduled again until
    cancel_work() forgets it. Work that fails is forgotten, so a later update retries it.
    Upstream: TimedWorkerQueue (timed_workers.go)
    """

    def __init__(self, fn: WorkFunc, clock: Clock) -> None:
        self.workers: dict[str, TimedWorker | None] = {}
        self.fn = fn
        self.clock = clock
        self._tasks: set[asyncio.Task[None]] = set()

    def add_work(self, args: ObjectName, created_at: float, fire_at: float) -> None:
        """Schedule fn(args) at fire_at (the delay is fire_at - created_at); no-op if the key is known.

        Upstream: AddWork / createWorker
        """
        key = str(args)
        if key in self.workers:
            log.debug("Trying to add already existing work, skipping", extra={"key": key})
            return
        delay = fire_at - created_at
        task = asyncio.get_running_loop().create_task(self._run(args, key, delay, fire_at),
                                                      name=f"taint-eviction-{key}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.workers[key] = TimedWorker(created_at, fire_at, task) if delay > 0 else None

    async def _run(self, args: ObjectName, key: str, delay: float, fire_at: float) -> None:
        if delay > 0:
            await self.clock.sleep(delay)
        try:
            await self.fn(args, fire_at)
        except Exception as err:
            log.error("TaintEvictionController: timed work failed", extra={"key": key, "err": repr(err)})
            self.workers.pop(key, None)
        else:
            if key in self.workers:
                self.workers[key] = None        # done; remembered so it is not scheduled again

    def cancel_work(self, key: str) -> bool:
        """Forget key; True if a pending (not yet fired) deletion was cancelled. Upstream: CancelWork"""
        if key not in self.workers:
            return False
        worker = self.workers.pop(key)
        if worker is None:
            return False
        worker.cancel()
        return True

    def get_worker_unsafe(self, key: str) -> TimedWorker | None:
        """Upstream: GetWorkerUnsafe"""
        return self.workers.get(key)

    async def shutdown(self) -> None:
        """Cancel every pending or running deletion and wait for them."""
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# --- the controller ----------------------------------------------------------------------------------

_new_tuple = tuple.__new__


class _PodUpdate(NamedTuple):
    """Upstream: podUpdateItem. A tuple: the work queue hashes one per pod event (a dataclass's
    generated __hash__ and __init__ are Python calls)."""
    namespace: str
    name: str
    node_name: str


class TaintEvictionController:
    """Evicts pods from nodes tainted NoExecute. Upstream: tainteviction.Controller"""

    def __init__(self, pod_informer: ResourceInformer[PodLister], node_informer: ResourceInformer[NodeLister], client: Clientset, *,
                 clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 controller_name: str = "taint-eviction-controller") -> None:
        self.controller_name = controller_name
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.pod_lister = pod_informer.lister()
        self.node_lister = node_informer.lister()
        self._informers = (pod_informer.informer(), node_informer.informer())
        self.get_pods_assigned_to_node = pods_assigned_to_node_func(pod_informer)     # test seam
        self.taint_eviction_queue = TimedWorkerQueue(self.delete_pod_handler, clock)
        # node name -> its NoExecute taints, for nodes that have some.
        self.tainted_nodes: dict[str, list[core_v1.Taint]] = {}
        self.node_update_queue: Queue[str] = Queue(QueueOptions(name="noexec_taint_node"))
        self.pod_update_queue: Queue[_PodUpdate] = Queue(QueueOptions(name="noexec_taint_pod"))
        self._wake = asyncio.Event()
        pod_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            lambda p: self.pod_updated(None, p), self.pod_updated, self._on_pod_delete))
        node_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            lambda n: self.node_updated(None, n), self.node_updated, self._on_node_delete))

    # --- run loop ------------------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the caches, then handle queued updates until cancelled. Upstream: Run"""
        log.info("Starting controller", extra={"controller": self.controller_name})
        try:
            for inf in self._informers:
                if not inf.has_synced():
                    await inf.wait_synced()
            await self.worker()
        finally:
            self.node_update_queue.shut_down()
            self.pod_update_queue.shut_down()
            await self.taint_eviction_queue.shutdown()
            log.info("Shutting down controller", extra={"controller": self.controller_name})

    async def worker(self) -> None:
        """Node updates first: a pod is judged against fresh node taints. Upstream: worker"""
        while not self.node_update_queue.shutting_down():
            if not await self.process_pending():
                self._wake.clear()
                await self._wake.wait()

    async def process_pending(self) -> bool:
        """Handle every queued node update, then one pod update; False if both queues were empty.

        get() does not wait when the queue is not empty, so nothing else runs in between.
        """
        handled = False
        while self.node_update_queue.len():
            node_name, _ = await self.node_update_queue.get()
            try:
                self.handle_node_update(node_name)
            finally:
                self.node_update_queue.done(node_name)
            handled = True
        if self.pod_update_queue.len():
            item, _ = await self.pod_update_queue.get()
            try:
                self.handle_pod_update(item)
            finally:
                self.pod_update_queue.done(item)
            handled = True
        return handled

    # --- handlers ------------------------------------------------------------------------------

    def pod_updated(self, old: core_v1.Pod | None, new: core_v1.Pod | None) -> None:
        """Queue the pod unless neither its tolerations nor its node changed. Upstream: PodUpdated"""
        ref = new if new is not None else old
        if ref is None:
            return
        if old is not None and new is not None:
            # _node_of and _same_tolerations spelt out: every pod update passes here
            old_spec, new_spec = old.spec, new.spec
            if old_spec is not None and new_spec is not None:
                a, b = old_spec.tolerations, new_spec.tolerations
                if (old_spec.node_name or "") == (new_spec.node_name or "") and (a == b or (a or []) == (b or [])):
                    return
            elif _node_of(old) == _node_of(new) and _same_tolerations(old, new):
                return
        # tuple.__new__: the NamedTuple's own __new__ is a Python function (~2k instructions)
        self.pod_update_queue.add(_new_tuple(_PodUpdate, (ref.metadata.namespace or "", ref.metadata.name,
                                                          _node_of(ref))))
        self._wake.set()

    def _on_pod_delete(self, obj: Any) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(pod, core_v1.Pod):
            self.pod_updated(pod, None)

    def node_updated(self, old: core_v1.Node | None, new: core_v1.Node | None) -> None:
        """Queue the node unless its NoExecute taints did not change. Upstream: NodeUpdated"""
        ref = new if new is not None else old
        if ref is None:
            return
        if old is not None and new is not None and \
                tu.get_no_execute_taints(_taints(old)) == tu.get_no_execute_taints(_taints(new)):
            return
        self.node_update_queue.add(ref.metadata.name)
        self._wake.set()

    def _on_node_delete(self, obj: Any) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if isinstance(node, core_v1.Node):
            self.node_updated(node, None)

    # --- decisions -----------------------------------------------------------------------------

    def handle_pod_update(self, item: _PodUpdate) -> None:
        """Judge one pod against its node's known NoExecute taints. Upstream: handlePodUpdate"""
        name = ObjectName(item.namespace, item.name)
        try:
            pod = self.pod_lister.pods(item.namespace).get(item.name)
        except errors.NotFound:
            self.cancel_work_with_event(name)           # the pod is gone
            return
        node_name = _node_of(pod)
        if node_name != item.node_name or not node_name:
            return                                      # a newer update for the pod's current node follows
        taints = self.tainted_nodes.get(node_name)
        if taints is None:
            return                                      # untainted: any eviction was cancelled already
        self.process_pod_on_node(name, node_name, _tolerations(pod), taints, self.clock.now())

    def handle_node_update(self, node_name: str) -> None:
        """Record the node's NoExecute taints, then judge (or reprieve) every pod on it.

        Upstream: handleNodeUpdate
        """
        try:
            node = self.node_lister.get(node_name)
        except errors.NotFound:
            self.tainted_nodes.pop(node_name, None)
            return
        taints = tu.get_no_execute_taints(_taints(node))
        # Update tainted_nodes before reading the pods: a pod the cache has not delivered yet
        # will be judged by its own update against these taints.
        if taints:
            self.tainted_nodes[node_name] = taints
        else:
            self.tainted_nodes.pop(node_name, None)
        pods = self.get_pods_assigned_to_node(node_name)
        if not taints:
            for pod in pods:
                self.cancel_work_with_event(ObjectName(pod.metadata.namespace or "", pod.metadata.name))
            return
        now = self.clock.now()
        for pod in pods:
            name = ObjectName(pod.metadata.namespace or "", pod.metadata.name)
            self.process_pod_on_node(name, node_name, _tolerations(pod), taints, now)

    def process_pod_on_node(self, name: ObjectName, node_name: str, tolerations: Sequence[core_v1.Toleration],
                            taints: Sequence[core_v1.Taint], now: float) -> None:
        """Schedule, keep, or cancel the pod's deletion.

        Not every taint tolerated -> delete now. Tolerated forever -> cancel. Otherwise delete
        min(tolerationSeconds) after the first sighting: a deletion already scheduled keeps its
        start time. Example: taint seen at 10:00:00, pod tolerates it for 300 s -> deleted at
        10:05:00; a second taint seen at 10:02:00 that the pod tolerates for 60 s -> still
        10:05:00 (10:00:00 + 60 s has passed already, upstream then keeps the earlier timer:
        only a deletion strictly later than the scheduled one would be re-scheduled).
        Upstream: processPodOnNode
        """
        if not taints:
            self.cancel_work_with_event(name)
        all_tolerated, used = tu.get_matching_tolerations(taints, tolerations)
        if not all_tolerated:
            log.info("Not all taints are tolerated after update for pod on node",
                     extra={"pod": str(name), "node": node_name})
            self.cancel_work_with_event(name)   # replaced by a deletion right now
            self.taint_eviction_queue.add_work(name, now, now)
            return
        min_toleration = tu.get_min_toleration_time(used)
        if min_toleration < 0:
            self.cancel_work_with_event(name)   # tolerated forever
            return
        start_time = now
        trigger_time = start_time + min_toleration
        scheduled = self.taint_eviction_queue.get_worker_unsafe(str(name))
        if scheduled is not None:
            start_time = scheduled.created_at
            if start_time + min_toleration < trigger_time:
                return
            self.cancel_work_with_event(name)
        self.taint_eviction_queue.add_work(name, start_time, trigger_time)

    def cancel_work_with_event(self, name: ObjectName) -> None:
        """Upstream: cancelWorkWithEvent"""
        if self.taint_eviction_queue.cancel_work(str(name)):
            self._emit(name, "Cancelling deletion of Pod %s")

    # --- the deletion --------------------------------------------------------------------------

    async def delete_pod_handler(self, name: ObjectName, fire_at: float) -> None:
        """Mark the pod DisruptionTarget and delete it, up to RETRIES attempts. Upstream: deletePodHandler"""
        log.info("Deleting pod", extra={"controller": self.controller_name, "pod": str(name)})
        self._emit(name, "Marking for deletion Pod %s")
        err: Exception | None = None
        for attempt in range(RETRIES):
            try:
                await self.add_condition_and_delete_pod(name)
                return
            except Exception as e:
                err = e
                if attempt < RETRIES - 1:
                    await self.clock.sleep(RETRY_DELAY)
        assert err is not None
        raise err

    async def add_condition_and_delete_pod(self, name: ObjectName) -> None:
        """Patch status.conditions with DisruptionTarget=True (if new), then DELETE.

        The status patch carries metadata.uid, so it cannot land on a same-named newer pod.
        Upstream: addConditionAndDeletePod, PatchPodStatus (pkg/util/pod/pod.go)
        """
        pods = self.client.core_v1().pods(name.namespace)
        pod = await pods.get(name.name)
        new_status = (pod.status or core_v1.PodStatus()).deep_copy()
        cond = core_v1.PodCondition(type=DISRUPTION_TARGET, status=node_utils.CONDITION_TRUE,
                                    reason=DELETION_BY_TAINT_MANAGER_REASON,
                                    message=DELETION_BY_TAINT_MANAGER_MESSAGE)
        if node_utils.update_pod_condition(new_status, cond, self.clock.now()):
            order = [{"type": c.type} for c in new_status.conditions or ()]
            patch = {"metadata": {"uid": pod.metadata.uid},
                     "status": {"$setElementOrder/conditions": order, "conditions": [types.to_dict(cond)]}}
            await pods.patch(name.name, patch, "strategic", subresource="status")
        await pods.delete(name.name)

    def _emit(self, name: ObjectName, fmt: str) -> None:
        """Upstream: emitPodDeletionEvent / emitCancelPodDeletionEvent"""
        if self.recorder is None:
            return
        ref = core_v1.ObjectReference(api_version="v1", kind="Pod", name=name.name, namespace=name.namespace or None)
        self.recorder.eventf(ref, cu.EVENT_TYPE_NORMAL, TAINT_MANAGER_EVICTION_REASON, fmt, str(name))


def _node_of(pod: core_v1.Pod) -> str:
    return (pod.spec.node_name if pod.spec else None) or ""


def _tolerations(pod: core_v1.Pod) -> list[core_v1.Toleration]:
    return list((pod.spec.tolerations if pod.spec else None) or ())


def _same_tolerations(old: core_v1.Pod, new: core_v1.Pod) -> bool:
    """helper.Semantic.DeepEqual of the two pods' tolerations (nil and empty alike). Pod
    tolerations can only be added to, so nearly every update carries equal lists: compared
    as they are first, without copying."""
    a = old.spec.tolerations if old.spec else None
    b = new.spec.tolerations if new.spec else None
    return a == b or (a or []) == (b or [])


def _taints(node: core_v1.Node) -> list[core_v1.Taint]:
    return list((node.spec.taints if node.spec else None) or ())
