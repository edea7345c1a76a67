"""Keeps each ClusterRole with an aggregationRule holding the union of the rules of the
ClusterRoles its selectors pick (admin ⊇ edit ⊇ view, and whatever a CRD's author labels
`rbac.authorization.k8s.io/aggregate-to-view: "true"`).

Upstream: ClusterRoleAggregationController.syncClusterRole
(pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go): the picked roles
in name order, each rule added unless an equal one is there, written only when it differs
(as the service account clusterrole-aggregation-controller, which holds `escalate`).
Level-triggered: any ClusterRole change enqueues every aggregated ClusterRole.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec

from ...api.rbac_aggregation import aggregated_rules

log = logging.getLogger(__name__)
Obj = dict[str, Any]


class ClusterRoleAggregationController:
    def __init__(self, clusterroles: Any, client: Any) -> None:
        self.informer = clusterroles            # a ResourceInformer of clusterroles
        self.client = client
        self.queue: asyncio.Queue[str] = asyncio.Queue()
        self.pending: set[str] = set()

    def _roles(self) -> list[Obj]:
        return [r if isinstance(r, dict) else msgspec.to_builtins(r) for r in self.informer.lister().list()]

    def _enqueue_all(self, *_: Any) -> None:
        for role in self._roles():
            if role.get("aggregationRule") is not None:
                name = role["metadata"]["name"]
                if name not in self.pending:
                    self.pending.add(name)
                    self.queue.put_nowait(name)

    async def run(self) -> None:
        from ...client.tools.cache import ResourceEventHandlerFuncs
        self.informer.informer().add_event_handler(ResourceEventHandlerFuncs(
            add_func=self._enqueue_all, update_func=self._enqueue_all, delete_func=self._enqueue_all))
        while True:
            name = await self.queue.get()
            self.pending.discard(name)
            try:
                await self.sync_cluster_role(name)
            except Exception as e:                          # requeued by the next change
                log.warning("clusterrole-aggregation: %s: %s", name, e)

    async def sync_cluster_role(self, name: str) -> None:
        """Upstream: syncClusterRole"""
        roles = self._roles()
        role = next((r for r in roles if r["metadata"]["name"] == name), None)
        if role is None:
            return
        rules = aggregated_rules(role, roles)
        if rules is None or rules == (role.get("rules") or []):
            return
        await self.client.rbac_v1().clusterroles().patch(name, {"rules": rules}, "merge")
