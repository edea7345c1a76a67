"""One scheduling attempt: pop a pod, filter and score nodes, assume, bind asynchronously.

Upstream: pkg/scheduler/schedule_one.go. Functions take the Scheduler as first argument
(Go's receiver made explicit). The scheduling cycle is plain synchronous code, so it sees
one consistent snapshot without locks; only the binding (an API call) and failure
reporting await.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import operator
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from ..api import errors
from ..api.types.core_v1 import Pod
from ..utils.clock import rfc3339
from . import metrics
from .framework.interface import Code, CycleState, NodePluginScores, Status
from .framework.runtime import Framework
from .framework.types import POD_INFO_STATE_KEY, Diagnosis, FitError, NodeInfo, QueuedPodInfo
from .internal.queue.scheduling_queue import ASSIGNED_POD_DELETE

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)

MIN_FEASIBLE_NODES_TO_FIND = 100              # Upstream: minFeasibleNodesToFind
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5     # Upstream: minFeasibleNodesPercentageToFind
ERR_NO_NODES_AVAILABLE = "no nodes available to schedule pods"
MAX_EVENT_MESSAGE = 1024                      # Upstream: truncateMessage's limit (events' note)


class NoNodesAvailable(Exception):
    def __str__(self) -> str:
        return ERR_NO_NODES_AVAILABLE


@dataclass
class ScheduleResult:
    """Upstream: ScheduleResult"""

    suggested_host: str
    evaluated_nodes: int = 0
    feasible_nodes: int = 0


async def schedule_one(sched: Scheduler) -> bool:
    """Schedule the next pod; False once the queue is closed. Upstream: Scheduler.ScheduleOne"""
    pinfo = await sched.queue.pop()
    if pinfo is None:
        return False
    pod = pinfo.pod
    fwk = sched.framework
    start = sched.clock.monotonic()
    if skip_pod_schedule(sched, pod):
        sched.queue.done(pinfo.key)
        return True
    state = CycleState()
    state.storage[POD_INFO_STATE_KEY] = pinfo.pod_info      # types.cycle_pod_info
    cycle = sched.queue.scheduling_cycle
    assumed, status = scheduling_cycle(sched, fwk, state, pinfo)
    if assumed is None:
        assert status is not None
        await handle_scheduling_failure(sched, pinfo, status, cycle, start=start)
        return True
    task = asyncio.ensure_future(binding_cycle(sched, fwk, state, pinfo, assumed, cycle, start=start))
    sched.binding_tasks.add(task)
    task.add_done_callback(sched.binding_tasks.discard)
    return True


def skip_pod_schedule(sched: Scheduler, pod: Pod) -> bool:
    """Pods being deleted, or already assumed (a stale queue entry), are not scheduled.

    Upstream: Scheduler.skipPodSchedule
    """
    return pod.metadata.deletion_timestamp is not None or sched.cache.is_assumed_pod(pod)


def scheduling_cycle(sched: Scheduler, fwk: Framework, state: CycleState,
                     pinfo: QueuedPodInfo) -> tuple[Pod | None, Status | None]:
    """Pick a node and assume the pod there: (assumed pod, None) or (None, failure status).

    1. schedule_pod: filter and score against a fresh snapshot.
    2. On a FitError run the PostFilter plugins (preemption) and keep their message.
    3. Assume: put a copy with spec.nodeName into the cache so the next cycle counts it.
    Upstream: Scheduler.schedulingCycle
    """
    pod = pinfo.pod
    try:
        result = schedule_pod(sched, fwk, state, pod)
    except NoNodesAvailable as err:
        pinfo.unschedulable_plugins = set()
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, err=err)
    except FitError as fit_error:
        _, status = fwk.run_post_filter_plugins(state, pod, fit_error.diagnosis.node_to_status)
        fit_error.diagnosis.post_filter_msg = status.message()
        pinfo.unschedulable_plugins = set(fit_error.diagnosis.unschedulable_plugins)
        return None, Status(Code.UNSCHEDULABLE, err=fit_error)
    except Exception as err:
        log.exception("Error scheduling pod", extra={"pod": pinfo.key})
        pinfo.unschedulable_plugins = set()
        return None, Status.as_status(err)
    assumed = assume_copy(pod, result.suggested_host)
    try:
        sched.cache.assume_pod(assumed, pinfo.pod_info)
    except ValueError as err:
        pinfo.unschedulable_plugins = set()
        return None, Status.as_status(err)
    return assumed, None


def assume_copy(pod: Pod, host: str) -> Pod:
    """pod with spec.nodeName = host; shares everything else (cache objects are read-only)."""
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, node_name=host))


def schedule_pod(sched: Scheduler, fwk: Framework, state: CycleState, pod: Pod) -> ScheduleResult:
    """Filter, then score, the snapshot's nodes. Upstream: Scheduler.schedulePod"""
    sched.cache.update_snapshot(sched.snapshot)
    num_nodes = sched.snapshot.num_nodes()
    if num_nodes == 0:
        raise NoNodesAvailable()
    feasible, diagnosis = find_nodes_that_fit_pod(sched, fwk, state, pod)
    if not feasible:
        raise FitError(pod, num_nodes, diagnosis)
    evaluated = len(feasible) + len(diagnosis.node_to_status)
    if len(feasible) == 1:
        return ScheduleResult(feasible[0].name, evaluated, 1)
    totals = prioritize_nodes(fwk, state, pod, feasible)
    return ScheduleResult(feasible[select_index(totals, sched.rng)].name, evaluated, len(feasible))


def find_nodes_that_fit_pod(sched: Scheduler, fwk: Framework, state: CycleState,
                            pod: Pod) -> tuple[list[NodeInfo], Diagnosis]:
    """Run PreFilter, then Filter over the nodes PreFilter allows. Upstream: findNodesThatFitPod"""
    diagnosis = Diagnosis()
    all_nodes = sched.snapshot.node_info_list
    pre_res, status = fwk.run_pre_filter_plugins(state, pod, all_nodes)
    if status is not None and not status.is_success():
        if not status.is_rejected():
            raise RuntimeError(status.message())
        # Every node is rejected for the same reason: report it once, not per node.
        diagnosis.node_to_status.absent_nodes_status = status
        diagnosis.pre_filter_msg = status.message()
        if status.plugin:
            diagnosis.unschedulable_plugins.add(status.plugin)
        return [], diagnosis
    nodes = all_nodes
    if pre_res is not None and not pre_res.all_nodes():
        nodes = [sched.snapshot.node_info_map[n] for n in sorted(pre_res.node_names or ())
                 if n in sched.snapshot.node_info_map]
        diagnosis.node_to_status.absent_nodes_status = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't satisfy plugin(s) [PreFilterResult]")
    return find_nodes_that_pass_filters(sched, fwk, state, pod, diagnosis, nodes), diagnosis


def find_nodes_that_pass_filters(sched: Scheduler, fwk: Framework, state: CycleState, pod: Pod,
                                 diagnosis: Diagnosis, nodes: list[NodeInfo]) -> list[NodeInfo]:
    """Filter nodes round-robin from next_start_node_index until enough are feasible.

    Starting where the last cycle stopped spreads the work (and the pods) over all nodes
    when only a percentage is examined. Upstream: findNodesThatPassFilters
    """
    num_all = len(nodes)
    if num_all == 0:
        return []
    num_to_find = num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score or sched.percentage_of_nodes_to_score,
                                             num_all)
    start = sched.next_start_node_index % num_all
    filters = fwk.filter_plugins_to_run(state)
    batch = fwk.filter_nodes_to_run(state, filters)
    if batch is not None:
        feasible, processed = _pass_filters_by_batch(state, pod, diagnosis, nodes, start, num_to_find, filters, batch)
        sched.next_start_node_index = (start + processed) % num_all
        return feasible
    feasible = []
    processed = 0
    statuses = diagnosis.node_to_status.statuses
    # By index from start, wrapping: no rotated copy of the node list (O(all nodes) per pod).
    # The filters run here rather than through fwk.run_filter_plugins (same order, same first
    # failure named after its plugin): one call per node less.
    for i in itertools.chain(range(start, num_all), range(start)):
        ni = nodes[i]
        processed += 1
        for name, run in filters:
            status = run(state, pod, ni)
            if status is not None and status.code:      # Code.SUCCESS is 0
                status.plugin = name
                break
        else:
            feasible.append(ni)
            if len(feasible) >= num_to_find:
                break
            continue
        if status.code == Code.ERROR:
            raise RuntimeError(status.message())
        statuses[ni.name] = status
        diagnosis.unschedulable_plugins.add(status.plugin)
    sched.next_start_node_index = (start + processed) % num_all
    return feasible


def _pass_filters_by_batch(state: CycleState, pod: Pod, diagnosis: Diagnosis, nodes: list[NodeInfo], start: int,
                           num_to_find: int, filters: list[tuple[str, Callable[..., Status | None]]],
                           batch: list[Callable[..., list[bool] | None]]) -> tuple[list[NodeInfo], int]:
    """find_nodes_that_pass_filters' loop a slice of nodes at a time, when every filter to run
    says for a whole slice which nodes it passes for sure (filter_nodes): the same nodes in the
    same order, the same count examined, the same statuses (the filters run one by one on
    the nodes not passed for sure). Returns (feasible, nodes examined).

    A slice holds as many nodes as are still to find: when they all pass (the common case)
    one slice decides the cycle without a Python call per node.
    """
    num_all = len(nodes)
    feasible: list[NodeInfo] = []
    processed = 0
    statuses = diagnosis.node_to_status.statuses
    pos = start
    while processed < num_all:
        want = num_to_find - len(feasible)
        end = min(pos + want, num_all, pos + num_all - processed)
        chunk = nodes[pos:end]
        passed: list[bool] | None = None
        for filter_nodes in batch:
            verdicts = filter_nodes(state, pod, chunk)
            if verdicts is None:          # undecided: every filter per node for this slice
                passed = [False] * len(chunk)
                break
            passed = verdicts if passed is None else list(map(operator.and_, passed, verdicts))
        assert passed is not None
        if False not in passed:
            if feasible:
                feasible.extend(chunk)
            else:
                feasible = chunk          # the same list object: scorers reuse its columns
            processed += len(chunk)
        else:
            for ni, ok in zip(chunk, passed):
                processed += 1
                if not ok:
                    for name, run in filters:
                        status = run(state, pod, ni)
                        if status is not None and status.code:
                            status.plugin = name
                            break
                    else:
                        ok = True
                if ok:
                    feasible.append(ni)
                    if len(feasible) >= num_to_find:
                        break
                    continue
                if status.code == Code.ERROR:
                    raise RuntimeError(status.message())
                statuses[ni.name] = status
                diagnosis.unschedulable_plugins.add(status.plugin)
        if len(feasible) >= num_to_find:
            break
        pos = end % num_all
    return feasible, processed


def num_feasible_nodes_to_find(percentage_of_nodes_to_score: int, num_all_nodes: int) -> int:
    """How many feasible nodes are enough to stop filtering.

    Small clusters (< 100 nodes) are searched fully. Otherwise the adaptive default is
    50% - 1% per 125 nodes, at least 5%, and never fewer than 100 nodes: 500 nodes -> 46% ->
    230; 5,000 nodes -> 10% -> 500; 6,000 nodes -> 5% (floor) -> 300.
    Upstream: Scheduler.numFeasibleNodesToFind
    """
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    percentage = percentage_of_nodes_to_score
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    num_nodes = num_all_nodes * percentage // 100
    return max(num_nodes, MIN_FEASIBLE_NODES_TO_FIND)


def prioritize_nodes(fwk: Framework, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
    """PreScore then Score: each node's total score, in node order; without score plugins
    every node scores 1. Upstream: prioritizeNodes (its NodePluginScores list: only the
    totals pick the host, so none is built per node)."""
    if not fwk.has_score_plugins():
        return [1] * len(nodes)
    status = fwk.run_pre_score_plugins(state, pod, nodes)
    if status is not None and not status.is_success():
        raise RuntimeError(status.message())
    return fwk.run_score_plugins_totals(state, pod, nodes)


def select_host(node_scores: list[NodePluginScores], rng: random.Random) -> str:
    """The highest total; ties broken uniformly at random by reservoir sampling (the k-th
    tie replaces the choice with probability 1/k). Upstream: selectHost
    """
    if not node_scores:
        raise ValueError("empty priorityList")
    return node_scores[select_index([ns.total_score for ns in node_scores], rng)].name


def select_index(totals: list[int], rng: random.Random) -> int:
    """select_host over plain totals: the chosen index (the same draws)."""
    if not totals:
        raise ValueError("empty priorityList")
    max_score, selected, count = totals[0], 0, 1
    randbelow = _randbelow_of(rng)
    for i in range(1, len(totals)):
        score = totals[i]
        if score > max_score:
            max_score, selected, count = score, i, 1
        elif score == max_score:
            count += 1
            if randbelow(count) == 0:
                selected = i
    return selected


def _randbelow_of(rng: random.Random) -> Callable[[int], int]:
    """rng.randrange for one argument, written out when that draws the same numbers.

    Identical nodes all tie, so this runs once per node: the written-out draw
    (Random._randbelow_with_getrandbits) makes one call instead of three.
    """
    return _written_out_randbelow(rng.getrandbits) if _draws_like_randrange(rng) else rng.randrange


def _written_out_randbelow(getrandbits: Callable[[int], int]) -> Callable[[int], int]:
    def randbelow(n: int) -> int:
        k = n.bit_length()
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return r
    return randbelow


def _check_written_out_randbelow() -> bool:
    """Whether this Python's randrange(n) draws as _written_out_randbelow does (checked once)."""
    a, b = random.Random(7), random.Random(7)
    randbelow = _written_out_randbelow(b.getrandbits)
    return all(a.randrange(n) == randbelow(n) for n in range(1, 600)) and a.random() == b.random()


_WRITTEN_OUT_RANDBELOW_OK = _check_written_out_randbelow()


def _draws_like_randrange(rng: random.Random) -> bool:
    cls = type(rng)
    return (_WRITTEN_OUT_RANDBELOW_OK and cls.randrange is random.Random.randrange
            and cls.getrandbits is random.Random.getrandbits
            and getattr(cls, "_randbelow", None) is getattr(random.Random, "_randbelow", ()))


# --- binding ---------------------------------------------------------------------------------

async def binding_cycle(sched: Scheduler, fwk: Framework, state: CycleState, pinfo: QueuedPodInfo,
                        assumed: Pod, cycle: int, *, start: float | None = None) -> None:
    """Bind through the API; on failure forget the assumed pod and requeue with backoff.

    Upstream: Scheduler.bindingCycle / bind / handleBindingCycleError
    """
    host = assumed.spec.node_name or ""
    try:
        status = await fwk.run_pre_bind_plugins(state, assumed, host) if fwk.pre_bind_plugins else None
        if status is None or status.is_success():
            status = await fwk.run_bind_plugins(state, assumed, host)
    except Exception as err:     # noqa: BLE001
        status = Status.as_status(err)
    if status is not None and not status.is_success():
        handle_binding_cycle_error(sched, assumed)
        await handle_scheduling_failure(sched, pinfo, status, cycle, start=start)
        return
    if start is not None:
        metrics.observe_attempt(metrics.SCHEDULED, fwk.profile_name, sched.clock.monotonic() - start)
    sched.cache.finish_binding(assumed, sched.clock.now())
    meta = assumed.metadata
    sched.recorder.event(assumed, "Normal", "Scheduled", f"Successfully assigned {meta.namespace}/{meta.name} to {host}")
    sched.queue.done(pinfo.key)
    sched.scheduled += 1


def handle_binding_cycle_error(sched: Scheduler, assumed: Pod) -> None:
    """Forget the assumed pod; its room is free again, which may help waiting pods."""
    try:
        sched.cache.forget_pod(assumed)
    except ValueError:
        log.exception("scheduler cache ForgetPod failed", extra={"pod": assumed.metadata.name})
    sched.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE)


# --- failures --------------------------------------------------------------------------------

async def handle_scheduling_failure(sched: Scheduler, pinfo: QueuedPodInfo, status: Status, cycle: int, *,
                                    start: float | None = None) -> None:
    """Requeue the pod, emit FailedScheduling and set PodScheduled=False.

    The pod is requeued only if it still exists unassigned in the informer cache (it may
    have been deleted or bound by someone else meanwhile).
    Upstream: Scheduler.handleSchedulingFailure
    """
    pod = pinfo.pod
    reason = "Unschedulable" if status.is_rejected() else "SchedulerError"
    if start is not None:
        metrics.observe_attempt(metrics.UNSCHEDULABLE if status.is_rejected() else metrics.ERROR,
                                sched.framework.profile_name, sched.clock.monotonic() - start)
    err_msg = str(status.err) if status.err is not None else status.message()
    meta = pod.metadata
    cached = sched.pod_lister_get(meta.namespace or "", meta.name or "")
    if cached is None:
        log.info("Pod doesn't exist in informer cache", extra={"pod": pinfo.key})
        sched.queue.done(pinfo.key)
    elif cached.spec.node_name:
        log.info("Pod has been assigned to node. Abort adding it back to queue.", extra={"pod": pinfo.key})
        sched.queue.done(pinfo.key)
    else:
        pinfo.pod_info.update(cached)
        try:
            sched.queue.add_unschedulable_if_not_present(pinfo, cycle)
        except ValueError:
            log.exception("Error occurred", extra={"pod": pinfo.key})
    sched.recorder.event(pod, "Warning", "FailedScheduling", truncate_message(err_msg))
    if cached is not None:
        await update_pod_scheduled_condition(sched, cached, reason, err_msg)


def truncate_message(message: str) -> str:
    """Upstream: truncateMessage: at most 1024 characters, ending in "..." when cut."""
    if len(message) <= MAX_EVENT_MESSAGE:
        return message
    return message[:MAX_EVENT_MESSAGE - 3] + "..."


async def update_pod_scheduled_condition(sched: Scheduler, pod: Pod, reason: str, message: str) -> None:
    """Patch PodScheduled=False onto the pod's status if the condition changes.

    Upstream: updatePod + podutil.UpdatePodCondition + util.PatchPodStatus (a strategic
    merge patch keyed by condition type).
    """
    old = next((c for c in (pod.status.conditions if pod.status else None) or () if c.type == "PodScheduled"), None)
    if old is not None and (old.status, old.reason, old.message) == ("False", reason, message):
        return
    transition = old.last_transition_time if old is not None and old.status == "False" else None
    cond: dict[str, object] = {"type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                               "lastProbeTime": None,
                               "lastTransitionTime": transition or rfc3339(sched.clock.now())}
    if pod.metadata.generation:
        cond["observedGeneration"] = pod.metadata.generation
    body = {"status": {"conditions": [cond]}}
    try:
        await sched.client.core_v1().pods(pod.metadata.namespace).patch(pod.metadata.name, body, "strategic",
                                                                         subresource="status")
    except errors.NotFound:
        pass
    except Exception:
        log.exception("Error updating pod", extra={"pod": f"{pod.metadata.namespace}/{pod.metadata.name}"})
