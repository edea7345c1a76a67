"""Resource quantities as the scheduler counts them: CPU in millicores, everything else in units.

Upstream: framework.Resource stores int64s from resource.Quantity's MilliValue()/Value(), which
round *up* ("1.5m" cpu -> 2 millicores, "0.5" memory -> 1 byte). The parsing is api/quantity's
(cached integers: this runs for every pod the scheduler sees).
"""
from __future__ import annotations

from typing import Any

from ..api.quantity import milli_value, value

__all__ = ["CPU", "EPHEMERAL_STORAGE", "MEMORY", "PODS", "milli_value", "resource_value", "value"]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"


def resource_value(name: str, q: Any) -> int:
    """How framework.Resource stores `name`: millicores for cpu, whole units for the rest."""
    return milli_value(q) if name == CPU else value(q)
