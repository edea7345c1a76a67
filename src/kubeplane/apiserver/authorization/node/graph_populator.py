"""Keeps the node authorizer's graph current from the store: pods, PVs, volume attachments and
resource slices.

Upstream feeds the graph from shared informers (AddGraphEventHandlers). Here it reads the
storage watch log directly, the way the admission plugins' PrefixIndex does: `start()` lists
each prefix once and opens a watch after that revision; `sync()`, called by the authorizer
before a graph question, applies the events the watches have ready. So a decision is as current
as a storage read (a kubelet reading a pod's Secret right after the binding is not refused for
informer lag), and costs nothing while nothing changed. Most pod events are status writes
that change no edge: they are recognised from the event's previous version (same node, uid
and claim statuses: upstream's updatePod) and skipped.

A store whose watcher cannot be read without waiting (etcd) is consumed by a task instead,
informer-style. A watch that fell out of the window (Compacted) is re-listed in a task; the
graph answers from what it has meanwhile, as upstream's does while its informer re-lists.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from ....storage.interface import Compacted, Storage, WatchEvent
from .graph import POD, PV, SLICE, VA, Graph

log = logging.getLogger(__name__)

Obj = dict[str, Any]

PODS = "/registry/pods/"
PVS = "/registry/persistentvolumes/"
VOLUME_ATTACHMENTS = "/registry/volumeattachments/"
RESOURCE_SLICES = "/registry/resourceslices/"


class GraphPopulator:
    def __init__(self, storage: Storage, graph: Graph | None = None) -> None:
        self.storage = storage
        self.graph = graph or Graph()
        self.handlers: dict[str, Callable[[WatchEvent], None]] = {
            PODS: self._pod, PVS: self._pv, VOLUME_ATTACHMENTS: self._attachment, RESOURCE_SLICES: self._slice}
        self._pulled: dict[str, Any] = {}          # prefix -> a watcher read by sync()
        self._tasks: dict[str, asyncio.Task[None]] = {}   # prefix -> its re-list or watch task
        self.started = False
        self._synced = -1                           # the store's revision at the last sync()

    async def start(self) -> None:
        """List every prefix once and watch from there (before the first decision; once)."""
        if self.started:
            return
        for prefix in self.handlers:
            await self._relist(prefix)
        self.started = True

    def stop(self) -> None:
        for w in self._pulled.values():
            w.stop()
        self._pulled.clear()
        for t in self._tasks.values():
            t.cancel()
        self._tasks.clear()

    def sync(self) -> None:
        """Apply what changed since the last call (cheap when nothing did)."""
        rev = self.storage.revision
        if rev == self._synced:
            return
        self._synced = rev
        for prefix, w in list(self._pulled.items()):
            try:
                events = w.changes()
            except Compacted:
                self._synced = -1
                del self._pulled[prefix]
                w.stop()
                self._spawn(prefix, self._relist(prefix))
                continue
            handle = self.handlers[prefix]
            for ev in events:
                handle(ev)

    # --- listing and watching ----------------------------------------------------------------

    async def _relist(self, prefix: str) -> None:
        kvs, rev = await self.storage.list(prefix)
        self._clear(prefix)
        handle = self.handlers[prefix]
        for kv in kvs:
            handle(WatchEvent("ADDED", kv, None, rev))
        watcher = self.storage.watch(prefix, rev)
        if hasattr(watcher, "changes"):
            for ev in watcher.changes():           # (also arms it: later calls cost nothing until a write)
                handle(ev)
            self._pulled[prefix] = watcher
        else:
            self._spawn(prefix, self._consume(prefix, watcher))

    async def _consume(self, prefix: str, watcher: Any) -> None:
        handle = self.handlers[prefix]
        try:
            async for ev in watcher:
                handle(ev)
        except Compacted:
            self._spawn(prefix, self._relist(prefix))

    def _spawn(self, prefix: str, coro: Any) -> None:
        self._tasks[prefix] = asyncio.get_running_loop().create_task(coro)

    def _clear(self, prefix: str) -> None:
        """Forget every vertex a prefix's objects made, before a re-list adds them again."""
        g = self.graph
        vtype = {PODS: POD, PVS: PV, VOLUME_ATTACHMENTS: VA, RESOURCE_SLICES: SLICE}[prefix]
        for key in [k for k in g.vertices if k[0] == vtype]:
            g.delete(*key)

    # --- event handlers (upstream's graphPopulator) -------------------------------------------

    def _pod(self, ev: WatchEvent) -> None:
        """Upstream: graphPopulator.updatePod / deletePod."""
        pod = ev.kv.obj
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            return
        if ev.type == "DELETED":
            meta = pod.get("metadata") or {}
            self.graph.delete_pod(meta.get("namespace", ""), meta.get("name", ""))
            return
        if ev.type == "MODIFIED" and ev.prev is not None and _same_edges(ev.prev.obj, pod, node):
            return          # node and uid unchanged: the references of a bound pod cannot change
        self.graph.add_pod(pod)

    def _pv(self, ev: WatchEvent) -> None:
        if ev.type == "DELETED":
            self.graph.delete_pv((ev.kv.obj.get("metadata") or {}).get("name", ""))
        else:
            self.graph.add_pv(ev.kv.obj)

    def _attachment(self, ev: WatchEvent) -> None:
        self._to_node(VA, ev)

    def _slice(self, ev: WatchEvent) -> None:
        self._to_node(SLICE, ev)

    def _to_node(self, vtype: int, ev: WatchEvent) -> None:
        name = (ev.kv.obj.get("metadata") or {}).get("name", "")
        if ev.type == "DELETED":
            self.graph.delete(vtype, "", name)
            return
        node = (ev.kv.obj.get("spec") or {}).get("nodeName") or ""
        if ev.type == "MODIFIED" and ev.prev is not None and ((ev.prev.obj.get("spec") or {}).get("nodeName") or "") == node:
            return
        self.graph.add_to_node(vtype, name, node)


def _same_edges(old: Obj, new: Obj, node: str) -> bool:
    """Upstream's updatePod skip: same node, same uid, same resource claim statuses."""
    return ((old.get("spec") or {}).get("nodeName") == node
            and (old.get("metadata") or {}).get("uid") == (new.get("metadata") or {}).get("uid")
            and _claim_statuses(old) == _claim_statuses(new))


def _claim_statuses(pod: Obj) -> list[tuple[Any, Any]]:
    """Upstream: resourceClaimStatusesEqual compares names and claim names, in order."""
    return [(s.get("name"), s.get("resourceClaimName"))
            for s in (pod.get("status") or {}).get("resourceClaimStatuses") or ()]
