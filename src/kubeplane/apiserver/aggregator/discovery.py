"""Discovery with the aggregated APIs merged in: /apis (legacy APIGroupList and aggregated
APIGroupDiscoveryList) and /apis/<group> list the remote group-versions next to the local ones,
so `kubectl api-resources`, `kubectl get <remote resource>` and `kubectl explain`'s discovery
see them.

- Legacy /apis and /apis/<group> come from the APIServices alone (every remote one, available
  or not), versions by versionPriority then Kubernetes version order, as upstream's apisHandler
  and apiGroupHandler.
- The aggregated document adds, per remote group-version, the resources of the APIResourceList
  the backend answered at its last availability check (controller.py refreshes it every 30 s);
  a group-version that has not answered yet is left out, as upstream's discovery manager does
  until its first fetch.
Remote groups come after the local ones, by groupPriorityMinimum (highest first) then name.
Documents are rebuilt only when the aggregator's generation changes.

Upstream: apisHandler, apiGroupHandler, convertToDiscoveryAPIGroup (kube-aggregator
pkg/apiserver/handler_apis.go), the aggregated discovery manager (handler_discovery.go,
convertAPIResourceToAggregated in apiserver pkg/endpoints/discovery/aggregated).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from .. import discovery as local

if TYPE_CHECKING:
    from .controller import Aggregator

Obj = dict[str, Any]
_KUBE_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_key(v: str) -> tuple[int, int, int, str]:
    """Kubernetes version order, highest first as the sort's smallest: GA > beta > alpha, then
    by number; anything else after, by name. Upstream: version.CompareKubeAwareVersionStrings"""
    m = _KUBE_VERSION.match(v)
    if m is None:
        return (3, 0, 0, v)
    rank = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (rank, -int(m.group(1)), -int(m.group(3) or 0), "")


def remote_groups(agg: Aggregator) -> dict[str, list[Obj]]:
    """group -> its remote APIServices, the preferred version first."""
    out: dict[str, list[Obj]] = {}
    for name, backend in sorted(agg.backends.items()):
        a = agg.api_services.get(backend.name)
        if a is not None:
            out.setdefault(name[0], []).append(a)
    for services in out.values():
        services.sort(key=lambda a: (-int(a["spec"].get("versionPriority") or 0), version_key(a["spec"]["version"])))
    return dict(sorted(out.items(), key=lambda kv: (-int(kv[1][0]["spec"].get("groupPriorityMinimum") or 0), kv[0])))


def _api_group(group: str, services: list[Obj], local_versions: list[Obj]) -> Obj:
    versions = [{"groupVersion": f"{group}/{a['spec']['version']}", "version": a["spec"]["version"]} for a in services]
    known = {v["version"] for v in versions}
    versions += [v for v in local_versions if v["version"] not in known]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def api_group_list(agg: Aggregator) -> bytes:
    """/apis, legacy."""
    doc = orjson.loads(local.api_group_list())
    groups: list[Obj] = doc["groups"]
    index = {g["name"]: i for i, g in enumerate(groups)}
    for group, services in remote_groups(agg).items():
        if group in index:
            groups[index[group]] = _api_group(group, services, groups[index[group]]["versions"])
        else:
            groups.append(_api_group(group, services, []))
    return orjson.dumps(doc)


def api_group(agg: Aggregator, group: str) -> bytes | None:
    """/apis/<group>; None when no APIService is remote for it (the local answer stands)."""
    services = remote_groups(agg).get(group)
    if services is None:
        return None
    base = local.api_group(group)
    local_versions = orjson.loads(base)["versions"] if base else []
    return orjson.dumps({"kind": "APIGroup", "apiVersion": "v1", **_api_group(group, services, local_versions)})


def aggregated_resource(r: Obj, subresources: list[Obj]) -> Obj:
    """An APIResourceList entry as an APIResourceDiscovery. Upstream: convertAPIResourceToAggregated"""
    out: Obj = {"resource": r.get("name", ""),
                "responseKind": {"group": r.get("group", ""), "version": r.get("version", ""), "kind": r.get("kind", "")},
                "scope": "Namespaced" if r.get("namespaced") else "Cluster",
                "singularResource": r.get("singularName", ""), "verbs": list(r.get("verbs") or [])}
    for key in ("shortNames", "categories"):
        if r.get(key):
            out[key] = list(r[key])
    subs = [{"subresource": s["name"].split("/", 1)[1],
             "responseKind": {"group": s.get("group", ""), "version": s.get("version", ""), "kind": s.get("kind", "")},
             "verbs": list(s.get("verbs") or [])} for s in subresources]
    if subs:
        out["subresources"] = subs
    return out


def aggregated_version(version: str, resource_list: Obj) -> Obj:
    entries = [r for r in resource_list.get("resources") or [] if isinstance(r, dict) and isinstance(r.get("name"), str)]
    top = [r for r in entries if "/" not in r["name"]]
    subs = [r for r in entries if "/" in r["name"]]
    resources = [aggregated_resource(r, [s for s in subs if s["name"].split("/", 1)[0] == r["name"]]) for r in top]
    # A subresource whose parent is not listed (custom metrics adapters list only "pods/<metric>")
    # gets a parent of its own, as upstream's conversion does.
    parents = {r["name"] for r in top}
    for parent in dict.fromkeys(s["name"].split("/", 1)[0] for s in subs if s["name"].split("/", 1)[0] not in parents):
        mine = [s for s in subs if s["name"].split("/", 1)[0] == parent]
        entry = aggregated_resource({"name": parent, "namespaced": mine[0].get("namespaced")}, mine)
        del entry["responseKind"], entry["singularResource"]
        entry["verbs"] = []
        resources.append(entry)
    return {"version": version, "resources": resources, "freshness": "Current"}


def aggregated(agg: Aggregator) -> bytes:
    """/apis, aggregated (apidiscovery.k8s.io/v2)."""
    doc = orjson.loads(local.aggregated(False))
    items: list[Obj] = doc["items"]
    index = {item["metadata"].get("name", ""): item for item in items}
    for group, services in remote_groups(agg).items():
        versions = [aggregated_version(a["spec"]["version"], agg.discovery[(group, a["spec"]["version"])])
                    for a in services if (group, a["spec"]["version"]) in agg.discovery]
        if not versions:
            continue
        if group in index:
            remote = {v["version"] for v in versions}
            index[group]["versions"] = versions + [v for v in index[group]["versions"] if v["version"] not in remote]
        else:
            items.append({"metadata": {"name": group}, "versions": versions})
    return orjson.dumps(doc)


class Documents:
    """The merged documents of one aggregator generation."""

    def __init__(self) -> None:
        self.generation: tuple[int, int, int] = (-1, 0, 0)
        self.cache: dict[str, bytes | None] = {}

    def get(self, agg: Aggregator, path: str, aggregated_form: bool) -> bytes | None:
        # Local documents are rebuilt (new objects) when CRDs or --runtime-config change them.
        generation = (agg.generation, id(local.aggregated(False)), id(local.api_group_list()))
        if self.generation != generation or len(self.cache) > 1000:
            self.generation, self.cache = generation, {}
        key = f"{path}|{aggregated_form}"
        if key not in self.cache:
            if path == "/apis":
                self.cache[key] = aggregated(agg) if aggregated_form else api_group_list(agg)
            else:
                self.cache[key] = api_group(agg, path.split("/")[2])
        return self.cache[key]
