"""Upstream's discovery table: every resource a default Kubernetes 1.37 kube-apiserver serves.

Generated data (upstream_resources.json, by tools/gen_discovery.py from upstream's checked-in
discovery documents, kubernetes/kubernetes api/discovery/; the file records the commits read).
It is the reference a kind's definition is checked against, not what kubeplane serves today
(that is kubeplane.api.resources): verbs, shortNames, categories, subresources (with their kinds
and verbs), namespaced, singularName, storageVersionHash, the group's preferred version, and the
JSON-schema definition of the kind.

    from kubeplane.api import upstream_resources as upstream
    upstream.lookup("apps", "v1", "statefulsets").short_names        # ("sts",)
    upstream.preferred_version("autoscaling")                        # "v2"

Loaded on first use; nothing imports it at start-up.
"""
from __future__ import annotations

import functools
import json
import pathlib
from dataclasses import dataclass
from typing import Any

_PATH = pathlib.Path(__file__).with_name("upstream_resources.json")


@dataclass(frozen=True, slots=True)
class UpstreamSubresource:
    name: str                       # "status", "scale", "eviction"
    kind: str                       # kind served on it (Scale, Eviction, PodExecOptions)
    verbs: tuple[str, ...]
    group: str | None = None        # set when the kind lives in another group (autoscaling/v1 Scale)
    version: str | None = None


@dataclass(frozen=True, slots=True)
class UpstreamResource:
    group: str
    version: str
    resource: str                   # plural
    kind: str
    singular_name: str
    namespaced: bool
    verbs: tuple[str, ...]
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    storage_version_hash: str       # "" when unknown (see the generator's ADDITIONS)
    server: str                     # kube-apiserver | apiextensions-apiserver | kube-aggregator
    definition: str                 # JSON-schema definition name of the kind
    subresources: tuple[UpstreamSubresource, ...]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def subresource(self, name: str) -> UpstreamSubresource | None:
        return next((s for s in self.subresources if s.name == name), None)


def _resource(row: dict[str, Any]) -> UpstreamResource:
    subs = tuple(UpstreamSubresource(s["name"], s["kind"], tuple(s["verbs"]), s.get("group"), s.get("version"))
                 for s in row["subresources"])
    return UpstreamResource(
        row["group"], row["version"], row["resource"], row["kind"], row["singularName"], row["namespaced"],
        tuple(row["verbs"]), tuple(row["shortNames"]), tuple(row["categories"]), row["storageVersionHash"],
        row["server"], row["definition"], subs)


@functools.cache
def document() -> dict[str, Any]:
    """The whole generated document (kubernetesVersion, source, groups, resources, ...)."""
    doc: dict[str, Any] = json.loads(_PATH.read_text())
    return doc


@functools.cache
def resources() -> tuple[UpstreamResource, ...]:
    """Every served resource, in upstream's discovery order (groups, then versions, then plural)."""
    return tuple(_resource(r) for r in document()["resources"])


@functools.cache
def _by_path() -> dict[tuple[str, str, str], UpstreamResource]:
    return {(r.group, r.version, r.resource): r for r in resources()}


def lookup(group: str, version: str, resource: str) -> UpstreamResource | None:
    return _by_path().get((group, version, resource))


def group_versions() -> list[tuple[str, list[str]]]:
    """(group, versions with the preferred first) in upstream's discovery order."""
    return [(g["group"], list(g["versions"])) for g in document()["groups"]]


def preferred_version(group: str) -> str | None:
    return next((g["preferredVersion"] for g in document()["groups"] if g["group"] == group), None)
