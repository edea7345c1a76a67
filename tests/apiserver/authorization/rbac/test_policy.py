"""The bootstrap policy (upstream's policy.go, controller_policy.go, namespace_policy.go), its
reconciliation at start (reconciliation's role and binding cases), Covers (upstream's
policy_comparator_test.go cases) and the escalation message."""
from __future__ import annotations

import copy
from typing import Any, AsyncIterator

import pytest

from kubeplane.apiserver.authentication.user import authenticated
from kubeplane.apiserver.authorization.rbac import bootstrappolicy as policy
from kubeplane.apiserver.authorization.rbac.reconcile import (
    bootstrap_objects, compute_reconciled_binding, compute_reconciled_role, ensure_rbac_policy)
from kubeplane.apiserver.authorization.rbac.rules import Rule
from kubeplane.apiserver.authorization.rbac.validation import compact_rules, covers
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage

Obj = dict[str, Any]


def by_name(objs: list[Obj]) -> dict[str, Obj]:
    return {(o["metadata"].get("namespace", ""), o["kind"], o["metadata"]["name"]): o for o in objs}


def test_every_object_is_labelled_and_auto_updated() -> None:
    objs = bootstrap_objects()
    assert len(by_name(objs)) == len(objs)                       # no name twice
    for o in objs:
        assert o["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert o["metadata"]["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}


def test_every_binding_refers_to_a_bootstrap_role() -> None:
    objs = by_name(bootstrap_objects())
    for (ns, kind, _), o in objs.items():
        if kind.endswith("Binding"):
            ref = o["roleRef"]
            assert (ns if ref["kind"] == "Role" else "", ref["kind"], ref["name"]) in objs


def test_upstream_facts() -> None:
    roles = {r["metadata"]["name"]: r for r in policy.cluster_roles()}
    assert roles["cluster-admin"]["rules"] == [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                                               {"verbs": ["*"], "nonResourceURLs": ["*"]}]
    assert roles["system:public-info-viewer"]["rules"] == [
        {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]}]
    assert roles["system:discovery"]["rules"][0]["nonResourceURLs"] == [
        "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz",
        "/version", "/version/"]
    assert roles["admin"]["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]}
    assert roles["admin"]["rules"] == []
    assert roles["edit"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"] == "true"
    assert roles["view"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    view_resources = {r for rule in roles["system:aggregate-to-view"]["rules"] for r in rule["resources"]}
    assert "secrets" not in view_resources and "pods/log" in view_resources
    bindings = {b["metadata"]["name"]: b for b in policy.cluster_role_bindings()}
    assert bindings["cluster-admin"]["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"}]
    assert "subjects" not in bindings["system:node"]
    assert [s["name"] for s in bindings["system:public-info-viewer"]["subjects"]] == [
        "system:authenticated", "system:unauthenticated"]
    controllers = {b["metadata"]["name"]: b for b in policy.controller_role_bindings()}
    assert controllers["system:controller:deployment-controller"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "deployment-controller", "namespace": "kube-system"}]


def r(verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = "") -> Rule:
    def split(s: str) -> tuple[str, ...]:
        return tuple("" if x == '""' else x for x in s.split()) if s else ()
    return Rule(split(verbs), split(groups), split(resources), split(names), split(urls))


@pytest.mark.parametrize("owner,servant,ok,missing", [
    # policy_comparator_test.go: TestCoversExactMatch, star verbs/groups/resources, subresources
    ([r("get", "v1", "builds")], [r("get", "v1", "builds")], True, []),
    ([r("*", "v1", "builds")], [r("get list", "v1", "builds")], True, []),
    ([r("get", "*", "*")], [r("get", "v1 v2", "builds pods")], True, []),
    ([r("get", "v1", "builds")], [r("get delete", "v1", "builds")], False, [r("delete", "v1", "builds")]),
    ([r("get", "v1", "*/status")], [r("get", "v1", "pods/status")], True, []),
    ([r("get", "v1", "pods")], [r("get", "v1", "pods/status")], False, [r("get", "v1", "pods/status")]),
    # resource names: unnamed covers named, named does not cover unnamed
    ([r("get", "v1", "builds")], [r("get", "v1", "builds", "foo bar")], True, []),
    ([r("get", "v1", "builds", "foo")], [r("get", "v1", "builds")], False, [r("get", "v1", "builds")]),
    ([r("get", "v1", "builds", "foo")], [r("get", "v1", "builds", "foo bar")], False,
     [r("get", "v1", "builds", "bar")]),
    # non-resource URLs with a trailing star
    ([r("get", urls="/api/*")], [r("get", urls="/api/v1 /api")], False, [r("get", urls="/api")]),
    ([r("*", urls="*")], [r("get post", urls="/healthz")], True, []),
])
def test_covers(owner: list[Rule], servant: list[Rule], ok: bool, missing: list[Rule]) -> None:
    assert covers(owner, servant) == (ok, missing)


def test_compact_rules_joins_verbs_of_one_resource() -> None:
    out = compact_rules([r("get", '""', "pods"), r("list", '""', "pods"), r("get", '""', "pods", "a"),
                         r("get", urls="/x")])
    assert r("get list", '""', "pods") in out and r("get", '""', "pods", "a") in out and len(out) == 3


def test_reconciled_role_adds_missing_rules_and_keeps_user_additions() -> None:
    expected = policy.cluster_role("r", policy.rule(("get", "list"), "", "pods"))
    existing = copy.deepcopy(expected)
    existing["rules"] = [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                         {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]
    existing["metadata"]["labels"]["mine"] = "yes"
    new = compute_reconciled_role(existing, expected)
    assert new is not None
    assert new["rules"][-1] == {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}
    assert {"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]} in new["rules"]   # extra kept
    assert new["metadata"]["labels"]["mine"] == "yes"
    assert compute_reconciled_role(new, expected) is None                  # nothing more to do
    existing["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = "false"
    assert compute_reconciled_role(existing, expected) is None             # protected


def test_reconciled_binding() -> None:
    expected = policy.cluster_role_binding("b", "r", policy.user("a"), policy.group("g"))
    existing = copy.deepcopy(expected)
    existing["subjects"] = [policy.user("someone")]
    new, recreate = compute_reconciled_binding(existing, expected)
    assert not recreate and new is not None
    assert new["subjects"] == [policy.user("someone"), policy.user("a"), policy.group("g")]
    existing["roleRef"]["name"] = "other"
    new, recreate = compute_reconciled_binding(existing, expected)
    assert recreate and new == expected


@pytest.fixture
async def api() -> AsyncIterator[APIServer]:
    server = APIServer(new_storage("memory"))
    await server.bootstrap()
    yield server
    await server.storage.close()


async def test_start_creates_the_policy_and_aggregates(api: APIServer) -> None:
    for o in bootstrap_objects():
        plural = {"ClusterRole": "clusterroles", "Role": "roles", "ClusterRoleBinding": "clusterrolebindings",
                  "RoleBinding": "rolebindings"}[o["kind"]]
        ns = o["metadata"].get("namespace")
        assert await api.storage.get(f"/registry/{plural}/" + (f"{ns}/" if ns else "") + o["metadata"]["name"])
    get = api.storage.get
    view = (await get("/registry/clusterroles/view")).obj["rules"]
    edit = (await get("/registry/clusterroles/edit")).obj["rules"]
    admin = (await get("/registry/clusterroles/admin")).obj["rules"]
    assert view == policy.cluster_roles()[[r["metadata"]["name"] for r in policy.cluster_roles()].index(
        "system:aggregate-to-view")]["rules"]
    assert all(rule in edit for rule in view) and all(rule in admin for rule in edit)
    assert {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["localsubjectaccessreviews"]} in admin


async def test_restart_restores_a_removed_rule_but_not_of_a_protected_role(api: APIServer) -> None:
    kv = await api.storage.get("/registry/clusterroles/system:basic-user")
    cut = {**kv.obj, "rules": []}
    await api.storage.update(kv.key, cut, kv.mod_revision)
    kv2 = await api.storage.get("/registry/clusterroles/system:discovery")
    protected = copy.deepcopy(kv2.obj)
    protected["rules"] = []
    protected["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] = "false"
    await api.storage.update(kv2.key, protected, kv2.mod_revision)
    await ensure_rbac_policy(api)
    assert len((await api.storage.get(kv.key)).obj["rules"]) == 3       # broken down: one verb/resource each
    assert (await api.storage.get(kv2.key)).obj["rules"] == []


def test_escalation_message() -> None:
    from kubeplane.apiserver.authorization.rbac.validation import confirm_no_escalation

    class Resolver:
        def rules_for(self, user: Any, ns: str) -> tuple[list[Rule], list[str]]:
            return [r("get", '""', "pods")], []
    msg = confirm_no_escalation(Resolver(), authenticated("jane"), "ns",  # type: ignore[arg-type]
                                [r("get list", '""', "pods secrets")])
    assert msg == ('user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not '
                   'currently held:\n{APIGroups:[""], Resources:["pods"], Verbs:["list"]}\n'
                   '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}')
