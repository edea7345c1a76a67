"""An API server with --authorization-mode=RBAC and upstream's bootstrap policy: anonymous
requests get only the health and version endpoints, authenticated users discovery, and each
component exactly what its upstream role grants (the scheduler cannot delete a Deployment)."""
from __future__ import annotations

import pytest

from kubeplane.api import errors as client_errors
from kubeplane.apiserver.authentication.user import ANONYMOUS, UserInfo, authenticated
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.cmd import identities

from .helpers import ADMIN, JANE, call

async def test_anonymous_reads_no_secret(api: APIServer) -> None:
    status, body = await call(api, ANONYMOUS, "GET", "/api/v1/namespaces/default/secrets/s")
    assert status == 403
    assert body["message"] == ('secrets "s" is forbidden: User "system:anonymous" cannot get resource "secrets" '
                               'in API group "" in the namespace "default"')
    assert body["details"] == {"name": "s", "kind": "secrets"}


@pytest.mark.parametrize("path", ["/version", "/healthz", "/livez", "/readyz"])
async def test_anonymous_may_read_public_info(api: APIServer, path: str) -> None:
    assert (await call(api, ANONYMOUS, "GET", path))[0] == 200


async def test_discovery_is_for_authenticated_users(api: APIServer) -> None:
    status, body = await call(api, ANONYMOUS, "GET", "/api")
    assert (status, body["message"]) == (403, 'forbidden: User "system:anonymous" cannot get path "/api"')
    assert (await call(api, JANE, "GET", "/api"))[0] == 200
    assert (await call(api, JANE, "GET", "/apis/apps/v1"))[0] == 200
    assert (await call(api, JANE, "GET", "/metrics"))[0] == 403
    assert (await call(api, JANE, "GET", "/api/v1/namespaces/default/pods"))[0] == 403


async def test_a_binding_is_effective_at_once(api: APIServer) -> None:
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
          "metadata": {"name": "jane-view", "namespace": "default"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
          "subjects": [{"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"}]}
    assert (await call(api, ADMIN, "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
                       rb))[0] == 201
    assert (await call(api, JANE, "GET", "/api/v1/namespaces/default/pods"))[0] == 200
    assert (await call(api, JANE, "GET", "/api/v1/namespaces/kube-system/pods"))[0] == 403
    assert (await call(api, JANE, "GET", "/api/v1/namespaces/default/secrets"))[0] == 403      # view: no secrets
    assert (await call(api, JANE, "DELETE", "/api/v1/namespaces/default/pods/p"))[0] == 403


def clientset(api: APIServer, user: UserInfo) -> Clientset:
    return Clientset(InProcessTransport(api, user=user))


DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
              "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def test_the_scheduler_cannot_delete_a_deployment(api: APIServer) -> None:
    assert (await call(api, ADMIN, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT))[0] == 201
    scheduler = clientset(api, identities.KUBE_SCHEDULER)
    with pytest.raises(client_errors.StatusError) as e:
        await scheduler.apps_v1().deployments("default").delete("web")
    assert e.value.code == 403
    assert e.value.message == ('deployments.apps "web" is forbidden: User "system:kube-scheduler" cannot delete '
                               'resource "deployments" in API group "apps" in the namespace "default"')
    # what its role grants it may do: read pods and nodes
    assert await scheduler.core_v1().pods("default").list() is not None
    assert (await call(api, ADMIN, "GET", "/apis/apps/v1/namespaces/default/deployments/web"))[0] == 200


async def test_controllers_act_with_their_own_roles(api: APIServer) -> None:
    assert (await call(api, ADMIN, "POST", "/apis/apps/v1/namespaces/default/deployments", DEPLOYMENT))[0] == 201
    rs_controller = clientset(api, identities.controller_user("replicaset-controller"))
    with pytest.raises(client_errors.StatusError) as e:
        await rs_controller.apps_v1().deployments("default").delete("web")
    assert e.value.code == 403 and 'User "system:serviceaccount:kube-system:replicaset-controller"' in e.value.message
    gc = clientset(api, identities.controller_user("generic-garbage-collector"))
    await gc.apps_v1().deployments("default").delete("web")           # the GC deletes anything
    assert (await call(api, ADMIN, "GET", "/apis/apps/v1/namespaces/default/deployments/web"))[0] == 404


async def test_nodes_need_the_node_authorizer_or_kubeplanes_binding(api: APIServer) -> None:
    # its own Node (NodeRestriction refuses any other): system:node:kubeplane's
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kubeplane"}}
    status, body = await call(api, identities.KUBELET, "POST", "/api/v1/nodes", node)
    assert status == 403          # upstream's system:node binding has no subjects
    from kubeplane.apiserver.authorization.rbac.reconcile import ensure_objects
    await ensure_objects(api, identities.kubeadm_policy(node_authorizer=False))
    assert (await call(api, identities.KUBELET, "POST", "/api/v1/nodes", node))[0] == 201


async def test_kubeadm_admins_and_the_token_user_are_cluster_admins(api: APIServer) -> None:
    from kubeplane.apiserver.authorization.rbac.reconcile import ensure_objects
    await ensure_objects(api, identities.kubeadm_policy(node_authorizer=True))
    for user in (authenticated("kubernetes-admin", "kubeadm:cluster-admins"),
                 authenticated("kubernetes-admin", "kubeadm:cluster-admins", "system:masters")):
        assert (await call(api, user, "GET", "/api/v1/namespaces/kube-system/secrets"))[0] == 200
        assert (await call(api, user, "GET", "/metrics"))[0] == 200
    assert (await call(api, authenticated("kubernetes-admin"), "GET", "/api/v1/secrets"))[0] == 403


async def test_resource_names_reach_list_and_watch_through_the_name_field_selector(api: APIServer) -> None:
    """A rule limited to resourceNames allows list/watch/deletecollection only of a request that
    names the object: a list or watch by `fieldSelector=metadata.name=<name>` does (upstream's
    RequestInfo takes its name from there), a bare list does not."""
    r = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "web-only"},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["web"],
                       "verbs": ["get", "list", "watch", "deletecollection"]}]}
    assert (await call(api, ADMIN, "POST", f"{r}/roles", role))[0] == 201
    rb = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "jane-web"},
          "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "web-only"},
          "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"}]}
    assert (await call(api, ADMIN, "POST", f"{r}/rolebindings", rb))[0] == 201
    cms = "/api/v1/namespaces/default/configmaps"
    assert (await call(api, JANE, "GET", f"{cms}/web"))[0] == 404          # allowed: none stored
    assert (await call(api, JANE, "GET", cms, query="fieldSelector=metadata.name%3Dweb"))[0] == 200
    status, body = await call(api, JANE, "GET", cms, query="fieldSelector=metadata.name%3Dother")
    assert (status, body["message"]) == (403, 'configmaps "other" is forbidden: User "jane" cannot list resource '
                                              '"configmaps" in API group "" in the namespace "default"')
    status, body = await call(api, JANE, "GET", cms)
    assert (status, body["message"]) == (403, 'configmaps is forbidden: User "jane" cannot list resource '
                                              '"configmaps" in API group "" in the namespace "default"')
    assert (await call(api, JANE, "DELETE", cms))[0] == 403         # deletecollection names nothing
