"""Shared informers: one list+watch per resource, an indexed cache, and event handlers.

Upstream: client-go tools/cache/shared_informer.go and controller.go. The contract, as
upstream states it:
- The cache is eventually consistent with the server and sees a *subsequence* of each
  object's states; a delete carries the last known state, or a `DeletedFinalStateUnknown`
  tombstone when the delete was inferred from a relist.
- Each handler receives notifications in order. Handlers must be quick and must not modify
  the objects they are given: "Lengthy processing should be passed off to a workqueue".
- `has_synced()` turns true once the first full list has been delivered to the cache and to
  every handler registered before it.

Here handlers are called synchronously on the event loop, in registration order, right after
the cache changes; a handler added late first receives an ADD for every cached object. With
KUBE_CACHE_MUTATION_DETECTOR=true the store remembers every object put into it and fails loudly
when one is later modified (mutation_detector.py).

A transform (set_transform, before the informer runs) is applied to every object the
reflector delivers before it is cached or handed to a handler: kube-scheduler and
kube-controller-manager drop metadata.managedFields with one (transform_strip_managed_fields).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ....utils.clock import REAL_CLOCK, Clock
from .mutation_detector import DetectingIndexer, new_cache_mutation_detector
from .reflector import ListerWatcher, Reflector
from .store import (
    NAMESPACE_INDEX, DeletedFinalStateUnknown, IndexFunc, Indexer, meta_namespace_index_func,
    meta_namespace_key_func,
)

log = logging.getLogger(__name__)

TransformFunc = Callable[[Any], Any]


def transform_strip_managed_fields(obj: Any) -> Any:
    """Drop metadata.managedFields, which none of our components reads, from an informer's copy.
    It is the reflector's freshly decoded object, which nothing else holds yet, so it is changed
    in place, as upstream's trim does (meta.Accessor(obj).SetManagedFields(nil)).

    Upstream: newPodInformer's trim (pkg/scheduler/scheduler.go), kube-controller-manager's
    informers.WithTransform(trim) (cmd/kube-controller-manager/app/controllermanager.go).
    """
    meta = getattr(obj, "metadata", None)
    if meta is not None and getattr(meta, "managed_fields", None) is not None:
        meta.managed_fields = None
    return obj


class ResourceEventHandler(Protocol):
    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        """A new object (is_in_initial_list: it came from the first list)."""

    def on_update(self, old: Any, new: Any) -> None:
        """An object changed (or a resync: old and new have the same resourceVersion)."""

    def on_delete(self, obj: Any) -> None:
        """An object went away: its last state, or a DeletedFinalStateUnknown tombstone."""


@dataclass
class ResourceEventHandlerFuncs:
    """Adapts optional plain functions to a ResourceEventHandler (upstream's ResourceEventHandlerFuncs)."""

    add_func: Callable[[Any], None] | None = None
    update_func: Callable[[Any, Any], None] | None = None
    delete_func: Callable[[Any], None] | None = None

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        if self.add_func:
            self.add_func(obj)

    def on_update(self, old: Any, new: Any) -> None:
        if self.update_func:
            self.update_func(old, new)

    def on_delete(self, obj: Any) -> None:
        if self.delete_func:
            self.delete_func(obj)


class SharedIndexInformer:
    def __init__(self, lw: ListerWatcher, *, name: str = "", resync_period: float = 0.0,
                 indexers: dict[str, IndexFunc] | None = None, clock: Clock = REAL_CLOCK) -> None:
        self.name = name
        all_indexers = {NAMESPACE_INDEX: meta_namespace_index_func, **(indexers or {})}
        self.mutation_detector = new_cache_mutation_detector(name)     # None unless turned on
        self.indexer = (Indexer(meta_namespace_key_func, all_indexers) if self.mutation_detector is None
                        else DetectingIndexer(self.mutation_detector, meta_namespace_key_func, all_indexers))
        self.handlers: list[ResourceEventHandler] = []
        # What each event calls, in registration order, made once per add/remove_event_handler:
        # a ResourceEventHandlerFuncs' own functions (None ones left out), other handlers' bound
        # methods. Every pod update reaches a dozen controllers' handlers, so the adapter's
        # frame and the calls of absent functions are skipped (see _dispatch_tables).
        self._on_add: tuple[tuple[Callable[..., None], bool], ...] = ()
        self._on_update: tuple[Callable[[Any, Any], None], ...] = ()
        self._on_delete: tuple[Callable[[Any], None], ...] = ()
        self.resync_period = resync_period
        self.clock = clock
        self.reflector = Reflector(name, lw, self, clock=clock)
        self._synced = asyncio.Event()
        self._initial = True                   # the first list's objects are "in the initial list"
        self.started = False
        self.transform: TransformFunc | None = None

    # --- public API ------------------------------------------------------------------------

    def add_event_handler(self, handler: ResourceEventHandler) -> ResourceEventHandler:
        """Register handler; if the cache already holds objects it first gets an ADD for each."""
        self.handlers.append(handler)
        self._dispatch_tables()
        for obj in self.indexer.list():
            handler.on_add(obj, True)
        return handler

    def remove_event_handler(self, handler: ResourceEventHandler) -> None:
        self.handlers.remove(handler)
        self._dispatch_tables()

    def _dispatch_tables(self) -> None:
        """Rebuild _on_add ((function, whether it takes is_in_initial_list)), _on_update and
        _on_delete from self.handlers. The tables are tuples, replaced, never changed in place:
        a dispatch loop keeps iterating the snapshot it started with when a handler is added
        or removed from inside a callback (as upstream's listeners list)."""
        adds: list[tuple[Callable[..., None], bool]] = []
        updates: list[Callable[[Any, Any], None]] = []
        deletes: list[Callable[[Any], None]] = []
        for h in self.handlers:
            if type(h) is ResourceEventHandlerFuncs:
                if h.add_func is not None:
                    adds.append((h.add_func, False))
                if h.update_func is not None:
                    updates.append(h.update_func)
                if h.delete_func is not None:
                    deletes.append(h.delete_func)
            else:
                adds.append((h.on_add, True))
                updates.append(h.on_update)
                deletes.append(h.on_delete)
        self._on_add, self._on_update, self._on_delete = tuple(adds), tuple(updates), tuple(deletes)

    def set_transform(self, transform: TransformFunc | None) -> None:
        """Apply transform to every object before it is cached (and handed to the handlers);
        it may change the object it is given and must return the object to keep. Only before
        the informer runs. Upstream: sharedIndexInformer.SetTransform
        """
        if self.started:
            raise RuntimeError("informer has already started")
        self.transform = transform

    def share_unchanged_specs(self) -> None:
        """From now on, an update whose spec's JSON is that of the object's previous event
        hands the previous object's spec over instead of a decoded copy (the watch decodes it
        so: ResourceClient.watch's share_unchanged_specs, asked for by the reflector): asked for
        by a handler that compares the two specs of every update (the kubelet's needs_sync, the
        scheduler's cache), which then finds the same object at once. Nothing tells the
        difference: informer objects are read-only (see the module docstring), and equal bytes
        decode to equal specs. A transform of such an informer must leave the spec as it is
        (ours change metadata and status). Upstream decodes each event afresh and its
        handlers compare; here the decode of an unchanged spec (a status write's: ~33k of a
        pod event's ~82k instructions) is skipped as well."""
        self.reflector.share_unchanged_specs = True

    def get_store(self) -> Indexer:
        return self.indexer

    get_indexer = get_store

    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version

    async def run(self) -> None:
        """Reflect (and resync, if asked; check for cache mutations, if on) until cancelled."""
        self.started = True
        if self.resync_period > 0 or self.mutation_detector is not None:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.reflector.run())
                if self.resync_period > 0:
                    tg.create_task(self._resync_loop())
                if self.mutation_detector is not None:
                    tg.create_task(self.mutation_detector.run())
        else:
            await self.reflector.run()

    # --- the reflector's store: apply a change to the cache, then tell the handlers ----------

    def replace(self, objs: list[Any], resource_version: str) -> None:
        """A (re)list: add or update what is listed, tombstone-delete what no longer exists."""
        initial = self._initial
        new_keys = set()
        if self.transform is not None:
            objs = [self.transform(obj) for obj in objs]
        for obj in objs:
            new_keys.add(meta_namespace_key_func(obj))
            self._upsert(obj, initial)
        for key in [k for k in self.indexer.list_keys() if k not in new_keys]:
            old = self.indexer.get_by_key(key)
            self.indexer.delete(key)
            self._notify_delete(DeletedFinalStateUnknown(key, old))
        self._initial = False
        self._synced.set()

    def add(self, obj: Any) -> None:
        self._upsert(obj if self.transform is None else self.transform(obj), False)

    update = add

    def delete(self, obj: Any) -> None:
        if self.transform is not None:
            obj = self.transform(obj)
        self.indexer.delete(obj)
        self._notify_delete(obj)

    # --- internals ---------------------------------------------------------------------------

    def _upsert(self, obj: Any, initial: bool) -> None:
        indexer = self.indexer
        # meta_namespace_key_func spelt out for an object (not a str or a tombstone): every event
        if indexer.key_func is meta_namespace_key_func and not isinstance(obj, _NOT_OBJECTS):
            meta = obj.metadata
            key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        else:
            key = indexer.key_func(obj)
        old = indexer._items.get(key)
        indexer._put(key, obj)                     # the key once per event, not twice
        # the tables are snapshots: a handler registered from inside a callback got its ADD already
        if old is None:
            for fn, takes_initial in self._on_add:
                try:
                    if takes_initial:
                        fn(obj, initial)
                    else:
                        fn(obj)
                except Exception:                  # one bad handler must not stop the others
                    log.exception("informer %s: handler failed", self.name)
        else:
            for update in self._on_update:
                try:
                    update(old, obj)
                except Exception:
                    log.exception("informer %s: handler failed", self.name)

    def _notify_delete(self, obj: Any) -> None:
        for delete in self._on_delete:
            try:
                delete(obj)
            except Exception:
                log.exception("informer %s: handler failed", self.name)

    async def _resync_loop(self) -> None:
        """Periodically re-deliver every cached object as an update (old is new)."""
        while True:
            await self.clock.sleep(self.resync_period)
            if not self.has_synced():
                continue
            for obj in self.indexer.list():
                for update in self._on_update:
                    try:
                        update(obj, obj)
                    except Exception:
                        log.exception("informer %s: handler failed", self.name)


_NOT_OBJECTS = (str, DeletedFinalStateUnknown)      # what meta_namespace_key_func keys without metadata


async def wait_for_cache_sync(*informers: SharedIndexInformer) -> bool:
    """Upstream: cache.WaitForCacheSync — wait until every informer's first list is delivered."""
    await asyncio.gather(*(i.wait_synced() for i in informers))
    return True
