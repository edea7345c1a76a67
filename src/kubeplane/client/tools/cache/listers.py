"""Listers: read-only, indexed views of an informer's cache.

    d = d_lister.deployments("default").get("nginx")        # raises errors.NotFound
    rss = rs_lister.replicasets("default").list(selector)   # labels.parse / from_label_selector

Upstream: the generated listers (client-go listers/apps/v1/deployment.go) over
tools/cache/listers.go. Returned objects are the cache's own: never modify them.
"""
from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from ....api import errors, labels
from ....api.resources import ResourceInfo
from .store import NAMESPACE_INDEX, Indexer

T = TypeVar("T")


def label_matcher(selector: labels.Selector | None) -> Callable[[dict[str, str] | None], bool]:
    """labels.matches(selector, ·) as a fast predicate (None selects nothing, () everything).

    Syncs test every pod of a namespace against a selector, thousands of times per second
    while a big ReplicaSet scales. Equality selectors (all that a Deployment ever makes)
    become one C-level subset test of dict item views: {"app": "web", "hash": "5d"} matches
    labels {"app": "web", "hash": "5d", "x": "1"} because the pairs are a subset of its items.
    """
    if selector is None:
        return lambda _labels: False
    if not selector:
        return lambda _labels: True
    simple = all(r.op in ("=", "in") and len(r.values) == 1 for r in selector)
    pairs = {r.key: r.values[0] for r in selector} if simple else {}
    if not simple or len(pairs) != len(selector):     # other operators, or one key required twice
        return lambda lbls: labels.matches(selector, lbls)
    if len(pairs) == 1:
        (k, v), = pairs.items()
        return lambda lbls: lbls is not None and lbls.get(k) == v
    wanted = pairs.items()
    return lambda lbls: lbls is not None and wanted <= lbls.items()


def _select(objs: list[Any], selector: labels.Selector | None) -> list[Any]:
    """Upstream: ListAll's filter. None is labels.Nothing() — what from_label_selector(None)
    returns for a nil selector — so it selects nothing; EVERYTHING (()) selects all."""
    if selector is None:
        return []
    if not selector:
        return objs
    match = label_matcher(selector)
    return [o for o in objs if match(o.metadata.labels)]


class GenericNamespaceLister(Generic[T]):
    """One namespace's objects of a resource (namespace "" = all namespaces, as NamespaceAll)."""

    def __init__(self, indexer: Indexer, ri: ResourceInfo, namespace: str) -> None:
        self.indexer, self.ri, self.namespace = indexer, ri, namespace

    def list(self, selector: labels.Selector | None = labels.EVERYTHING) -> list[T]:
        """Upstream: ListAllByNamespace (listers.go)."""
        if not self.namespace:
            return _select(self.indexer.list(), selector)
        return _select(self.indexer.by_index(NAMESPACE_INDEX, self.namespace), selector)

    def get(self, name: str) -> T:
        """The cached object, or errors.NotFound with the generated listers' message.

        The generated listers name the resource by its lower-case kind, so a miss reads
        `deployment.apps "web" not found` / `pod "web-0" not found` (not the plural).
        """
        obj = self.indexer.get_by_key(f"{self.namespace}/{name}" if self.namespace else name)
        if obj is None:
            raise errors.NotFound(self.ri.group, self.ri.kind.lower(), name)
        return obj


class GenericLister(Generic[T]):
    """All objects of one resource; `.namespace(ns)` narrows to a namespace.

    The generated per-resource listers (kubeplane.client.listers: PodLister, DeploymentLister ...)
    add upstream's typed accessor, `.pods(ns)`, `.deployments(ns)`.
    """

    def __init__(self, indexer: Indexer, ri: ResourceInfo) -> None:
        self.indexer, self.ri = indexer, ri

    def list(self, selector: labels.Selector | None = labels.EVERYTHING) -> list[T]:
        """Upstream: ListAll (listers.go); None selects nothing, as labels.Nothing()."""
        return _select(self.indexer.list(), selector)

    def get(self, name: str) -> T:
        """Cluster-scoped get (nodes, namespaces)."""
        return GenericNamespaceLister[T](self.indexer, self.ri, "").get(name)

    def namespace(self, namespace: str) -> GenericNamespaceLister[T]:
        return GenericNamespaceLister(self.indexer, self.ri, namespace)
