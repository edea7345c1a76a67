"""Conversion between the two HorizontalPodAutoscaler APIs: autoscaling/v2 and autoscaling/v1.

Both versions serve the same objects from one storage prefix (/registry/horizontalpodautoscalers/),
as upstream; the stored form is v2 (upstream's storage version). A request on /apis/autoscaling/v1
converts on the way in (`hpa_v1_to_v2`) and on the way out (`hpa_v2_to_v1`); the registry applies
them (ResourceDefinition.to_storage/from_storage), so v1 objects are defaulted and validated as
the v2 objects they stand for (upstream validates the internal type, which is v2's shape).

autoscaling/v1 holds only `targetCPUUtilizationPercentage` and `currentCPUUtilizationPercentage`.
Whatever else v2 has travels in annotations, so a v1 client that reads an object and writes it
back loses nothing:

    autoscaling.alpha.kubernetes.io/metrics          spec.metrics other than the CPU utilization
    autoscaling.alpha.kubernetes.io/current-metrics  status.currentMetrics (all of them)
    autoscaling.alpha.kubernetes.io/conditions       status.conditions
    autoscaling.alpha.kubernetes.io/behavior         spec.behavior

The metric annotations hold autoscaling/v1's MetricSpec/MetricStatus JSON (the v2beta1 shape:
`targetAverageUtilization`, `metricName`, ...); the behavior annotation holds Go's *internal*
HorizontalPodAutoscalerBehavior marshalled without json tags (upstream has a TODO about it), so
its keys are the Go field names (`ScaleUp`, `StabilizationWindowSeconds`, ...), read back
case-insensitively as encoding/json does. A v1 object that has no metric at all gets the CPU 80%
default v1's controller used to apply implicitly. An annotation that does not decode is ignored
and dropped (a v1 write must never fail on it, and never 500).

Upstream: Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler and its
inverse, with the spec, status and metric source functions (pkg/apis/autoscaling/v1/conversion.go),
DropRoundTripHorizontalPodAutoscalerAnnotations (pkg/apis/autoscaling/helpers.go), the
annotation names (pkg/apis/autoscaling/annotations.go).
"""
from __future__ import annotations

import copy
import json
from typing import Any

from . import gojson

Obj = dict[str, Any]

V1 = "autoscaling/v1"
V2 = "autoscaling/v2"
METRIC_SPECS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
METRIC_STATUSES_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_SPECS_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
TOLERANCE_SCALE_DOWN_ANNOTATION = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
TOLERANCE_SCALE_UP_ANNOTATION = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"
ROUND_TRIP_ANNOTATIONS = (METRIC_SPECS_ANNOTATION, BEHAVIOR_SPECS_ANNOTATION, TOLERANCE_SCALE_DOWN_ANNOTATION,
                          TOLERANCE_SCALE_UP_ANNOTATION, METRIC_STATUSES_ANNOTATION, CONDITIONS_ANNOTATION)
DEFAULT_CPU_UTILIZATION = 80


# --- helpers ------------------------------------------------------------------------------

def _go_json(value: Any) -> str:
    """encoding/json.Marshal of upstream's structs (built here in their field order)."""
    return gojson.marshal(value, sort_keys=False)


def _put(out: Obj, key: str, src: Any, src_key: str) -> None:
    """Copy an optional (omitempty pointer) field when it is set."""
    if isinstance(src, dict) and src.get(src_key) is not None:
        out[key] = src[src_key]


def _d(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _ref(r: Any) -> Obj:
    """CrossVersionObjectReference: kind and name always, apiVersion omitempty."""
    r = _d(r)
    out = {"kind": r.get("kind", ""), "name": r.get("name", "")}
    if r.get("apiVersion"):
        out["apiVersion"] = r["apiVersion"]
    return out


def _identifier(name: Any, selector: Any) -> Obj:
    out = {"name": name or ""}
    if selector is not None:
        out["selector"] = selector
    return out


def _is_cpu_utilization(metric: Any) -> bool:
    m = _d(metric)
    res = _d(m.get("resource"))
    return (m.get("type") == "Resource" and res.get("name") == "cpu"
            and _d(res.get("target")).get("averageUtilization") is not None)


def drop_round_trip_annotations(meta: Obj) -> None:
    """Upstream: DropRoundTripHorizontalPodAutoscalerAnnotations (an emptied map goes away)."""
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict) or not any(k in annotations for k in ROUND_TRIP_ANNOTATIONS):
        return
    kept = {k: v for k, v in annotations.items() if k not in ROUND_TRIP_ANNOTATIONS}
    if kept:
        meta["annotations"] = kept
    else:
        del meta["annotations"]


def _annotation_json(annotations: Obj, key: str) -> Any:
    raw = annotations.get(key)
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


# --- metric specs and statuses: v2 <-> v1 (the annotations' shape) -------------------------

def _metric_spec_to_v1(m: Obj) -> Obj:
    """Convert_autoscaling_MetricSpec_To_v1_MetricSpec and the source functions."""
    out: Obj = {"type": m.get("type", "")}
    if isinstance(m.get("object"), dict):
        o, target = m["object"], _d(m["object"].get("target"))
        metric = _d(o.get("metric"))
        v: Obj = {"target": _ref(o.get("describedObject")), "metricName": metric.get("name", ""),
                  "targetValue": target.get("value") or "0"}
        _put(v, "selector", metric, "selector")
        _put(v, "averageValue", target, "averageValue")
        out["object"] = v
    if isinstance(m.get("pods"), dict):
        p = m["pods"]
        metric = _d(p.get("metric"))
        v = {"metricName": metric.get("name", ""),
             "targetAverageValue": _d(p.get("target")).get("averageValue") or "0"}
        _put(v, "selector", metric, "selector")
        out["pods"] = v
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), dict):
            r, target = m[key], _d(m[key].get("target"))
            v = {"name": r.get("name", "")}
            _put(v, "targetAverageUtilization", target, "averageUtilization")
            _put(v, "targetAverageValue", target, "averageValue")
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(m.get("external"), dict):
        e, target = m["external"], _d(m["external"].get("target"))
        metric = _d(e.get("metric"))
        v = {"metricName": metric.get("name", "")}
        _put(v, "metricSelector", metric, "selector")
        _put(v, "targetValue", target, "value")
        _put(v, "targetAverageValue", target, "averageValue")
        out["external"] = v
    return out


def _metric_spec_to_v2(m: Obj) -> Obj:
    """Convert_v1_MetricSpec_To_autoscaling_MetricSpec and the source functions."""
    out: Obj = {"type": m.get("type", "")}
    if isinstance(m.get("object"), dict):
        o = m["object"]
        target: Obj = {"type": "Value" if o.get("averageValue") is None else "AverageValue",
                       "value": o.get("targetValue") or "0"}
        _put(target, "averageValue", o, "averageValue")
        out["object"] = {"describedObject": _ref(o.get("target")),
                         "metric": _identifier(o.get("metricName"), o.get("selector")), "target": target}
    if isinstance(m.get("pods"), dict):
        p = m["pods"]
        out["pods"] = {"metric": _identifier(p.get("metricName"), p.get("selector")),
                       "target": {"type": "AverageValue", "averageValue": p.get("targetAverageValue") or "0"}}
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), dict):
            r = m[key]
            target = {"type": "AverageValue" if r.get("targetAverageUtilization") is None else "Utilization"}
            _put(target, "averageUtilization", r, "targetAverageUtilization")
            _put(target, "averageValue", r, "targetAverageValue")
            v: Obj = {"name": r.get("name", ""), "target": target}
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(m.get("external"), dict):
        e = m["external"]
        target = {"type": "AverageValue" if e.get("targetValue") is None else "Value"}
        _put(target, "value", e, "targetValue")
        _put(target, "averageValue", e, "targetAverageValue")
        out["external"] = {"metric": _identifier(e.get("metricName"), e.get("metricSelector")), "target": target}
    return out


def _metric_status_to_v1(m: Obj) -> Obj:
    """Convert_autoscaling_MetricStatus_To_v1_MetricStatus and the source functions."""
    out: Obj = {"type": m.get("type", "")}
    if isinstance(m.get("object"), dict):
        o, current = m["object"], _d(m["object"].get("current"))
        metric = _d(o.get("metric"))
        v: Obj = {"target": _ref(o.get("describedObject")), "metricName": metric.get("name", ""),
                  "currentValue": current.get("value") or "0"}
        _put(v, "selector", metric, "selector")
        _put(v, "averageValue", current, "averageValue")
        out["object"] = v
    if isinstance(m.get("pods"), dict):
        p = m["pods"]
        metric = _d(p.get("metric"))
        v = {"metricName": metric.get("name", ""),
             "currentAverageValue": _d(p.get("current")).get("averageValue") or "0"}
        _put(v, "selector", metric, "selector")
        out["pods"] = v
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), dict):
            r, current = m[key], _d(m[key].get("current"))
            v = {"name": r.get("name", "")}
            _put(v, "currentAverageUtilization", current, "averageUtilization")
            v["currentAverageValue"] = current.get("averageValue") or "0"
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(m.get("external"), dict):
        e, current = m["external"], _d(m["external"].get("current"))
        metric = _d(e.get("metric"))
        v = {"metricName": metric.get("name", "")}
        _put(v, "metricSelector", metric, "selector")
        v["currentValue"] = current.get("value") or "0"
        _put(v, "currentAverageValue", current, "averageValue")
        out["external"] = v
    return out


def _metric_status_to_v2(m: Obj) -> Obj:
    """Convert_v1_MetricStatus_To_autoscaling_MetricStatus and the source functions."""
    out: Obj = {"type": m.get("type", "")}
    if isinstance(m.get("object"), dict):
        o = m["object"]
        current: Obj = {"value": o.get("currentValue") or "0"}
        _put(current, "averageValue", o, "averageValue")
        out["object"] = {"metric": _identifier(o.get("metricName"), o.get("selector")), "current": current,
                         "describedObject": _ref(o.get("target"))}
    if isinstance(m.get("pods"), dict):
        p = m["pods"]
        out["pods"] = {"metric": _identifier(p.get("metricName"), p.get("selector")),
                       "current": {"averageValue": p.get("currentAverageValue") or "0"}}
    for key in ("resource", "containerResource"):
        if isinstance(m.get(key), dict):
            r = m[key]
            current = {"averageValue": r.get("currentAverageValue") or "0"}
            _put(current, "averageUtilization", r, "currentAverageUtilization")
            v: Obj = {"name": r.get("name", ""), "current": current}
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(m.get("external"), dict):
        e = m["external"]
        current = {"value": e.get("currentValue") or "0"}
        _put(current, "averageValue", e, "currentAverageValue")
        out["external"] = {"metric": _identifier(e.get("metricName"), e.get("metricSelector")), "current": current}
    return out


# --- behavior: v2 <-> Go's internal type without json tags --------------------------------

_RULE_KEYS = (("StabilizationWindowSeconds", "stabilizationWindowSeconds"), ("SelectPolicy", "selectPolicy"),
              ("Policies", "policies"), ("Tolerance", "tolerance"))
_POLICY_KEYS = (("Type", "type"), ("Value", "value"), ("PeriodSeconds", "periodSeconds"))


def _behavior_to_go(behavior: Obj) -> Obj:
    def rules(r: Any) -> Any:
        if not isinstance(r, dict):
            return None
        out = {go: r.get(key) for go, key in _RULE_KEYS}
        if isinstance(out["Policies"], list):
            out["Policies"] = [{"Type": _d(p).get("type", ""), "Value": _d(p).get("value", 0),
                                "PeriodSeconds": _d(p).get("periodSeconds", 0)} for p in out["Policies"]]
        return out
    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def _get_ci(obj: Obj, name: str) -> Any:
    """encoding/json's field matching: exact name first, else case-insensitive."""
    if name in obj:
        return obj[name]
    lower = name.lower()
    return next((v for k, v in obj.items() if k.lower() == lower), None)


def _behavior_from_go(raw: Any) -> Obj | None:
    """The behavior annotation back in v2's shape; None when it is not a non-zero behavior."""
    if not isinstance(raw, dict):
        return None

    def rules(r: Any) -> Obj | None:
        if not isinstance(r, dict):
            return None
        out: Obj = {}
        for go, key in _RULE_KEYS:
            v = _get_ci(r, go)
            if v is None:
                continue
            if key == "policies":
                if not isinstance(v, list):
                    continue
                v = [{k: _get_ci(_d(p), g) if _get_ci(_d(p), g) is not None else ("" if k == "type" else 0)
                      for g, k in _POLICY_KEYS} for p in v]
            out[key] = v
        return out
    out = {k: v for k, v in (("scaleUp", rules(_get_ci(raw, "ScaleUp"))),
                             ("scaleDown", rules(_get_ci(raw, "ScaleDown")))) if v is not None}
    return out or None


# --- the objects --------------------------------------------------------------------------

def hpa_v2_to_v1(obj: Obj) -> Obj:
    """A stored autoscaling/v2 HorizontalPodAutoscaler as autoscaling/v1 shows it."""
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    meta = dict(_d(obj.get("metadata")))
    drop_round_trip_annotations(meta)
    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]

    out_spec: Obj = {"scaleTargetRef": _ref(spec.get("scaleTargetRef"))}
    _put(out_spec, "minReplicas", spec, "minReplicas")
    out_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    for m in metrics:       # the first CPU resource metric (with a utilization target or not)
        res = _d(m.get("resource"))
        if m.get("type") == "Resource" and res.get("name") == "cpu":
            _put(out_spec, "targetCPUUtilizationPercentage", _d(res.get("target")), "averageUtilization")
            break

    out_status: Obj = {}
    _put(out_status, "observedGeneration", status, "observedGeneration")
    _put(out_status, "lastScaleTime", status, "lastScaleTime")
    out_status["currentReplicas"] = status.get("currentReplicas", 0)
    out_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for m in current:       # no break upstream: the last CPU utilization wins
        res = _d(m.get("resource"))
        if m.get("type") == "Resource" and res.get("name") == "cpu":
            _put(out_status, "currentCPUUtilizationPercentage", _d(res.get("current")), "averageUtilization")

    added: Obj = {}
    other = [_metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if other:
        added[METRIC_SPECS_ANNOTATION] = _go_json(other)
    if current:
        added[METRIC_STATUSES_ANNOTATION] = _go_json([_metric_status_to_v1(m) for m in current])
    if status.get("conditions"):
        added[CONDITIONS_ANNOTATION] = _go_json(status["conditions"])
    if isinstance(spec.get("behavior"), dict):
        added[BEHAVIOR_SPECS_ANNOTATION] = _go_json(_behavior_to_go(spec["behavior"]))
    if added:
        meta["annotations"] = {**_d(meta.get("annotations")), **added}

    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out.update(apiVersion=V1, metadata=meta, spec=out_spec, status=out_status)
    return out


def hpa_v1_to_v2(obj: Obj) -> Obj:
    """An autoscaling/v1 HorizontalPodAutoscaler as the autoscaling/v2 object it stands for."""
    spec, status = _d(obj.get("spec")), _d(obj.get("status"))
    meta = copy.copy(_d(obj.get("metadata")))
    annotations = _d(meta.get("annotations"))

    out_spec: Obj = {"scaleTargetRef": _ref(spec.get("scaleTargetRef"))}
    _put(out_spec, "minReplicas", spec, "minReplicas")
    out_spec["maxReplicas"] = spec.get("maxReplicas", 0)
    metrics: list[Obj] = []
    if spec.get("targetCPUUtilizationPercentage") is not None:
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    other = _annotation_json(annotations, METRIC_SPECS_ANNOTATION)
    if isinstance(other, list):         # the spec's own CPU metric goes last
        metrics = [_metric_spec_to_v2(m) for m in other if isinstance(m, dict)] + metrics
    if not metrics:                     # v1's implicit default, made explicit
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    out_spec["metrics"] = metrics
    behavior = _behavior_from_go(_annotation_json(annotations, BEHAVIOR_SPECS_ANNOTATION))
    if behavior is not None:
        out_spec["behavior"] = behavior

    out_status: Obj = {}
    _put(out_status, "observedGeneration", status, "observedGeneration")
    _put(out_status, "lastScaleTime", status, "lastScaleTime")
    if status.get("currentReplicas"):
        out_status["currentReplicas"] = status["currentReplicas"]
    out_status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current: Any = None
    if status.get("currentCPUUtilizationPercentage") is not None:
        current = [{"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    statuses = _annotation_json(annotations, METRIC_STATUSES_ANNOTATION)
    if isinstance(statuses, list):      # "the ones here have more information"
        current = [_metric_status_to_v2(m) for m in statuses if isinstance(m, dict)]
    out_status["currentMetrics"] = current
    conditions = _annotation_json(annotations, CONDITIONS_ANNOTATION)
    if isinstance(conditions, list) and conditions:
        out_status["conditions"] = conditions

    drop_round_trip_annotations(meta)
    out = {k: v for k, v in obj.items() if k not in ("spec", "status")}
    out.update(apiVersion=V2, metadata=meta, spec=out_spec, status=out_status)
    return out
