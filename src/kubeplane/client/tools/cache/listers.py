"""Listers: read-only, indexed views of an informer's cache.

    d = d_lister.deployments("default").get("nginx")        # raises errors.NotFound
    rss = rs_lister.replicasets("default").list(selector)

Upstream: the generated listers (client-go listers/apps/v1/deployment.go) over
tools/cache/listers.go. Returned objects are the cache's own: never modify them.
"""
from __future__ import annotations

from typing import Any, Callable

from ....api import errors, labels
from ....api.resources import ResourceInfo
from .store import NAMESPACE_INDEX, Indexer


def _matches(selector: labels.Selector | None, obj: Any) -> bool:
    return selector is None or labels.matches(selector, obj.metadata.labels)


class NamespaceLister:
    def __init__(self, indexer: Indexer, ri: ResourceInfo, namespace: str) -> None:
        self.indexer, self.ri, self.namespace = indexer, ri, namespace

    def list(self, selector: labels.Selector | None = None) -> list[Any]:
        return [o for o in self.indexer.by_index(NAMESPACE_INDEX, self.namespace) if _matches(selector, o)]

    def get(self, name: str) -> Any:
        obj = self.indexer.get_by_key(f"{self.namespace}/{name}" if self.namespace else name)
        if obj is None:
            raise errors.NotFound(self.ri.group, self.ri.plural, name)
        return obj


class Lister:
    """All objects of one resource; `lister.<plural>(ns)` (e.g. `.pods("default")`) narrows to a namespace."""

    def __init__(self, indexer: Indexer, ri: ResourceInfo) -> None:
        self.indexer, self.ri = indexer, ri

    def list(self, selector: labels.Selector | None = None) -> list[Any]:
        return [o for o in self.indexer.list() if _matches(selector, o)]

    def get(self, name: str) -> Any:
        """Cluster-scoped get (nodes, namespaces)."""
        return NamespaceLister(self.indexer, self.ri, "").get(name)

    def namespace(self, namespace: str) -> NamespaceLister:
        return NamespaceLister(self.indexer, self.ri, namespace)

    def __getattr__(self, plural: str) -> Callable[[str], NamespaceLister]:
        if plural == self.ri.plural:
            return self.namespace
        raise AttributeError(plural)
