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
- kubeadm's bindings for joining nodes: its default bootstrap token group may create CSRs
  (system:node-bootstrapper) that are approved as node client certificates, and nodes may
  renew theirs (kubeadm:node-autoapprove-*).
- kubeadm's kube-public/cluster-info ConfigMap (the cluster's address and CA, which joining
  nodes read anonymously and check against the bootstrap signer's signatures), and the Role
  and RoleBinding kubeadm:bootstrap-signer-clusterinfo that let system:anonymous get it.
"""
from __future__ import annotations

import asyncio

import logging
from typing import Any

from ..apiserver.authentication.user import NODES_GROUP, UserInfo, authenticated
from ..apiserver.authorization.rbac import bootstrappolicy as policy

log = logging.getLogger(__name__)

SERVICE_ACCOUNTS = "system:serviceaccounts"
KUBEADM_CLUSTER_ADMINS = "kubeadm:cluster-admins"
NODES_BINDING = "kubeplane:nodes"
CLUSTER_INFO = "cluster-info"
CLUSTER_INFO_ROLE = "kubeadm:bootstrap-signer-clusterinfo"
DEFAULT_NODE_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"
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
        b["metadata"] = {k: v for k, v in b["metadata"].items() if k in ("name", "namespace")}   # not rbac-defaults: kubeadm's
        return b
    objs = [labelled(policy.cluster_role_binding(KUBEADM_CLUSTER_ADMINS, "cluster-admin",
                                                 policy.group(KUBEADM_CLUSTER_ADMINS))),
            labelled(policy.role("kube-public", CLUSTER_INFO_ROLE,
                                 policy.rule("get", policy.LEGACY, "configmaps", names=(CLUSTER_INFO,)))),
            labelled(policy.role_binding("kube-public", CLUSTER_INFO_ROLE, CLUSTER_INFO_ROLE,
                                         policy.user("system:anonymous"))),
            # a node's bootstrap token (kubeadm token create's default group) may ask for its
            # client certificate, which is approved, and a node may renew its own
            labelled(policy.cluster_role_binding("kubeadm:kubelet-bootstrap", "system:node-bootstrapper",
                                                 policy.group(DEFAULT_NODE_TOKEN_GROUP))),
            labelled(policy.cluster_role_binding(
                "kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
                policy.group(DEFAULT_NODE_TOKEN_GROUP))),
            labelled(policy.cluster_role_binding(
                "kubeadm:node-autoapprove-certificate-rotation",
                "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", policy.group(NODES_GROUP)))]
    if not node_authorizer:
        objs.append(labelled(policy.cluster_role_binding(NODES_BINDING, "system:node",
                                                         policy.group(NODES_GROUP))))
    return objs


# The controllers `up` runs, by their service accounts' names (upstream's controller names).
CONTROLLER_SERVICE_ACCOUNTS = (
    "certificate-controller", "clusterrole-aggregation-controller", "cronjob-controller", "deployment-controller", "disruption-controller",
    "generic-garbage-collector", "namespace-controller", "node-controller", "replicaset-controller",
    "resourcequota-controller", "root-ca-cert-publisher", "service-account-controller", "bootstrap-signer",
    "token-cleaner", "legacy-service-account-token-cleaner", "statefulset-controller", "persistent-volume-binder",
    "endpointslice-controller", "endpoint-controller", "endpointslicemirroring-controller", "replication-controller",
    "daemon-set-controller", "job-controller", "ttl-after-finished-controller", "pod-garbage-collector",
    "horizontal-pod-autoscaler")


async def ensure_controller_service_accounts(clientset: Any) -> None:
    """Upstream: SAControllerClientBuilder creates each controller's service account in
    kube-system the first time it builds its client (as system:kube-controller-manager)."""
    from ..api import errors
    sas = clientset.core_v1().serviceaccounts("kube-system")
    for name in CONTROLLER_SERVICE_ACCOUNTS:
        for attempt in range(1, SA_ATTEMPTS + 1):     # upstream polls until it has the account
            try:
                await sas.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                  "metadata": {"name": name, "namespace": "kube-system"}})
                break
            except errors.AlreadyExists:
                break
            except Exception as err:          # an API server or etcd member going away: again
                if attempt == SA_ATTEMPTS or isinstance(err, errors.StatusError) and err.code < 500:
                    raise
                await asyncio.sleep(SA_RETRY_INTERVAL)


SA_ATTEMPTS = 30
SA_RETRY_INTERVAL = 1.0


def cluster_info_kubeconfig(server: str, ca_pem: bytes) -> str:
    """The kubeconfig of cluster-info, as kubeadm's clientcmd.Write prints it: one cluster
    named "", nothing else. Upstream: kubeadm phases/bootstraptoken/clusterinfo"""
    import base64
    return (f"apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {base64.b64encode(ca_pem).decode()}\n"
            f"    server: {server}\n  name: \"\"\ncontexts: null\ncurrent-context: \"\"\nkind: Config\n"
            f"preferences: {{}}\nusers: null\n")


async def ensure_cluster_info(api: Any, server: str, ca_pem: bytes) -> None:
    """Create kube-public/cluster-info, or point it at this server's address again (`up` may
    listen on another port after a restart; the signatures follow from the bootstrap signer).
    Upstream: clusterinfo.CreateBootstrapConfigMapIfNotExists"""
    import copy

    from ..api import errors
    from ..api.resources import lookup
    from ..apiserver.authentication.user import APISERVER
    from ..apiserver.registry import store
    ri = lookup("", "v1", "configmaps")
    assert ri is not None
    kubeconfig = cluster_info_kubeconfig(server, ca_pem)
    opts = store.WriteOptions(user=APISERVER, user_agent="kubeadm")
    kv = await api.storage.get(ri.key("kube-public", CLUSTER_INFO))
    try:
        if kv is None:
            await store.create(api, opts, ri, "kube-public", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": CLUSTER_INFO, "namespace": "kube-public"}, "data": {"kubeconfig": kubeconfig}}, [])
        elif (kv.obj.get("data") or {}).get("kubeconfig") != kubeconfig:
            new = copy.deepcopy(kv.obj)
            new["data"] = {"kubeconfig": kubeconfig}
            await store.update(api, opts, ri, new, kv.obj, kv.mod_revision, "", [])
    except errors.StatusError as err:         # e.g. a concurrent writer: kubeadm would fail its phase
        log.error("Failed to write kube-public/cluster-info: %s", err)
