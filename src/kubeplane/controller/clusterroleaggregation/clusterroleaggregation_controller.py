"""Keeps each ClusterRole with an aggregationRule holding the union of the rules of the
ClusterRoles its selectors pick (admin ⊇ edit ⊇ view, and whatever a CRD's author labels
`rbac.authorization.k8s.io/aggregate-to-view: "true"`).

Upstream: ClusterRoleAggregationController
(pkg/controller/clusterroleaggregation/clusterroleaggregation_controller.go). The rules are
written by server-side apply of `{metadata: {name}, rules}` with the field manager
"clusterrole-aggregation-controller" and force, falling back to an update when the server
answers 415 (no apply); nothing is written when the rules already match. It acts as the
service account clusterrole-aggregation-controller, which holds `escalate` on clusterroles.
Since the set of ClusterRoles is small and their dependency graph unknown, any ClusterRole
event enqueues every aggregated ClusterRole.

    c = ClusterRoleAggregationController(factory.rbac_v1().clusterroles(), clientset)
    factory.start()
    await c.run()
"""
from __future__ import annotations

import logging
from typing import Any

from ...api import errors, types
from ...api.types import rbac_v1
from ...api.rbac_aggregation import RULE_FIELDS, aggregated_rules, rules_equal
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import ClusterRoleLister
from ...client.tools.cache import ResourceEventHandlerFuncs
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import forget_or_retry, process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)
Obj = dict[str, Any]
FIELD_MANAGER = "clusterrole-aggregation-controller"
WORKERS = 5          # upstream: startClusterRoleAggregationController runs it with 5 workers


def to_apply_policy_rule(rule: Obj) -> Obj:
    """Upstream: toApplyPolicyRule — a PolicyRuleApplyConfiguration (every list omitempty)."""
    return {f: list(rule[f]) for f in RULE_FIELDS if rule.get(f)}


class ClusterRoleAggregationController:
    def __init__(self, cluster_role_informer: ResourceInformer[ClusterRoleLister], cluster_role_client: Clientset,
                 *, clock: Clock = REAL_CLOCK) -> None:
        self.cluster_role_client = cluster_role_client
        self.cluster_role_lister = cluster_role_informer.lister()
        self.cluster_roles_informer = cluster_role_informer.informer()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            RateLimitingQueueOptions(name="ClusterRoleAggregator", clock=clock))
        self.sync_handler = self.sync_cluster_role          # test seam, as upstream's syncHandler
        self.cluster_roles_informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.enqueue, update_func=self.enqueue, delete_func=self.enqueue))

    def _roles(self) -> list[Obj]:
        return [types.to_dict(r) for r in self.cluster_role_lister.list()]

    def enqueue(self, *_: Any) -> None:
        """Every ClusterRole that may need aggregating. Upstream: enqueue"""
        for role in self.cluster_role_lister.list():
            if role.aggregation_rule is not None:
                self.queue.add(types.object_name(role).name)

    async def run(self, workers: int = WORKERS) -> None:
        """Wait for the informer (the caller starts it), then run the workers until cancelled.
        Upstream: Run"""
        await run_workers(self.queue, (self.cluster_roles_informer,), self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_handler, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        forget_or_retry(self.queue, log, err, key)

    async def sync_cluster_role(self, key: str) -> None:
        """Upstream: syncClusterRole"""
        try:
            shared = self.cluster_role_lister.get(key)
        except errors.NotFound:
            return
        if shared.aggregation_rule is None:
            return
        role = types.to_dict(shared)
        new_policy_rules = aggregated_rules(role, self._roles()) or []
        if rules_equal(new_policy_rules, role.get("rules") or ()):
            return
        try:
            await self.apply_cluster_roles(key, new_policy_rules)
        except errors.StatusError as err:
            if not is_unsupported_media_type(err):
                raise
            # No server-side apply on the server (upstream kept this for 1.20 servers in skew).
            await self.update_cluster_roles(role, new_policy_rules)

    async def apply_cluster_roles(self, name: str, new_policy_rules: list[Obj]) -> None:
        """Upstream: applyClusterRoles"""
        apply: Obj = {"kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1", "metadata": {"name": name}}
        if new_policy_rules:
            apply["rules"] = [to_apply_policy_rule(r) for r in new_policy_rules]
        await self.cluster_role_client.rbac_v1().clusterroles().patch(name, apply, "apply",
                                                                      field_manager=FIELD_MANAGER, force=True)

    async def update_cluster_roles(self, shared: Obj, new_policy_rules: list[Obj]) -> None:
        """Upstream: updateClusterRoles — the cached role with the new rules (null when none)."""
        cluster_role = {**shared, "rules": [dict(r) for r in new_policy_rules] or None}
        await self.cluster_role_client.rbac_v1().clusterroles().update(types.from_dict(cluster_role, rbac_v1.ClusterRole))


def is_unsupported_media_type(err: errors.StatusError) -> bool:
    """Upstream: errors.IsUnsupportedMediaType — the reason, or a 415 of an unknown reason."""
    return err.reason == "UnsupportedMediaType" or (err.code == 415 and not err.reason)
