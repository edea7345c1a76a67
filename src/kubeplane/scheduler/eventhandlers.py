"""Informer event handlers: assigned pods feed the cache, unassigned pods the queue, nodes both.

Upstream: pkg/scheduler/eventhandlers.go (addAllEventHandlers). Upstream's pod informer
lists with the field selector status.phase!=Succeeded,status.phase!=Failed; ours watches
all pods, so a pod turning terminal is handled here as the delete that selector would give.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..api.types.core_v1 import Node, Pod
from ..client.tools.cache import DeletedFinalStateUnknown
from .framework.runtime import DEFAULT_SCHEDULER_NAME
from .internal.queue.scheduling_queue import NODE_ADD, NODE_UPDATE

if TYPE_CHECKING:
    from .scheduler import Scheduler

log = logging.getLogger(__name__)


def assigned_pod(pod: Pod) -> bool:
    """Upstream: assignedPod"""
    return bool(pod.spec.node_name)


def is_pod_terminal(pod: Pod) -> bool:
    return pod.status is not None and pod.status.phase in _TERMINAL


_TERMINAL = ("Succeeded", "Failed")


def responsible_for_pod(pod: Pod, scheduler_names: frozenset[str]) -> bool:
    """Upstream: responsibleForPod (an empty schedulerName is defaulted to default-scheduler)."""
    return (pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME) in scheduler_names


class PodEventHandler:
    """Routes pod events the way upstream's two FilteringResourceEventHandlers do: an object
    entering a filter is an add, leaving it a delete, staying in it an update."""

    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched

    def _side(self, pod: Pod) -> str:
        if is_pod_terminal(pod):
            return ""
        if assigned_pod(pod):
            return "cache"
        if responsible_for_pod(pod, self.sched.scheduler_names):
            return "queue"
        return ""

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        side = self._side(obj)
        if side == "cache":
            self.sched.add_pod_to_cache(obj)
        elif side == "queue":
            self.sched.queue.add(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return                       # resync
        # Most updates (status writes of a bound pod) stay on the cache side: _side written
        # out for that case, without two calls per side.
        if old.spec.node_name and new.spec.node_name:
            old_status, new_status = old.status, new.status
            if ((old_status is None or old_status.phase not in _TERMINAL)
                    and (new_status is None or new_status.phase not in _TERMINAL)):
                self.sched.update_pod_in_cache(old, new)
                return
        before, after = self._side(old), self._side(new)
        if before == after == "cache":
            self.sched.update_pod_in_cache(old, new)
        elif before == after == "queue":
            self.sched.queue.update(old, new)
        else:
            if before:
                self._delete(before, old)
            if after:
                self.on_add(new, False)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if not isinstance(obj, Pod):
            log.error("Cannot convert to *v1.Pod", extra={"obj": repr(obj)[:200]})
            return
        side = self._side(obj) or ("cache" if assigned_pod(obj) else "queue")
        self._delete(side, obj)

    def _delete(self, side: str, pod: Pod) -> None:
        if side == "cache":
            self.sched.delete_pod_from_cache(pod)
        else:
            self.sched.queue.delete(pod)


class NodeEventHandler:
    def __init__(self, sched: Scheduler) -> None:
        self.sched = sched

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        """Upstream: addNodeToCache"""
        self.sched.cache.add_node(obj)
        self.sched.queue.move_all_to_active_or_backoff_queue(NODE_ADD)

    def on_update(self, old: Any, new: Any) -> None:
        """Upstream: updateNodeInCache: move pods only on scheduling-relevant changes."""
        self.sched.cache.update_node(old, new)
        if node_scheduling_properties_change(new, old):
            self.sched.queue.move_all_to_active_or_backoff_queue(NODE_UPDATE)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if not isinstance(obj, Node):
            return
        try:
            self.sched.cache.remove_node(obj)
        except KeyError:
            log.info("Node not in cache", extra={"node": obj.metadata.name})


def node_scheduling_properties_change(new: Node, old: Node) -> bool:
    """Upstream: nodeSchedulingPropertiesChange: unschedulable flips to false, or
    allocatable, labels, taints, conditions or annotations change."""
    ns, os_ = new.spec, old.spec
    if bool(os_ and os_.unschedulable) and not (ns and ns.unschedulable):
        return True
    if (new.status and new.status.allocatable) != (old.status and old.status.allocatable):
        return True
    if new.metadata.labels != old.metadata.labels or new.metadata.annotations != old.metadata.annotations:
        return True
    if (ns.taints if ns else None) != (os_.taints if os_ else None):
        return True
    nc = {c.type: c.status for c in (new.status.conditions if new.status else None) or ()}
    oc = {c.type: c.status for c in (old.status.conditions if old.status else None) or ()}
    return nc != oc
