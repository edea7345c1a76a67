"""Required node affinity: a pod's spec.nodeSelector and required node affinity terms matched
against a Node, shared by the scheduler's NodeAffinity plugin and the DaemonSet controller.

Upstream: k8s.io/component-helpers/scheduling/corev1/nodeaffinity (RequiredNodeAffinity,
GetRequiredNodeAffinity, nodeSelectorTerm.match).
"""
from __future__ import annotations

from dataclasses import dataclass

from .types.core_v1 import Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec

OBJECT_NAME_FIELD = "metadata.name"


def _requirement_matches(r: NodeSelectorRequirement, lbls: dict[str, str]) -> bool:
    """One matchExpressions entry against node labels (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    op, key, values = r.operator, r.key or "", r.values or []
    has = key in lbls
    if op == "In":
        return has and lbls[key] in values
    if op == "NotIn":
        return not has or lbls[key] not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt") and has and len(values) == 1:
        try:
            lv, rv = int(lbls[key]), int(values[0])
        except ValueError:
            return False
        return lv > rv if op == "Gt" else lv < rv
    return False


def _field_matches(r: NodeSelectorRequirement, node: Node) -> bool:
    """matchFields supports only metadata.name with In/NotIn."""
    if r.key != OBJECT_NAME_FIELD:
        return False
    name = node.metadata.name if node.metadata is not None else None
    if r.operator == "In":
        return name in (r.values or [])
    if r.operator == "NotIn":
        return name not in (r.values or [])
    return False


def _labels(node: Node) -> dict[str, str]:
    return (node.metadata.labels if node.metadata is not None else None) or {}


def term_matches(term: NodeSelectorTerm, node: Node) -> bool:
    """All expressions and fields of a term hold; an empty term matches nothing.

    Upstream: nodeSelectorTerm.match
    """
    exprs, fields = term.match_expressions or [], term.match_fields or []
    if not exprs and not fields:
        return False
    lbls = _labels(node)
    return all(_requirement_matches(r, lbls) for r in exprs) and all(_field_matches(r, node) for r in fields)


@dataclass
class RequiredNodeAffinity:
    """nodeSelector AND (any required nodeAffinity term). Upstream: nodeaffinity.RequiredNodeAffinity"""

    label_selector: dict[str, str] | None
    terms: list[NodeSelectorTerm] | None        # None: no required node affinity

    def match(self, node: Node) -> bool:
        if self.label_selector:
            lbls = _labels(node)
            if any(lbls.get(k) != v for k, v in self.label_selector.items()):
                return False
        if self.terms is None:
            return True
        return any(term_matches(t, node) for t in self.terms)


def get_required_node_affinity(pod: Pod) -> RequiredNodeAffinity:
    """Upstream: nodeaffinity.GetRequiredNodeAffinity"""
    spec = pod.spec or PodSpec()
    terms = None
    na = spec.affinity.node_affinity if spec.affinity else None
    if na is not None and na.required_during_scheduling_ignored_during_execution is not None:
        terms = na.required_during_scheduling_ignored_during_execution.node_selector_terms or []
    return RequiredNodeAffinity(spec.node_selector, terms)
