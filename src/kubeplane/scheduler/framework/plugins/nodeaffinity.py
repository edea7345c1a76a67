"""NodeAffinity: spec.nodeSelector and required/preferred node affinity.

Upstream: plugins/nodeaffinity/node_affinity.go and component-helpers/scheduling/corev1/
nodeaffinity (RequiredNodeAffinity, NodeSelector, PreferredSchedulingTerms).
"""
from __future__ import annotations

from ....api.nodeaffinity import RequiredNodeAffinity, get_required_node_affinity, term_matches
from ....api.types.core_v1 import Pod
from ..interface import MAX_NODE_SCORE, Code, CycleState, NodeScore, PreFilterResult, Status
from ..types import NodeInfo, unresolvable
from .helper import default_normalize_score

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
PRE_FILTER_STATE_KEY = "PreFilterNodeAffinity"
PRE_SCORE_STATE_KEY = "PreScoreNodeAffinity"
OBJECT_NAME_FIELD = "metadata.name"
__all__ = ["NodeAffinity", "RequiredNodeAffinity", "get_required_node_affinity", "term_matches"]


class NodeAffinity:
    NAME = "NodeAffinity"

    def __init__(self, handle: object = None) -> None:
        pass

    def pre_filter(self, state: CycleState, pod: Pod,
                   nodes: list[NodeInfo]) -> tuple[PreFilterResult | None, Status | None]:
        """Skip pods without constraints; narrow to nodes named by metadata.name matchFields.

        Upstream: NodeAffinity.PreFilter
        """
        spec = pod.spec
        na = spec.affinity.node_affinity if spec.affinity else None
        required = na.required_during_scheduling_ignored_during_execution if na else None
        if required is None and spec.node_selector is None:
            return None, Status(Code.SKIP)
        state.write(PRE_FILTER_STATE_KEY, get_required_node_affinity(pod))
        if required is None or not required.node_selector_terms:
            return None, None
        node_names: set[str] | None = None
        for t in required.node_selector_terms:
            term_names: set[str] | None = None
            for r in t.match_fields or ():
                if r.key == OBJECT_NAME_FIELD and r.operator == "In":
                    s = set(r.values or ())
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return None, None        # terms are ORed: this one allows every node
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return (PreFilterResult(node_names) if node_names else None), None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        try:
            required: RequiredNodeAffinity = state.read(PRE_FILTER_STATE_KEY)
        except KeyError:
            required = get_required_node_affinity(pod)
        if not required.match(node_info.node):
            return unresolvable(ERR_REASON_POD)
        return None

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status | None:
        """Skip pods without preferred terms. Upstream: NodeAffinity.PreScore"""
        na = pod.spec.affinity.node_affinity if pod.spec.affinity else None
        terms = [t for t in (na.preferred_during_scheduling_ignored_during_execution or []) if t.weight]\
            if na else []
        if not terms:
            return Status(Code.SKIP)
        state.write(PRE_SCORE_STATE_KEY, terms)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        """The sum of the weights of the preferred terms the node matches. Upstream: Score"""
        terms = state.read(PRE_SCORE_STATE_KEY)
        node = node_info.node
        return sum(t.weight for t in terms if t.preference is not None and term_matches(t.preference, node))

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None
