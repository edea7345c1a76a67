"""The resources kubeplane serves, as clients, discovery and routing see them.

ResourceInfo is a resource's identity (group, version, kind, plural, scope, subresources, …).
The API server's registry (apiserver/registry: one ResourceDefinition, a ResourceInfo with the
server's behaviour, per kind, in the kind's own module; docs/adding-a-kind.md) is where a kind
is defined; RESOURCES is its identity part for everything below the server (clients,
controllers, codecs), generated from it into api/served.py by tools/gen_client.py.
"""
from __future__ import annotations

from dataclasses import dataclass, field

CRUD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Subresource:
    name: str                 # "status", "scale", "binding", "log"
    kind: str                 # Kind served on the subresource (Scale for scale)
    verbs: tuple[str, ...]
    group: str = ""           # set when the subresource's kind lives elsewhere (autoscaling)
    version: str = ""
    # The API server's handler of the subresource's verbs (a name in
    # apiserver/handlers/subresource_rest.py REST; "": the subresource's own name). Not part
    # of its identity: what the server does, not what clients see.
    handler: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    definition: str           # JSON-schema definition name of the kind
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: tuple[Subresource, ...] = ()
    verbs: tuple[str, ...] = CRUD_VERBS
    storage_prefix: str = ""  # registry key prefix; defaults to the plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def prefix(self) -> str:
        """Storage key prefix: /registry/<resource>/ (shared by both Event APIs, as upstream)."""
        return f"/registry/{self.storage_prefix or self.plural}/"

    def key(self, namespace: str, name: str) -> str:
        return f"{self.prefix}{namespace}/{name}" if self.namespaced else f"{self.prefix}{name}"

    def subresource(self, name: str) -> Subresource | None:
        for s in self.subresources:
            if s.name == name:
                return s
        return None


STATUS = lambda kind: Subresource("status", kind, ("get", "patch", "update"), handler="status")  # noqa: E731
# Upstream: ProxyREST (pods, services, nodes) serves every HTTP method; discovery lists these verbs.
PROXY = lambda kind: Subresource("proxy", f"{kind}ProxyOptions", ("create", "delete", "get", "patch", "update"), handler="proxy")  # noqa: E731
SCALE = Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1", handler="scale")

def _rows() -> tuple[ResourceInfo, ...]:
    from .served import SERVED
    return tuple(ResourceInfo(**{**row, "subresources": tuple(Subresource(**s) for s in row.get("subresources", ()))})
                 for row in SERVED)


# The served resources, in discovery order.
RESOURCES: tuple[ResourceInfo, ...] = _rows()

# (group, version) pairs in discovery order; the core group first, as upstream.
GROUP_VERSIONS: tuple[tuple[str, str], ...] = tuple(dict.fromkeys((r.group, r.version) for r in RESOURCES))

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
# A kind served in several versions (autoscaling v2 and v1) is known by its first, preferred one.
_BY_KIND = {(r.group, r.kind): r for r in reversed(RESOURCES)}
_BY_VERSION_KIND = {(r.group, r.version, r.kind): r for r in RESOURCES}


# What this process's API server leaves out (--runtime-config, --feature-gates; set by
# apiserver/enablement.configure). In-process controllers that walk every resource (garbage
# collector, namespace deleter, quota) skip these, as upstream's learn from discovery.
_disabled: frozenset[tuple[str, str, str]] = frozenset()


def set_disabled(disabled: frozenset[tuple[str, str, str]]) -> None:
    global _disabled
    _disabled = disabled


def served_resources() -> tuple[ResourceInfo, ...]:
    """RESOURCES less what the API server in this process does not serve."""
    if not _disabled:
        return RESOURCES
    return tuple(r for r in RESOURCES if (r.group, r.version, r.plural) not in _disabled)


def lookup(group: str, version: str, plural: str) -> ResourceInfo | None:
    """The resource served at /apis/<group>/<version>/<plural>, or None (404)."""
    return _BY_PATH.get((group, version, plural))


def for_kind(group: str, kind: str) -> ResourceInfo | None:
    return _BY_KIND.get((group, kind))


def for_version_kind(group: str, version: str, kind: str) -> ResourceInfo | None:
    return _BY_VERSION_KIND.get((group, version, kind))


def resources_in(group: str, version: str) -> list[ResourceInfo]:
    return [r for r in RESOURCES if r.group == group and r.version == version]
