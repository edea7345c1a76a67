"""The shared informer factory: one informer (one list+watch) per resource per process.

    factory = SharedInformerFactory(clientset)
    d_informer = factory.apps_v1().deployments()        # .informer() and .lister()
    factory.start()                                     # tasks for every informer asked for
    await factory.wait_for_cache_sync()

Upstream: client-go informers/factory.go and the generated per-resource informers.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..api.resources import ResourceInfo, lookup
from ..utils.clock import REAL_CLOCK, Clock
from .clientset import Clientset
from .rest import ResourceClient
from .tools.cache.listers import Lister
from .tools.cache.shared_informer import SharedIndexInformer, wait_for_cache_sync


@dataclass(frozen=True)
class ResourceInformer:
    """A resource's shared informer and its lister."""

    ri: ResourceInfo
    shared: SharedIndexInformer

    def informer(self) -> SharedIndexInformer:
        return self.shared

    def lister(self) -> Lister:
        return Lister(self.shared.indexer, self.ri)


class _Group:
    def __init__(self, factory: SharedInformerFactory, group: str, version: str) -> None:
        self.factory, self.group, self.version = factory, group, version

    def __getattr__(self, plural: str) -> Any:
        if plural.startswith("_") or lookup(self.group, self.version, plural) is None:
            raise AttributeError(plural)
        return lambda: self.factory.informer_for(self.group, self.version, plural)


class SharedInformerFactory:
    def __init__(self, clientset: Clientset, *, resync_period: float = 0.0, namespace: str = "",
                 clock: Clock = REAL_CLOCK) -> None:
        self.clientset = clientset
        self.resync_period = resync_period
        self.namespace = namespace
        self.clock = clock
        self.informers: dict[tuple[str, str, str], ResourceInformer] = {}
        self.tasks: dict[tuple[str, str, str], asyncio.Future[None]] = {}   # the started informers
        self.shutting_down = False

    def informer_for(self, group: str, version: str, plural: str) -> ResourceInformer:
        key = (group, version, plural)
        if key not in self.informers:
            ri = lookup(group, version, plural)
            if ri is None:
                raise KeyError(key)
            lw = ResourceClient(self.clientset.transport, ri, self.namespace)
            shared = SharedIndexInformer(lw, name=f"{plural}.{group or 'core'}", resync_period=self.resync_period,
                                         clock=self.clock)
            self.informers[key] = ResourceInformer(ri, shared)
        return self.informers[key]

    def core_v1(self) -> Any:
        return _Group(self, "", "v1")

    def apps_v1(self) -> Any:
        return _Group(self, "apps", "v1")

    def coordination_v1(self) -> Any:
        return _Group(self, "coordination.k8s.io", "v1")

    def start(self) -> None:
        """Start every informer asked for so far that is not running yet (no-op after shutdown).

        Upstream: sharedInformerFactory.Start
        """
        if self.shutting_down:
            return
        for key, inf in self.informers.items():
            if key not in self.tasks:
                self.tasks[key] = asyncio.ensure_future(inf.shared.run())

    async def wait_for_cache_sync(self) -> bool:
        """Wait until every *started* informer has synced; one asked for but never started
        would otherwise block forever. Upstream: sharedInformerFactory.WaitForCacheSync
        """
        return await wait_for_cache_sync(*(self.informers[k].shared for k in self.tasks))

    async def shutdown(self) -> None:
        """Stop every informer and wait for them; later start() calls do nothing.

        Upstream: sharedInformerFactory.Shutdown
        """
        self.shutting_down = True
        for t in self.tasks.values():
            t.cancel()
        await asyncio.gather(*self.tasks.values(), return_exceptions=True)
