"""What a service uses: `services`, `count/services`, `services.nodeports` (one per port of a
NodePort or LoadBalancer service) and `services.loadbalancers`.

Charged on create and update (a service's type can change). Upstream:
pkg/quota/v1/evaluator/core/services.go.
"""
from __future__ import annotations

from collections.abc import Iterable

from ...generic import (
    AdmissionRequest,
    Obj,
    ScopeSelector,
    UsageStatsOptions,
    calculate_usage_stats,
    matches,
    matches_no_scope,
    object_count_name,
)
from ....api.quantity import ZERO, Quantity, one
from ...resources import ResourceList, intersection

SERVICE_OBJECT_COUNT_NAME = object_count_name("", "services")
SERVICE_RESOURCES = (SERVICE_OBJECT_COUNT_NAME, "services", "services.nodeports", "services.loadbalancers")


class ServiceEvaluator:
    """Upstream: serviceEvaluator."""

    def group_resource(self) -> tuple[str, str]:
        return "", "services"

    def constraints(self, required: list[str], item: Obj) -> None:
        return None

    def handles(self, a: AdmissionRequest) -> bool:
        return a.operation in ("CREATE", "UPDATE")

    def matches(self, quota: Obj, item: Obj) -> bool:
        return matches(quota, item, self.matching_resources, matches_no_scope)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return intersection(names, SERVICE_RESOURCES)

    def matching_scopes(self, item: Obj, selectors: list[ScopeSelector]) -> list[ScopeSelector]:
        return []

    def usage(self, item: Obj) -> ResourceList:
        return service_usage(item)

    def usage_stats(self, options: UsageStatsOptions, items: list[Obj]) -> ResourceList:
        return calculate_usage_stats(options, items, matches_no_scope, self.usage)


def service_usage(svc: Obj) -> ResourceList:
    """A LoadBalancer with allocateLoadBalancerNodePorts=false is charged only the node ports it
    names explicitly (none are allocated for it). Upstream: serviceEvaluator.Usage."""
    spec = svc.get("spec") or {}
    ports = spec.get("ports") or []
    result: ResourceList = {SERVICE_OBJECT_COUNT_NAME: one(), "services": one(),
                            "services.loadbalancers": ZERO, "services.nodeports": ZERO}
    kind = spec.get("type")
    if kind == "NodePort":
        result["services.nodeports"] = Quantity(len(ports))
    elif kind == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is False:
            result["services.nodeports"] = Quantity(sum(1 for p in ports if p.get("nodePort")))
        else:
            result["services.nodeports"] = Quantity(len(ports))
        result["services.loadbalancers"] = one()
    return result


def quota_service_type(svc: Obj) -> str:
    """NodePort or LoadBalancer (the types quota charges beyond the count), else "".
    Upstream: GetQuotaServiceType."""
    kind = (svc.get("spec") or {}).get("type") or ""
    return kind if kind in ("NodePort", "LoadBalancer") else ""
