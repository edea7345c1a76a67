"""Real kubectl against `kubeplane up --nodes 0`: custom objects and the garbage collector and
namespace controller (issue 13: "cascade deletion of CRs owned by a Deployment and of a
Deployment owned by a CR", in every propagation mode; deleting a namespace deletes its custom
objects). The controllers learn the CRD's kind from discovery."""
from __future__ import annotations

import json

import pytest
import yaml

from .cluster import Cluster, eventually

GROUP = "gc.example.com"
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": f"widgets.{GROUP}"},
       "spec": {"group": GROUP, "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                  "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}


@pytest.fixture(scope="module", autouse=True)
def widgets_crd(cluster: Cluster) -> None:
    cluster.apply_yaml(CRD)
    cluster.kubectl("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=20s")


def _uid(cluster: Cluster, *args: str) -> str:
    return cluster.get_json(*args)["metadata"]["uid"]


def _owner(api_version: str, kind: str, name: str, uid: str) -> dict:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
            "controller": True, "blockOwnerDeletion": True}


def _widget(name: str, ns: str, owners: list[dict] | None = None) -> dict:
    meta: dict = {"name": name, "namespace": ns}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": meta, "spec": {"size": 1}}


def _deployment(name: str, ns: str, owners: list[dict] | None = None) -> dict:
    meta: dict = {"name": name, "namespace": ns}
    if owners:
        meta["ownerReferences"] = owners
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
            "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def _gone(cluster: Cluster, *args: str) -> bool:
    res = cluster.kubectl("get", *args, check=False)
    return res.returncode != 0 and "NotFound" in res.stderr


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_custom_objects_owned_by_a_deployment(cluster: Cluster, cascade: str) -> None:
    ns = f"owned-by-deploy-{cascade}"
    cluster.kubectl("create", "namespace", ns)
    cluster.apply_yaml(_deployment("web", ns))
    owner = _owner("apps/v1", "Deployment", "web", _uid(cluster, "deployment", "web", "-n", ns))
    cluster.apply_yaml(_widget("w1", ns, [owner]))
    cluster.apply_yaml(_widget("w2", ns, [owner]))
    cluster.kubectl("delete", "deployment", "web", "-n", ns, f"--cascade={cascade}", "--wait=false")
    eventually(lambda: _gone(cluster, "deployment", "web", "-n", ns), "the deployment to be deleted")
    if cascade == "orphan":
        for name in ("w1", "w2"):
            w = cluster.get_json("widget", name, "-n", ns)
            assert not w["metadata"].get("ownerReferences"), w["metadata"]
    else:
        for name in ("w1", "w2"):
            eventually(lambda n=name: _gone(cluster, "widget", n, "-n", ns), f"{name} to be collected")


@pytest.mark.parametrize("cascade", ["background", "foreground", "orphan"])
def test_deployment_owned_by_a_custom_object(cluster: Cluster, cascade: str) -> None:
    ns = f"owned-by-cr-{cascade}"
    cluster.kubectl("create", "namespace", ns)
    cluster.apply_yaml(_widget("owner", ns))
    owner = _owner(f"{GROUP}/v1", "Widget", "owner", _uid(cluster, "widget", "owner", "-n", ns))
    cluster.apply_yaml(_deployment("web", ns, [owner]))
    eventually(lambda: cluster.get_json("replicasets", "-n", ns)["items"], "the deployment's ReplicaSet")
    cluster.kubectl("delete", "widget", "owner", "-n", ns, f"--cascade={cascade}", "--wait=false")
    eventually(lambda: _gone(cluster, "widget", "owner", "-n", ns), "the widget to be deleted")
    if cascade == "orphan":
        d = cluster.get_json("deployment", "web", "-n", ns)
        assert not d["metadata"].get("ownerReferences"), d["metadata"]
        assert cluster.get_json("replicasets", "-n", ns)["items"], "the deployment's own dependents stay"
    else:
        eventually(lambda: _gone(cluster, "deployment", "web", "-n", ns), "the deployment to be collected")
        eventually(lambda: not cluster.get_json("replicasets", "-n", ns)["items"], "its ReplicaSet to be collected")


def test_deleting_a_namespace_deletes_its_custom_objects(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "doomed")
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([_widget("a", "doomed"), _widget("b", "doomed")]))
    cluster.kubectl("create", "namespace", "spared")
    cluster.apply_yaml(_widget("c", "spared"))
    cluster.kubectl("delete", "namespace", "doomed", "--timeout=60s")
    assert _gone(cluster, "namespace", "doomed")
    listed = json.loads(cluster.kubectl("get", "--raw", f"/apis/{GROUP}/v1/widgets").stdout)
    left = [(w["metadata"]["namespace"], w["metadata"]["name"]) for w in listed["items"]]
    assert [w for w in left if w[0] in ("doomed", "spared")] == [("spared", "c")]
