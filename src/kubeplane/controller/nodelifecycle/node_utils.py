"""API helpers the node lifecycle and taint eviction controllers share: taint a node, mark
its pods not ready, record node events.

Upstream: pkg/controller/util/node/controller_utils.go, and AddOrUpdateTaintOnNode /
RemoveTaintOffNode / PatchNodeTaints / AddOrUpdateLabelsOnNode from
pkg/controller/controller_utils.go, UpdatePodCondition from pkg/api/v1/pod/util.go.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Sequence

from ...api import errors, types
from ...api.types import core_v1
from ...utils.clock import Clock, rfc3339
from .. import controller_utils as cu
from . import taints as tu

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.tools.record import EventRecorder

log = logging.getLogger(__name__)

# Attempts for a read-modify-patch of a node's taints or labels that hits a Conflict.
# Upstream: UpdateTaintBackoff / UpdateLabelBackoff (Steps 5). Upstream sleeps ~100 ms between
# attempts; here the retry re-reads at once (one event loop: nothing else ran in between anyway
# except the writer that caused the conflict).
UPDATE_RETRIES = 5

POD_READY = "Ready"
CONDITION_TRUE, CONDITION_FALSE, CONDITION_UNKNOWN = "True", "False", "Unknown"


def get_node_condition(status: core_v1.NodeStatus | None, condition_type: str) -> core_v1.NodeCondition | None:
    """The condition of that type (the object itself, not a copy), or None. Upstream: GetNodeCondition"""
    if status is None:
        return None
    return next((c for c in status.conditions or () if c.type == condition_type), None)


def _node_ref(name: str, uid: str | None) -> core_v1.ObjectReference:
    return core_v1.ObjectReference(api_version="v1", kind="Node", name=name, uid=uid or None)


def record_node_event(recorder: EventRecorder, node_name: str, node_uid: str | None, event_type: str,
                      reason: str, event: str) -> None:
    """Upstream: RecordNodeEvent"""
    recorder.eventf(_node_ref(node_name, node_uid), event_type, reason, "Node %s event: %s", node_name, event)


def record_node_status_change(recorder: EventRecorder, node: core_v1.Node, new_status: str) -> None:
    """Upstream: RecordNodeStatusChange"""
    recorder.eventf(_node_ref(node.metadata.name, node.metadata.uid), cu.EVENT_TYPE_NORMAL, new_status,
                    "Node %s status is now: %s", node.metadata.name, new_status)


# --- taints -----------------------------------------------------------------------------------

async def patch_node_taints(client: Clientset, node_name: str, old_node: core_v1.Node,
                            new_node: core_v1.Node) -> None:
    """Replace spec.taints with new_node's, guarded by old_node's resourceVersion.

    spec.taints has no patch strategy, so the two-way strategic merge patch upstream computes
    is exactly {"metadata": {"resourceVersion": rv}, "spec": {"taints": [...] or null}}; the
    resourceVersion makes the patch fail with a Conflict if the node changed since it was read.
    Upstream: PatchNodeTaints
    """
    taints = [types.to_dict(t) for t in (new_node.spec.taints if new_node.spec else None) or ()]
    patch = {"metadata": {"resourceVersion": old_node.metadata.resource_version},
             "spec": {"taints": taints or None}}
    await client.core_v1().nodes().patch(node_name, patch, "strategic")


async def _retry_taint_change(client: Clientset, node_name: str, change: Any) -> None:
    """Read the node live, apply change(node) -> (new_node, updated), patch; retry on Conflict."""
    for attempt in range(UPDATE_RETRIES):
        old_node = await client.core_v1().nodes().get(node_name)
        new_node, updated = change(old_node)
        if not updated:
            return
        try:
            await patch_node_taints(client, node_name, old_node, new_node)
            return
        except errors.Conflict:
            if attempt == UPDATE_RETRIES - 1:
                raise


async def add_or_update_taint_on_node(client: Clientset, node_name: str, *taints: core_v1.Taint) -> None:
    """Add (or refresh) taints on the live node; no write if it already has them all.

    Upstream: AddOrUpdateTaintOnNode (pkg/controller/controller_utils.go)
    """
    if not taints:
        return

    def change(node: core_v1.Node) -> tuple[core_v1.Node, bool]:
        updated = False
        for taint in taints:
            node, ok = tu.add_or_update_taint(node, taint)
            updated = updated or ok
        return node, updated

    await _retry_taint_change(client, node_name, change)


async def remove_taint_off_node(client: Clientset, node_name: str, node: core_v1.Node | None,
                                *taints: core_v1.Taint) -> None:
    """Remove taints from the live node. If the cached node is given and carries none of them,
    no request at all is made (the common case on every health pass).

    Upstream: RemoveTaintOffNode (pkg/controller/controller_utils.go)
    """
    if not taints:
        return
    if node is not None:
        node_taints = node.spec.taints if node.spec else None
        if not any(tu.taint_exists(node_taints, t) for t in taints):
            return

    def change(live: core_v1.Node) -> tuple[core_v1.Node, bool]:
        updated = False
        for taint in taints:
            live, ok = tu.remove_taint(live, taint)
            updated = updated or ok
        return live, updated

    await _retry_taint_change(client, node_name, change)


async def swap_node_controller_taint(client: Clientset, clock: Clock, taints_to_add: Sequence[core_v1.Taint],
                                     taints_to_remove: Sequence[core_v1.Taint], node: core_v1.Node) -> bool:
    """Add taints_to_add (stamped timeAdded = now), then remove taints_to_remove.

    Returns False (logged) on failure; the caller retries on a later pass.
    Upstream: SwapNodeControllerTaint
    """
    now = rfc3339(clock.now())
    stamped = [core_v1.Taint(key=t.key, value=t.value, effect=t.effect, time_added=now) for t in taints_to_add]
    name = node.metadata.name
    try:
        await add_or_update_taint_on_node(client, name, *stamped)
    except Exception as err:
        log.error("unable to taint unresponsive Node", extra={"node": name, "taints": [t.key for t in stamped],
                                                              "err": repr(err)})
        return False
    try:
        await remove_taint_off_node(client, name, node, *taints_to_remove)
    except Exception as err:
        log.error("unable to remove unneeded taint from unresponsive Node",
                  extra={"node": name, "taints": [t.key for t in taints_to_remove], "err": repr(err)})
        return False
    return True


async def add_or_update_labels_on_node(client: Clientset, node_name: str, labels_to_update: dict[str, str]) -> None:
    """Merge labels into the live node with a strategic merge patch guarded by its resourceVersion.

    Upstream: AddOrUpdateLabelsOnNode (pkg/controller/controller_utils.go)
    """
    for attempt in range(UPDATE_RETRIES):
        node = await client.core_v1().nodes().get(node_name)
        patch = {"metadata": {"resourceVersion": node.metadata.resource_version, "labels": labels_to_update}}
        try:
            await client.core_v1().nodes().patch(node_name, patch, "strategic")
            return
        except errors.Conflict:
            if attempt == UPDATE_RETRIES - 1:
                raise


# --- pods -------------------------------------------------------------------------------------

def update_pod_condition(status: core_v1.PodStatus, condition: core_v1.PodCondition, now: float) -> bool:
    """Set condition in status (by type); lastTransitionTime moves only when status changes.

    Returns whether anything changed. Upstream: UpdatePodCondition (pkg/api/v1/pod/util.go)
    """
    condition.last_transition_time = rfc3339(now)
    conditions = status.conditions if status.conditions is not None else []
    status.conditions = conditions
    for i, old in enumerate(conditions):
        if old.type != condition.type:
            continue
        if condition.status == old.status:
            condition.last_transition_time = old.last_transition_time
        is_equal = (condition.status == old.status and condition.reason == old.reason
                    and condition.message == old.message and condition.last_probe_time == old.last_probe_time
                    and condition.last_transition_time == old.last_transition_time)
        conditions[i] = condition
        return not is_equal
    conditions.append(condition)
    return True


async def mark_pods_not_ready(client: Clientset, recorder: EventRecorder, clock: Clock,
                              pods: Sequence[core_v1.Pod], node_name: str) -> None:
    """Set Ready=False on every pod of the node that says Ready=True, with a NodeNotReady event.

    Raises an aggregate of the failed status writes (a gone pod is not a failure).
    Upstream: MarkPodsNotReady
    """
    errs: list[BaseException] = []
    for cached in pods:
        if (cached.spec.node_name if cached.spec else None) != node_name:
            continue                                    # defensive, as upstream
        ready = next((c for c in (cached.status.conditions if cached.status else None) or ()
                      if c.type == POD_READY), None)
        if ready is None:
            continue
        pod = cached.deep_copy()                        # cached came from the lister
        assert pod.status is not None
        cond = ready.deep_copy()
        cond.status = CONDITION_FALSE
        if not update_pod_condition(pod.status, cond, clock.now()):
            continue
        try:
            await client.core_v1().pods(pod.metadata.namespace).update_status(pod)
        except errors.NotFound:
            continue
        except errors.StatusError as err:
            log.info("Failed to update status for pod", extra={"pod": cu.pod_key(pod), "err": repr(err)})
            errs.append(err)
        # After the write, so the pod is known to exist (upstream records it on other errors too).
        recorder.event(pod, cu.EVENT_TYPE_WARNING, "NodeNotReady", "Node is not ready")
    err = cu.new_aggregate(errs)
    if err is not None:
        raise err
