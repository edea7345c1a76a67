"""The garbage collector: deletes objects whose owners are gone, and carries out the
foreground and orphan deletion policies.

Upstream: garbagecollector.go. The graph builder (graph_builder.py) watches every served
resource and keeps the owner graph; it queues nodes on two rate-limited queues:

- attempt_to_delete: a node whose owner may be gone (its dependents, when an owner is
  deleted), a virtual node to verify, or an owner in foreground deletion. The worker reads the
  live object and decides: nothing, patch dangling references away, or delete.
- attempt_to_orphan: an owner deleted with the `orphan` finalizer. The worker removes the
  owner's reference from every dependent, then the finalizer.

Custom resources (a CRD's kinds) are learnt from discovery: `sync` runs at start, every
SYNC_PERIOD (upstream's 30 s) and at once when a CRD becomes Established, changes what it
serves or is deleted (controller/resource_discovery.py); it adds a metadata informer per new
custom resource and drops the ones gone (upstream's Sync with GetDeletableResources); owner
references to custom kinds map through it.

    gc = GarbageCollector(clientset, factory, clock=clock)
    task = asyncio.create_task(gc.run())      # starts the informers it needs, then the workers
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any, Iterable

from ...api import errors
from ...api.resources import ResourceInfo
from ...client.clientset import Clientset
from ...client.informers import SharedInformerFactory
from ...client.metadata import custom_resources
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...utils.clock import REAL_CLOCK, Clock
from ..resource_discovery import DISCOVERY_SYNC_PERIOD, DiscoveryTrigger
from . import operations as ops
from .graph import FOREGROUND_FINALIZER, Node, ObjectReference, ReferenceCache, owner_reference_coordinates
from .graph_builder import GraphBuilder, has_delete_dependents_finalizer, has_orphan_finalizer

log = logging.getLogger(__name__)

FORGET_ITEM, REQUEUE_ITEM = "forget", "requeue"
# How often discovery is re-read besides the CRD events that wake it (resource_discovery.py):
# upstream's 30 s.
SYNC_PERIOD = DISCOVERY_SYNC_PERIOD


class EnqueuedVirtualDeleteEvent(Exception):
    """The item was verified absent and a virtual delete event was processed: do not requeue.

    Upstream: enqueuedVirtualDeleteEventErr
    """


class NamespacedOwnerOfClusterScopedObject(Exception):
    """A cluster-scoped object names a namespaced owner: retrying cannot help.

    Upstream: namespacedOwnerOfClusterScopedObjectErr
    """


class GarbageCollector:
    def __init__(self, clientset: Clientset, factory: SharedInformerFactory, *, clock: Clock = REAL_CLOCK,
                 workers: int = 20, resources: Iterable[ResourceInfo] | None = None,
                 sync_period: float = SYNC_PERIOD) -> None:
        self.clientset = clientset
        self.sync_period = sync_period
        # the runtime (custom) resources discovery last gave, by (group, kind): the REST mapper's
        # part that is not the built-in table.
        self.rest_mapper: dict[tuple[str, str], ResourceInfo] = {}
        self.factory = factory
        self.clock = clock
        self.workers = workers
        self.attempt_to_delete: RateLimitingQueue[Node] = RateLimitingQueue(
            RateLimitingQueueOptions(name="garbage_collector_attempt_to_delete", clock=clock))
        self.attempt_to_orphan: RateLimitingQueue[Node] = RateLimitingQueue(
            RateLimitingQueueOptions(name="garbage_collector_attempt_to_orphan", clock=clock))
        self.absent_owner_cache = ReferenceCache(500)
        self.dependency_graph_builder = GraphBuilder(factory, self.attempt_to_delete, self.attempt_to_orphan,
                                                     self.absent_owner_cache, resources,
                                                     transport=clientset.transport, clock=clock)
        self.clients: dict[tuple[str, str, str, str], Any] = {}
        self.discovery = DiscoveryTrigger(factory, clock, sync_period)

    # --- running -------------------------------------------------------------------------

    async def run(self) -> None:
        """Start the informers, wait for their first lists, and run the workers until cancelled.

        Upstream: Run (garbagecollector.go)
        """
        self.factory.start()
        try:
            await self.factory.wait_for_cache_sync()
            await self._sync_logged()
            async with asyncio.TaskGroup() as tg:
                if self.sync_period > 0:
                    tg.create_task(self.run_sync())
                for _ in range(self.workers):
                    tg.create_task(self.run_attempt_to_delete_worker())
                    tg.create_task(self.run_attempt_to_orphan_worker())
        finally:
            self.attempt_to_delete.shut_down()
            self.attempt_to_orphan.shut_down()
            await self.dependency_graph_builder.stop_runtime_monitors()

    async def run_sync(self) -> None:
        while True:
            await self.discovery.wait()
            await self._sync_logged()

    async def _sync_logged(self) -> None:
        try:
            await self.sync()
        except Exception:                           # noqa: BLE001 - a failed sync must not stop the collector
            log.exception("garbage collector: resource sync failed")

    async def sync(self) -> None:
        """Read discovery and monitor the custom resources it lists (new kinds watched, gone
        ones dropped); a failed read keeps what is monitored and is tried again next period.

        Upstream: GarbageCollector.Sync (garbagecollector.go) with GetDeletableResources
        """
        try:
            found = self.discovery.without_deleted(await custom_resources(self.clientset.transport))
        except Exception as e:                      # noqa: BLE001 - discovery is retried next period
            log.warning("garbage collector: failed to discover resources: %s", e)
            return
        self.rest_mapper = {(ri.group, ri.kind): ri for ri in found}
        if self.dependency_graph_builder.sync_monitors(found):
            log.info("garbage collector: monitoring %d custom resources", len(found))

    def api_resource(self, api_version: str, kind: str) -> ResourceInfo:
        """The served resource of an apiVersion/kind: the built-in table, then discovery's.

        Upstream: apiResource (operations.go) through the discovery-backed REST mapper
        """
        try:
            return ops.api_resource(api_version, kind)
        except ops.RESTMappingError:
            group, _, version = api_version.rpartition("/")
            ri = self.rest_mapper.get((group, kind))
            if ri is None:
                raise
            # another served version than the preferred one names the same objects
            return ri if ri.version == version else dataclasses.replace(ri, version=version)

    def is_synced(self) -> bool:
        return self.dependency_graph_builder.is_synced()

    async def run_attempt_to_delete_worker(self) -> None:
        while await self.process_attempt_to_delete_worker():
            pass

    async def process_attempt_to_delete_worker(self) -> bool:
        """Upstream: processAttemptToDeleteWorker"""
        item, quit_ = await self.attempt_to_delete.get()
        if quit_:
            return False
        try:
            action = await self.attempt_to_delete_worker(item)
            if action == FORGET_ITEM:
                self.attempt_to_delete.forget(item)
            else:
                self.attempt_to_delete.add_rate_limited(item)
        finally:
            self.attempt_to_delete.done(item)
        return True

    async def attempt_to_delete_worker(self, n: Node) -> str:
        """Upstream: attemptToDeleteWorker"""
        uid_to_node = self.dependency_graph_builder.uid_to_node
        from_graph = uid_to_node.get(n.identity.uid)
        if not n.is_observed() and (from_graph is None or from_graph.is_observed()):
            # requeued virtual node whose real object was observed (or deleted) meanwhile.
            return FORGET_ITEM
        try:
            await self.attempt_to_delete_item(n)
        except (EnqueuedVirtualDeleteEvent, NamespacedOwnerOfClusterScopedObject):
            return FORGET_ITEM
        except Exception as e:                      # noqa: BLE001 - every failure is retried
            log.warning("error syncing item %s: %s", n, e)
            return REQUEUE_ITEM
        if not n.is_observed():
            # keep checking until an informer confirms the object (issue 56121).
            return REQUEUE_ITEM
        return FORGET_ITEM

    # --- attempt to delete ----------------------------------------------------------------

    async def attempt_to_delete_item(self, item: Node) -> None:
        """Read the live object and delete it if it has owners and none of them is solid.

        Upstream: attemptToDeleteItem (garbagecollector.go)
        """
        # being deleted is a one-way trip: wait for the final delete, then handle dependents.
        if item.is_being_deleted() and not item.is_deleting_dependents():
            return
        latest = await self._live(item)
        if item.is_deleting_dependents():
            return await self.process_deleting_dependents_item(item)
        owner_references = list(latest.metadata.owner_references or [])
        if not owner_references:
            return
        solid, dangling, waiting = await self.classify_references(item, owner_references)
        if solid:
            if dangling or waiting:
                # waiting references must go too, or those owners wait for this item forever.
                uids = [r.uid for r in dangling] + [r.uid for r in waiting]
                await ops.patch(self, item, ops.generate_delete_owner_ref_strategic_merge_bytes(item.identity.uid, uids),
                                ops.delete_owner_ref_json_merge_patch(*uids))
            return
        if waiting and item.dependents_length():
            await self._delete_in_foreground_as_dependent(item, latest)
            return
        # no solid owner: collect it, honouring a policy the object already asked for.
        policy = "Orphan" if has_orphan_finalizer(latest.metadata) else (
            "Foreground" if has_delete_dependents_finalizer(latest.metadata) else "Background")
        await self._delete(item, latest, policy)

    async def _live(self, item: Node) -> Any:
        """The live object of item; a virtual delete event if it is gone or is another object."""
        try:
            latest = await ops.get_object(self, item.identity)
        except errors.NotFound:
            self.dependency_graph_builder.enqueue_virtual_delete_event(item.identity)
            raise EnqueuedVirtualDeleteEvent() from None
        if latest.metadata.uid != item.identity.uid:
            self.dependency_graph_builder.enqueue_virtual_delete_event(item.identity)
            raise EnqueuedVirtualDeleteEvent()
        return latest

    async def _delete_in_foreground_as_dependent(self, item: Node, latest: Any) -> None:
        """An owner waits for this item, which has dependents of its own: delete it in the
        foreground too, so its dependents go first. If one of its dependents is itself deleting
        dependents there may be a cycle: unblock this item's references first (upstream's
        detection has false positives, and so does ours)."""
        if any(dep.is_deleting_dependents() for dep in item.get_dependents()):
            await ops.patch(self, item, item.unblock_owner_references_strategic_merge_patch(),
                            ops.unblock_owner_references_json_merge_patch)
        await self._delete(item, latest, "Foreground")

    async def _delete(self, item: Node, latest: Any, policy: str) -> None:
        try:
            await ops.delete_object(self, item.identity, latest.metadata.resource_version or "",
                                    list(latest.metadata.owner_references or []), policy)
        except errors.NotFound:
            self.dependency_graph_builder.enqueue_virtual_delete_event(item.identity)
            raise EnqueuedVirtualDeleteEvent() from None

    async def process_deleting_dependents_item(self, item: Node) -> None:
        """A foreground-deleted owner: once no blocking dependent remains, drop the finalizer;
        until then make sure each blocking dependent is on its way out.

        Upstream: processDeletingDependentsItem
        """
        blocking = item.blocking_dependents()
        if not blocking:
            await ops.remove_finalizer(self, item, FOREGROUND_FINALIZER)
            return
        for dep in blocking:
            if not dep.is_deleting_dependents():
                self.attempt_to_delete.add(dep)

    async def classify_references(self, item: Node, refs: list[Any]) -> tuple[list[Any], list[Any], list[Any]]:
        """(solid, dangling, waiting_for_dependents_deletion) owner references.

        Upstream: classifyReferences
        """
        solid: list[Any] = []
        dangling: list[Any] = []
        waiting: list[Any] = []
        for ref in refs:
            is_dangling, owner = await self.is_dangling(ref, item)
            if is_dangling:
                dangling.append(ref)
            elif owner.metadata.deletion_timestamp is not None and has_delete_dependents_finalizer(owner.metadata):
                waiting.append(ref)
            else:
                solid.append(ref)
        return solid, dangling, waiting

    async def is_dangling(self, ref: Any, item: Node) -> tuple[bool, Any]:
        """Whether ref names an object that does not exist (absent, or its name holds another
        uid), with the live owner when it exists. Verified with a GET: the graph may lag.

        Upstream: isDangling
        """
        key = owner_reference_coordinates(ref)
        if self.absent_owner_cache.has(key):
            return True, None
        key = owner_reference_coordinates(ref, item.identity.namespace)
        if self.absent_owner_cache.has(key):
            return True, None
        ri = self.api_resource(ref.api_version or "", ref.kind or "")
        if not ri.namespaced:
            key = owner_reference_coordinates(ref)
        elif not item.identity.namespace:
            raise NamespacedOwnerOfClusterScopedObject(f"{item} refers to namespaced owner {key}")
        try:
            owner = await ops.resource_client(self, ri, item.identity.namespace).get(ref.name or "")
        except errors.NotFound:
            self.absent_owner_cache.add(key)
            return True, None
        if owner.metadata.uid != ref.uid:
            self.absent_owner_cache.add(key)
            return True, None
        return False, owner

    # --- attempt to orphan -----------------------------------------------------------------

    async def run_attempt_to_orphan_worker(self) -> None:
        while await self.process_attempt_to_orphan_worker():
            pass

    async def process_attempt_to_orphan_worker(self) -> bool:
        """Upstream: processAttemptToOrphanWorker"""
        item, quit_ = await self.attempt_to_orphan.get()
        if quit_:
            return False
        try:
            action = await self.attempt_to_orphan_worker(item)
            if action == FORGET_ITEM:
                self.attempt_to_orphan.forget(item)
            else:
                self.attempt_to_orphan.add_rate_limited(item)
        finally:
            self.attempt_to_orphan.done(item)
        return True

    async def attempt_to_orphan_worker(self, owner: Node) -> str:
        """Remove owner from its dependents' ownerReferences, then its `orphan` finalizer.

        Upstream: attemptToOrphanWorker
        """
        try:
            await self.orphan_dependents(owner.identity, owner.get_dependents())
        except Exception as e:                      # noqa: BLE001
            log.warning("orphanDependents for %s failed with %s", owner.identity, e)
            return REQUEUE_ITEM
        try:
            await ops.remove_finalizer(self, owner, "orphan")
        except Exception as e:                      # noqa: BLE001
            log.warning("removeOrphanFinalizer for %s failed with %s", owner.identity, e)
            return REQUEUE_ITEM
        return FORGET_ITEM

    async def orphan_dependents(self, owner: ObjectReference, dependents: list[Node]) -> None:
        """Patch every dependent concurrently; a dependent already gone is fine.

        Upstream: orphanDependents
        """
        async def orphan(dep: Node) -> None:
            p = ops.generate_delete_owner_ref_strategic_merge_bytes(dep.identity.uid, [owner.uid])
            try:
                await ops.patch(self, dep, p, ops.delete_owner_ref_json_merge_patch(owner.uid))
            except errors.NotFound:
                pass

        results = await asyncio.gather(*(orphan(d) for d in dependents), return_exceptions=True)
        failures = [f"{d.identity}: {r}" for d, r in zip(dependents, results) if isinstance(r, BaseException)]
        if failures:
            raise RuntimeError(f"failed to orphan dependents of owner {owner}, got errors: {'; '.join(failures)}")
