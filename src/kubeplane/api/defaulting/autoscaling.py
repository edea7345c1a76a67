"""autoscaling/v2 HorizontalPodAutoscaler defaulting (autoscaling/v1 objects are converted to
v2 before they are defaulted: api/autoscaling_conversion.py).

Upstream: SetDefaults_HorizontalPodAutoscaler, SetDefaults_HorizontalPodAutoscalerBehavior,
GenerateHPAScaleUpRules / GenerateHPAScaleDownRules (pkg/apis/autoscaling/v2/defaults.go).
"""
from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

DEFAULT_CPU_UTILIZATION = 80
# These repeat the HPA's behaviour before spec.behavior existed.
SCALE_UP_RULES: Obj = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
    {"type": "Pods", "value": 4, "periodSeconds": 15},
    {"type": "Percent", "value": 100, "periodSeconds": 15}]}
# No stabilizationWindowSeconds: the controller's --horizontal-pod-autoscaler-downscale-stabilization applies.
SCALE_DOWN_RULES: Obj = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def set_defaults_hpa(hpa: Obj) -> None:
    spec = hpa.get("spec")
    if not isinstance(spec, dict):
        return
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _rules(behavior.get("scaleUp"), SCALE_UP_RULES)
        behavior["scaleDown"] = _rules(behavior.get("scaleDown"), SCALE_DOWN_RULES)


def _rules(given: Any, defaults: Obj) -> Obj:
    """Upstream: copyHPAScalingRules — every field the client set wins over the default."""
    out = copy.deepcopy(defaults)
    if isinstance(given, dict):
        for key in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
            if given.get(key) is not None:
                out[key] = given[key]
    return out
