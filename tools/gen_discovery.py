"""Generate src/kubeplane/api/upstream_resources.json: every resource a default 1.37 kube-apiserver serves.

Source: upstream's checked-in legacy discovery documents, kubernetes/kubernetes `api/discovery/`
(`api__v1.json`, `apis__<group>__<version>.json`: APIResourceLists with verbs, shortNames,
categories, storageVersionHash and the `<plural>/<subresource>` entries). Put copies of them in a
directory and run from the repo root:

    .venv/bin/python tools/gen_discovery.py DIR            # rewrite the table
    .venv/bin/python tools/gen_discovery.py DIR --check    # exit 1 if the committed table is stale

Which versions are "served by default" (upstream's files list alpha and beta versions too: they
are generated with every API turned on): upstream's DefaultAPIResourceConfigSource
(pkg/controlplane/instance.go) enables the stable versions, and since KEP-3136 (1.24) every beta
group-version is off by default; its legacyBetaEnabledByDefaultResources list has been empty since
flowcontrol v1beta3 went away (1.32). So the default 1.37 server serves exactly the GA versions,
listed in SERVED below, in upstream's discovery order (the aggregator's group priorities; a
group's versions by priority, the first one preferred). The alpha/beta group-versions that the
1.37 schema knows and a default server does not serve are in NOT_SERVED_BY_DEFAULT (kept in the
table's metadata so nobody adds them by mistake).

apiextensions.k8s.io (CRDs) and apiregistration.k8s.io (APIServices) are served by the same
kube-apiserver binary through its apiextensions and aggregator servers: they are in the table
(`server` says which), although the issue's list does not name them.

Copies used (read 2026-11-26 from the stored kubernetes/kubernetes index, which holds several
versions of each file without dates; see SOURCES): per file, the version that agrees best with
the 1.37 schema (kubernetes-validate 1.37.0); the test checks every kind against the schema. Four stored per-group files (coordination, policy,
node.k8s.io, apiregistration; commit 7c66d0f8) drop `watch` from every resource, which no
upstream release does (an intermediate state); their verbs were taken from aggregated_v2.json
(commit 0b1dcaba), which lists `watch`. ADDITIONS holds what a default 1.37 server serves that
none of the stored files lists (GA kinds of the 1.37 schema, pods/resize); REMOVALS what they
list that a default server does not serve (an alpha subresource).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "src/kubeplane/api/upstream_resources.json"

KUBERNETES_VERSION = "v1.37.0"

# (group, [versions, preferred first], server) in upstream's /apis order; "" is /api/v1.
SERVED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("", ("v1",), "kube-apiserver"),
    ("apiregistration.k8s.io", ("v1",), "kube-aggregator"),
    ("apps", ("v1",), "kube-apiserver"),
    ("events.k8s.io", ("v1",), "kube-apiserver"),
    ("authentication.k8s.io", ("v1",), "kube-apiserver"),
    ("authorization.k8s.io", ("v1",), "kube-apiserver"),
    ("autoscaling", ("v2", "v1"), "kube-apiserver"),
    ("batch", ("v1",), "kube-apiserver"),
    ("certificates.k8s.io", ("v1",), "kube-apiserver"),
    ("networking.k8s.io", ("v1",), "kube-apiserver"),
    ("policy", ("v1",), "kube-apiserver"),
    ("rbac.authorization.k8s.io", ("v1",), "kube-apiserver"),
    ("storage.k8s.io", ("v1",), "kube-apiserver"),
    ("admissionregistration.k8s.io", ("v1",), "kube-apiserver"),
    ("apiextensions.k8s.io", ("v1",), "apiextensions-apiserver"),
    ("scheduling.k8s.io", ("v1",), "kube-apiserver"),
    ("coordination.k8s.io", ("v1",), "kube-apiserver"),
    ("node.k8s.io", ("v1",), "kube-apiserver"),
    ("discovery.k8s.io", ("v1",), "kube-apiserver"),
    ("flowcontrol.apiserver.k8s.io", ("v1",), "kube-apiserver"),
    ("resource.k8s.io", ("v1",), "kube-apiserver"),
    ("storagemigration.k8s.io", ("v1",), "kube-apiserver"),
)

# Alpha/beta group-versions in the 1.37 schema (kubernetes-validate 1.37.0) that upstream's
# defaults leave off (enable with --runtime-config): not part of the table.
NOT_SERVED_BY_DEFAULT = (
    "admissionregistration.k8s.io/v1alpha1", "admissionregistration.k8s.io/v1beta1",
    "certificates.k8s.io/v1beta1", "coordination.k8s.io/v1alpha2", "coordination.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1", "lifecycle.k8s.io/v1alpha1", "resource.k8s.io/v1alpha3",
    "resource.k8s.io/v1beta1", "resource.k8s.io/v1beta2", "scheduling.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1beta1", "storagemigration.k8s.io/v1beta1",
)

# Resources the 1.37 schema has at GA that the stored discovery files do not list yet, as
# APIResourceList entries (storageVersionHash unknown: it hashes the storage version, which moves
# to v1 with the promotion). ClusterTrustBundle: certificates.k8s.io/v1 in the 1.37 schema; its
# entry is the v1beta1 one (apis__certificates.k8s.io__v1beta1.json). DeviceTaintRule:
# resource.k8s.io/v1 in the 1.37 schema; entries from apis__resource.k8s.io__v1alpha3.json.
_CRUD = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
ADDITIONS: dict[str, list[dict[str, Any]]] = {
    "certificates.k8s.io/v1": [
        {"kind": "ClusterTrustBundle", "name": "clustertrustbundles", "namespaced": False,
         "singularName": "clustertrustbundle", "verbs": _CRUD},
    ],
    # pods/resize: registered whenever InPlacePodVerticalScaling is on (storage_core.go,
    # pkg/registry/core/rest), on by default since 1.33 and GA since; the stored api__v1.json
    # copies predate or omit it.
    "v1": [
        {"kind": "Pod", "name": "pods/resize", "namespaced": True, "singularName": "",
         "verbs": ["get", "patch", "update"]},
    ],
    "resource.k8s.io/v1": [
        {"kind": "DeviceTaintRule", "name": "devicetaintrules", "namespaced": False,
         "singularName": "devicetaintrule", "verbs": _CRUD},
        {"kind": "DeviceTaintRule", "name": "devicetaintrules/status", "namespaced": False,
         "singularName": "", "verbs": ["get", "patch", "update"]},
    ],
}

# Entries of the stored files that a default server does not serve: pods/checkpoint is the
# alpha API of KEP-2008 ("Add checkpoint and restore to the API"), behind its feature gate (off
# by default, as every alpha feature); upstream generates its discovery files with it on.
REMOVALS = {"v1": {"pods/checkpoint"}}

# The commit of each copy read (kubernetes/kubernetes), for the record.
SOURCES = {
    "api__v1.json": "4d817e791304350f797ea28d315a677873d20cba",
    "apis__admissionregistration.k8s.io__v1.json": "121460defea7874f50c64bb8de51018a86c6eef3",
    "apis__apiextensions.k8s.io__v1.json": "6732d913237bd282d81fe99df860938c5d60480a",
    "apis__apiregistration.k8s.io__v1.json": "7c66d0f84a20136b37a301223c7a3b42f1133ac9 (+watch)",
    "apis__apps__v1.json": "d7ce957d8a8729e0e9c2e365288277d742491a5b",
    "apis__authentication.k8s.io__v1.json": "2e0908106e4420a601e50d6edfd41475de87a3e1",
    "apis__authorization.k8s.io__v1.json": "95f08499d652a6211121d8af35f470609217c730",
    "apis__autoscaling__v1.json": "78fc8e44052f699bf598f84b697b41e5a328c9c5",
    "apis__autoscaling__v2.json": "fa7ba8e2f963aad48acbd0aee416f9743af443f5",
    "apis__batch__v1.json": "2e0908106e4420a601e50d6edfd41475de87a3e1",
    "apis__certificates.k8s.io__v1.json": "32d5969f5a3daac1b1314f68e72b4ffc0ec0e4e7",
    "apis__certificates.k8s.io__v1beta1.json": "4f6fdb4551e8dd7b783d29e4d936d3756e4813ed (ADDITIONS only)",
    "apis__coordination.k8s.io__v1.json": "7c66d0f84a20136b37a301223c7a3b42f1133ac9 (+watch)",
    "apis__discovery.k8s.io__v1.json": "4a0608cb77f6a53af41cb4a453af104a4d4a0610",
    "apis__events.k8s.io__v1.json": "31d0821ab4dd748338e302f34a750a2f8cf7ff98",
    "apis__flowcontrol.apiserver.k8s.io__v1.json": "6f137b77b15db02ba928582345afbcfe1faa9bd1",
    "apis__networking.k8s.io__v1.json": "95f08499d652a6211121d8af35f470609217c730",
    "apis__node.k8s.io__v1.json": "7c66d0f84a20136b37a301223c7a3b42f1133ac9 (+watch)",
    "apis__policy__v1.json": "7c66d0f84a20136b37a301223c7a3b42f1133ac9 (+watch)",
    "apis__rbac.authorization.k8s.io__v1.json": "025f2834a128798cef30018a5e6a6ae82b5ad885",
    "apis__resource.k8s.io__v1.json": "4e592f6c145bb322786aa77ff2d25d8fe370b893",
    "apis__resource.k8s.io__v1alpha3.json": "008b3652959ca58af8be3fb5b6ecfe9ae7638282 (ADDITIONS only)",
    "apis__scheduling.k8s.io__v1.json": "78fc8e44052f699bf598f84b697b41e5a328c9c5",
    "apis__storage.k8s.io__v1.json": "96a03f453527c60de35414d2214e4e7adf2eb549",
    "apis__storagemigration.k8s.io__v1.json": "e7cb4c40de91322e69c6a37abb14746f0a14d5f3",
    "aggregated_v2.json": "0b1dcaba0a3f1fdcfe5fbb6516d68ffc8e625d81 (verbs cross-check)",
}


# Definition-name prefix of a group's Go package in the JSON schema ("io.k8s.api.apps").
_PACKAGES = {
    "": "io.k8s.api.core",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
    "apiregistration.k8s.io": "io.k8s.kube-aggregator.pkg.apis.apiregistration",
    "rbac.authorization.k8s.io": "io.k8s.api.rbac",
}


def definition(group: str, version: str, kind: str) -> str:
    """The JSON-schema definition name of a kind ("io.k8s.api.rbac.v1.Role")."""
    package = _PACKAGES.get(group) or "io.k8s.api." + group.split(".", 1)[0]
    return f"{package}.{version}.{kind}"


def file_name(group: str, version: str) -> str:
    """Upstream's name for a group-version's discovery document."""
    return f"api__{version}.json" if not group else f"apis__{group}__{version}.json"


def resource_lists(src: pathlib.Path, group: str, version: str) -> list[dict[str, Any]]:
    """The APIResourceList entries of one group-version, less REMOVALS, plus ADDITIONS."""
    doc = json.loads((src / file_name(group, version)).read_text())
    gv = f"{group}/{version}" if group else version
    if doc.get("groupVersion") != gv:
        raise SystemExit(f"{file_name(group, version)}: groupVersion {doc.get('groupVersion')!r}, want {gv!r}")
    removed = REMOVALS.get(gv, set())
    return [e for e in doc["resources"] if e["name"] not in removed] + ADDITIONS.get(gv, [])


def table_rows(group: str, version: str, server: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per resource, its `<plural>/<sub>` entries folded in as subresources."""
    rows: dict[str, dict[str, Any]] = {}
    subs: list[dict[str, Any]] = []
    for e in entries:
        if "/" in e["name"]:
            subs.append(e)
            continue
        rows[e["name"]] = {
            "group": group, "version": version, "resource": e["name"], "kind": e["kind"],
            "singularName": e["singularName"], "namespaced": e["namespaced"], "verbs": sorted(e["verbs"]),
            "shortNames": e.get("shortNames", []), "categories": e.get("categories", []),
            "storageVersionHash": e.get("storageVersionHash", ""), "server": server,
            "definition": definition(group, version, e["kind"]), "subresources": [],
        }
    for s in subs:
        parent, name = s["name"].split("/", 1)
        sub = {"name": name, "kind": s["kind"], "verbs": sorted(s["verbs"])}
        if s.get("group") is not None or s.get("version") is not None:
            sub["group"], sub["version"] = s.get("group", ""), s.get("version", "")
        rows[parent]["subresources"].append(sub)
    for r in rows.values():
        r["subresources"].sort(key=lambda s: s["name"])
    return sorted(rows.values(), key=lambda r: r["resource"])


def render(src: pathlib.Path) -> str:
    groups, resources = [], []
    for group, versions, server in SERVED:
        groups.append({"group": group, "versions": list(versions), "preferredVersion": versions[0]})
        for version in versions:
            resources += table_rows(group, version, server, resource_lists(src, group, version))
    doc = {
        "kubernetesVersion": KUBERNETES_VERSION,
        "source": {"repository": "kubernetes/kubernetes", "path": "api/discovery/", "files": SOURCES,
                   "generator": "tools/gen_discovery.py"},
        "notServedByDefault": list(NOT_SERVED_BY_DEFAULT),
        "groups": groups,
        "resources": resources,
    }
    return dumps(doc)


def dumps(doc: dict[str, Any]) -> str:
    """JSON with one group or resource per line (diffs read as "this resource changed")."""
    def one(v: Any) -> str:
        return json.dumps(v, separators=(", ", ": "))
    lines = []
    for k, v in doc.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            lines.append(f" {one(k)}: [\n" + ",\n".join("  " + one(x) for x in v) + "\n ]")
        else:
            lines.append(f" {one(k)}: {one(v)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument("dir", type=pathlib.Path, help="directory with upstream's api/discovery/*.json")
    ap.add_argument("--check", action="store_true", help="fail if the committed table differs")
    args = ap.parse_args(argv)
    text = render(args.dir)
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"stale: {OUT.relative_to(ROOT)} (run tools/gen_discovery.py DIR)", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    data = json.loads(text)
    print(f"{len(data['resources'])} resources in {len(data['groups'])} groups -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
