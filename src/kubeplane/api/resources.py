"""The resources kubeplane serves: one row per resource, as discovery and routing see them.

Everything that needs to know "what is a deployment" (routing, discovery, OpenAPI, storage
keys, tables) reads this table, so adding a kind is one row plus its strategy.
"""
from __future__ import annotations

from dataclasses import dataclass

CRUD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Subresource:
    name: str                 # "status", "scale", "binding", "log"
    kind: str                 # Kind served on the subresource (Scale for scale)
    verbs: tuple[str, ...]
    group: str = ""           # set when the subresource's kind lives elsewhere (autoscaling)
    version: str = ""


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


STATUS = lambda kind: Subresource("status", kind, ("get", "patch", "update"))  # noqa: E731
SCALE = Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling", "v1")

RESOURCES: tuple[ResourceInfo, ...] = (
    ResourceInfo("", "v1", "Namespace", "namespaces", "namespace", False,
                 "io.k8s.api.core.v1.Namespace", ("ns",), (),
                 (STATUS("Namespace"), Subresource("finalize", "Namespace", ("update",))),
                 ("create", "delete", "get", "list", "patch", "update", "watch")),
    ResourceInfo("", "v1", "Pod", "pods", "pod", True, "io.k8s.api.core.v1.Pod", ("po",), ("all",),
                 (STATUS("Pod"), Subresource("binding", "Binding", ("create",)),
                  Subresource("ephemeralcontainers", "Pod", ("get", "patch", "update")),
                  Subresource("log", "Pod", ("get",)))),
    ResourceInfo("", "v1", "Node", "nodes", "node", False, "io.k8s.api.core.v1.Node", ("no",), (),
                 (STATUS("Node"),)),
    ResourceInfo("", "v1", "Event", "events", "event", True, "io.k8s.api.core.v1.Event", ("ev",)),
    ResourceInfo("", "v1", "ConfigMap", "configmaps", "configmap", True,
                 "io.k8s.api.core.v1.ConfigMap", ("cm",)),
    ResourceInfo("", "v1", "Secret", "secrets", "secret", True, "io.k8s.api.core.v1.Secret"),
    ResourceInfo("", "v1", "Service", "services", "service", True, "io.k8s.api.core.v1.Service",
                 ("svc",), ("all",), (STATUS("Service"),),
                 ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")),
    ResourceInfo("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True,
                 "io.k8s.api.core.v1.ServiceAccount", ("sa",)),
    ResourceInfo("apps", "v1", "Deployment", "deployments", "deployment", True,
                 "io.k8s.api.apps.v1.Deployment", ("deploy",), ("all",), (STATUS("Deployment"), SCALE)),
    ResourceInfo("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True,
                 "io.k8s.api.apps.v1.ReplicaSet", ("rs",), ("all",), (STATUS("ReplicaSet"), SCALE)),
    ResourceInfo("coordination.k8s.io", "v1", "Lease", "leases", "lease", True,
                 "io.k8s.api.coordination.v1.Lease"),
    ResourceInfo("events.k8s.io", "v1", "Event", "events", "event", True,
                 "io.k8s.api.events.v1.Event", ("ev",)),
)

# (group, version) pairs in discovery order; the core group first, as upstream.
GROUP_VERSIONS: tuple[tuple[str, str], ...] = tuple(dict.fromkeys((r.group, r.version) for r in RESOURCES))

_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}
_BY_KIND = {(r.group, r.kind): r for r in RESOURCES}


def lookup(group: str, version: str, plural: str) -> ResourceInfo | None:
    """The resource served at /apis/<group>/<version>/<plural>, or None (404)."""
    return _BY_PATH.get((group, version, plural))


def for_kind(group: str, kind: str) -> ResourceInfo | None:
    return _BY_KIND.get((group, kind))


def resources_in(group: str, version: str) -> list[ResourceInfo]:
    return [r for r in RESOURCES if r.group == group and r.version == version]
