"""The clusterrole-aggregation controller: a ClusterRole labelled aggregate-to-view reaches
view, then edit and admin (view aggregates into edit, edit into admin), and leaves them when
deleted. Upstream: clusterroleaggregation_controller_test.go (TestSyncClusterRole's cases:
rules in name order, no duplicates, the aggregated role itself left out)."""
from __future__ import annotations

import asyncio
from typing import Any

from kubeplane.api.rbac_aggregation import aggregated_rules
from kubeplane.apiserver.authentication.user import APISERVER
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.options import ServerRunOptions
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.cmd import identities
from kubeplane.controller.clusterroleaggregation import ClusterRoleAggregationController
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
