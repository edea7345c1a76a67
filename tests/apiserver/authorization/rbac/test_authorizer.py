"""The RBAC authorizer over a memory storage: upstream's decisions and reasons
(rbac_test.go TestAuthorizer, rule.go's describers), SA subjects, resolution errors, and a
decision cache that follows every change of a Role or binding."""
from __future__ import annotations

from typing import Any, AsyncIterator

import pytest

from kubeplane.apiserver.authentication.user import ANONYMOUS, UserInfo, authenticated
from kubeplane.apiserver.authorization.authorizer import Attributes, Decision
from kubeplane.apiserver.authorization.rbac import PolicyIndex, PrivilegedGroups, RBACAuthorizer
from kubeplane.storage import new_storage

ALICE = authenticated("alice", "devs")
SA = authenticated("system:serviceaccount:ns1:robot", "system:serviceaccounts", "system:serviceaccounts:ns1")
G = "rbac.authorization.k8s.io"


def role(name: str, *rules: dict[str, Any], ns: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{G}/v1", "kind": "Role" if ns else "ClusterRole", "metadata": meta, "rules": list(rules)}


def binding(name: str, kind: str, ref: str, *subjects: dict[str, Any], ns: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": ns} if ns else {})}
    return {"apiVersion": f"{G}/v1", "kind": "RoleBinding" if ns else "ClusterRoleBinding", "metadata": meta,
            "roleRef": {"apiGroup": G, "kind": kind, "name": ref}, "subjects": list(subjects)}


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "apiGroup": G, "name": name}


def group(name: str) -> dict[str, str]:
    return {"kind": "Group", "apiGroup": G, "name": name}


def key(obj: dict[str, Any]) -> str:
    plural = {"Role": "roles", "ClusterRole": "clusterroles", "RoleBinding": "rolebindings",
              "ClusterRoleBinding": "clusterrolebindings"}[obj["kind"]]
    m = obj["metadata"]
    return f"/registry/{plural}/" + (f"{m['namespace']}/" if "namespace" in m else "") + m["name"]


def get(u: UserInfo, resource: str, ns: str = "ns1", name: str = "", verb: str = "get", group_: str = "",
        sub: str = "") -> Attributes:
    return Attributes(u, verb, True, ns, group_, "v1", resource, sub, name)


class Env:
    def __init__(self) -> None:
        self.storage = new_storage("memory")
        self.index = PolicyIndex(self.storage)
        self.authz = RBACAuthorizer(self.index)

    async def put(self, *objs: dict[str, Any]) -> None:
        for o in objs:
            if await self.storage.get(key(o)) is None:
                await self.storage.create(key(o), o)
            else:
                cur = await self.storage.get(key(o))
                await self.storage.update(key(o), o, cur.mod_revision)

    async def delete(self, o: dict[str, Any]) -> None:
        await self.storage.delete(key(o))


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    e = Env()
    await e.index.start()
    yield e
    e.index.stop()
    await e.storage.close()


POD_READER = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}


async def test_role_binding_allows_in_its_namespace_only(env: Env) -> None:
    await env.put(role("pod-reader", POD_READER, ns="ns1"),
                  binding("read", "Role", "pod-reader", user("alice"), ns="ns1"))
    assert env.authz.authorize(get(ALICE, "pods")) == (
        Decision.ALLOW, 'RBAC: allowed by RoleBinding "read/ns1" of Role "pod-reader" to User "alice"')
    assert env.authz.authorize(get(ALICE, "pods", ns="ns2")) == (Decision.NO_OPINION, "")
    assert env.authz.authorize(get(ALICE, "pods", ns="")) == (Decision.NO_OPINION, "")
    assert env.authz.authorize(get(ALICE, "pods", verb="delete")) == (Decision.NO_OPINION, "")
    assert env.authz.authorize(get(ALICE, "secrets")) == (Decision.NO_OPINION, "")
    assert env.authz.authorize(get(ALICE, "pods", sub="log")) == (Decision.NO_OPINION, "")


async def test_cluster_role_binding_to_a_group_allows_everywhere(env: Env) -> None:
    await env.put(role("reader", POD_READER), binding("devs-read", "ClusterRole", "reader", group("devs")))
    for ns in ("ns1", "ns2", ""):
        assert env.authz.authorize(get(ALICE, "pods", ns=ns)) == (
            Decision.ALLOW, 'RBAC: allowed by ClusterRoleBinding "devs-read" of ClusterRole "reader" to Group "devs"')
    assert env.authz.authorize(get(ANONYMOUS, "pods"))[0] is Decision.NO_OPINION


async def test_service_account_subject_defaults_to_the_bindings_namespace(env: Env) -> None:
    sa = {"kind": "ServiceAccount", "name": "robot"}
    await env.put(binding("robot", "ClusterRole", "reader", sa, ns="ns1"), role("reader", POD_READER),
                  binding("robot-everywhere", "ClusterRole", "reader", sa))      # no namespace: no one
    assert env.authz.authorize(get(SA, "pods")) == (
        Decision.ALLOW, 'RBAC: allowed by RoleBinding "robot/ns1" of ClusterRole "reader" to ServiceAccount "robot/ns1"')
    assert env.authz.authorize(get(SA, "pods", ns="ns2")) == (Decision.NO_OPINION, "")
    await env.put(binding("robot-everywhere", "ClusterRole", "reader", {**sa, "namespace": "ns1"}))
    assert env.authz.authorize(get(SA, "pods", ns="ns2")) == (
        Decision.ALLOW,
        'RBAC: allowed by ClusterRoleBinding "robot-everywhere" of ClusterRole "reader" to ServiceAccount "robot/ns1"')


async def test_the_first_subject_that_applies_is_named(env: Env) -> None:
    await env.put(role("reader", POD_READER),
                  binding("b", "ClusterRole", "reader", user("bob"), group("devs"), user("alice")))
    assert env.authz.authorize(get(ALICE, "pods"))[1].endswith('to Group "devs"')


async def test_missing_roles_are_the_denials_reason(env: Env) -> None:
    await env.put(binding("b", "ClusterRole", "gone", user("alice")))
    assert env.authz.authorize(get(ALICE, "pods")) == (
        Decision.NO_OPINION, 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')
    await env.put(binding("c", "Role", "gone-too", user("alice"), ns="ns1"))
    assert env.authz.authorize(get(ALICE, "pods")) == (
        Decision.NO_OPINION, 'RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, '
                             'role.rbac.authorization.k8s.io "gone-too" not found]')
    await env.put(role("reader", POD_READER), binding("d", "ClusterRole", "reader", user("alice")))
    assert env.authz.authorize(get(ALICE, "pods"))[0] is Decision.ALLOW     # rules found still allow


async def test_resource_names_decide_per_name(env: Env) -> None:
    named = {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a", "b"], "verbs": ["get"]}
    await env.put(role("cm", named), binding("cm", "ClusterRole", "cm", user("alice")))
    assert env.authz.authorize(get(ALICE, "configmaps", name="a"))[0] is Decision.ALLOW
    assert env.authz.authorize(get(ALICE, "configmaps", name="b"))[0] is Decision.ALLOW
    assert env.authz.authorize(get(ALICE, "configmaps", name="c")) == (Decision.NO_OPINION, "")
    assert env.authz.authorize(get(ALICE, "configmaps", verb="list")) == (Decision.NO_OPINION, "")
    all_cms = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}
    await env.put(role("cm", named, all_cms))
    assert env.authz.authorize(get(ALICE, "configmaps", name="c"))[0] is Decision.ALLOW


async def test_every_change_is_seen_by_the_next_decision(env: Env) -> None:
    a = get(ALICE, "pods")
    assert env.authz.authorize(a)[0] is Decision.NO_OPINION
    r, b = role("reader", POD_READER), binding("b", "ClusterRole", "reader", user("alice"))
    await env.put(r, b)
    assert env.authz.authorize(a)[0] is Decision.ALLOW
    await env.put(role("reader", {**POD_READER, "verbs": ["list"]}))       # the role narrowed
    assert env.authz.authorize(a)[0] is Decision.NO_OPINION
    await env.put(r)
    assert env.authz.authorize(a)[0] is Decision.ALLOW
    await env.delete(b)
    assert env.authz.authorize(a)[0] is Decision.NO_OPINION


async def test_an_equal_user_object_shares_the_decisions(env: Env) -> None:
    await env.put(role("reader", POD_READER), binding("b", "ClusterRole", "reader", user("alice")))
    for _ in range(3):              # a new UserInfo per request, as an authenticator makes them
        assert env.authz.authorize(get(authenticated("alice"), "pods"))[0] is Decision.ALLOW
    assert env.authz.authorize(get(authenticated("mallory"), "pods"))[0] is Decision.NO_OPINION


async def test_non_resource_urls(env: Env) -> None:
    health = {"nonResourceURLs": ["/healthz", "/livez*"], "verbs": ["get"]}
    await env.put(role("health", health), binding("health", "ClusterRole", "health", group("devs")))
    path = lambda p, v="get": Attributes(ALICE, v, False, path=p)        # noqa: E731
    assert env.authz.authorize(path("/healthz"))[0] is Decision.ALLOW
    assert env.authz.authorize(path("/livez/ping"))[0] is Decision.ALLOW
    assert env.authz.authorize(path("/metrics"))[0] is Decision.NO_OPINION
    assert env.authz.authorize(path("/healthz", "post"))[0] is Decision.NO_OPINION


def test_privileged_groups() -> None:
    z = PrivilegedGroups()
    assert z.authorize(get(authenticated("root", "system:masters"), "secrets")) == (Decision.ALLOW, "")
    assert z.authorize(get(ALICE, "secrets")) == (Decision.NO_OPINION, "")


async def test_a_watch_that_fell_out_of_the_history_is_relisted() -> None:
    """Bursts the history window between two decisions: the index lists again (in the
    background, deciding on the last state meanwhile, as a lagging informer would)."""
    import asyncio
    from kubeplane.storage.memory import MemoryStorage
    storage = MemoryStorage(history=8, history_bytes=0)
    index = PolicyIndex(storage)
    await index.start()
    authz = RBACAuthorizer(index)
    e = Env()
    e.storage, e.index, e.authz = storage, index, authz
    assert authz.authorize(get(ALICE, "pods"))[0] is Decision.NO_OPINION
    await e.put(role("reader", POD_READER), binding("b", "ClusterRole", "reader", user("alice")))
    for i in range(20):                       # the binding's event leaves the window
        await storage.create(f"/registry/configmaps/ns1/c{i}", {"metadata": {"name": f"c{i}"}})
    authz.authorize(get(ALICE, "pods"))      # finds the watch compacted: relists
    for _ in range(100):
        if authz.authorize(get(ALICE, "pods"))[0] is Decision.ALLOW:
            break
        await asyncio.sleep(0)
    assert authz.authorize(get(ALICE, "pods"))[0] is Decision.ALLOW
    index.stop()
    await storage.close()


async def test_a_malformed_stored_binding_is_a_reason_not_a_failure(env: Env) -> None:
    """Written past validation (straight into storage): upstream's error as the reason, never a 500."""
    await env.storage.create("/registry/clusterrolebindings/bad", {
        "metadata": {"name": "bad"}, "roleRef": "x", "subjects": [group("devs"), 5]})
    assert env.authz.authorize(get(ALICE, "pods")) == (
        Decision.NO_OPINION, 'RBAC: unsupported role reference kind: ""')


def test_selected_name_is_upstreams_requires_exact_match() -> None:
    """RequestInfoFactory: a list/watch's fieldSelector metadata.name=x names the request x."""
    from kubeplane.apiserver.authorization.authorizer import selected_name
    cases = {
        "metadata.name=web": "web", "metadata.name==web": "web", "metadata.name!=web": "",
        "spec.nodeName=n1,metadata.name=web": "web", "metadata.name=b,metadata.name=a": "a",
        r"metadata.name=a\,b": "a,b", "metadata.name=a,b": "",            # "b" is no term: no selector
        r"metadata.name=a\x": "", "metadata.name=..": "", "metadata.name=a/b": "", "metadata.name=a%2F": "",
        " metadata.name=web": "", "metadata.namespace=web": "", "": "",
    }
    assert {s: selected_name(s) for s in cases} == cases


async def test_reasons_quote_as_gos_percent_q(env: Env) -> None:
    """describeSubject and the binding describers use %q: printable non-ASCII stays, a quote
    is escaped; a missing role's name too. A message met twice is reported once (Aggregate)."""
    jose = authenticated("José")
    await env.put(role("reader", POD_READER), binding('le "lecteur"', "ClusterRole", "reader", user("José")))
    assert env.authz.authorize(get(jose, "pods")) == (
        Decision.ALLOW, 'RBAC: allowed by ClusterRoleBinding "le \\"lecteur\\"" of ClusterRole "reader" to User "José"')
    await env.put(binding("a", "ClusterRole", "fantôme", user("José")), binding("b", "ClusterRole", "fantôme", user("José")))
    assert env.authz.authorize(get(jose, "secrets")) == (
        Decision.NO_OPINION, 'RBAC: clusterrole.rbac.authorization.k8s.io "fantôme" not found')
