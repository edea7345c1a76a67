"""Discovery documents: aggregated (apidiscovery.k8s.io/v2) and the legacy per-group lists.

kubectl asks /api and /apis for the aggregated form first and needs nothing more; older
clients (kr8s, the Python client) walk the legacy documents, with or without trailing slashes.
All documents are built once from the resource table, shaped as a 1.37 kube-apiserver answers
(checked against upstream's api/discovery/ documents):
* groups in upstream's priority order (apps, events.k8s.io, ..., coordination.k8s.io), the
  versions of a group preferred first; resources and their subresources sorted by name
  (APIInstaller.Install sorts the storage paths);
* legacy APIResource fields in Go's order (name, singularName, namespaced, group, version, kind,
  verbs, shortNames, categories, storageVersionHash), the hash on top-level resources only;
* aggregated responseKind is the APIResource's group/version/kind, so group and version are ""
  unless the kind lives elsewhere (autoscaling/v1 Scale); ObjectMeta's creationTimestamp is
  omitted (omitzero since 1.35), so the core group's metadata is {}.
Upstream: ConvertGroupVersionIntoToDiscovery (apiserver/pkg/endpoints/installer.go).
"""
from __future__ import annotations

import functools
from typing import Any

import orjson

from ..api import upstream_resources as upstream
from ..api.resources import ResourceInfo
from . import enablement

AGGREGATED_CT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> bool:
    return "as=APIGroupDiscoveryList" in accept and "v=v2" in accept


@functools.cache
def groups() -> tuple[str, ...]:
    """Served groups ("" first) in upstream's discovery order; groups upstream lacks (the CRDs')
    go last, by name (the aggregator's order for equal priorities)."""
    order = {g: i for i, (g, _) in enumerate(upstream.group_versions())}
    served = dict.fromkeys(g for g, _ in enablement.group_versions())
    return tuple(sorted(served, key=lambda g: (order[g], "") if g in order else (len(order), g)))


def _versions(group: str) -> list[str]:
    """The group's served versions, upstream's preferred first."""
    order = {v: i for g, vs in upstream.group_versions() if g == group for i, v in enumerate(vs)}
    return sorted((v for g, v in enablement.group_versions() if g == group), key=lambda v: order.get(v, len(order)))


def _resources(group: str, version: str) -> list[ResourceInfo]:
    return sorted(enablement.resources_in(group, version), key=lambda r: r.plural)


def _aggregated_resource(ri: ResourceInfo) -> dict[str, Any]:
    res: dict[str, Any] = {
        "resource": ri.plural,
        "responseKind": {"group": "", "version": "", "kind": ri.kind},
        "scope": "Namespaced" if ri.namespaced else "Cluster",
        "singularResource": ri.singular,
        "verbs": sorted(ri.verbs),
    }
    if ri.short_names:
        res["shortNames"] = list(ri.short_names)
    if ri.categories:
        res["categories"] = list(ri.categories)
    subs = [{"subresource": s.name, "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
             "verbs": sorted(s.verbs)} for s in sorted(ri.subresources, key=lambda s: s.name)]
    if subs:
        res["subresources"] = subs
    return res


@functools.cache
def aggregated(core: bool) -> bytes:
    """The APIGroupDiscoveryList for /api (core=True) or /apis."""
    items = []
    for group in groups():
        if (group == "") != core:
            continue
        versions = [{"version": v, "resources": [_aggregated_resource(r) for r in _resources(group, v)],
                     "freshness": "Current"} for v in _versions(group)]
        items.append({"metadata": {"name": group} if group else {}, "versions": versions})
    return orjson.dumps({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                         "metadata": {}, "items": items})


def api_versions(server_address: str) -> bytes:
    return orjson.dumps({"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})


def _group(group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in _versions(group)]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


@functools.cache
def api_group_list() -> bytes:
    return orjson.dumps({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in groups() if g]})


def api_group(group: str) -> bytes | None:
    if group not in groups() or not group:
        return None
    return orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **_group(group)})


@functools.cache
def api_resource_list(group: str, version: str) -> bytes | None:
    """The legacy APIResourceList for one group-version, subresources as "deployments/scale",
    every entry sorted by name."""
    if (group, version) not in enablement.group_versions():
        return None
    resources: list[dict[str, Any]] = []
    for ri in _resources(group, version):
        entry: dict[str, Any] = {"name": ri.plural, "singularName": ri.singular, "namespaced": ri.namespaced,
                                 "kind": ri.kind, "verbs": sorted(ri.verbs)}
        if ri.short_names:
            entry["shortNames"] = list(ri.short_names)
        if ri.categories:
            entry["categories"] = list(ri.categories)
        known = upstream.lookup(group, version, ri.plural)
        if known and known.storage_version_hash:
            entry["storageVersionHash"] = known.storage_version_hash
        resources.append(entry)
        for s in sorted(ri.subresources, key=lambda s: s.name):
            sub: dict[str, Any] = {"name": f"{ri.plural}/{s.name}", "singularName": "", "namespaced": ri.namespaced}
            if s.group:
                sub["group"], sub["version"] = s.group, s.version
            sub["kind"], sub["verbs"] = s.kind, sorted(s.verbs)
            resources.append(sub)
    gv = f"{group}/{version}" if group else version
    return orjson.dumps({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
