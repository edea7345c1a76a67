"""Resource quantities as the scheduler counts them: CPU in millicores, everything else in units.

Upstream: resource.Quantity's MilliValue()/Value(), which round *up* to the next integer
("1.5m" cpu -> 2 millicores, "0.5" memory -> 1 byte), as framework.Resource stores int64s.
"""
from __future__ import annotations

import functools
import math
from typing import Any

from ..api.validation.quantity import parse_quantity

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


@functools.lru_cache(maxsize=4096)
def _milli(value: Any) -> int:
    q = parse_quantity(value)
    return 0 if q is None else math.ceil(q * 1000)


@functools.lru_cache(maxsize=4096)
def _units(value: Any) -> int:
    q = parse_quantity(value)
    return 0 if q is None else math.ceil(q)


def milli_value(value: Any) -> int:
    """Quantity.MilliValue: "500m" -> 500, "2" -> 2000, 1 -> 1000 (malformed -> 0)."""
    return _milli(value)


def value(value: Any) -> int:
    """Quantity.Value: "1Gi" -> 1073741824, "1k" -> 1000, "100m" -> 1 (rounded up)."""
    return _units(value)


def resource_value(name: str, q: Any) -> int:
    """How framework.Resource stores `name`: millicores for cpu, whole units for the rest."""
    return milli_value(q) if name == CPU else value(q)
