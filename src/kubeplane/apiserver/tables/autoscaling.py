"""Table columns and row printer of HorizontalPodAutoscalers (autoscaling/v2; autoscaling/v1
objects are printed through their v2 form, as upstream prints the internal type).

Upstream: AddHandlers, formatHPAMetrics and printHorizontalPodAutoscaler
(pkg/printers/internalversion/printers.go).
"""
from __future__ import annotations

from typing import Any

from ...api.autoscaling_conversion import V1, hpa_v1_to_v2
from .columns import Column, _age, _col, _doc, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]
_SPEC = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec"
_STATUS = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus"
UNKNOWN = "<unknown>"


def hpa_columns() -> list[Column]:
    return [
        _name(),
        _col("Reference", "string", _doc(_SPEC, "scaleTargetRef")),
        _col("Targets", "string", _doc(_SPEC, "metrics")),
        _col("MinPods", "string", _doc(_SPEC, "minReplicas")),
        _col("MaxPods", "string", _doc(_SPEC, "maxReplicas")),
        _col("Replicas", "string", _doc(_STATUS, "currentReplicas")),
        _age(),
    ]


def _status_of(statuses: list[Obj], i: int, key: str) -> Obj | None:
    if len(statuses) > i and isinstance(statuses[i].get(key), dict):
        return statuses[i][key]
    return None


# A nil *resource.Quantity prints "<nil>" (Quantity.String).
NIL = "<nil>"


def _value_metric(spec: Obj, status: Obj | None) -> str:
    """An Object/External source: "(avg)" for an average value target."""
    target = spec.get("target") or {}
    current_v = (status or {}).get("current") or {}
    if target.get("averageValue") is not None:
        current = current_v.get("averageValue") or UNKNOWN if status else UNKNOWN
        return f"{current}/{target['averageValue']} (avg)"
    current = current_v.get("value", NIL) if status else UNKNOWN
    return f"{current}/{target.get('value', NIL)}"


def _resource_metric(spec: Obj, status: Obj | None) -> str:
    target = spec.get("target") or {}
    current_v = (status or {}).get("current") or {}
    name = spec.get("name", "")
    if target.get("averageValue") is not None:
        current = current_v.get("averageValue", NIL) if status else UNKNOWN
        return f"{name}: {current}/{target['averageValue']}"
    current = f"{current_v['averageUtilization']}%" if current_v.get("averageUtilization") is not None else UNKNOWN
    goal = f"{target['averageUtilization']}%" if target.get("averageUtilization") is not None else "<auto>"
    return f"{name}: {current}/{goal}"


def format_hpa_metrics(specs: list[Obj] | None, statuses: list[Obj] | None) -> str:
    """Upstream: formatHPAMetrics — at most 2 metrics, "current/target" each."""
    specs, statuses = specs or [], [s for s in statuses or [] if isinstance(s, dict)]
    if not specs:
        return "<none>"
    cells = []
    for i, spec in enumerate(specs):
        kind = spec.get("type")
        if kind == "External":
            cells.append(_value_metric(spec.get("external") or {}, _status_of(statuses, i, "external")))
        elif kind == "Object":
            cells.append(_value_metric(spec.get("object") or {}, _status_of(statuses, i, "object")))
        elif kind == "Pods":
            status = _status_of(statuses, i, "pods")
            current = ((status or {}).get("current") or {}).get("averageValue", NIL) if status else UNKNOWN
            cells.append(f"{current}/{((spec.get('pods') or {}).get('target') or {}).get('averageValue', NIL)}")
        elif kind == "Resource":
            cells.append(_resource_metric(spec.get("resource") or {}, _status_of(statuses, i, "resource")))
        elif kind == "ContainerResource":
            cells.append(_resource_metric(spec.get("containerResource") or {},
                                          _status_of(statuses, i, "containerResource")))
        else:
            cells.append("<unknown type>")
    if len(cells) > 2:
        return f"{', '.join(cells[:2])} + {len(cells) - 2} more..."
    return ", ".join(cells)


def print_hpa(obj: Obj, now: float) -> Row:
    """Either version's object: a v1 one is printed as the v2 object it stands for (upstream
    prints the internal type; tables find the printer by group and resource, whatever the
    version asked)."""
    if obj.get("apiVersion") == V1:
        obj = hpa_v1_to_v2(obj)
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    min_pods = "<unset>" if spec.get("minReplicas") is None else str(spec["minReplicas"])
    return [meta.get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
            format_hpa_metrics(spec.get("metrics"), status.get("currentMetrics")), min_pods,
            spec.get("maxReplicas", 0), status.get("currentReplicas", 0),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
