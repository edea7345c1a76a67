"""Who `kubeplane up`'s in-process components are, and the few bindings kubeadm (not the API
server) adds, so every component is authorized exactly as in a kubeadm cluster.

- The controllers act as upstream's kube-controller-manager with
  --use-service-account-credentials (kubeadm's default): each controller's clientset is its
  service account, system:serviceaccount:kube-system:<name>, bound by the bootstrap
  system:controller:<name> ClusterRoles; the shared informers and the event broadcaster are
  system:kube-controller-manager (whose role lists and watches everything, and writes Events).
- The scheduler is system:kube-scheduler.
- The kubelets are in system:nodes. With the Node authorizer they are decided by it; without
  it (no authorization/node in this build) the ClusterRoleBinding kubeplane:nodes gives the
  group system:node's rules (upstream's binding of that role has no subjects since 1.8).
- kubeadm's ClusterRoleBinding kubeadm:cluster-admins (group kubeadm:cluster-admins ->
  cluster-admin), the organisation of the admin client certificate (DIR/kubeconfig's bearer
  token names the same user, also in system:masters: utils/pki.py).
"""
from __future__ import annotations

from typing import Any

from ..apiserver.authentication.user import NODES_GROUP, UserInfo, authenticated
from ..apiserver.authorization.rbac import bootstrappolicy as policy

SERVICE_ACCOUNTS = "system:serviceaccounts"
KUBEADM_CLUSTER_ADMINS = "kubeadm:cluster-admins"
NODES_BINDING = "kubeplane:nodes"
KUBE_CONTROLLER_MANAGER = authenticated("system:kube-controller-manager")
KUBE_SCHEDULER = authenticated("system:kube-scheduler")
KUBELET = authenticated("system:node:kubeplane", NODES_GROUP)


def controller_user(name: str) -> UserInfo:
    """A controller's service account user (upstream: serviceaccount.UserInfo)."""
    return authenticated(f"system:serviceaccount:kube-system:{name}", SERVICE_ACCOUNTS,
                         f"{SERVICE_ACCOUNTS}:kube-system")


def kubeadm_policy(node_authorizer: bool) -> list[dict[str, Any]]:
    """What kubeadm init adds to the API server's bootstrap policy (and kubeplane's own two)."""
    def labelled(b: dict[str, Any]) -> dict[str, Any]:
        b["metadata"] = {"name": b["metadata"]["name"]}    # not rbac-defaults: kubeadm's, kept as made
        return b
    objs = [labelled(policy.cluster_role_binding(KUBEADM_CLUSTER_ADMINS, "cluster-admin",
                                                 policy.group(KUBEADM_CLUSTER_ADMINS)))]
    if not node_authorizer:
        objs.append(labelled(policy.cluster_role_binding(NODES_BINDING, "system:node",
                                                         policy.group(NODES_GROUP))))
    return objs


# The controllers `up` runs, by their service accounts' names (upstream's controller names).
CONTROLLER_SERVICE_ACCOUNTS = (
    "certificate-controller", "clusterrole-aggregation-controller", "deployment-controller", "disruption-controller",
    "generic-garbage-collector", "namespace-controller", "node-controller", "replicaset-controller",
    "resourcequota-controller", "root-ca-cert-publisher", "service-account-controller", "horizontal-pod-autoscaler")


async def ensure_controller_service_accounts(clientset: Any) -> None:
    """Upstream: SAControllerClientBuilder creates each controller's service account in
    kube-system the first time it builds its client (as system:kube-controller-manager)."""
    from ..api import errors
    sas = clientset.core_v1().serviceaccounts("kube-system")
    for name in CONTROLLER_SERVICE_ACCOUNTS:
        try:
            await sas.create({"apiVersion": "v1", "kind": "ServiceAccount",
                              "metadata": {"name": name, "namespace": "kube-system"}})
        except errors.AlreadyExists:
            pass
