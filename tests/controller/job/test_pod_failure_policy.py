"""podFailurePolicy: upstream's matchPodFailurePolicy table (pod_failure_policy_test.go) and
the sync outcomes of TestSyncJobWithJobPodFailurePolicy, as facts."""
from __future__ import annotations

import pytest

from kubeplane.api.types import batch_v1, core_v1
from kubeplane.controller.job.pod_failure_policy import match_pod_failure_policy

from job_testutil import conditions, new_fixture, new_job, new_pod

Rule = batch_v1.PodFailurePolicyRule
OnExit = batch_v1.PodFailurePolicyOnExitCodesRequirement
OnCond = batch_v1.PodFailurePolicyOnPodConditionsPattern


def failed_pod(*statuses: tuple[str, int | None], init: tuple[str, int] | None = None,
               conds: list[tuple[str, str]] | None = None) -> core_v1.Pod:
    def cs(name: str, code: int | None) -> core_v1.ContainerStatus:
        state = (core_v1.ContainerState(terminated=core_v1.ContainerStateTerminated(exit_code=code))
                 if code is not None else core_v1.ContainerState(running=core_v1.ContainerStateRunning()))
        return core_v1.ContainerStatus(name=name, image="i", image_id="", ready=False, restart_count=0, state=state)
    status = core_v1.PodStatus(phase="Failed", container_statuses=[cs(n, c) for n, c in statuses],
                               conditions=[core_v1.PodCondition(type=t, status=s) for t, s in conds or ()])
    if init is not None:
        status.init_container_statuses = [cs(*init)]
    from kubeplane.api.types import meta_v1
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name="mypod", namespace="default"), status=status)


def policy(*rules: Rule) -> batch_v1.PodFailurePolicy:
    return batch_v1.PodFailurePolicy(rules=list(rules))


def exit_rule(action: str, values: list[int], op: str = "In", container: str | None = None) -> Rule:
    return Rule(action=action, on_exit_codes=OnExit(container_name=container, operator=op, values=values))


def cond_rule(action: str, type_: str = "DisruptionTarget", status: str = "True") -> Rule:
    return Rule(action=action, on_pod_conditions=[OnCond(type=type_, status=status)])


MSG = "Container main for pod default/mypod failed with exit code {} matching FailJob rule at index {}"


@pytest.mark.parametrize("pol,pod,want", [
    pytest.param(None, failed_pod(("main", 2)), (None, True, None), id="no-policy"),
    pytest.param(policy(exit_rule("FailJob", [1, 2, 3])), failed_pod(("main", 2)),
                 (MSG.format(2, 0), True, "FailJob"), id="fail-job-in"),
    pytest.param(policy(exit_rule("FailJob", [1, 2, 3], "NotIn")), failed_pod(("main", 42)),
                 (MSG.format(42, 0), True, "FailJob"), id="fail-job-not-in"),
    pytest.param(policy(exit_rule("FailJob", [1, 2, 3], "NotIn")), failed_pod(("main", 2)), (None, True, None),
                 id="not-in-excludes"),
    pytest.param(policy(exit_rule("FailJob", [1], "NotIn")), failed_pod(("main", 0)), (None, True, None),
                 id="exit-0-never-matches"),
    pytest.param(policy(exit_rule("Ignore", [1, 2, 3])), failed_pod(("main", 1)), (None, False, "Ignore"),
                 id="ignore"),
    pytest.param(policy(exit_rule("Count", [1])), failed_pod(("main", 1)), (None, True, "Count"), id="count"),
    pytest.param(policy(exit_rule("FailIndex", [1])), failed_pod(("main", 1)), (None, True, "FailIndex"),
                 id="fail-index"),
    pytest.param(policy(exit_rule("FailJob", [1], container="other")), failed_pod(("main", 1)), (None, True, None),
                 id="other-container"),
    pytest.param(policy(exit_rule("FailJob", [5], container="main")), failed_pod(("side", 1), ("main", 5)),
                 (MSG.format(5, 0), True, "FailJob"), id="named-container"),
    pytest.param(policy(exit_rule("Ignore", [7]), exit_rule("FailJob", [5])), failed_pod(("main", 5)),
                 (MSG.format(5, 1), True, "FailJob"), id="second-rule"),
    pytest.param(policy(exit_rule("Ignore", [5]), exit_rule("FailJob", [5])), failed_pod(("main", 5)),
                 (None, False, "Ignore"), id="first-matching-rule-wins"),
    pytest.param(policy(exit_rule("FailJob", [42])), failed_pod(("main", None), init=("setup", 42)),
                 ("Container setup for pod default/mypod failed with exit code 42 matching FailJob rule at index 0",
                  True, "FailJob"), id="init-container"),
    pytest.param(policy(exit_rule("FailJob", [1])), failed_pod(("main", None)), (None, True, None),
                 id="still-running"),
    pytest.param(policy(cond_rule("Ignore")), failed_pod(("main", 137), conds=[("DisruptionTarget", "True")]),
                 (None, False, "Ignore"), id="ignore-disruption"),
    pytest.param(policy(cond_rule("FailJob")), failed_pod(("main", 137), conds=[("DisruptionTarget", "True")]),
                 ("Pod default/mypod has condition DisruptionTarget matching FailJob rule at index 0", True, "FailJob"),
                 id="fail-job-on-condition"),
    pytest.param(policy(cond_rule("FailJob")), failed_pod(("main", 137), conds=[("DisruptionTarget", "False")]),
                 (None, True, None), id="condition-status-differs"),
])
def test_match_pod_failure_policy(pol, pod, want) -> None:
    assert match_pod_failure_policy(pol, pod) == want


async def test_fail_job_rule_fails_the_job_with_its_message() -> None:
    f = await new_fixture()
    job = new_job(2, 2, pod_failure_policy=policy(exit_rule("FailJob", [5])), pod_replacement_policy="Failed")
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", name="a", exit_code=5), new_pod(job, "Running", name="b"))
    assert await f.sync(job) is None
    msg = "Container c for pod default/a failed with exit code 5 matching FailJob rule at index 0"
    # the running pod is deleted: the Job fails once it is gone
    assert conditions(f.actual) == [("FailureTarget", "True", "PodFailurePolicy", msg)]
    assert f.pod_control.delete_pod_name == ["b"] and f.actual.status.terminating == 1
    assert f.actual.status.failed == 2 and not f.pod_control.templates
    # next sync: the pod is gone; FailureTarget becomes Failed with the same reason and message
    job2 = f.actual.deep_copy()
    f2 = await new_fixture()
    f2.add_job(job2)
    assert await f2.sync(job2) is None
    assert conditions(f2.actual) == [("FailureTarget", "True", "PodFailurePolicy", msg),
                                     ("Failed", "True", "PodFailurePolicy", msg)]
    assert f2.recorder.events == [f"Warning PodFailurePolicy {msg}"]


async def test_ignored_failure_is_not_counted_and_the_pod_replaced() -> None:
    f = await new_fixture()
    job = new_job(1, 1, backoff_limit=0, pod_failure_policy=policy(cond_rule("Ignore")))
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", name="a", exit_code=137,
                       conditions=[core_v1.PodCondition(type="DisruptionTarget", status="True")]))
    assert await f.sync(job) is None
    assert (f.actual.status.failed or 0) == 0 and conditions(f.actual) == []
    assert len(f.pod_control.templates) == 1 and len(f.pod_control.patches) == 1


async def test_count_rule_counts_against_the_backoff_limit() -> None:
    f = await new_fixture()
    job = new_job(1, 1, backoff_limit=0, pod_failure_policy=policy(exit_rule("Count", [1])))
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", name="a", exit_code=1))
    assert await f.sync(job) is None
    assert conditions(f.actual) == [("FailureTarget", "True", "BackoffLimitExceeded",
                                     "Job has reached the specified backoff limit"),
                                    ("Failed", "True", "BackoffLimitExceeded",
                                     "Job has reached the specified backoff limit")]
    assert f.actual.status.failed == 1
