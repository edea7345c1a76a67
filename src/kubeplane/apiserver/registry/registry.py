"""REGISTRY: the one table of what the API server serves.

A definition is registered under one key, (group, version, plural), as served at
/apis/<group>/<version>/<plural>; the other lookups are derived from it at registration:
by (group, kind) for clients that know a kind, by (group, plural) for tables, and by the
(apiVersion, kind) an object carries for defaulting and validation. Registration order is
discovery order (the core group first, as upstream).
Upstream: the APIGroupInfo each RESTStorageProvider installs (pkg/controlplane/instance.go).
"""
from __future__ import annotations

from typing import cast

from ...api.resources import ResourceInfo
from .definition import ResourceDefinition, TypeDefinition
from .strategy import Strategy


class Registry:
    def __init__(self) -> None:
        self.resources: list[ResourceDefinition] = []
        self._by_path: dict[tuple[str, str, str], ResourceDefinition] = {}
        self._by_kind: dict[tuple[str, str], ResourceDefinition] = {}
        self._by_resource: dict[tuple[str, str], ResourceDefinition] = {}
        # (apiVersion, kind) -> its defaulting and validation (resources and subresource kinds)
        self.types: dict[tuple[str, str], ResourceDefinition | TypeDefinition] = {}

    def register(self, d: ResourceDefinition) -> ResourceDefinition:
        key = (d.group, d.version, d.plural)
        assert key not in self._by_path, f"{d.plural}.{d.group}/{d.version} is registered twice"
        self.resources.append(d)
        self._by_path[key] = d
        self._by_kind.setdefault((d.group, d.kind), d)
        self._by_resource.setdefault((d.group, d.plural), d)
        self.types.setdefault((d.api_version, d.kind), d)
        return d

    def unregister(self, d: ResourceDefinition) -> None:
        """Forget a definition registered at runtime (a CRD's served version): its lookups go to
        another version of the same kind or resource, if one is left."""
        if self._by_path.get((d.group, d.version, d.plural)) is not d:
            return
        del self._by_path[(d.group, d.version, d.plural)]
        self.resources.remove(d)
        for table, key, same in ((self._by_kind, (d.group, d.kind), lambda r: (r.group, r.kind) == (d.group, d.kind)),
                                 (self._by_resource, (d.group, d.plural),
                                  lambda r: (r.group, r.plural) == (d.group, d.plural)),
                                 (self.types, (d.api_version, d.kind),
                                  lambda r: (r.api_version, r.kind) == (d.api_version, d.kind))):
            if table.get(key) is d:
                del table[key]
                if (other := next((r for r in self.resources if same(r)), None)) is not None:
                    table[key] = other

    def register_type(self, t: TypeDefinition) -> TypeDefinition:
        """A kind written through a subresource only (pods/binding's Binding, */scale's Scale)."""
        assert (t.api_version, t.kind) not in self.types, f"{t.api_version} {t.kind} is registered twice"
        self.types[(t.api_version, t.kind)] = t
        return t

    def lookup(self, group: str, version: str, plural: str) -> ResourceDefinition | None:
        """The resource served at /apis/<group>/<version>/<plural>, or None (404)."""
        return self._by_path.get((group, version, plural))

    def for_kind(self, group: str, kind: str) -> ResourceDefinition | None:
        return self._by_kind.get((group, kind))

    def for_resource(self, group: str, plural: str) -> ResourceDefinition | None:
        """The resource of that group and plural in any version (the first registered)."""
        return self._by_resource.get((group, plural))

    def for_type(self, api_version: str, kind: str) -> ResourceDefinition | TypeDefinition | None:
        return self.types.get((api_version, kind))

    def resources_in(self, group: str, version: str) -> list[ResourceDefinition]:
        return [r for r in self.resources if r.group == group and r.version == version]

    def group_versions(self) -> tuple[tuple[str, str], ...]:
        """(group, version) pairs in discovery order."""
        return tuple(dict.fromkeys((r.group, r.version) for r in self.resources))


REGISTRY = Registry()
register = REGISTRY.register
register_type = REGISTRY.register_type


def resource_definition(ri: ResourceInfo) -> ResourceDefinition:
    """A served resource's whole definition: ri itself when it came from the registry (what the
    server routes), else the registered one of the same group, version and plural (a
    ResourceInfo of kubeplane.api.resources)."""
    if isinstance(ri, ResourceDefinition):
        return ri
    return cast(ResourceDefinition, REGISTRY.lookup(ri.group, ri.version, ri.plural))


def strategy_for(ri: ResourceInfo) -> Strategy:
    """The strategy of a served resource (its definition's)."""
    return resource_definition(ri).strategy
