"""What a pod uses: compute requests and limits, extended resources, `pods` and `count/pods`.

A terminal pod (Succeeded/Failed), or one whose deletion grace period has run out, is no longer
charged compute resources (it still counts in `count/pods`, which counts what is stored).
Scopes: Terminating/NotTerminating (activeDeadlineSeconds), BestEffort/NotBestEffort (QoS),
PriorityClass (with a scopeSelector), CrossNamespacePodAffinity.

Upstream: pkg/quota/v1/evaluator/core/pods.go; the request and limit sums are
resourcehelper.PodRequests/PodLimits (k8s.io/component-helpers/resource/helpers.go): the sum
of the containers and sidecars, at least the largest init container (plus the sidecars started
before it), pod-level cpu/memory when set, plus the pod overhead.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from ....api import labels
from ....utils.clock import REAL_CLOCK, Clock, parse_rfc3339
from ... import resources as q
from ...generic import (
    AdmissionRequest,
    Obj,
    QuotaConstraintError,
    ScopeSelector,
    UsageStatsOptions,
    calculate_usage_stats,
    matches,
    matching_scopes,
    object_count_name,
)
from ....api.quantity import ZERO, one, resource_list
from ...resources import ResourceList

POD_OBJECT_COUNT_NAME = object_count_name("", "pods")

# The quota resource names a pod is charged for (plus the prefixed ones below).
POD_RESOURCES = (
    POD_OBJECT_COUNT_NAME, "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
)
HUGE_PAGES_PREFIX = "hugepages-"
REQUESTS_PREFIX = "requests."
POD_RESOURCE_PREFIXES = (HUGE_PAGES_PREFIX, REQUESTS_PREFIX + HUGE_PAGES_PREFIX)
DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"

# It was a mistake, but if a quota tracks cpu or memory, every container of an incoming pod must
# set them. Upstream: validationSet — "do not add more resources to this list!"
VALIDATION_SET = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"})

SUPPORTED_POD_LEVEL_RESOURCES = ("cpu", "memory")
QOS_COMPUTE_RESOURCES = ("cpu", "memory")

_SELECTOR_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def is_native_resource(name: str) -> bool:
    """No domain, or the kubernetes.io domain. Upstream: helper.IsNativeResource."""
    return "/" not in name or DEFAULT_NAMESPACE_PREFIX in name


def is_extended_resource_name(name: str) -> bool:
    """Upstream: helper.IsExtendedResourceName (the qualified-name check left to validation)."""
    return not is_native_resource(name) and not name.startswith(REQUESTS_PREFIX)


def is_extended_resource_name_for_quota(name: str) -> bool:
    """Extended resources are quota'd as `requests.<name>` only (no overcommit)."""
    return not is_native_resource(name) and name.startswith(REQUESTS_PREFIX)


@dataclass
class PodEvaluator:
    """Upstream: podEvaluator."""

    clock: Clock = REAL_CLOCK

    def group_resource(self) -> tuple[str, str]:
        return "", "pods"

    def constraints(self, required: list[str], item: Obj) -> None:
        """Every container must set what a cpu/memory quota tracks. Upstream: Constraints."""
        required_set = set(required) & VALIDATION_SET
        missing: dict[str, set[str]] = {}
        spec = item.get("spec") or {}
        for c in list(spec.get("containers") or ()) + list(spec.get("initContainers") or ()):
            res = c.get("resources") or {}
            have = set(pod_compute_usage_helper(resource_list(res.get("requests")), resource_list(res.get("limits"))))
            for name in required_set - have:
                missing.setdefault(name, set()).add(c.get("name", ""))
        if missing:
            parts = [f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)]
            raise QuotaConstraintError(f"must specify {'; '.join(parts)}")

    def handles(self, a: AdmissionRequest) -> bool:
        """Create, and the resize subresource's update. Upstream: Handles."""
        if a.subresource not in ("", "resize"):
            return False
        return a.operation == "CREATE" or (a.subresource == "resize" and a.operation == "UPDATE")

    def matches(self, quota: Obj, item: Obj) -> bool:
        return matches(quota, item, self.matching_resources, pod_matches_scope)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return list(_pod_matching_resources(tuple(names)))

    def matching_scopes(self, item: Obj, selectors: list[ScopeSelector]) -> list[ScopeSelector]:
        return matching_scopes(item, selectors, pod_matches_scope)

    def usage(self, item: Obj) -> ResourceList:
        return pod_usage(item, self.clock.now())

    def usage_stats(self, options: UsageStatsOptions, items: list[Obj]) -> ResourceList:
        return calculate_usage_stats(options, items, pod_matches_scope, self.usage)


@functools.lru_cache(maxsize=1024)
def _pod_matching_resources(names: tuple[str, ...]) -> tuple[str, ...]:
    """Cached: every request is matched against the same few quotas' names."""
    result = q.intersection(names, POD_RESOURCES)
    for name in names:
        if q.contains_prefix(POD_RESOURCE_PREFIXES, name) or is_extended_resource_name_for_quota(name):
            result.append(name)
    return tuple(result)


def pod_compute_usage_helper(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """The quota names one set of requests/limits is charged to. Upstream: podComputeUsageHelper."""
    result: ResourceList = {"pods": one()}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            result[name] = requests[name]
            result[REQUESTS_PREFIX + name] = requests[name]
        if name in limits:
            result["limits." + name] = limits[name]
    for name, request in requests.items():
        if name.startswith(HUGE_PAGES_PREFIX):
            result[name] = request
            result[REQUESTS_PREFIX + name] = request
        if is_extended_resource_name(name):
            result[REQUESTS_PREFIX + name] = request
    return result


def _add_into(acc: ResourceList, new: ResourceList) -> None:
    for k, v in new.items():
        acc[k] = acc[k].add(v) if k in acc else v


def _max_into(acc: ResourceList, new: ResourceList) -> None:
    for k, v in new.items():
        if k not in acc or v > acc[k]:
            acc[k] = v


def _aggregate(spec: Obj, field: str) -> ResourceList:
    """Containers summed; each init container counted with the sidecars started before it, the
    largest of those a floor. Example: containers 1 cpu, sidecar 500m, then an init container of
    2 cpu: sum 1.5, the init step needs 2.5 (2 + the sidecar), so the pod requests 2500m.
    Upstream: AggregateContainerRequests / AggregateContainerLimits."""
    total: ResourceList = {}
    for c in spec.get("containers") or ():
        _add_into(total, resource_list((c.get("resources") or {}).get(field)))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for c in spec.get("initContainers") or ():
        rl = resource_list((c.get("resources") or {}).get(field))
        if c.get("restartPolicy") == "Always":
            _add_into(total, rl)
            _add_into(sidecars, rl)
            step = dict(sidecars)
        else:
            step = dict(rl)
            _add_into(step, sidecars)
        _max_into(init_max, step)
    _max_into(total, init_max)
    return total


def pod_resources(spec: Obj, field: str) -> ResourceList:
    """The containers' aggregate requests or limits (field), the pod-level ones in their place
    where the pod sets them; no overhead (LimitRanger judges this)."""
    total = _aggregate(spec, field)
    pod_level = resource_list((spec.get("resources") or {}).get(field))
    for name in SUPPORTED_POD_LEVEL_RESOURCES:
        if name in pod_level:
            total[name] = pod_level[name]
    return total


def pod_requests(spec: Obj) -> ResourceList:
    """Upstream: resourcehelper.PodRequests."""
    reqs = pod_resources(spec, "requests")
    _add_into(reqs, resource_list(spec.get("overhead")))
    return reqs


def pod_limits(spec: Obj) -> ResourceList:
    """Upstream: resourcehelper.PodLimits (the overhead only raises limits that are set)."""
    limits = pod_resources(spec, "limits")
    for name, overhead in resource_list(spec.get("overhead")).items():
        if name in limits and not limits[name].is_zero():
            limits[name] = limits[name].add(overhead)
    return limits


def quota_v1_pod(pod: Obj, now: float) -> bool:
    """Whether the pod is charged compute resources: not terminal, and not past its deletion
    grace period (a pod stuck terminating on a lost node must not block its replacement).
    Upstream: QuotaV1Pod."""
    if (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        return False
    meta = pod.get("metadata") or {}
    deleted_at, grace = meta.get("deletionTimestamp"), meta.get("deletionGracePeriodSeconds")
    if deleted_at and grace is not None:
        if now > parse_rfc3339(deleted_at) + grace:
            return False
    return True


def pod_usage(pod: Obj, now: float) -> ResourceList:
    """`count/pods` always; compute resources while the pod is charged. Upstream: PodUsageFunc."""
    result: ResourceList = {POD_OBJECT_COUNT_NAME: one()}
    if not quota_v1_pod(pod, now):
        return result
    spec = pod.get("spec") or {}
    return q.add(result, pod_compute_usage_helper(pod_requests(spec), pod_limits(spec)))


def is_best_effort(spec: Obj) -> bool:
    """No container (nor the pod level) requests or limits a positive cpu or memory.
    Upstream: qos.GetPodQOS == BestEffort."""
    sources = [c.get("resources") or {} for c in
               list(spec.get("containers") or ()) + list(spec.get("initContainers") or ())]
    sources.append(spec.get("resources") or {})
    for res in sources:
        for field in ("requests", "limits"):
            rl = resource_list(res.get(field))
            if any(rl.get(name, ZERO).value > 0 for name in QOS_COMPUTE_RESOURCES):
                return False
    return True


def is_terminating(spec: Obj) -> bool:
    ads = spec.get("activeDeadlineSeconds")
    return ads is not None and ads >= 0


def _cross_namespace_term(term: Obj) -> bool:
    return bool(term.get("namespaces")) or term.get("namespaceSelector") is not None


def uses_cross_namespace_pod_affinity(spec: Obj) -> bool:
    """A pod (anti-)affinity term naming other namespaces or a namespace selector."""
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = affinity.get(kind) or {}
        if any(_cross_namespace_term(t) for t in a.get("requiredDuringSchedulingIgnoredDuringExecution") or ()):
            return True
        if any(_cross_namespace_term(w.get("podAffinityTerm") or {})
               for w in a.get("preferredDuringSchedulingIgnoredDuringExecution") or ()):
            return True
    return False


def scope_selector_matches(selector: ScopeSelector, value: str | None) -> bool:
    """The requirement as a label selector on {scopeName: value} (no label when value is None).
    Upstream: helper.ScopedResourceSelectorRequirementsAsSelector + Matches."""
    op = _SELECTOR_OPS.get(selector.get("operator", ""))
    if op is None:
        return False
    key = selector.get("scopeName", "")
    req = labels.Requirement(key, op, tuple(selector.get("values") or ()))
    return req.matches({key: value} if value is not None else {})


def pod_matches_scope(selector: ScopeSelector, pod: Obj) -> bool:
    """Upstream: podMatchesScopeFunc."""
    spec = pod.get("spec") or {}
    scope = selector.get("scopeName")
    if scope == "Terminating":
        return is_terminating(spec)
    if scope == "NotTerminating":
        return not is_terminating(spec)
    if scope == "BestEffort":
        return is_best_effort(spec)
    if scope == "NotBestEffort":
        return not is_best_effort(spec)
    if scope == "PriorityClass":
        pc = spec.get("priorityClassName") or ""
        if selector.get("operator") == "Exists":
            return bool(pc)
        return scope_selector_matches(selector, pc or None)
    if scope == "CrossNamespacePodAffinity":
        return uses_cross_namespace_pod_affinity(spec)
    return False
