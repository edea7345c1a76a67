"""What a namespace uses of a quota's hard resources, summed over every evaluator that tracks one.

Upstream: CalculateUsage (staging/src/k8s.io/apiserver/pkg/quota/v1/resources.go).
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from . import resources as q
from .evaluator.core.registry import Registry
from .generic import Obj, UsageStatsOptions
from .resources import ResourceList

# (group, resource, namespace) -> every object of the resource in the namespace
ListItems = Callable[[str, str, str], Awaitable[list[Obj]]]


async def calculate_usage(namespace: str, scopes: list[str] | None, hard: ResourceList, registry: Registry,
                          scope_selector: Obj | None, list_items: ListItems) -> tuple[ResourceList, list[Exception]]:
    """The observed usage of the hard resources some evaluator tracks, and the errors met.

    A resource whose objects could not be listed is left out of the result (the caller keeps
    its previous value) rather than reported as zero.
    """
    hard_names = list(hard)
    evaluators = registry.for_names(hard_names)
    matched = q.intersection(hard_names, [n for e in evaluators for n in e.matching_resources(hard_names)])
    errs: list[Exception] = []
    new_usage: ResourceList = {}
    for e in evaluators:
        names = e.matching_resources(matched)
        if not names:
            continue
        options = UsageStatsOptions(namespace, tuple(scopes or ()), scope_selector, tuple(names))
        try:
            items = await list_items(*e.group_resource(), namespace)
        except Exception as err:        # noqa: BLE001 - remembered and returned, as upstream aggregates
            errs.append(err)
            matched = q.difference(matched, names)
            continue
        new_usage = q.add(new_usage, e.usage_stats(options, items))
    return q.mask(new_usage, matched), errs
