"""Generate src/kubeplane/api/schema/definitions.json from kubernetes-validate's JSON schema.

The output keeps only the definitions reachable from the kinds a default 1.37 kube-apiserver
serves (every kind of src/kubeplane/api/upstream_resources.json, plus the meta types the API
surface needs), with descriptions (for `kubectl explain`) and the
x-kubernetes-* extensions (patch strategies, merge keys, list types, group-version-kinds).
Run: .venv/bin/python tools/gen_schema.py   (kubernetes-validate is a dev dependency only)
"""
from __future__ import annotations

import json
import pathlib

import kubernetes_validate

VERSION = "v1.37.0-local"
ROOTS = [
    "io.k8s.api.core.v1.Namespace", "io.k8s.api.core.v1.NamespaceList",
    "io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodList", "io.k8s.api.core.v1.Binding",
    "io.k8s.api.core.v1.Node", "io.k8s.api.core.v1.NodeList",
    "io.k8s.api.core.v1.Event", "io.k8s.api.core.v1.EventList",
    "io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.ConfigMapList",
    "io.k8s.api.core.v1.Secret", "io.k8s.api.core.v1.SecretList",
    "io.k8s.api.core.v1.Service", "io.k8s.api.core.v1.ServiceList",
    "io.k8s.api.core.v1.ServiceAccount", "io.k8s.api.core.v1.ServiceAccountList",
    "io.k8s.api.apps.v1.Deployment", "io.k8s.api.apps.v1.DeploymentList",
    "io.k8s.api.apps.v1.ReplicaSet", "io.k8s.api.apps.v1.ReplicaSetList",
    "io.k8s.api.autoscaling.v1.Scale",
    "io.k8s.api.coordination.v1.Lease", "io.k8s.api.coordination.v1.LeaseList",
    "io.k8s.api.events.v1.Event", "io.k8s.api.events.v1.EventList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
    "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
]
UPSTREAM = pathlib.Path(__file__).parent.parent / "src/kubeplane/api/upstream_resources.json"


def upstream_roots() -> list[str]:
    """Every kind of upstream's discovery table (tools/gen_discovery.py), its list, and the kinds
    served on its subresources that have a schema (Scale, Eviction, TokenRequest, Binding)."""
    out = []
    for r in json.loads(UPSTREAM.read_text())["resources"]:
        out += [r["definition"], r["definition"] + "List"]
        for s in r["subresources"]:
            group = s.get("group")
            if group is None:
                out.append(r["definition"].rsplit(".", 1)[0] + "." + s["kind"])
            else:
                package = "core" if group == "" else group.split(".", 1)[0]
                out.append(f"io.k8s.api.{package}.{s['version']}.{s['kind']}")
    return out


def refs(node: object, out: set[str]) -> None:
    """Collect every definition name referenced under node."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            out.add(ref.rsplit("/", 1)[1])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def main() -> None:
    base = pathlib.Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / VERSION
    defs = json.loads((base / "_definitions.json").read_text())["$defs"]
    keep: set[str] = set()
    # Options kinds of connect subresources (PodExecOptions, NodeProxyOptions, ...) have no schema.
    todo = ROOTS + [n for n in upstream_roots() if n in defs]
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        found: set[str] = set()
        refs(defs[name], found)
        todo.extend(found - keep)
    out = {name: defs[name] for name in sorted(keep)}
    target = pathlib.Path(__file__).parent.parent / "src/kubeplane/api/schema/definitions.json"
    target.write_text(json.dumps(out, separators=(",", ":"), sort_keys=True))
    print(f"{len(out)} definitions, {target.stat().st_size} bytes -> {target}")


if __name__ == "__main__":
    main()
