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


# --- terminated_pods_tracking_finalizer_total, job_pods_creation_total, job_finished_indexes_total,
#     jobs_by_external_controller_total ---------------------------------------------------------

def tracking(event: str) -> float:
    return value("job_controller_terminated_pods_tracking_finalizer_total", event=event)


async def test_terminated_pods_with_the_tracking_finalizer_are_counted_in_and_out() -> None:
    """TestRecordFinishedPodWithTrackingFinalizer: a finished pod with the finalizer appearing
    counts an add; losing the finalizer or going away counts a delete; a running pod nothing."""
    f = await new_fixture()
    job = new_job(1, 1)
    f.add_job(job)
    add, delete = tracking("add"), tracking("delete")
    done = new_pod(job, "Succeeded")
    f.jm.add_pod(new_pod(job, "Running"))
    assert (tracking("add"), tracking("delete")) == (add, delete)
    f.jm.add_pod(done)
    assert (tracking("add"), tracking("delete")) == (add + 1, delete)
    released = new_pod(job, "Succeeded", name=done.metadata.name, finalizer=False)
    released.metadata.resource_version = "2"
    f.jm.update_pod(done, released)
    assert (tracking("add"), tracking("delete")) == (add + 1, delete + 1)
    other = new_pod(job, "Failed")
    f.jm.delete_pod(other, True)
    assert (tracking("add"), tracking("delete")) == (add + 1, delete + 2)


def created(reason: str, status: str = "succeeded") -> float:
    return value("job_controller_job_pods_creation_total", reason=reason, status=status)


async def test_pod_creations_are_counted_by_reason() -> None:
    """recordJobPodsCreationTotal: new; recreated after failures (TerminatingOrFailed); recreated
    under podReplacementPolicy Failed; a failed create counts as failed."""
    new, recreate, recreate_failed = created("new"), created("recreate_terminating_or_failed"), created(
        "recreate_failed")
    f = await new_fixture()
    job = new_job(2, 5)
    f.add_job(job)
    assert await f.sync(job) is None
    assert created("new") == new + 2

    f = await new_fixture()
    job = new_job(2, 5, pod_replacement_policy="TerminatingOrFailed")
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed"))
    assert await f.sync(job) is None
    assert created("recreate_terminating_or_failed") == recreate + 2

    f = await new_fixture()
    job = new_job(1, 5, pod_replacement_policy="Failed")
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed"))
    assert await f.sync(job) is None
    assert created("recreate_failed") == recreate_failed + 1

    failed = created("new", "failed")
    f = await new_fixture()
    f.pod_control.err = RuntimeError("fake error")
    job = new_job(1, 1)
    f.add_job(job)
    assert await f.sync(job) is not None
    assert created("new", "failed") == failed + 1


async def test_finished_indexes_are_counted_by_backoff_limit_kind() -> None:
    """recordJobPodFinished: an Indexed Job's newly succeeded indexes (global back-off limit),
    and a failed index under backoffLimitPerIndex (perIndex)."""
    ok = value("job_controller_job_finished_indexes_total", status="succeeded", backoffLimit="global")
    f = await new_fixture()
    job = new_job(3, 3, completion_mode="Indexed")
    f.add_job(job)
    f.add_pods(new_pod(job, "Succeeded", index="0"), new_pod(job, "Succeeded", index="2"))
    assert await f.sync(job) is None
    assert value("job_controller_job_finished_indexes_total", status="succeeded", backoffLimit="global") == ok + 2

    failed = value("job_controller_job_finished_indexes_total", status="failed", backoffLimit="perIndex")
    f = await new_fixture()
    job = new_job(2, 2, completion_mode="Indexed", backoff_limit_per_index=0, backoff_limit=None)
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", index="1"))
    assert await f.sync(job) is None
    assert value("job_controller_job_finished_indexes_total", status="failed", backoffLimit="perIndex") == failed + 1


async def test_jobs_of_an_external_controller_are_counted_when_added() -> None:
    before = value("job_controller_jobs_by_external_controller_total", controller_name="example.com/queue")
    f = await new_fixture()
    f.jm.add_job(new_job(1, 1, managed_by="example.com/queue"))
    f.jm.add_job(new_job(1, 1, name="ours", managed_by="kubernetes.io/job-controller"))
    assert value("job_controller_jobs_by_external_controller_total", controller_name="example.com/queue") == before + 1
