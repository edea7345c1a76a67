"""A PostFilter that explains, in upstream's words, why preemption does not help.

Upstream: plugins/defaultpreemption/default_preemption.go and framework/preemption. This
scheduler evicts nobody (a simplification): nodes that failed with Unschedulable would be
preemption candidates upstream, and here report "No preemption victims found for incoming
pod", which is upstream's answer when no lower-priority pod could make room; nodes that
failed UnschedulableAndUnresolvable report "Preemption is not helpful for scheduling".
"""
from __future__ import annotations

from typing import Any

from ....api.types.core_v1 import Pod
from ..interface import Code, CycleState, NodeToStatus, PostFilterResult, Status
from ..types import Diagnosis, FitError

NAME = "DefaultPreemption"
NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"


class DefaultPreemption:
    NAME = NAME

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def post_filter(self, state: CycleState, pod: Pod, m: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """Upstream: DefaultPreemption.PostFilter: "preemption: " + Evaluator.Preempt's message."""
        result, status = self.preempt(pod, m)
        msg = status.message()
        if msg:
            return result, Status(status.code, "preemption: " + msg)
        return result, status

    def preempt(self, pod: Pod, m: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        """Upstream: Evaluator.Preempt, reduced to the no-candidate outcome."""
        ok, msg = pod_eligible_to_preempt_others(pod)
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, msg)
        all_nodes = [ni.name for ni in self.handle.snapshot_shared_lister().node_info_list]
        potential = m.nodes_for_status_code(all_nodes, Code.UNSCHEDULABLE)
        statuses = NodeToStatus({n: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS) for n in potential},
                                Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL))
        fit_error = FitError(pod, len(all_nodes), Diagnosis(node_to_status=statuses))
        return PostFilterResult(""), Status(Code.UNSCHEDULABLE, str(fit_error))


def pod_eligible_to_preempt_others(pod: Pod) -> tuple[bool, str]:
    """Upstream: DefaultPreemption.PodEligibleToPreemptOthers (preemptionPolicy part)."""
    if pod.spec.preemption_policy == "Never":
        return False, "not eligible due to preemptionPolicy=Never."
    return True, ""
