"""RBAC in `kubeplane up` (Node,RBAC by default) with real kubectl: the bootstrap policy is
there, `kubectl auth can-i` / `--list` read the reviews, a ServiceAccount bound to a
namespaced Role may list pods there and nothing else (asked through SubjectAccessReviews:
the ServiceAccount token authenticator is another change's), `kubectl auth reconcile`, and
anonymous requests see /version only."""
from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

from .cluster import Cluster, eventually

ROLE = """
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: team-a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-lister, namespace: team-a}
rules:
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: robot-lists-pods, namespace: team-a}
subjects:
- kind: ServiceAccount
  name: robot
roleRef: {kind: Role, name: pod-lister, apiGroup: rbac.authorization.k8s.io}
"""


def can(cluster: Cluster, user: str, verb: str, resource: str, ns: str) -> dict:
    out = cluster.kubectl("create", "--validate=false", "-o", "json", "-f", "-", input=json.dumps({
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "groups": ["system:serviceaccounts", "system:serviceaccounts:team-a",
                                          "system:authenticated"],
                 "resourceAttributes": {"namespace": ns, "verb": verb, "resource": resource}}})).stdout
    return json.loads(out)["status"]


def test_bootstrap_policy_is_served(cluster: Cluster) -> None:
    names = set(cluster.kubectl("get", "clusterroles", "-o", "name").stdout.split())
    assert {"clusterrole.rbac.authorization.k8s.io/cluster-admin", "clusterrole.rbac.authorization.k8s.io/view",
            "clusterrole.rbac.authorization.k8s.io/system:controller:deployment-controller"} <= names
    crb = cluster.get_json("clusterrolebinding", "kubeadm:cluster-admins")
    assert crb["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                "name": "kubeadm:cluster-admins"}]
    # the controllers' service accounts, as kube-controller-manager --use-service-account-credentials makes them
    eventually(lambda: cluster.kubectl("get", "serviceaccount", "deployment-controller", "-n", "kube-system",
                                       check=False).returncode == 0, "the controllers' service accounts")
    view = cluster.get_json("clusterrole", "view")
    assert {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]} in view["rules"]


def test_a_service_account_bound_to_a_role_lists_pods_there_only(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "team-a")
    cluster.kubectl("apply", "-f", "-", input=ROLE)
    robot = "system:serviceaccount:team-a:robot"
    allowed = can(cluster, robot, "list", "pods", "team-a")
    assert allowed == {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "robot-lists-pods/team-a" of Role '
                                                  '"pod-lister" to ServiceAccount "robot/team-a"'}
    assert can(cluster, robot, "list", "pods", "default") == {"allowed": False}
    assert can(cluster, robot, "get", "secrets", "team-a") == {"allowed": False}
    assert can(cluster, robot, "delete", "pods", "team-a") == {"allowed": False}


def test_auth_can_i(cluster: Cluster) -> None:
    assert cluster.kubectl("auth", "can-i", "delete", "nodes").stdout.strip() == "yes"
    listed = cluster.kubectl("auth", "can-i", "--list", "-n", "default").stdout.splitlines()
    assert listed[0].split() == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    rows = [line.split() for line in listed[1:]]
    assert ["*.*", "[]", "[]", "[*]"] in rows and ["[*]", "[]", "[*]"] in rows
    assert ["selfsubjectaccessreviews.authorization.k8s.io", "[]", "[]", "[create]"] in rows


def test_auth_reconcile(cluster: Cluster) -> None:
    doc = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: reconciled-reader}
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: reconciled-reader}
subjects:
- {kind: User, name: carol, apiGroup: rbac.authorization.k8s.io}
roleRef: {kind: ClusterRole, name: reconciled-reader, apiGroup: rbac.authorization.k8s.io}
"""
    out = cluster.kubectl("auth", "reconcile", "-f", "-", input=doc).stdout
    assert "clusterrole.rbac.authorization.k8s.io/reconciled-reader reconciled" in out
    assert "clusterrolebinding.rbac.authorization.k8s.io/reconciled-reader reconciled" in out
    out = cluster.kubectl("auth", "reconcile", "-f", "-", input=doc.replace('["get"]', '["get", "list"]')).stdout
    assert "reconciled" in out
    # reconcile adds what is missing, broken down to one verb per rule (upstream's Covers)
    assert cluster.get_json("clusterrole", "reconciled-reader")["rules"] == [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]


def test_anonymous_sees_version_only(cluster: Cluster) -> None:
    server = json.loads(cluster.kubectl("config", "view", "--raw", "-o", "json").stdout)["clusters"][0]["cluster"][
        "server"]
    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with urllib.request.urlopen(server + "/version", context=ctx) as r:
        assert r.status == 200
    try:
        urllib.request.urlopen(server + "/api/v1/namespaces/kube-system/secrets", context=ctx)
        raise AssertionError("anonymous read Secrets")
    except urllib.error.HTTPError as e:
        assert e.code in (401, 403)       # 401 while the authenticator refuses anonymous, 403 from RBAC
