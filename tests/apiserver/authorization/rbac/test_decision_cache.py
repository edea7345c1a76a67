"""RBAC's decision cache (rbac/authorizer.py DecisionCache) and the one-step decisions of
modes.RBACChain: every Role, ClusterRole, RoleBinding and ClusterRoleBinding created, updated or
deleted through the API changes the very next request's decision (the cache holds the previous
one until then), an aggregated ClusterRole's new rules too; the cache is keyed by the user's name
and groups (not the object), bounded, least recently used first out; decide() answers exactly
what authorize() would, or leaves it to it."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import pytest

from kubeplane.apiserver.authentication.user import APISERVER, UserInfo, authenticated
from kubeplane.apiserver.authorization import modes
from kubeplane.apiserver.authorization.authorizer import Attributes, Decision, attributes_of
from kubeplane.apiserver.authorization.rbac import PolicyIndex, RBACAuthorizer
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.request import Request, parse_request_info
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.cmd import identities
from kubeplane.controller.clusterroleaggregation import ClusterRoleAggregationController
from kubeplane.storage import new_storage

from .helpers import ADMIN, JANE, call

G = "rbac.authorization.k8s.io"
RBAC_API = f"/apis/{G}/v1"
PODS = "/api/v1/namespaces/ns1/pods"
READ_PODS = {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}
LIST_ONLY_SECRETS = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}


@pytest.fixture(params=[("RBAC",), ("Node", "RBAC")], ids=["RBAC", "Node,RBAC"])
async def api(request: Any) -> AsyncIterator[APIServer]:
    server = APIServer(new_storage("memory"), options=ServerRunOptions(
        authorization_modes=request.param, disable_admission_plugins=frozenset({"ServiceAccount"})))
    await server.bootstrap()
    assert isinstance(server.authorizer, modes.RBACChain)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}
    assert (await call(server, ADMIN, "POST", "/api/v1/namespaces", ns))[0] == 201
    yield server
    await server.storage.close()


def role(kind: str, name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": "ns1"} if kind == "Role" else {})}
    return {"apiVersion": f"{G}/v1", "kind": kind, "metadata": meta, "rules": list(rules)}


def binding(kind: str, name: str, role_kind: str, role_name: str, subject: str = "jane") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": "ns1"} if kind == "RoleBinding" else {})}
    return {"apiVersion": f"{G}/v1", "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": G, "kind": role_kind, "name": role_name},
            "subjects": [{"kind": "User", "apiGroup": G, "name": subject}]}


def path_of(obj: dict[str, Any], named: bool = False) -> str:
    plural = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
              "ClusterRoleBinding": "clusterrolebindings"}[obj["kind"]]
    ns = obj["metadata"].get("namespace")
    base = f"{RBAC_API}/namespaces/{ns}/{plural}" if ns else f"{RBAC_API}/{plural}"
    return f"{base}/{obj['metadata']['name']}" if named else base


async def write(api: APIServer, method: str, obj: dict[str, Any]) -> None:
    status, body = await call(api, ADMIN, method, path_of(obj, named=method != "POST"),
                              obj if method != "DELETE" else None)
    assert status in (200, 201), body


async def jane_lists_pods(api: APIServer) -> int:
    return (await call(api, JANE, "GET", PODS))[0]


@pytest.mark.parametrize("role_kind,binding_kind", [
    ("Role", "RoleBinding"), ("ClusterRole", "RoleBinding"), ("ClusterRole", "ClusterRoleBinding")])
async def test_every_write_of_a_role_or_binding_decides_the_next_request(
        api: APIServer, role_kind: str, binding_kind: str) -> None:
    r, b = role(role_kind, "reader", READ_PODS), binding(binding_kind, "jane-reads", role_kind, "reader")
    assert await jane_lists_pods(api) == 403              # cached: no opinion
    await write(api, "POST", r)
    assert await jane_lists_pods(api) == 403
    await write(api, "POST", b)                            # binding created
    assert await jane_lists_pods(api) == 200               # cached: allowed
    await write(api, "PUT", role(role_kind, "reader", LIST_ONLY_SECRETS))     # role updated: narrowed
    assert await jane_lists_pods(api) == 403
    await write(api, "PUT", r)
    assert await jane_lists_pods(api) == 200
    await write(api, "PUT", binding(binding_kind, "jane-reads", role_kind, "reader", subject="bob"))  # updated
    assert await jane_lists_pods(api) == 403
    await write(api, "PUT", b)
    assert await jane_lists_pods(api) == 200
    await write(api, "DELETE", r)                          # role deleted: the binding names nothing
    status, body = await call(api, JANE, "GET", PODS)
    assert status == 403 and body["message"].endswith(f'{role_kind.lower()}.{G} "reader" not found')
    await write(api, "POST", r)
    assert await jane_lists_pods(api) == 200
    await write(api, "DELETE", b)                          # binding deleted
    assert await jane_lists_pods(api) == 403


async def until(cond: Any) -> None:
    for _ in range(500):
        if await cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


async def test_an_aggregated_cluster_role_decides_with_its_new_rules(api: APIServer) -> None:
    """The clusterrole-aggregation controller writes the aggregated role like any client:
    the rules a labelled ClusterRole brings in (and takes out) decide the next request."""
    controller = ClusterRoleAggregationController(
        (factory := SharedInformerFactory(Clientset(InProcessTransport(api, user=identities.KUBE_CONTROLLER_MANAGER))))
        .rbac_v1().clusterroles(),
        Clientset(InProcessTransport(api, user=identities.controller_user("clusterrole-aggregation-controller"))))
    task = asyncio.ensure_future(controller.run())
    factory.start()
    try:
        aggregated = role("ClusterRole", "pod-people")
        aggregated["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"example.com/pods": "true"}}]}
        await write(api, "POST", aggregated)
        await write(api, "POST", binding("ClusterRoleBinding", "jane-pods", "ClusterRole", "pod-people"))
        assert await jane_lists_pods(api) == 403
        labelled = role("ClusterRole", "pod-lister", READ_PODS)
        labelled["metadata"]["labels"] = {"example.com/pods": "true"}
        await write(api, "POST", labelled)
        await until(lambda: _is(api, 200))
        await write(api, "DELETE", labelled)
        await until(lambda: _is(api, 403))
    finally:
        task.cancel()
        await factory.shutdown()


async def _is(api: APIServer, status: int) -> bool:
    return await jane_lists_pods(api) == status


async def test_decisions_are_per_name_and_groups_not_per_user_object(api: APIServer) -> None:
    await write(api, "POST", role("ClusterRole", "reader", READ_PODS))
    b = binding("ClusterRoleBinding", "devs-read", "ClusterRole", "reader")
    b["subjects"] = [{"kind": "Group", "apiGroup": G, "name": "devs"}]
    await write(api, "POST", b)
    for _ in range(2):          # either order, a new UserInfo each time (as authenticators make them)
        assert (await call(api, authenticated("jane", "devs"), "GET", PODS))[0] == 200
        assert (await call(api, authenticated("jane"), "GET", PODS))[0] == 403
        assert (await call(api, authenticated("jane", "ops"), "GET", PODS))[0] == 403
        assert (await call(api, authenticated("joe", "devs"), "GET", PODS))[0] == 200


def info_of(method: str, path: str, query: str = "") -> tuple[Any, str]:
    req = Request.build(method, path, query)
    return parse_request_info(req), req.query.get("fieldSelector", "")


REQUESTS = [("GET", PODS, ""), ("GET", f"{PODS}/a", ""), ("GET", f"{PODS}/c", ""), ("DELETE", f"{PODS}/a", ""),
            ("GET", PODS, "fieldSelector=metadata.name%3Da"), ("GET", PODS, "fieldSelector=metadata.name%3Dc"),
            ("GET", PODS, "watch=1&fieldSelector=metadata.name%3Da"), ("GET", "/api/v1/namespaces/ns2/pods", ""),
            ("GET", "/healthz", ""), ("GET", "/metrics", ""), ("POST", "/api/v1/namespaces/ns1/pods/a/eviction", ""),
            ("GET", "/api", ""),
            # a kubelet's: decided by the Node authorizer without its graph, or by RBAC
            ("PATCH", f"{PODS}/a/status", ""), ("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", ""),
            ("PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2", ""),
            ("GET", "/api/v1/nodes/n1", ""), ("GET", "/api/v1/nodes/n2", ""), ("POST", "/api/v1/namespaces/ns1/events", ""),
            ("GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn1"), ("GET", "/api/v1/namespaces/ns1/secrets/s", "")]
NODE = authenticated("system:node:n1", "system:nodes")


async def test_decide_answers_what_authorize_answers_or_leaves_it(api: APIServer) -> None:
    """Names matter where a rule lists resourceNames (a second level of entries per name, a
    list/watch named by its fieldSelector); everything else is decided once per shape."""
    named = {"apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"], "verbs": ["get", "list", "watch"]}
    await write(api, "POST", role("ClusterRole", "pod-a", named))
    await write(api, "POST", binding("ClusterRoleBinding", "jane-a", "ClusterRole", "pod-a"))
    chain = api.authorizer
    assert isinstance(chain, modes.RBACChain)
    for user in (JANE, ADMIN, identities.KUBE_SCHEDULER, NODE):
        for method, path, query in REQUESTS:
            info, selector = info_of(method, path, query)
            want = chain.authorize(attributes_of(user, info, path, selector))
            for _ in range(2):
                got = chain.decide(user, info, path, selector)
                assert got is None or got == want, (user.name, method, path, query)
            if user is not NODE or chain.node is None:
                assert got == want                # asked once: the cache answers
            else:                                 # the Node authorizer decides, or leaves it to RBAC
                assert (got is None) is (chain.node.authorize(attributes_of(user, info, path, selector))[0]
                                         is Decision.NO_OPINION)
    a, c = (chain.decide(JANE, *info_of("GET", f"{PODS}/{n}")[:1], f"{PODS}/{n}", "") for n in "ac")
    assert a is not None and a[0] is Decision.ALLOW and c == (Decision.NO_OPINION, "")


async def test_a_super_user_is_allowed_at_once_a_node_goes_to_the_node_authorizer(api: APIServer) -> None:
    chain = api.authorizer
    assert isinstance(chain, modes.RBACChain)
    path = "/api/v1/namespaces/ns1/secrets/s"
    info, _ = info_of("GET", path)
    for user in (ADMIN, APISERVER):          # system:masters: RBAC is not asked
        assert chain.decide(user, info, path, "") == (Decision.ALLOW, "")
    assert not any(k[0] in (ADMIN.name, APISERVER.name) for k in chain.rbac.cache.entries)
    node = authenticated("system:node:n1", "system:nodes")
    want = chain.authorize(attributes_of(node, info, path, ""))
    assert want[0] is not Decision.ALLOW        # no pod of n1 uses the secret
    got = chain.decide(node, info, path, "")
    assert got is None if chain.node is not None else got == want     # the graph decides, every time


def get(u: UserInfo, resource: str, ns: str = "ns1") -> Attributes:
    return Attributes(u, "get", True, ns, "", "v1", resource)


async def test_the_cache_is_bounded_least_recently_used_first_out() -> None:
    storage = new_storage("memory")
    index = PolicyIndex(storage)
    await index.start()
    authz = RBACAuthorizer(index, cache_size=4)
    await storage.create("/registry/clusterroles/reader", role("ClusterRole", "reader", {
        "apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}))
    await storage.create("/registry/clusterrolebindings/b", binding("ClusterRoleBinding", "b", "ClusterRole", "reader"))
    hot = get(JANE, "pods")
    assert authz.authorize(hot)[0] is Decision.ALLOW
    for i in range(20):                       # more shapes than the cache holds
        assert authz.authorize(get(JANE, "pods", ns=f"ns{i}"))[0] is Decision.ALLOW
        assert authz.authorize(get(JANE, "secrets", ns=f"ns{i}"))[0] is Decision.NO_OPINION
        assert authz.authorize(hot)[0] is Decision.ALLOW          # used again: stays
        assert len(authz.cache.entries) <= 4
    key = (JANE.name, JANE.groups, "get", "ns1", "", "pods", "")
    assert key in authz.cache.entries
    assert (JANE.name, JANE.groups, "get", "ns0", "", "pods", "") not in authz.cache.entries    # evicted
    index.stop()
    await storage.close()
