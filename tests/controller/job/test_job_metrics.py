"""The Job controller's metrics (upstream's names and labels), read from the default registry."""
from __future__ import annotations

from prometheus_client import REGISTRY

from kubeplane.api.types import batch_v1

from job_testutil import new_fixture, new_job, new_pod


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_sync_that_creates_and_one_that_completes_are_counted() -> None:
    created = value("job_controller_job_syncs_total", completion_mode="NonIndexed", result="success",
                    action="pods_created")
    tracking = value("job_controller_job_syncs_total", completion_mode="NonIndexed", result="success",
                     action="tracking")
    finished = value("job_controller_jobs_finished_total", completion_mode="NonIndexed", result="succeeded",
                     reason="")
    pods = value("job_controller_job_pods_finished_total", completion_mode="NonIndexed", result="succeeded")
    f = await new_fixture()
    job = new_job(2, 2)
    f.add_job(job)
    assert await f.sync(job) is None
    assert value("job_controller_job_syncs_total", completion_mode="NonIndexed", result="success",
                 action="pods_created") == created + 1
    assert value("job_controller_job_sync_duration_seconds_count", completion_mode="NonIndexed",
                 result="success", action="pods_created") >= 1

    f2 = await new_fixture()
    done = new_job(2, 2)
    f2.add_job(done)
    f2.add_pods(new_pod(done, "Succeeded"), new_pod(done, "Succeeded"))
    assert await f2.sync(done) is None
    # nothing left to create or delete: a tracking sync
    assert value("job_controller_job_syncs_total", completion_mode="NonIndexed", result="success",
                 action="tracking") == tracking + 1
    assert value("job_controller_jobs_finished_total", completion_mode="NonIndexed", result="succeeded",
                 reason="") == finished + 1
    assert value("job_controller_job_pods_finished_total", completion_mode="NonIndexed",
                 result="succeeded") == pods + 2


async def test_failures_handled_by_the_pod_failure_policy_are_counted_by_action() -> None:
    before = value("job_controller_pod_failures_handled_by_failure_policy_total", action="Ignore")
    f = await new_fixture()
    rule = batch_v1.PodFailurePolicyRule(action="Ignore", on_exit_codes=batch_v1.PodFailurePolicyOnExitCodesRequirement(
        operator="In", values=[3]))
    job = new_job(1, 1, pod_failure_policy=batch_v1.PodFailurePolicy(rules=[rule]))
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", exit_code=3))
    assert await f.sync(job) is None
    assert value("job_controller_pod_failures_handled_by_failure_policy_total", action="Ignore") == before + 1


async def test_a_failed_sync_is_counted_as_an_error() -> None:
    before = value("job_controller_job_syncs_total", completion_mode="NonIndexed", result="error",
                   action="pods_created")
    f = await new_fixture()
    f.pod_control.err = RuntimeError("fake error")
    job = new_job(1, 1)
    f.add_job(job)
    assert await f.sync(job) is not None
    assert value("job_controller_job_syncs_total", completion_mode="NonIndexed", result="error",
                 action="pods_created") == before + 1
