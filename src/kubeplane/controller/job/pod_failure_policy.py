"""Which rule of a Job's podFailurePolicy a failed pod matches, and what that means.

Upstream: pkg/controller/job/pod_failure_policy.go
"""
from __future__ import annotations

from ...api.types import batch_v1, core_v1

IGNORE, FAIL_JOB, FAIL_INDEX, COUNT = "Ignore", "FailJob", "FailIndex", "Count"


def match_pod_failure_policy(policy: batch_v1.PodFailurePolicy | None, failed_pod: core_v1.Pod
                             ) -> tuple[str | None, bool, str | None]:
    """(the Job's failure message for a FailJob rule, whether the failure counts towards
    backoffLimit, the action of the first matching rule). No policy or no matching rule:
    (None, True, None). Rules are tried in order; the first that matches decides.

    Example: rules [FailJob on exit codes In [42] of "main"], main terminated with 42 ->
    ("Container main for pod default/p failed with exit code 42 matching FailJob rule at
    index 0", True, "FailJob").
    Upstream: matchPodFailurePolicy
    """
    if policy is None:
        return None, True, None
    status = failed_pod.status or core_v1.PodStatus()
    ns, name = failed_pod.metadata.namespace, failed_pod.metadata.name
    for index, rule in enumerate(policy.rules or ()):
        if rule.on_exit_codes is not None:
            cs = match_on_exit_codes(status, rule.on_exit_codes)
            if cs is None:
                continue
            exit_code = cs.state.terminated.exit_code
            message = (f"Container {cs.name} for pod {ns}/{name} failed with exit code {exit_code} "
                       f"matching {rule.action} rule at index {index}")
        elif rule.on_pod_conditions is not None:
            cond = match_on_pod_conditions(status, rule.on_pod_conditions)
            if cond is None:
                continue
            message = f"Pod {ns}/{name} has condition {cond.type} matching {rule.action} rule at index {index}"
        else:
            continue
        if rule.action == IGNORE:
            return None, False, IGNORE
        if rule.action in (FAIL_INDEX, COUNT):
            return None, True, rule.action
        if rule.action == FAIL_JOB:
            return message, True, FAIL_JOB
    return None, True, None


def match_on_exit_codes(status: core_v1.PodStatus, req: batch_v1.PodFailurePolicyOnExitCodesRequirement
                        ) -> core_v1.ContainerStatus | None:
    """The first terminated container (app containers, then init containers) with a non-zero
    exit code the requirement matches. Upstream: matchOnExitCodes"""
    return (_matching_container(status.container_statuses, req)
            or _matching_container(status.init_container_statuses, req))


def _matching_container(statuses: list[core_v1.ContainerStatus] | None,
                        req: batch_v1.PodFailurePolicyOnExitCodesRequirement) -> core_v1.ContainerStatus | None:
    """Upstream: getMatchingContainerFromList"""
    for cs in statuses or ():
        term = cs.state.terminated if cs.state is not None else None
        if term is None:
            continue                       # still terminating: no exit code to match
        if req.container_name is not None and req.container_name != cs.name:
            continue
        code = term.exit_code or 0
        if code != 0 and _operator_matches(code, req):
            return cs
    return None


def _operator_matches(exit_code: int, req: batch_v1.PodFailurePolicyOnExitCodesRequirement) -> bool:
    """Upstream: isOnExitCodesOperatorMatching"""
    if req.operator == "In":
        return exit_code in (req.values or ())
    if req.operator == "NotIn":
        return exit_code not in (req.values or ())
    return False


def match_on_pod_conditions(status: core_v1.PodStatus,
                            patterns: list[batch_v1.PodFailurePolicyOnPodConditionsPattern]
                            ) -> core_v1.PodCondition | None:
    """The first pod condition some pattern matches (type and status). Upstream: matchOnPodConditions"""
    for cond in status.conditions or ():
        for pattern in patterns:
            if cond.type == pattern.type and cond.status == (pattern.status or "True"):
                return cond
    return None
