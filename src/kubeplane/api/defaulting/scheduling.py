"""scheduling.k8s.io/v1 defaulting. Upstream: pkg/apis/scheduling/v1/defaults.go."""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def set_defaults_priority_class(pc: Obj) -> None:
    """Upstream: SetDefaults_PriorityClass — preemptionPolicy defaults to PreemptLowerPriority."""
    if pc.get("preemptionPolicy") is None:
        pc["preemptionPolicy"] = "PreemptLowerPriority"
