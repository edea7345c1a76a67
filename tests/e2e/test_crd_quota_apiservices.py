"""Real kubectl against `kubeplane up --nodes 0`, custom resources beside the built-ins: an
object-count quota on a custom resource (refused over it, given back on delete), the Local
APIService of a CRD's group-version (`kubectl get apiservices`), server-side apply of a Scale
(`kubectl apply --server-side --subresource=scale`) and its ownership, a Strict patch's 422,
and a protected group's approval annotation.
"""
from __future__ import annotations

import json

import yaml

from .cluster import Cluster, eventually

GROUP = "quota.example.com"
NS = "crquota"


def crd(group: str = GROUP, annotations: dict[str, str] | None = None) -> str:
    version = {
        "name": "v1", "served": True, "storage": True,
        "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                 "statusReplicasPath": ".status.replicas"}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "size": {"type": "integer"}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}
    meta: dict = {"name": f"gizmos.{group}"}
    if annotations:
        meta["annotations"] = annotations
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": meta,
        "spec": {"group": group, "scope": "Namespaced", "versions": [version],
                 "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"}}})


def gizmo(name: str, replicas: int = 1) -> str:
    return (f"apiVersion: {GROUP}/v1\nkind: Gizmo\nmetadata:\n  name: {name}\n  namespace: {NS}\n"
            f"spec:\n  replicas: {replicas}\n  size: 1\n")


def _established(cluster: Cluster) -> None:
    if cluster.kubectl("get", "crd", f"gizmos.{GROUP}", check=False).returncode != 0:
        cluster.kubectl("apply", "-f", "-", input=crd())
        cluster.kubectl("create", "namespace", NS)
    cluster.kubectl("wait", "--for=condition=Established", f"crd/gizmos.{GROUP}", "--timeout=20s")


def test_an_object_count_quota_on_a_custom_resource(cluster: Cluster) -> None:
    _established(cluster)
    count = f"count/gizmos.{GROUP}"
    cluster.kubectl("create", "quota", "gizmos", "-n", NS, f"--hard={count}=2")

    def used() -> str:
        return cluster.get_json("quota", "gizmos", "-n", NS).get("status", {}).get("used", {}).get(count, "")
    eventually(lambda: used() == "0", "the quota counted")
    cluster.kubectl("apply", "-f", "-", input=gizmo("g1") + "---\n" + gizmo("g2"))
    res = cluster.kubectl("apply", "-f", "-", input=gizmo("g3"), check=False)
    assert res.returncode == 1
    assert (f'gizmos.{GROUP} "g3" is forbidden: exceeded quota: gizmos, requested: {count}=1, '
            f"used: {count}=2, limited: {count}=2") in res.stderr, res.stderr
    cluster.kubectl("delete", "gizmo", "g1", "-n", NS)
    eventually(lambda: used() == "1", "usage given back on delete")
    cluster.kubectl("apply", "-f", "-", input=gizmo("g3"))
    rows = [line.split() for line in cluster.kubectl("describe", "quota", "gizmos", "-n", NS).stdout.splitlines()]
    assert [count, "2", "2"] in rows
    cluster.kubectl("delete", "quota", "gizmos", "-n", NS)        # the other tests create gizmos


def test_kubectl_get_apiservices_lists_the_crd_group_version(cluster: Cluster) -> None:
    _established(cluster)

    def row() -> list[str] | None:
        out = cluster.kubectl("get", "apiservices").stdout.splitlines()
        return next((line.split() for line in out if line.startswith(f"v1.{GROUP} ")), None)
    assert eventually(row, "the APIService listed")[:3] == [f"v1.{GROUP}", "Local", "True"]
    svc = cluster.get_json("apiservice", f"v1.{GROUP}")
    assert svc["spec"] == {"group": GROUP, "version": "v1", "groupPriorityMinimum": 1000, "versionPriority": 100}


def _apply_scale(cluster: Cluster, name: str, replicas: int, manager: str, force: bool = False) -> tuple[int, str]:
    """Server-side apply of a Scale through the official client (kubectl's --subresource=scale
    sends the parent's kind, which a Scale apply refuses, upstream too)."""
    from kubernetes.client import CustomObjectsApi
    from kubernetes.client.exceptions import ApiException
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": name, "namespace": NS},
             "spec": {"replicas": replicas}}
    with cluster.python_client() as c:
        try:
            CustomObjectsApi(c).patch_namespaced_custom_object_scale(
                GROUP, "v1", NS, "gizmos", name, scale, field_manager=manager, force=force or None,
                _content_type="application/apply-patch+yaml")
        except ApiException as e:
            return e.status, json.loads(e.body)["message"]
    return 200, ""


def test_server_side_apply_of_a_scale(cluster: Cluster) -> None:
    _established(cluster)
    cluster.kubectl("apply", "--server-side", "--field-manager=owner", "-f", "-", input=gizmo("s1", replicas=1))
    assert _apply_scale(cluster, "s1", 4, "scaler") == (
        409, 'Apply failed with 1 conflict: conflict with "owner": .spec.replicas')
    assert _apply_scale(cluster, "s1", 4, "scaler", force=True) == (200, "")
    obj = cluster.get_json("gizmo", "s1", "-n", NS, "--show-managed-fields")
    assert obj["spec"] == {"replicas": 4, "size": 1}
    entries = {(m["manager"], m.get("subresource", "")): m["fieldsV1"] for m in obj["metadata"]["managedFields"]}
    assert entries[("scaler", "scale")] == {"f:spec": {"f:replicas": {}}}
    assert entries[("owner", "")] == {"f:spec": {"f:size": {}}}
    # kubectl scale takes the replicas over from the applier (an Update takes ownership)
    cluster.kubectl("scale", "gizmo", "s1", "-n", NS, "--replicas=2")
    obj = cluster.get_json("gizmo", "s1", "-n", NS, "--show-managed-fields")
    managers = {(m["manager"], m["operation"], m.get("subresource", "")) for m in obj["metadata"]["managedFields"]}
    assert ("scaler", "Apply", "scale") not in managers and ("kubectl", "Update", "scale") in managers, managers


def test_a_strict_patch_with_unknown_fields_is_invalid(cluster: Cluster) -> None:
    """kubectl apply patches an existing object (a merge patch for a custom one), Strict."""
    _established(cluster)
    cluster.kubectl("apply", "-f", "-", input=gizmo("p1"))
    res = cluster.kubectl("apply", "-f", "-", "--validate=strict", input=gizmo("p1") + "  bogus: 1\n", check=False)
    assert res.returncode == 1
    # kubectl's text for an Invalid status without a kind, as against upstream
    assert res.stderr.startswith('The request is invalid: patch: Invalid value: "{'), res.stderr
    assert 'strict decoding error: unknown field "spec.bogus"' in res.stderr
    assert "bogus" not in cluster.get_json("gizmo", "p1", "-n", NS)["spec"]


def test_a_protected_group_needs_the_approval_annotation(cluster: Cluster) -> None:
    res = cluster.kubectl("apply", "-f", "-", input=crd("gizmos.k8s.io"), check=False)
    assert res.returncode == 1
    assert ('metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval '
            'annotation "api-approved.kubernetes.io"') in res.stderr, res.stderr
    cluster.kubectl("apply", "-f", "-", input=crd("gizmos.k8s.io", {"api-approved.kubernetes.io": "unapproved, test"}))

    def condition() -> dict | None:
        conds = cluster.get_json("crd", "gizmos.gizmos.k8s.io").get("status", {}).get("conditions", [])
        return next((c for c in conds if c["type"] == "KubernetesAPIApprovalPolicyConformant"), None)
    c = eventually(condition, "the approval condition")
    assert (c["status"], c["reason"]) == ("False", "UnapprovedAnnotation")
