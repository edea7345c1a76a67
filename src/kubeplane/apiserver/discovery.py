"""Discovery documents: aggregated (apidiscovery.k8s.io/v2) and the legacy per-group lists.

kubectl asks /api and /apis for the aggregated form first and needs nothing more; older
clients (kr8s, the Python client) walk the legacy documents, with or without trailing slashes.
All documents are built once from the resource table.
"""
from __future__ import annotations

import functools
from typing import Any

import orjson

from ..api.resources import GROUP_VERSIONS, ResourceInfo, resources_in

AGGREGATED_CT = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
GROUPS = tuple(dict.fromkeys(g for g, _ in GROUP_VERSIONS))


def wants_aggregated(accept: str) -> bool:
    return "as=APIGroupDiscoveryList" in accept and "v=v2" in accept


def _verbs(ri: ResourceInfo) -> list[str]:
    return sorted(ri.verbs)


def _aggregated_resource(ri: ResourceInfo) -> dict[str, Any]:
    res: dict[str, Any] = {
        "resource": ri.plural,
        "responseKind": {"group": ri.group, "version": ri.version, "kind": ri.kind},
        "scope": "Namespaced" if ri.namespaced else "Cluster",
        "singularResource": ri.singular,
        "verbs": _verbs(ri),
    }
    if ri.short_names:
        res["shortNames"] = list(ri.short_names)
    if ri.categories:
        res["categories"] = list(ri.categories)
    subs = [{"subresource": s.name,
             "responseKind": {"group": s.group or ri.group, "version": s.version or ri.version, "kind": s.kind},
             "verbs": list(s.verbs)} for s in ri.subresources]
    if subs:
        res["subresources"] = subs
    return res


@functools.cache
def aggregated(core: bool) -> bytes:
    """The APIGroupDiscoveryList for /api (core=True) or /apis."""
    items = []
    for group in GROUPS:
        if (group == "") != core:
            continue
        versions = [{"version": v, "resources": [_aggregated_resource(r) for r in resources_in(group, v)],
                     "freshness": "Current"} for g, v in GROUP_VERSIONS if g == group]
        items.append({"metadata": {"name": group} if group else {"creationTimestamp": None}, "versions": versions})
    return orjson.dumps({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                         "metadata": {}, "items": items})


def api_versions(server_address: str) -> bytes:
    return orjson.dumps({"kind": "APIVersions", "versions": ["v1"],
                         "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})


def _group(group: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for g, v in GROUP_VERSIONS if g == group]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


@functools.cache
def api_group_list() -> bytes:
    return orjson.dumps({"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in GROUPS if g]})


def api_group(group: str) -> bytes | None:
    if group not in GROUPS or not group:
        return None
    return orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **_group(group)})


@functools.cache
def api_resource_list(group: str, version: str) -> bytes | None:
    """The legacy APIResourceList for one group-version, subresources as "deployments/scale"."""
    if (group, version) not in GROUP_VERSIONS:
        return None
    resources: list[dict[str, Any]] = []
    for ri in resources_in(group, version):
        entry: dict[str, Any] = {"name": ri.plural, "singularName": ri.singular, "namespaced": ri.namespaced,
                                 "kind": ri.kind, "verbs": _verbs(ri)}
        if ri.short_names:
            entry["shortNames"] = list(ri.short_names)
        if ri.categories:
            entry["categories"] = list(ri.categories)
        resources.append(entry)
        for s in ri.subresources:
            sub: dict[str, Any] = {"name": f"{ri.plural}/{s.name}", "singularName": "", "namespaced": ri.namespaced,
                                   "kind": s.kind, "verbs": list(s.verbs)}
            if s.group:
                sub["group"], sub["version"] = s.group, s.version
            resources.append(sub)
    gv = f"{group}/{version}" if group else version
    return orjson.dumps({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources})
