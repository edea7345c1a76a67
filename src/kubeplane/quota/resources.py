"""ResourceList arithmetic for quota: quantities compared numerically, sums in upstream's format.

A ResourceList here is a dict from resource name to Quantity; `parse_list`/`to_json` convert
from/to the JSON form objects carry ({"cpu": "500m"}).

Upstream: staging/src/k8s.io/apiserver/pkg/quota/v1/resources.go.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..api.quantity import ZERO, Quantity, parse

ResourceList = dict[str, Quantity]


def parse_list(rl: Mapping[str, Any] | None) -> ResourceList:
    """The JSON form of a ResourceList parsed; ValueError if a quantity is malformed."""
    return {k: parse(v) for k, v in (rl or {}).items()}


def to_json(rl: ResourceList) -> dict[str, str]:
    """Each quantity in its canonical form, as upstream serialises a ResourceList."""
    return {k: str(v) for k, v in rl.items()}


def equals(a: ResourceList, b: ResourceList) -> bool:
    """Same names, numerically equal values. Upstream: Equals."""
    return len(a) == len(b) and all(k in b and v == b[k] for k, v in a.items())


def less_than_or_equal(a: ResourceList, b: ResourceList) -> tuple[bool, list[str]]:
    """Whether a <= b for each name in b (names missing from a pass), and the names of a that
    exceed b. Upstream: LessThanOrEqual."""
    exceeded = [k for k, v in b.items() if k in a and a[k] > v]
    return not exceeded, exceeded


def max_(a: ResourceList, b: ResourceList) -> ResourceList:
    """The larger value of each name. Upstream: Max."""
    result = {k: (b[k] if k in b and v <= b[k] else v) for k, v in a.items()}
    for k, v in b.items():
        result.setdefault(k, v)
    return result


def add(a: ResourceList, b: ResourceList) -> ResourceList:
    """a + b for each name (a name in one list only keeps its value). Upstream: Add."""
    result = {k: (v.add(b[k]) if k in b else v) for k, v in a.items()}
    for k, v in b.items():
        result.setdefault(k, v)
    return result


def subtract(a: ResourceList, b: ResourceList) -> ResourceList:
    """a - b for each name (a name only in b comes out negated). Upstream: Subtract."""
    result = {k: (v.sub(b[k]) if k in b else v) for k, v in a.items()}
    for k, v in b.items():
        if k not in result:
            result[k] = v.neg()
    return result


def subtract_with_non_negative_result(a: ResourceList, b: ResourceList) -> ResourceList:
    """a - b with negative results (and names only in b) as zero. Upstream:
    SubtractWithNonNegativeResult."""
    result: ResourceList = {}
    for k, v in a.items():
        q = v.sub(b[k]) if k in b else v
        result[k] = q if q.value > 0 else ZERO
    for k in b:
        result.setdefault(k, ZERO)
    return result


def mask(resources: ResourceList, names: Iterable[str]) -> ResourceList:
    """Only the given names. Upstream: Mask."""
    keep = set(names)
    return {k: v for k, v in resources.items() if k in keep}


def resource_names(resources: Mapping[str, Any]) -> list[str]:
    return list(resources)


def contains(items: Iterable[str], item: str) -> bool:
    return item in items


def contains_prefix(prefixes: Iterable[str], item: str) -> bool:
    return any(item.startswith(p) for p in prefixes)


def intersection(a: Iterable[str], b: Iterable[str]) -> list[str]:
    """Names in both, deduplicated and sorted. Upstream: Intersection."""
    bs = set(b)
    return sorted({x for x in a if x in bs})


def difference(a: Iterable[str], b: Iterable[str]) -> list[str]:
    """Names of a not in b, deduplicated and sorted. Upstream: Difference."""
    bs = set(b)
    return sorted({x for x in a if x not in bs})


def is_zero(a: ResourceList) -> bool:
    return all(v.is_zero() for v in a.values())


def remove_zeros(a: ResourceList) -> ResourceList:
    return {k: v for k, v in a.items() if not v.is_zero()}


def is_negative(a: ResourceList) -> list[str]:
    return [k for k, v in a.items() if v.value < 0]


def pretty_print(item: ResourceList) -> str:
    """`cpu=100m,pods=1`, sorted by name. Upstream: prettyPrint (admission controller.go)."""
    return ",".join(f"{k}={item[k]}" for k in sorted(item))


def pretty_print_resource_names(names: Iterable[str]) -> str:
    return ",".join(sorted(names))
