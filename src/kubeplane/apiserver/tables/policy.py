"""Table columns and row printer of policy/v1 PodDisruptionBudgets.

Upstream: AddHandlers and printPodDisruptionBudget (pkg/printers/internalversion/printers.go).
"""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]


def pdb_columns() -> list[Column]:
    return [
        _name(),
        _col("Min Available", "string", "The minimum number of pods that must be available."),
        _col("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
        _col("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
        _age(),
    ]


def print_pdb(obj: Obj, now: float) -> Row:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    min_available, max_unavailable = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [meta.get("name", ""),
            "N/A" if min_available is None else str(min_available),
            "N/A" if max_unavailable is None else str(max_unavailable),
            (obj.get("status") or {}).get("disruptionsAllowed", 0),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
