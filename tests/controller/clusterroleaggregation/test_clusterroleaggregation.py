"""The clusterrole-aggregation controller. Upstream: clusterroleaggregation_controller_test.go
(TestSyncClusterRole: its table, run with server-side apply and with a server answering the
apply 415, where the controller falls back to an update), and a ClusterRole labelled
aggregate-to-view reaching view, then edit and admin, and leaving them when deleted.

The table's rules name apiGroups [""] where upstream's have none: the fake clientset is a real
API server, whose validation wants a resource rule's apiGroups (upstream's fake tracker does not
validate)."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.api.rbac_aggregation import aggregated_rules
from kubeplane.api.resources import lookup
from kubeplane.apiserver.authentication.user import APISERVER
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.listers import ClusterRoleLister
from kubeplane.client.tools.cache.store import Indexer
from kubeplane.cmd import identities
from kubeplane.controller.clusterroleaggregation import ClusterRoleAggregationController
from kubeplane.testing.fake import FakeClientset
from kubeplane.storage import new_storage

G = "rbac.authorization.k8s.io"
R1 = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
R2 = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}


def cr(name: str, *rules: dict[str, Any], labels: dict[str, str] | None = None, agg: str = "") -> dict[str, Any]:
    o: dict[str, Any] = {"metadata": {"name": name, "labels": labels or {}}, "rules": list(rules)}
    if agg:
        o["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {agg: "true"}}]}
    return o


def test_aggregated_rules_upstream_cases() -> None:
    target = cr("target", R2, agg="foo")
    assert aggregated_rules(cr("plain", R1), []) is None
    roles = [target, cr("b", R1, R2, labels={"foo": "true"}), cr("a", R1, labels={"foo": "true"}), cr("c", R2)]
    assert aggregated_rules(target, roles) == [R1, R2]           # a then b, R1 once; not target's own
    assert aggregated_rules(cr("t", agg="none"), roles) == []


def rules(verb: str, *resources: str) -> list[dict[str, Any]]:
    return [{"verbs": [verb], "apiGroups": [""], "resources": [r]} for r in resources]


HAMMER, CHISEL, SAW = rules("hammer", "nails", "wedges"), rules("chisel", "mortises"), rules("saw", "boards")


def role(name: str, labels: dict[str, str], rule_list: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": {"name": name, "labels": labels},
            "rules": rule_list}


def combined_role(selectors: list[dict[str, str]], *rule_lists: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": {"name": "combined"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": s} for s in selectors]},
            "rules": [r for rl in rule_lists for r in rl]}


def combined_apply_role(*rule_lists: list[dict[str, Any]]) -> dict[str, Any]:
    apply: dict[str, Any] = {"kind": "ClusterRole", "apiVersion": f"{G}/v1", "metadata": {"name": "combined"}}
    if any(rule_lists):
        apply["rules"] = [r for rl in rule_lists for r in rl]
    return apply


BAR, NOT_BAR = {"foo": "bar"}, {"foo": "not-bar"}
# name, starting roles, expected rules of "combined" (None: nothing written)
SYNC_CLUSTER_ROLE = [
    ("remove dead rules", [role("hammer", BAR, HAMMER), combined_role([BAR], SAW)], [HAMMER]),
    ("strip rules", [role("hammer", NOT_BAR, HAMMER), combined_role([BAR], HAMMER)], []),
    ("select properly and put in order",
     [role("hammer", BAR, HAMMER), role("chisel", BAR, CHISEL), role("saw", NOT_BAR, SAW), combined_role([BAR])],
     [CHISEL, HAMMER]),
    ("select properly with multiple selectors",
     [role("hammer", BAR, HAMMER), role("chisel", BAR, CHISEL), role("saw", NOT_BAR, SAW),
      combined_role([BAR, NOT_BAR])],
     [CHISEL, HAMMER, SAW]),
    ("select properly remove duplicates",
     [role("hammer", BAR, HAMMER), role("chisel", BAR, CHISEL), role("saw", BAR, SAW), role("other-saw", NOT_BAR, SAW),
      combined_role([BAR, NOT_BAR])],
     [CHISEL, HAMMER, SAW]),
    ("no diff skip", [role("hammer", BAR, HAMMER), combined_role([BAR], HAMMER)], None),
    # not upstream's: the selectors' order, not the names', orders the rules
    ("selector order first",
     [role("hammer", BAR, HAMMER), role("saw", NOT_BAR, SAW), combined_role([NOT_BAR, BAR])],
     [SAW, HAMMER]),
]


@pytest.mark.parametrize("server_side_apply", [True, False], ids=["apply", "update-fallback"])
@pytest.mark.parametrize("name,starting,expected", SYNC_CLUSTER_ROLE, ids=[c[0] for c in SYNC_CLUSTER_ROLE])
async def test_sync_cluster_role(server_side_apply: bool, name: str, starting: list[dict[str, Any]],
                                 expected: list[list[dict[str, Any]]] | None) -> None:
    """Upstream: TestSyncClusterRole"""
    fake = await FakeClientset.new()
    try:
        indexer = Indexer()
        for obj in await fake.seed(*starting):
            indexer.add(obj)
        if not server_side_apply:
            fake.fail_on("patch", "clusterroles",
                         errors.StatusError(415, "UnsupportedMediaType", "Apply not supported"))
        c = ClusterRoleAggregationController(SharedInformerFactory(fake).rbac_v1().clusterroles(), fake)
        c.cluster_role_lister = ClusterRoleLister(indexer, lookup(G, "v1", "clusterroles"))
        await c.sync_cluster_role("combined")

        if expected is None:
            assert fake.actions == []
            return
        actions = fake.actions
        assert [(a.verb, a.resource, a.name) for a in actions] == (
            [("patch", "clusterroles", "combined")] if server_side_apply else
            [("patch", "clusterroles", "combined"), ("update", "clusterroles", "combined")])
        assert actions[0].body == combined_apply_role(*expected)
        stored = (await fake.api.storage.get("/registry/clusterroles/combined")).obj
        flat = [r for rl in expected for r in rl]
        if server_side_apply:
            if flat:        # an apply of no fields owns nothing (and leaves rules it does not own)
                managers = [(m["manager"], m["operation"]) for m in stored["metadata"]["managedFields"]]
                assert ("clusterrole-aggregation-controller", "Apply") in managers
                assert stored["rules"] == flat
        else:
            assert actions[1].body.get("rules") == (flat or None)      # the cached role, its rules replaced
            assert actions[1].body["aggregationRule"] == starting[-1]["aggregationRule"]
            assert (stored.get("rules") or []) == [r for rl in expected for r in rl]
    finally:
        await fake.api.storage.close()


async def until(cond: Any) -> None:
    for _ in range(500):
        if await cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not met")


async def test_a_crd_role_reaches_view_edit_and_admin() -> None:
    api = APIServer(new_storage("memory"), options=ServerRunOptions(authorization_modes=("RBAC",)))
    await api.bootstrap()
    controller_cs = Clientset(InProcessTransport(api, user=identities.controller_user(
        "clusterrole-aggregation-controller")))
    factory = SharedInformerFactory(Clientset(InProcessTransport(api, user=identities.KUBE_CONTROLLER_MANAGER)))
    c = ClusterRoleAggregationController(factory.rbac_v1().clusterroles(), controller_cs)
    task = asyncio.ensure_future(c.run())
    factory.start()
    admin = Clientset(InProcessTransport(api, user=APISERVER))
    crd_rule = {"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list", "watch"]}
    await admin.rbac_v1().clusterroles().create({
        "apiVersion": f"{G}/v1", "kind": "ClusterRole",
        "metadata": {"name": "widgets-view", "labels": {f"{G}/aggregate-to-view": "true"}}, "rules": [crd_rule]})

    async def everywhere(present: bool) -> bool:
        for name in ("view", "edit", "admin"):
            rules = (await api.storage.get(f"/registry/clusterroles/{name}")).obj.get("rules") or []
            if (crd_rule in rules) is not present:
                return False
        return True
    try:
        await until(lambda: everywhere(True))
        await admin.rbac_v1().clusterroles().delete("widgets-view")
        await until(lambda: everywhere(False))
    finally:
        task.cancel()
        await factory.shutdown()
        await api.storage.close()
