"""TaintNodesByCondition: a node joins with the not-ready NoSchedule taint, so no pod is
scheduled onto it before it reports Ready (the node lifecycle controller then removes the
taint, controller/nodelifecycle do_no_schedule_tainting_pass).

Upstream: plugin/pkg/admission/nodetaint/admission.go (Admit, addNotReadyTaint).
"""
from __future__ import annotations

from ..chain import register
from ..interface import Attributes, Operation, Plugin

TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"


@register
class TaintNodesByCondition(Plugin):
    NAME = "TaintNodesByCondition"
    OPERATIONS = frozenset({Operation.CREATE})
    RESOURCES = frozenset({("", "nodes")})
    SUBRESOURCES = frozenset({""})
    MUTATING = True

    async def admit(self, a: Attributes) -> None:
        if not a.targets("", "nodes") or not isinstance(a.obj, dict):
            return
        spec = a.obj.setdefault("spec", {})
        taints = spec.get("taints") or []
        # Taint.MatchTaint: the same key and effect, whatever the value.
        if not any(t.get("key") == TAINT_NODE_NOT_READY and t.get("effect") == "NoSchedule" for t in taints):
            spec["taints"] = [*taints, {"key": TAINT_NODE_NOT_READY, "effect": "NoSchedule"}]
