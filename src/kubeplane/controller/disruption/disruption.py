"""The disruption controller: keeps every PodDisruptionBudget's status, which the eviction
subresource reads to allow or refuse an eviction.

For each budget: the pods its selector picks, how many are expected (expectedPods: the pods'
controllers' scale, or the pods themselves for an integer minAvailable; finders.py), how many
must stay healthy (desiredHealthy), how many are healthy now (currentHealthy: ready, not being
deleted, and not just approved for eviction), and so disruptionsAllowed = currentHealthy -
desiredHealthy (0 when negative or while nothing is expected), with the DisruptionAllowed
condition, observedGeneration and disruptedPods (the eviction subresource's approvals, dropped
once the pod is being deleted or 2 minutes after approval: a pod never deleted counts again).

Example: minAvailable 2 over a Deployment of 3 ready pods -> expected 3, desired 2, healthy 3,
allowed 1. An eviction takes it to 0 (disruptedPods[pod] = now); when its pod gets its
deletionTimestamp, healthy 2, allowed 0; once the replacement is ready, healthy 3, allowed 1.

A second queue resets a pod's DisruptionTarget condition that nobody acted on for 2 minutes (the
pod was never deleted), so it does not look doomed forever.

    dc = DisruptionController(f.core_v1().pods(), f.policy_v1().poddisruptionbudgets(),
                              f.core_v1().replicationcontrollers(), f.apps_v1().replicasets(),
                              f.apps_v1().deployments(), f.apps_v1().statefulsets(), clientset)
    factory.start()
    await dc.run()

Upstream: pkg/controller/disruption/disruption.go (DisruptionController).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ...api import errors, labels, types
from ...api import poddisruptionbudget as pdbhelper
from ...api.types import core_v1, policy_v1
from ...client.tools.cache import ResourceEventHandlerFuncs, meta_namespace_key_func, object_from_tombstone
from ...client.util.workqueue import DelayingQueue, DelayingQueueOptions, RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import forget_or_retry, process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339, rfc3339
from ..controller_utils import is_pod_ready
from . import finders

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.informers import ResourceInformer
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# Upstream: DeletionTimeout — how long an approved eviction keeps its pod out of currentHealthy
# before the controller concludes the pod will not be deleted after all.
DELETION_TIMEOUT = 120.0
# Upstream: stalePodDisruptionTimeout — how long a DisruptionTarget condition may stay on a pod
# that is not being deleted before it is set to False.
STALE_POD_DISRUPTION_TIMEOUT = 120.0

Obj = dict[str, Any]
Updater = Callable[[Obj], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class DisruptionControllerOptions:
    stale_pod_disruption_timeout: float = STALE_POD_DISRUPTION_TIMEOUT   # seconds


class _LogRecorder:
    def event(self, obj: Any, type_: str, reason: str, message: str) -> None:
        log.debug("Event", extra={"object": obj.metadata.name, "type": type_, "reason": reason, "note": message})


class DisruptionController:
    """Upstream: DisruptionController."""

    def __init__(self, pod_informer: ResourceInformer[Any], pdb_informer: ResourceInformer[Any],
                 rc_informer: ResourceInformer[Any], rs_informer: ResourceInformer[Any],
                 d_informer: ResourceInformer[Any], ss_informer: ResourceInformer[Any], client: Clientset, *,
                 clock: Clock = REAL_CLOCK, recorder: EventRecorder | None = None,
                 options: DisruptionControllerOptions = DisruptionControllerOptions()) -> None:
        self.client = client
        self.clock = clock
        self.recorder: Any = recorder if recorder is not None else _LogRecorder()
        self.stale_pod_disruption_timeout = options.stale_pod_disruption_timeout
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name="disruption", clock=clock))
        self.recheck_queue: DelayingQueue[str] = DelayingQueue(
            DelayingQueueOptions(name="disruption_recheck", clock=clock))
        self.stale_pod_disruption_queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="stale_pod_disruption", clock=clock))
        informers = (pod_informer, pdb_informer, rc_informer, rs_informer, d_informer, ss_informer)
        self._informers = [i.informer() for i in informers]
        self._pdb_cache = pdb_informer.informer().get_indexer()
        (self.pod_lister, self.pdb_lister, self.rc_lister, self.rs_lister, self.d_lister,
         self.ss_lister) = (i.lister() for i in informers)
        pod_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.add_pod, self.update_pod, self.delete_pod))
        pdb_informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            self.add_db, self.update_db, self.remove_db))
        self.sync_handler = self.sync                          # test seams
        self.get_updater: Callable[[], Updater] = lambda: self.write_pdb_status
        self.finders = lambda: finders.finders(self)

    # --- event handlers -------------------------------------------------------------------------

    def add_db(self, pdb: Any) -> None:
        self.enqueue_pdb(pdb)

    def update_db(self, old: Any, cur: Any) -> None:
        self.enqueue_pdb(cur)

    def remove_db(self, obj: Any) -> None:
        pdb = object_from_tombstone(obj, policy_v1.PodDisruptionBudget)
        if pdb is not None:
            self.enqueue_pdb(pdb)

    def add_pod(self, pod: Any) -> None:
        """Upstream: addPod — its budget, and a stale DisruptionTarget condition to clean up.

        Every pod event passes here: without any budget (get_pdb_for_pod's first test) and
        for a pod being deleted or without status (the stale condition's) nothing is called.
        """
        if len(self._pdb_cache) and (pdb := self.get_pdb_for_pod(pod)) is not None:
            self.enqueue_pdb(pdb)
        if pod.metadata.deletion_timestamp or pod.status is None:
            return
        has, clean_after = self.non_terminating_pod_has_stale_disruption_condition(pod)
        if has:
            self.enqueue_stale_pod_disruption_cleanup(pod, clean_after)

    def update_pod(self, old: Any, cur: Any) -> None:
        """Upstream: updatePod"""
        self.add_pod(cur)

    def delete_pod(self, obj: Any) -> None:
        pod = object_from_tombstone(obj, core_v1.Pod)
        if pod is not None and (pdb := self.get_pdb_for_pod(pod)) is not None:
            self.enqueue_pdb(pdb)

    def enqueue_pdb(self, pdb: Any) -> None:
        self.queue.add(meta_namespace_key_func(pdb))

    def enqueue_pdb_for_recheck(self, pdb: Any, delay: float) -> None:
        self.recheck_queue.add_after(meta_namespace_key_func(pdb), delay)

    def enqueue_stale_pod_disruption_cleanup(self, pod: Any, delay: float) -> None:
        self.stale_pod_disruption_queue.add_after(meta_namespace_key_func(pod), delay)

    def get_pdb_for_pod(self, pod: Any) -> Any:
        """The budget selecting the pod (the first, with a Warning event, if several do).
        Upstream: getPdbForPod over the lister's GetPodPodDisruptionBudgets."""
        if not pod.metadata.labels or not len(self._pdb_cache):     # every pod event passes here
            return None
        pdbs = [pdb for pdb in self.pdb_lister.namespace(pod.metadata.namespace).list()
                if matches(pdb, pod.metadata.labels)]
        if not pdbs:
            return None
        if len(pdbs) > 1:
            msg = (f'Pod "{pod.metadata.namespace}"/"{pod.metadata.name}" matches multiple PodDisruptionBudgets.  '
                   f'Chose "{pdbs[0].metadata.name}" arbitrarily.')
            log.info(msg)
            self.recorder.event(pod, "Warning", "MultiplePodDisruptionBudgets", msg)
        return pdbs[0]

    def get_pods_for_pdb(self, pdb: Any) -> list[Any]:
        """The pods of the budget's namespace its selector picks (null: none; empty: all).
        Upstream: getPodsForPdb."""
        sel = selector_of(pdb)
        return self.pod_lister.namespace(pdb.metadata.namespace).list(sel)

    # --- workers --------------------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the caches (the caller starts the informers), then run one worker per queue
        until cancelled. Upstream: Run."""
        log.info("Starting disruption controller")
        try:
            for inf in self._informers:
                await inf.wait_synced()
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.worker())
                tg.create_task(self.recheck_worker())
                tg.create_task(self.stale_pod_disruption_worker())
        finally:
            self.queue.shut_down()
            self.recheck_queue.shut_down()
            self.stale_pod_disruption_queue.shut_down()
            log.info("Shutting down disruption controller")

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        forget_or_retry(self.queue, log, err, key)

    async def recheck_worker(self) -> None:
        """A budget due for a recheck goes back on the main queue. Upstream: processNextRecheckWorkItem."""
        while True:
            key, shutdown = await self.recheck_queue.get()
            if shutdown:
                return
            self.recheck_queue.done(key)
            self.queue.add_rate_limited(key)

    async def stale_pod_disruption_worker(self) -> None:
        def handle_err(err: Exception | None, key: str) -> None:
            forget_or_retry(self.stale_pod_disruption_queue, log, err, key)
        while await process_next_work_item(self.stale_pod_disruption_queue, self.sync_stale_pod_disruption,
                                           handle_err):
            pass

    # --- sync -----------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """Recompute one budget's status; any failure but a conflict writes the fail-safe status
        (no disruption allowed). Upstream: sync."""
        ns, name = key.split("/", 1)
        try:
            pdb = self.pdb_lister.namespace(ns).get(name)
        except errors.NotFound:
            return
        try:
            await self.try_sync(pdb)
        except errors.Conflict:
            raise                               # requeued, without the fail-safe
        except Exception as err:
            log.error("Failed to sync PDB", extra={"podDisruptionBudget": key, "err": str(err)})
            await self.fail_safe(pdb, err)

    async def try_sync(self, pdb: Any) -> None:
        """Upstream: trySync."""
        try:
            pods = self.get_pods_for_pdb(pdb)
        except errors.StatusError as err:
            self.recorder.event(pdb, "Warning", "NoPods", f"Failed to get pods: {err}")
            raise
        if not pods:
            self.recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected, desired, unmanaged = await finders.get_expected_pod_count(self, pdb, pods)
        except Exception as err:
            self.recorder.event(pdb, "Warning", "CalculateExpectedPodCountFailed",
                                f"Failed to calculate the number of expected pods: {err}")
            raise
        if unmanaged:
            self.recorder.event(pdb, "Warning", "UnmanagedPods", unmanaged_pods_message(pdb))
        now = self.clock.now()
        disrupted, recheck = self.build_disrupted_pod_map(pods, pdb, now)
        healthy = count_healthy_pods(pods, disrupted, now)
        await self.update_pdb_status(pdb, healthy, desired, expected, disrupted)
        if recheck is not None:
            self.enqueue_pdb_for_recheck(pdb, recheck - now)

    def build_disrupted_pod_map(self, pods: list[Any], pdb: Any, now: float) -> tuple[dict[str, str], float | None]:
        """The approved evictions still pending (pods not yet being deleted, approved less than
        DELETION_TIMEOUT ago) and when the earliest of them expires. Upstream: buildDisruptedPodMap."""
        disrupted = (pdb.status.disrupted_pods if pdb.status else None) or {}
        result: dict[str, str] = {}
        recheck: float | None = None
        if not disrupted:
            return result, recheck
        for pod in pods:
            if pod.metadata.deletion_timestamp or pod.metadata.name not in disrupted:
                continue
            when = disrupted[pod.metadata.name]
            expected_deletion = parse_rfc3339(when) + DELETION_TIMEOUT
            if expected_deletion < now:
                # Upstream's message names the namespace twice.
                self.recorder.event(pod, "Warning", "NotDeleted", f"Pod was expected by PDB "
                                    f"{pdb.metadata.namespace}/{pdb.metadata.namespace} to be deleted but it wasn't")
            else:
                recheck = expected_deletion if recheck is None else min(recheck, expected_deletion)
                result[pod.metadata.name] = when
        return result, recheck

    async def fail_safe(self, pdb: Any, err: Exception) -> None:
        """Allow no disruption, with the DisruptionAllowed condition saying why. Upstream: failSafe."""
        new = types.to_dict(pdb)
        status = new["status"] = {**(new.get("status") or {}), "disruptionsAllowed": 0}
        status["conditions"] = list(status.get("conditions") or [])
        pdbhelper.set_status_condition(status["conditions"], {
            "type": pdbhelper.DISRUPTION_ALLOWED_CONDITION, "status": "False",
            "reason": pdbhelper.SYNC_FAILED_REASON, "message": str(err),
            "observedGeneration": status.get("observedGeneration", 0)}, rfc3339(self.clock.now()))
        await self.get_updater()(new)

    async def update_pdb_status(self, pdb: Any, current_healthy: int, desired_healthy: int, expected: int,
                                disrupted: dict[str, str]) -> None:
        """Write the status when anything in it changed. Upstream: updatePdbStatus.

        A budget that expects no pod allows nothing: its first pods may appear before this
        controller has looked at them."""
        allowed = current_healthy - desired_healthy
        if expected <= 0 or allowed <= 0:
            allowed = 0
        d = types.to_dict(pdb)
        status, generation = d.get("status") or {}, d["metadata"].get("generation", 0)
        if (status.get("currentHealthy", 0) == current_healthy and status.get("desiredHealthy", 0) == desired_healthy
                and status.get("expectedPods", 0) == expected and status.get("disruptionsAllowed", 0) == allowed
                and (status.get("disruptedPods") or {}) == disrupted
                and status.get("observedGeneration", 0) == generation and pdbhelper.conditions_are_up_to_date(d)):
            return
        new_status: Obj = {"currentHealthy": current_healthy, "desiredHealthy": desired_healthy,
                           "expectedPods": expected, "disruptionsAllowed": allowed,
                           "observedGeneration": generation, "conditions": list(status.get("conditions") or [])}
        if disrupted:
            new_status["disruptedPods"] = disrupted
        pdbhelper.update_disruption_allowed_condition(new_status, rfc3339(self.clock.now()))
        d["status"] = new_status
        await self.get_updater()(d)

    async def write_pdb_status(self, pdb: Obj) -> None:
        """One status write; a failure goes back to the worker's retry. Upstream: writePdbStatus."""
        client = self.client.policy_v1().poddisruptionbudgets(pdb["metadata"]["namespace"])
        await client.update_status(types.from_dict(pdb, client.type))

    # --- stale DisruptionTarget conditions ------------------------------------------------------

    def non_terminating_pod_has_stale_disruption_condition(self, pod: Any) -> tuple[bool, float]:
        """(whether the pod carries a DisruptionTarget=True it may lose, seconds until then).
        The kubelet's own (TerminationByKubelet) and those of finished pods stay.
        Upstream: nonTerminatingPodHasStaleDisruptionCondition."""
        if pod.metadata.deletion_timestamp or pod.status is None:
            return False, 0.0
        for cond in pod.status.conditions or ():      # every pod event passes here: no generator
            if cond.type == "DisruptionTarget":
                break
        else:
            return False, 0.0
        if (cond.status != "True" or cond.reason == "TerminationByKubelet"
                or pod.status.phase in ("Succeeded", "Failed")):
            return False, 0.0
        since = parse_rfc3339(cond.last_transition_time) if cond.last_transition_time else 0.0
        return True, max(0.0, self.stale_pod_disruption_timeout - (self.clock.now() - since))

    async def sync_stale_pod_disruption(self, key: str) -> None:
        """Set a stale DisruptionTarget condition to False. Upstream: syncStalePodDisruption."""
        ns, name = key.split("/", 1)
        try:
            pod = self.pod_lister.namespace(ns).get(name)
        except errors.NotFound:
            return
        has, clean_after = self.non_terminating_pod_has_stale_disruption_condition(pod)
        if not has:
            return
        if clean_after > 0:
            self.enqueue_stale_pod_disruption_cleanup(pod, clean_after)
            return
        new = types.to_dict(pod)
        conds = new["status"]["conditions"]
        i = next(i for i, c in enumerate(conds) if c.get("type") == "DisruptionTarget")
        # Upstream: UpdatePodCondition with only type and status: reason and message go.
        conds[i] = {"type": "DisruptionTarget", "status": "False", "lastProbeTime": None,
                    "lastTransitionTime": rfc3339(self.clock.now())}
        client = self.client.core_v1().pods(ns)
        await client.update_status(types.from_dict(new, client.type))
        log.info("Reset stale DisruptionTarget condition to False", extra={"pod": key})


# --- pure helpers ---------------------------------------------------------------------------------

def selector_of(pdb: Any) -> labels.Selector | None:
    """The budget's selector with policy/v1's meaning (None matches nothing, () everything);
    an invalid one raises. Upstream: metav1.LabelSelectorAsSelector."""
    sel = pdb.spec.selector if pdb.spec else None
    return labels.from_label_selector(types.to_dict(sel) if sel is not None else None)


def matches(pdb: Any, pod_labels: dict[str, str]) -> bool:
    try:
        sel = selector_of(pdb)
    except errors.StatusError:
        return False                    # an invalid selector (should not happen) matches nothing
    return sel is not None and labels.matches(sel, pod_labels)


def count_healthy_pods(pods: list[Any], disrupted: dict[str, str], now: float) -> int:
    """Ready pods that are neither being deleted nor approved for eviction within the last
    DELETION_TIMEOUT. Upstream: countHealthyPods."""
    healthy = 0
    for pod in pods:
        if pod.metadata.deletion_timestamp:
            continue
        when = disrupted.get(pod.metadata.name)
        if when is not None and parse_rfc3339(when) + DELETION_TIMEOUT > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def unmanaged_pods_message(pdb: Any) -> str:
    """Upstream's UnmanagedPods event (the selector printed as Go's LabelSelector.String())."""
    return ("Pods selected by this PodDisruptionBudget (selector: " + go_label_selector(pdb.spec.selector) +
            ") were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, "
            "which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" "
            "field of the PDB to an integer value.")


def go_label_selector(sel: Any) -> str:
    """metav1.LabelSelector's generated String() (%v of a *LabelSelector); "nil" for none."""
    if sel is None:
        return "nil"
    ml = sel.match_labels or {}
    m = "map[string]string{" + "".join(f"{k}: {ml[k]}," for k in sorted(ml)) + "}"
    exprs = "".join(f"LabelSelectorRequirement{{Key:{e.key},Operator:{e.operator},"
                    f"Values:[{' '.join(e.values or [])}],}}," for e in sel.match_expressions or [])
    return f"&LabelSelector{{MatchLabels:{m},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
