"""The evaluator interface, the pieces every evaluator shares, and the object-count evaluator.

An evaluator knows one group/resource: which quota resource names it can account for
(`matching_resources`), what one object uses (`usage`), whether an object falls in a quota's
scopes (`matches`), and which admission requests can change usage (`handles`). Objects are the
JSON dicts the API server stores.

Upstream: quota.Evaluator (staging/src/k8s.io/apiserver/pkg/quota/v1/interfaces.go) and
generic.Matches, CalculateUsageStats, objectCountEvaluator, ObjectCountQuotaResourceNameFor
(staging/src/k8s.io/apiserver/pkg/quota/v1/generic/evaluator.go).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Protocol

from . import resources as q
from ..api.quantity import ZERO, one
from .resources import ResourceList

Obj = dict[str, Any]
ScopeSelector = Obj           # a ScopedResourceSelectorRequirement: {scopeName, operator, values}
MatchesScopeFunc = Callable[[ScopeSelector, Obj], bool]
UsageFunc = Callable[[Obj], ResourceList]


class AdmissionRequest(Protocol):
    """What an evaluator reads of an admission request (apiserver.admission.Attributes has it;
    quota sits below the API server and does not import it)."""

    @property
    def operation(self) -> str:
        """CREATE, UPDATE, DELETE or CONNECT."""
        ...

    @property
    def subresource(self) -> str: ...

    @property
    def obj(self) -> Obj | None: ...

    @property
    def old_obj(self) -> Obj | None: ...


class QuotaConstraintError(Exception):
    """An object lacks what a quota requires (`must specify limits.cpu for: app`)."""


@dataclass(frozen=True, slots=True)
class UsageStatsOptions:
    """Upstream: quota.UsageStatsOptions."""
    namespace: str
    scopes: tuple[str, ...] = ()
    scope_selector: Obj | None = None          # a ScopeSelector: {matchExpressions: [...]}
    resources: tuple[str, ...] = ()


class Evaluator(Protocol):
    """Upstream: quota.Evaluator."""

    def group_resource(self) -> tuple[str, str]:
        """The (group, plural) it measures."""
        ...

    def constraints(self, required: list[str], item: Obj) -> None:
        """Raise QuotaConstraintError if item lacks something the required names need."""
        ...

    def handles(self, a: AdmissionRequest) -> bool:
        """Whether this request can change usage."""
        ...

    def matches(self, quota: Obj, item: Obj) -> bool:
        """Whether quota (tracking one of our names, with scopes item is in) covers item."""
        ...

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        """The quota resource names among names this evaluator accounts for."""
        ...

    def matching_scopes(self, item: Obj, selectors: list[ScopeSelector]) -> list[ScopeSelector]:
        """The scope selectors item satisfies."""
        ...

    def usage(self, item: Obj) -> ResourceList:
        """What item uses."""
        ...

    def usage_stats(self, options: UsageStatsOptions, items: list[Obj]) -> ResourceList:
        """What items (every object of the resource in options.namespace) use in all."""
        ...


def object_count_name(group: str, resource: str) -> str:
    """`count/pods`, `count/deployments.apps`. Upstream: ObjectCountQuotaResourceNameFor."""
    return f"count/{resource}" if not group else f"count/{resource}.{group}"


def matches_no_scope(selector: ScopeSelector, item: Obj) -> bool:
    """Upstream: MatchesNoScopeFunc."""
    return False


def scope_selectors_of(quota: Obj) -> list[ScopeSelector]:
    """spec.scopes (each as an Exists requirement) then spec.scopeSelector's expressions.
    Upstream: getScopeSelectorsFromQuota."""
    spec = quota.get("spec") or {}
    out: list[ScopeSelector] = [{"scopeName": s, "operator": "Exists"} for s in spec.get("scopes") or ()]
    out += (spec.get("scopeSelector") or {}).get("matchExpressions") or []
    return out


def hard_names(quota: Obj) -> list[str]:
    return list(((quota.get("status") or {}).get("hard") or {}))


def matches(quota: Obj, item: Obj, matching_resources: Callable[[Iterable[str]], list[str]],
            scope_func: MatchesScopeFunc) -> bool:
    """The quota tracks one of our names (in status.hard) and item is in all its scopes.
    Upstream: generic.Matches."""
    if not matching_resources(hard_names(quota)):
        return False
    return all(scope_func(s, item) for s in scope_selectors_of(quota))


def matching_scopes(item: Obj, selectors: list[ScopeSelector], scope_func: MatchesScopeFunc) -> list[ScopeSelector]:
    return [s for s in selectors if scope_func(s, item)]


def calculate_usage_stats(options: UsageStatsOptions, items: list[Obj], scope_func: MatchesScopeFunc,
                          usage_func: UsageFunc) -> ResourceList:
    """The summed usage of the items in the options' scopes, each tracked name starting at 0.
    Upstream: CalculateUsageStats."""
    used: ResourceList = {name: ZERO for name in options.resources}
    selectors = [{"scopeName": s, "operator": "Exists"} for s in options.scopes]
    selectors += (options.scope_selector or {}).get("matchExpressions") or []
    for item in items:
        if all(scope_func(s, item) for s in selectors):
            used = q.add(used, usage_func(item))
    return used


@dataclass
class ObjectCountEvaluator:
    """Counts objects of one resource: `count/<resource>.<group>` (plus a legacy alias for a few
    core kinds: `secrets`, `configmaps`, ...). Charged on create only. Upstream:
    objectCountEvaluator / NewObjectCountEvaluator."""

    group: str
    resource: str
    alias: str = ""
    resource_names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        names = [object_count_name(self.group, self.resource)]
        if self.alias:
            names.append(self.alias)
        self.resource_names = tuple(names)

    def group_resource(self) -> tuple[str, str]:
        return self.group, self.resource

    def constraints(self, required: list[str], item: Obj) -> None:
        return None

    def handles(self, a: AdmissionRequest) -> bool:
        return not a.subresource and a.operation == "CREATE"

    def matches(self, quota: Obj, item: Obj) -> bool:
        return matches(quota, item, self.matching_resources, matches_no_scope)

    def matching_resources(self, names: Iterable[str]) -> list[str]:
        return q.intersection(names, self.resource_names)

    def matching_scopes(self, item: Obj, selectors: list[ScopeSelector]) -> list[ScopeSelector]:
        return []

    def usage(self, item: Obj) -> ResourceList:
        return {name: one() for name in self.resource_names}

    def usage_stats(self, options: UsageStatsOptions, items: list[Obj]) -> ResourceList:
        return calculate_usage_stats(options, items, matches_no_scope, self.usage)
