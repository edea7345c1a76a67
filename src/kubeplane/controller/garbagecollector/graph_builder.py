"""The graph builder: turns informer events on every watched resource into the owner graph,
and queues the nodes the garbage collector must look at.

Upstream: graph_builder.go. Upstream funnels informer events (and the collector's "virtual"
delete events) through one `graphChanges` queue drained by a single goroutine, so the graph
sees one change at a time in event order. Our informers call their handlers synchronously on
the event loop, in order, so `process_graph_changes` runs inline from the handler: the same
serialisation without the queue. Handlers stay cheap (O(owners + dependents)).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Iterable

from ...api.resources import ResourceInfo, served_resources
from ...api.types import meta_v1
from ...client.informers import SharedInformerFactory
from ...client.metadata import MetadataClient
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs, SharedIndexInformer
from ...client.transport import Transport
from ...client.util.workqueue import RateLimitingQueue
from ...utils.clock import REAL_CLOCK, Clock
from .graph import (
    FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Node, ObjectReference, ReferenceCache, owner_reference_coordinates,
)

log = logging.getLogger(__name__)

ADD, UPDATE, DELETE = "add", "update", "delete"

# Events are written by the event recorder in bulk and never carry ownerReferences; both Event
# APIs share one store. Upstream's GC ignores them too (ignoredResources in garbagecollector.go).
IGNORED_RESOURCES = frozenset({("", "events"), ("events.k8s.io", "events")})


def monitored_resources() -> list[ResourceInfo]:
    """Every served resource the collector watches: all that support delete, list and watch."""
    return [ri for ri in served_resources() if (ri.group, ri.plural) not in IGNORED_RESOURCES
            and {"delete", "list", "watch"} <= set(ri.verbs)]


@dataclass(slots=True)
class Event:
    """One change to the graph. Upstream: event (graph_builder.go)."""

    virtual: bool
    event_type: str
    obj: Any                 # the object's ObjectMeta
    old_obj: Any | None      # the previous ObjectMeta (updates)
    api_version: str
    kind: str


def being_deleted(meta: Any) -> bool:
    return meta.deletion_timestamp is not None


def has_finalizer(meta: Any, finalizer: str) -> bool:
    return finalizer in (meta.finalizers or ())


def has_delete_dependents_finalizer(meta: Any) -> bool:
    return has_finalizer(meta, FOREGROUND_FINALIZER)


def has_orphan_finalizer(meta: Any) -> bool:
    return has_finalizer(meta, ORPHAN_FINALIZER)


def deletion_starts_with_finalizer(old: Any | None, new: Any, finalizer: str) -> bool:
    """The new state is being deleted with finalizer, and the old one (if any) was not.

    Upstream: deletionStartsWithFinalizer (graph_builder.go)
    """
    if not being_deleted(new) or not has_finalizer(new, finalizer):
        return False
    return old is None or not being_deleted(old) or not has_finalizer(old, finalizer)


def starts_waiting_for_dependents_orphaned(old: Any | None, new: Any) -> bool:
    return deletion_starts_with_finalizer(old, new, ORPHAN_FINALIZER)


def starts_waiting_for_dependents_deleted(old: Any | None, new: Any) -> bool:
    return deletion_starts_with_finalizer(old, new, FOREGROUND_FINALIZER)


def references_diffs(old: list[Any], new: list[Any]) -> tuple[list[Any], list[Any], list[tuple[Any, Any]]]:
    """(added, removed, changed as (old, new)) ownerReferences, matched by uid.

    Upstream: referencesDiffs (graph_builder.go)
    """
    old_by_uid = {r.uid: r for r in old}
    new_by_uid = {r.uid: r for r in new}
    added = [r for r in new if r.uid not in old_by_uid]
    removed = [r for r in old if r.uid not in new_by_uid]
    changed = [(old_by_uid[r.uid], r) for r in new if r.uid in old_by_uid and old_by_uid[r.uid] != r]
    return added, removed, changed


def identity_from_event(event: Event) -> ObjectReference:
    m = event.obj
    ref: Any = _NewObjectReference(event.api_version, event.kind, m.name or "", m.uid or "", m.namespace or "")
    ref.__class__ = ObjectReference          # see _NewObjectReference
    return ref


class _NewObjectReference:
    """An ObjectReference while it is filled in: its slots, without the frozen dataclass's
    __setattr__. Its generated __init__ sets each field through object.__setattr__ (frozen):
    9.3k instructions for the five, where these assignments and the __class__ assignment take
    ~2.5k; every pod's add and delete make one (identity_from_event). The layouts are the same
    (the same slots, of object), which is what CPython checks before it lets __class__ change;
    storage.interface makes its KeyValues so."""

    __slots__ = ObjectReference.__slots__

    def __init__(self, api_version: str, kind: str, name: str, uid: str, namespace: str) -> None:
        self.api_version = api_version
        self.kind = kind
        self.name = name
        self.uid = uid
        self.namespace = namespace


class GraphBuilder:
    """Keeps uid_to_node in step with the informers and feeds the two work queues."""

    def __init__(self, factory: SharedInformerFactory, attempt_to_delete: RateLimitingQueue[Node],
                 attempt_to_orphan: RateLimitingQueue[Node], absent_owner_cache: ReferenceCache,
                 resources: Iterable[ResourceInfo] | None = None, *, transport: Transport | None = None,
                 clock: Clock = REAL_CLOCK) -> None:
        self.factory = factory
        self.transport = transport          # what the runtime monitors list and watch through
        self.clock = clock
        self.attempt_to_delete = attempt_to_delete
        self.attempt_to_orphan = attempt_to_orphan
        self.absent_owner_cache = absent_owner_cache
        self.uid_to_node: dict[str, Node] = {}
        self.monitors = [self._monitor(ri, self.factory.informer_for(ri.group, ri.version, ri.plural).informer())
                         for ri in (resources if resources is not None else monitored_resources())]
        # resources learnt from discovery (custom resources): (group, version, plural) -> (informer, task)
        self.runtime_monitors: dict[tuple[str, str, str], tuple[SharedIndexInformer, asyncio.Future[None]]] = {}

    def _monitor(self, ri: ResourceInfo, informer: SharedIndexInformer) -> Any:
        """Upstream: controllerFor (graph_builder.go) — an informer whose events become graph changes."""

        api_version, kind = ri.api_version, ri.kind       # ri.api_version formats a string per call

        def change(event_type: str, obj: Any, old: Any | None = None) -> None:
            if isinstance(obj, DeletedFinalStateUnknown):
                obj = obj.obj
            if obj is None or obj.metadata is None:
                return
            self.process_graph_changes(Event(False, event_type, obj.metadata,
                                             old.metadata if old is not None else None, api_version, kind))

        def update(old: Any, new: Any) -> None:
            # Most updates (a pod's status, a node's heartbeat) leave the graph as it is: the
            # object is an observed node already, keeps its ownerReferences and is not being
            # deleted. process_graph_changes would find exactly that (_update_node changes
            # nothing), so the event is not even built. Upstream leaves this as a TODO in
            # controllerFor's UpdateFunc ("check if there are differences in the ownerRefs,
            # finalizers, and DeletionTimestamp; if not, ignore the update").
            # The same holds for an object being deleted without the orphan or foreground
            # finalizer (a pod's graceful deletion and its last status writes): _update_node
            # only marks the node being deleted, and process_transitions starts nothing
            # (both transitions need that finalizer on the new state).
            meta = new.metadata
            if meta is not None:
                existing = self.uid_to_node.get(meta.uid or "")
                if existing is not None and not existing.virtual and \
                        (meta.owner_references or []) == existing.owners:
                    if meta.deletion_timestamp is None:
                        return
                    finalizers = meta.finalizers
                    if not finalizers or (ORPHAN_FINALIZER not in finalizers
                                          and FOREGROUND_FINALIZER not in finalizers):
                        existing.mark_being_deleted()
                        return
            change(UPDATE, new, old)

        informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=lambda obj: change(ADD, obj),
            update_func=update,
            delete_func=lambda obj: change(DELETE, obj)))
        return informer

    def is_synced(self) -> bool:
        return (all(m.has_synced() for m in self.monitors)
                and all(inf.has_synced() for inf, _ in self.runtime_monitors.values()))

    def sync_monitors(self, resources: Iterable[ResourceInfo]) -> bool:
        """Watch exactly these runtime resources (beside the built-in monitors): a metadata
        informer started for each new one, stopped for each one gone; whether anything changed.
        The graph keeps the nodes of a stopped monitor (as upstream's).

        Upstream: GraphBuilder.syncMonitors / startMonitors (graph_builder.go)
        """
        wanted = {(ri.group, ri.version, ri.plural): ri for ri in resources
                  if (ri.group, ri.plural) not in IGNORED_RESOURCES and {"delete", "list", "watch"} <= set(ri.verbs)}
        changed = False
        for key in [k for k in self.runtime_monitors if k not in wanted]:
            _, task = self.runtime_monitors.pop(key)
            task.cancel()
            changed = True
        for key, ri in wanted.items():
            if key in self.runtime_monitors:
                continue
            assert self.transport is not None, "runtime monitors need the collector's transport"
            informer = SharedIndexInformer(MetadataClient(self.transport, ri), name=f"{ri.plural}.{ri.group}",
                                           clock=self.clock)
            self._monitor(ri, informer)
            self.runtime_monitors[key] = (informer, asyncio.ensure_future(informer.run()))
            changed = True
        return changed

    async def stop_runtime_monitors(self) -> None:
        tasks = [task for _, task in self.runtime_monitors.values()]
        self.runtime_monitors.clear()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def enqueue_virtual_delete_event(self, ref: ObjectReference) -> None:
        """Tell the graph that ref was verified absent at the API server.

        Upstream: enqueueVirtualDeleteEvent (graph_builder.go)
        """
        meta = meta_v1.ObjectMeta(name=ref.name, namespace=ref.namespace or None, uid=ref.uid)
        self.process_graph_changes(Event(True, DELETE, meta, None, ref.api_version, ref.kind))

    # --- graph mutations ------------------------------------------------------------------

    def insert_node(self, n: Node) -> None:
        """Upstream: insertNode"""
        self.uid_to_node[n.identity.uid] = n
        self.add_dependent_to_owners(n, n.owners)

    def add_dependent_to_owners(self, n: Node, owners: list[Any]) -> None:
        """Add n to each owner's dependents; an owner never seen gets a virtual node, queued so
        the collector asks the API server whether it exists.

        Upstream: addDependentToOwners
        """
        for owner in owners:
            owner_node = self.uid_to_node.get(owner.uid)
            if owner_node is None:
                owner_node = Node(owner_reference_coordinates(owner, n.identity.namespace), virtual=True)
                self.uid_to_node[owner.uid] = owner_node
                owner_node.add_dependent(n)
                self.attempt_to_delete.add(owner_node)
            else:
                owner_node.add_dependent(n)

    def remove_dependent_from_owners(self, n: Node, owners: list[Any]) -> None:
        """Upstream: removeDependentFromOwners"""
        for owner in owners:
            owner_node = self.uid_to_node.get(owner.uid)
            if owner_node is not None:
                owner_node.delete_dependent(n)

    def remove_node(self, n: Node) -> None:
        """Upstream: removeNode"""
        self.uid_to_node.pop(n.identity.uid, None)
        self.remove_dependent_from_owners(n, n.owners)

    def add_unblocked_owners_to_delete_queue(self, removed: list[Any], changed: list[tuple[Any, Any]]) -> None:
        """An owner waiting on its blocking dependents may proceed once a reference to it is
        removed or stops blocking.

        Upstream: addUnblockedOwnersToDeleteQueue
        """
        for ref in removed:
            if ref.block_owner_deletion:
                self._enqueue_uid(ref.uid)
        for old, new in changed:
            if old.block_owner_deletion and not new.block_owner_deletion:
                self._enqueue_uid(new.uid)

    def _enqueue_uid(self, uid: str) -> None:
        n = self.uid_to_node.get(uid)
        if n is not None:
            self.attempt_to_delete.add(n)

    def process_transitions(self, old: Any | None, new: Any, n: Node) -> None:
        """Queue the owner when it starts an orphan or a foreground deletion.

        Upstream: processTransitions
        """
        if starts_waiting_for_dependents_orphaned(old, new):
            self.attempt_to_orphan.add(n)
            return
        if starts_waiting_for_dependents_deleted(old, new):
            # a node first added as virtual has not had deleting_dependents set: set it here.
            n.mark_deleting_dependents()
            for dep in n.dependents:
                self.attempt_to_delete.add(dep)
            self.attempt_to_delete.add(n)

    # --- the dispatcher -----------------------------------------------------------------------

    def process_graph_changes(self, event: Event) -> None:
        """Apply one add/update/delete to the graph.

        Upstream: processGraphChanges
        """
        meta = event.obj
        existing = self.uid_to_node.get(meta.uid or "")
        if existing is not None and not event.virtual and not existing.is_observed():
            existing = self._observe_virtual_node(existing, identity_from_event(event))
        if event.event_type in (ADD, UPDATE) and existing is None:
            self._add_node(event)
        elif event.event_type in (ADD, UPDATE):
            self._update_node(event, existing)
        elif existing is not None:
            self._delete_node(event, existing)

    def _observe_virtual_node(self, existing: Node, observed: ObjectReference) -> Node:
        """A real event for a virtual node: adopt the observed identity; dependents that named the
        owner by other coordinates are re-checked (their reference may not resolve).
        """
        if observed != existing.identity:
            for dep in existing.get_dependents():
                if not _references(dep, observed):
                    self.attempt_to_delete.add(dep)
            existing = existing.clone()
            existing.identity = observed
            self.uid_to_node[observed.uid] = existing
        existing.mark_observed()
        return existing

    def _add_node(self, event: Event) -> None:
        meta = event.obj
        n = Node(identity_from_event(event), meta.owner_references,
                 being_deleted=being_deleted(meta),
                 deleting_dependents=being_deleted(meta) and has_delete_dependents_finalizer(meta))
        self.insert_node(n)
        # an add may carry a deletion already in progress (we may have missed the update).
        self.process_transitions(event.old_obj, meta, n)

    def _update_node(self, event: Event, existing: Node) -> None:
        meta = event.obj
        # Most updates (pod status) keep the references: equal lists have no diffs.
        if (meta.owner_references or []) != existing.owners:
            owners = list(meta.owner_references or [])
            added, removed, changed = references_diffs(existing.owners, owners)
            if added or removed or changed:
                self.add_unblocked_owners_to_delete_queue(removed, changed)
                existing.owners = owners
                self.add_dependent_to_owners(existing, added)
                self.remove_dependent_from_owners(existing, removed)
        if being_deleted(meta):
            existing.mark_being_deleted()
            # only a deleting object can start waiting for its dependents
            self.process_transitions(event.old_obj, meta, existing)

    def _delete_node(self, event: Event, existing: Node) -> None:
        deleted = identity_from_event(event)
        if event.virtual and not self._virtual_delete_removes(existing, deleted):
            return
        self.remove_node(existing)
        if existing.dependents:
            self.absent_owner_cache.add(deleted)
        for dep in existing.dependents:
            self.attempt_to_delete.add(dep)
        for owner in existing.owners:
            owner_node = self.uid_to_node.get(owner.uid)
            if owner_node is not None and owner_node.is_deleting_dependents():
                # let the owner check whether its last blocking dependent just went away.
                self.attempt_to_delete.add(owner_node)

    def _virtual_delete_removes(self, existing: Node, deleted: ObjectReference) -> bool:
        """Whether a verified-absent identity removes existing from the graph.

        Upstream's processGraphChanges (virtual delete branch), simplified: dependents that name
        the owner by other coordinates keep the node and are re-checked; each dependent's own
        attempt_to_delete verifies its references against the API server, so nothing is
        collected on the strength of a mismatched identity.
        """
        matching = [d for d in existing.dependents if _references(d, deleted)]
        nonmatching = [d for d in existing.dependents if not _references(d, deleted)]
        if not existing.is_observed():
            if not nonmatching:
                return True
            if matching:
                self.absent_owner_cache.add(deleted)
                for dep in matching:
                    self.attempt_to_delete.add(dep)
            if existing.identity == deleted:
                alternate = _alternate_owner_identity(nonmatching, deleted)
                if alternate is not None:
                    replacement = existing.clone()
                    replacement.identity = alternate
                    self.uid_to_node[alternate.uid] = replacement
                    self.attempt_to_delete.add_rate_limited(replacement)
            return False
        if existing.identity != deleted:
            if matching:
                self.absent_owner_cache.add(deleted)
                for dep in matching:
                    self.attempt_to_delete.add(dep)
            return False
        return True


def _references(dep: Node, owner: ObjectReference) -> bool:
    """dep names owner by exactly these coordinates (apiVersion, kind, name, uid; namespace
    for namespaced owners is the dependent's own)."""
    for ref in dep.owners:
        if ref.uid != owner.uid:
            continue
        coords = owner_reference_coordinates(ref, owner.namespace)
        return coords == owner and (not owner.namespace or dep.identity.namespace == owner.namespace)
    return False


def _alternate_owner_identity(deps: list[Node], verified_absent: ObjectReference) -> ObjectReference | None:
    """Another identity a dependent uses for the owner. Upstream: getAlternateOwnerIdentity"""
    for dep in deps:
        for ref in dep.owners:
            if ref.uid == verified_absent.uid:
                alt = owner_reference_coordinates(ref, dep.identity.namespace)
                if alt != verified_absent:
                    return alt
    return None
