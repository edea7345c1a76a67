"""The status manager: caches the latest status the kubelet computed for each pod and writes
it to the API server, only when it differs from what was last written.

    sm = StatusManager(clientset, clock=clock)
    sm.set_pod_status(pod, status)      # plain call, never blocks: cache + queue
    sm.mark_pod_deletable(pod)          # containers stopped: final DELETE after the status
    await sm.run()                      # the writers (until cancelled)

Several set_pod_status calls before a writer gets to the pod coalesce into one write of
the latest status. A write is a JSON merge patch of the /status subresource, computed
against the last status written (or the informer's copy): maps merge, lists (conditions,
container statuses) are replaced whole, keys that disappeared are sent as null. The patch
carries metadata.uid so it can never land on a new pod that reuses the name.

Upstream: pkg/kubelet/status/status_manager.go (SetPodStatus -> updateStatusInternal,
syncPod, needsUpdate, canBeDeleted). Upstream patches with a strategic merge two-way diff;
a merge patch of the changed keys has the same effect for the fields the kubelet owns.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable

from ...api import errors
from ...api.types import core_v1, to_dict
from ...client.clientset import Clientset
from ...client.util.workqueue import DelayingQueue, DelayingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item
from ...utils.clock import REAL_CLOCK, Clock, rfc3339
from . import generate

log = logging.getLogger(__name__)

Obj = dict[str, Any]
RETRY_AFTER = 1.0      # seconds before retrying a failed write
MAX_CLIENTS = 4096     # cached (node, namespace) pods clients


@dataclass
class _Entry:
    namespace: str
    name: str
    status: Obj
    deletable: bool = False
    generated: Obj | None = None       # the status as last passed to set_pod_status
    node: str = ""                     # the pod's node: its writes go out as that node


class StatusManager:
    """pod_statuses: uid -> latest desired status; written: uid -> status last written.
    Invariant: a uid is queued (or being written) whenever pod_statuses[uid] differs from
    written[uid] or the pod is deletable and not yet deleted.
    """

    def __init__(self, clientset: Clientset, *, clock: Clock = REAL_CLOCK, workers: int = 4,
                 get_pod: Callable[[str], core_v1.Pod | None] = lambda uid: None,
                 clientset_for: Callable[[str], Clientset] | None = None) -> None:
        self.clientset, self.clock, self.workers = clientset, clock, workers
        self.clientset_for = clientset_for or (lambda node: self.clientset)   # node name -> its clientset
        self.get_pod = get_pod                 # the informer's latest copy, by uid
        self.pod_statuses: dict[str, _Entry] = {}
        self.written: dict[str, Obj] = {}
        # Unnamed: not metered (upstream's kubelet has no workqueue here: a channel and a map).
        # Each add wakes one idle writer (workqueue: upstream's Signal), not all 8.
        self.queue: DelayingQueue[str] = DelayingQueue(DelayingQueueOptions(clock=clock))
        self.writes = 0                        # status writes made (for tests and benchmarks)
        self.on_synced: Callable[[str], None] = lambda uid: None   # after a pod's status is stored, or the pod is gone
        self._clients: dict[tuple[str, str], Any] = {}     # (node, namespace) -> its pods client

    def _pods(self, node: str, namespace: str) -> Any:
        """The pods client a node writes a namespace's statuses with (made once: a write per
        pod phase would otherwise build one)."""
        client = self._clients.get((node, namespace))
        if client is None:
            if len(self._clients) >= MAX_CLIENTS:       # namespaces come and go: stay bounded
                self._clients.clear()
            client = self._clients[node, namespace] = self.clientset_for(node).core_v1().pods(namespace)
        return client

    def pending(self, uid: str) -> bool:
        """Whether a status of the pod is still to be written (queued, or being written)."""
        entry = self.pod_statuses.get(uid)
        return entry is not None and self.written.get(uid) is not entry.status

    def get_pod_status(self, uid: str) -> Obj | None:
        e = self.pod_statuses.get(uid)
        return e.status if e else None

    def set_pod_status(self, pod: core_v1.Pod, status: Obj) -> None:
        """Cache status for pod and queue a write if it changed.

        Fills in startTime (kept once set) and each kubelet condition's lastTransitionTime
        (kept while the condition's status is unchanged). Upstream: updateStatusInternal
        """
        uid = pod.metadata.uid or ""
        entry = self.pod_statuses.get(uid)
        if entry is not None and entry.generated == status:
            return            # same input as last time: startTime and transitions would be kept
        generated = status
        old = entry.status if entry else (to_dict(pod.status) if pod.status else {})
        status = dict(status)
        status["startTime"] = old.get("startTime") or rfc3339(self.clock.now())
        prev: dict[Any, Obj] = {}
        for o in old.get("conditions") or ():
            prev.setdefault(o.get("type"), o)             # the first of a type, as upstream's lookup
        # Upstream: updateLastTransitionTime, for each kubelet condition that has no time of its
        # own (written out: 5 conditions per call). A condition equal to the one it replaces
        # is that one, so the compares that follow (here, sync_pod's, merge_diff's, the
        # server's of the stored status, which keeps these dicts) stop at its identity.
        now = ""                        # the time of any new transition: formatted once
        conditions = []
        for c in status.get("conditions") or ():
            kind = c.get("type")
            if kind in _KUBELET_CONDITIONS and "lastTransitionTime" not in c:
                p = prev.get(kind)
                t = p.get("lastTransitionTime") if p is not None and p.get("status") == c.get("status") else None
                if not t:
                    t = now = now or rfc3339(self.clock.now())
                c = {**c, "lastProbeTime": None, "lastTransitionTime": t}
                if p is not None and c == p:
                    c = p
            conditions.append(c)
        status["conditions"] = conditions
        if entry is not None:
            entry.generated = generated
            if entry.status == status:
                return
        if entry is None:
            entry = self.pod_statuses[uid] = _Entry(pod.metadata.namespace or "", pod.metadata.name or "", status,
                                                    generated=generated, node=(pod.spec.node_name if pod.spec else "") or "")
        entry.status = status
        self.queue.add(uid)

    def mark_pod_deletable(self, pod: core_v1.Pod) -> None:
        """The pod's containers have all stopped: once its status is written, make the
        final DELETE (grace 0, uid precondition). Upstream: canBeDeleted + syncPod's delete."""
        entry = self.pod_statuses.get(pod.metadata.uid or "")
        if entry is not None and not entry.deletable:
            entry.deletable = True
            self.queue.add(pod.metadata.uid or "")

    def remove_orphaned_statuses(self, uid: str) -> None:
        """Forget a pod that is gone. Upstream: RemoveOrphanedStatuses"""
        self.pod_statuses.pop(uid, None)
        self.written.pop(uid, None)

    async def run(self) -> None:
        """Write statuses until cancelled, `workers` pods at once."""
        try:
            async with asyncio.TaskGroup() as tg:
                for _ in range(self.workers):
                    tg.create_task(self._worker())
        finally:
            self.queue.shut_down()

    async def _worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_pod, self._handle_err):
            pass

    def _handle_err(self, err: Exception | None, uid: str) -> None:
        if err is not None:                           # keep writing other pods; retry this one
            log.warning("Failed to update status for pod", extra={"uid": uid, "err": repr(err)})
            self.queue.add_after(uid, RETRY_AFTER)

    async def sync_pod(self, uid: str) -> None:
        """Write the cached status if it changed; then the final delete if the pod may go.

        Upstream: manager.syncPod
        """
        entry = self.pod_statuses.get(uid)
        if entry is None:
            return
        pods = self._pods(entry.node, entry.namespace)
        cur = self.get_pod(uid)
        status = entry.status = _with_conditions_not_owned(entry.status, cur)
        base = self.written.get(uid)
        from_store = base is None
        if base is None:
            base = to_dict(cur.status) if cur is not None and cur.status else {}
        # The stored form drops null fields (a condition's lastProbeTime): a status equal to it
        # but for those, typically a restarted kubelet's first one, needs no write.
        if base != status and not (from_store and "containerStatuses" in base and base == without_nulls(status)):
            patch = {"metadata": {"uid": uid}, "status": merge_diff(base, status)}
            try:                  # the patched pod is not read: its decoding is saved
                # Handed over, not copied: the patch is built here for this write, and its
                # values (shared with status, kept in written) are never changed, here or by
                # the server (the stored pod may keep them).
                await pods.patch_raw(entry.name, patch, "merge", subresource="status", handed_over=True)
            except errors.NotFound:
                self.remove_orphaned_statuses(uid)
                self.on_synced(uid)
                return
            self.writes += 1
        if self.pod_statuses.get(uid) is entry:
            self.written[uid] = status
        self.on_synced(uid)
        if entry.deletable and self.pod_statuses.get(uid) is entry:
            await self._delete(pods, entry, uid)

    async def _delete(self, pods: Any, entry: _Entry, uid: str) -> None:
        try:
            await pods.delete(entry.name, grace_period_seconds=0, preconditions={"uid": uid})
        except (errors.NotFound, errors.Conflict):
            pass                        # gone already, or the name now belongs to a new pod
        self.remove_orphaned_statuses(uid)


_KUBELET_CONDITIONS = frozenset(generate.KUBELET_CONDITIONS)


def _with_conditions_not_owned(status: Obj, pod: core_v1.Pod | None) -> Obj:
    """status, with the conditions the kubelet does not own that the stored pod has and status
    lacks put first: one set since the kubelet computed status (an eviction's DisruptionTarget)
    must not be dropped by the write, which replaces the conditions whole.
    Upstream: mergePodStatus (the old status's conditions not owned by the kubelet are kept)."""
    if pod is None or pod.status is None or not pod.status.conditions:
        return status
    for c in pod.status.conditions:
        if c.type not in _KUBELET_CONDITIONS:
            break
    else:                           # the usual case: only the kubelet's own (no list made)
        return status
    foreign = [c for c in pod.status.conditions if c.type not in _KUBELET_CONDITIONS]
    have = {c.get("type") for c in status.get("conditions") or ()}
    foreign = [to_dict(c) for c in foreign if c.type not in have]
    if not foreign:
        return status
    return {**status, "conditions": foreign + list(status.get("conditions") or ())}


def without_nulls(v: Any) -> Any:
    """v with every null-valued map key removed, at any depth (the stored form of a status)."""
    if isinstance(v, dict):
        return {k: without_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [without_nulls(x) for x in v]
    return v


def merge_diff(old: Obj, new: Obj) -> Obj:
    """A JSON merge patch (RFC 7386) turning old into new; lists are replaced whole.

    Example: {"a": 1, "b": {"c": 2, "d": 3}} -> {"a": 1, "b": {"c": 5}} gives
    {"b": {"c": 5, "d": None}}.
    """
    patch: Obj = {}
    for k in old:                   # (a loop: no comprehension's function per diff)
        if k not in new:
            patch[k] = None
    for k, v in new.items():
        ov = old.get(k)
        if ov is v and v is not None:           # the same value (the kubelet's lists often are)
            continue
        if isinstance(v, dict) and isinstance(ov, dict):
            sub = merge_diff(ov, v)
            if sub:
                patch[k] = sub
        elif k not in old or ov != v:
            patch[k] = v
    return patch
