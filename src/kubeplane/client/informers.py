"""The shared informer factory: one informer (one list+watch) per resource per process.

    factory = SharedInformerFactory(clientset)
    d_informer = factory.apps_v1().deployments()        # .informer() and .lister()
    factory.start()                                     # tasks for every informer asked for
    await factory.wait_for_cache_sync()

`SharedInformerFactory(cs, transform=transform_strip_managed_fields)` sets that transform on
every informer it makes (upstream's informers.WithTransform).

The per-group accessors (`apps_v1()`, `core_v1()` ...: InformerGroups) and the typed listers
they hand out are generated (informer_groups.py, listers.py: tools/gen_client.py), so
`d_informer.lister()` is a DeploymentLister whose `.deployments(ns).get(name)` mypy knows to be
an apps_v1.Deployment. A wrapper of the factory gets the same accessors by subclassing
InformerGroups and implementing informer_for.

Upstream: client-go informers/factory.go and the generated per-resource informers.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast, overload

from ..api.resources import ResourceInfo, lookup
from ..utils.clock import REAL_CLOCK, Clock
from .clientset import Clientset
from .informer_groups import InformerGroups
from .listers import LISTERS
from .rest import ResourceClient
from .tools.cache.listers import GenericLister
from .tools.cache.shared_informer import SharedIndexInformer, TransformFunc, wait_for_cache_sync

L = TypeVar("L", bound=GenericLister[Any])


@dataclass(frozen=True)
class ResourceInformer(Generic[L]):
    """A resource's shared informer and its lister (upstream's generated PodInformer & co.):
    `ResourceInformer[PodLister]` is what `factory.core_v1().pods()` returns."""

    ri: ResourceInfo
    shared: SharedIndexInformer
    lister_type: type[L] | None = None       # None: the resource's generated lister

    def informer(self) -> SharedIndexInformer:
        return self.shared

    def lister(self) -> L:
        cls = self.lister_type or LISTERS.get((self.ri.group, self.ri.version, self.ri.plural), GenericLister)
        return cast(L, cls(self.shared.indexer, self.ri))


class SharedInformerFactory(InformerGroups):
    def __init__(self, clientset: Clientset, *, resync_period: float = 0.0, namespace: str = "",
                 clock: Clock = REAL_CLOCK, transform: TransformFunc | None = None) -> None:
        self.clientset = clientset
        self.transform = transform          # upstream: informers.WithTransform
        self.resync_period = resync_period
        self.namespace = namespace
        self.clock = clock
        self.informers: dict[tuple[str, str, str], ResourceInformer[GenericLister[Any]]] = {}
        self.tasks: dict[tuple[str, str, str], asyncio.Future[None]] = {}   # the started informers
        self.shutting_down = False

    @overload
    def informer_for(self, group: str, version: str, plural: str) -> ResourceInformer[GenericLister[Any]]: ...

    @overload
    def informer_for(self, group: str, version: str, plural: str, lister_type: type[L]) -> ResourceInformer[L]: ...

    def informer_for(self, group: str, version: str, plural: str,
                     lister_type: type[GenericLister[Any]] | None = None) -> ResourceInformer[Any]:
        """The shared informer of a resource, created on first use (KeyError if not served)."""
        key = (group, version, plural)
        if key not in self.informers:
            ri = lookup(group, version, plural)
            if ri is None:
                raise KeyError(key)
            lw: ResourceClient[Any] = ResourceClient(self.clientset.transport, ri, self.namespace)
            shared = SharedIndexInformer(lw, name=f"{plural}.{group or 'core'}", resync_period=self.resync_period,
                                         clock=self.clock)
            shared.set_transform(self.transform)
            self.informers[key] = ResourceInformer(ri, shared, LISTERS.get(key, GenericLister))
        inf = self.informers[key]
        if lister_type is None or lister_type is inf.lister_type:      # the generated accessors' case
            return inf
        return ResourceInformer(inf.ri, inf.shared, lister_type)

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
