"""Helpers shared by plugins. Upstream: framework/plugins/helper (normalize_score.go, taint.go)."""
from __future__ import annotations

from ....api.toleration import tolerates_taint
from ....api.types.core_v1 import Taint, Toleration
from ..interface import MAX_NODE_SCORE, NodeScore


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> None:
    """Scale scores to [0, max_priority] by the highest one; reverse flips them.

    Example: raw [2, 1, 0], max 100 -> [100, 50, 0]; reversed -> [0, 50, 100]. All zero
    stays zero, or becomes max_priority everywhere when reversed.
    Upstream: helper.DefaultNormalizeScore
    """
    max_count = max([s.score for s in scores], default=0)
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return
    for s in scores:
        score = max_priority * s.score // max_count
        s.score = max_priority - score if reverse else score


def tolerations_tolerate_taint(tolerations: list[Toleration], taint: Taint) -> bool:
    return any(tolerates_taint(t, taint) for t in tolerations)


def find_matching_untolerated_taint(taints: list[Taint], tolerations: list[Toleration],
                                    effects: tuple[str, ...]) -> Taint | None:
    """The first taint with one of effects that no toleration tolerates.

    Upstream: v1helper.FindMatchingUntoleratedTaint
    """
    for taint in taints:
        if taint.effect in effects and not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None


MAX = MAX_NODE_SCORE
