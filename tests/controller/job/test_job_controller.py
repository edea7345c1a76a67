"""The Job controller's handlers, deadline, orphan pods and skips (upstream's TestAddPod,
TestUpdatePod, TestDeletePod*, TestSyncJobPastDeadline, TestSyncOrphanPod,
TestSyncJobWhenManagedBy ...), as facts."""
from __future__ import annotations

import pytest

from kubeplane.api.types import ObjectName
from kubeplane.controller.job.job_controller import new_condition
from kubeplane.utils.clock import rfc3339

from job_testutil import NOW, conditions, new_fixture, new_job, new_pod

KEY = ObjectName("default", "foobar")


async def test_add_pod_observes_the_creation_and_syncs_after_the_batch_period() -> None:
    f = await new_fixture()
    job = new_job(1, 1)
    f.add_job(job)
    f.jm.expectations.expect_creations("default/foobar", 1)
    f.jm.add_pod(new_pod(job, "Pending"))
    assert f.jm.expectations.satisfied_expectations("default/foobar")
    assert f.jm.queue.len() == 0
    f.clock.step(1.0)                      # syncJobBatchPeriod
    assert f.jm.queue.len() == 1


async def test_add_job_syncs_at_once() -> None:
    f = await new_fixture()
    f.jm.add_job(new_job(1, 1))
    assert f.jm.queue.len() == 1


async def test_update_pod_observes_the_finalizer_removal() -> None:
    f = await new_fixture()
    job = new_job(1, 1)
    f.add_job(job)
    old = new_pod(job, "Succeeded", name="p")
    old.metadata.resource_version = "1"
    cur = old.deep_copy()
    cur.metadata.resource_version, cur.metadata.finalizers = "2", None
    f.jm.finalizer_expectations.expect_finalizers_removed("default/foobar", ["p"])
    f.jm.update_pod(old, cur)
    assert f.jm.finalizer_expectations.get_expected_uids("default/foobar") == frozenset()


async def test_delete_pod_observes_the_deletion() -> None:
    f = await new_fixture()
    job = new_job(1, 1)
    f.add_job(job)
    f.jm.expectations.expect_deletions("default/foobar", 1)
    f.jm.delete_pod(new_pod(job, "Running"), True)
    assert f.jm.expectations.satisfied_expectations("default/foobar")


async def test_orphan_pod_with_the_finalizer_is_queued_and_cleaned() -> None:
    f = await new_fixture()
    job = new_job(1, 1)
    pod = new_pod(job, "Succeeded", name="orphan")
    pod.metadata.owner_references = None
    f.add_pods(pod)
    f.jm.add_pod(pod)
    assert f.jm.orphan_queue.len() == 1
    await f.jm.sync_orphan_pod(ObjectName("default", "orphan"))
    assert f.pod_control.patches == [b'{"metadata":{"$deleteFromPrimitiveList/finalizers":'
                                     b'["batch.kubernetes.io/job-tracking"]}}']


async def test_pod_of_a_running_job_keeps_its_finalizer() -> None:
    f = await new_fixture()
    job = new_job(1, 1)
    f.add_job(job)
    f.add_pods(new_pod(job, "Running", name="p"))
    await f.jm.sync_orphan_pod(ObjectName("default", "p"))
    assert f.pod_control.patches == []


async def test_finished_job_frees_its_pods_finalizers() -> None:
    f = await new_fixture()
    job = new_job(1, 1)
    job.status.conditions = [new_condition("Complete", "True", "", "", NOW)]
    f.add_job(job)
    f.add_pods(new_pod(job, "Succeeded", name="p"))
    old = job.deep_copy()
    old.metadata.generation = 0
    f.jm.update_job(old, job)
    assert f.jm.orphan_queue.len() == 1
    await f.jm.sync_orphan_pod(ObjectName("default", "p"))
    assert len(f.pod_control.patches) == 1


@pytest.mark.parametrize("started_ago,ads,want_conditions,want_requeue_in", [
    pytest.param(10, 5, [("FailureTarget", "True", "DeadlineExceeded",
                          "Job was active longer than specified deadline")], None, id="past-deadline"),
    pytest.param(10, 60, [], 50.0, id="requeued-for-the-deadline"),
])
async def test_active_deadline_seconds(started_ago, ads, want_conditions, want_requeue_in) -> None:
    f = await new_fixture()
    job = new_job(1, 1, active_deadline_seconds=ads)
    job.status.start_time = rfc3339(NOW - started_ago)
    f.add_job(job)
    f.add_pods(new_pod(job, "Running", name="r"))
    assert await f.sync(job) is None
    assert conditions(f.actual) == want_conditions
    if want_requeue_in is None:
        assert f.pod_control.delete_pod_name == ["r"]
        return
    assert f.pod_control.delete_pod_name == []
    f.clock.step(want_requeue_in - 0.5)
    assert f.jm.queue.len() == 0
    f.clock.step(1)
    assert f.jm.queue.len() == 1


async def test_deadline_then_failed_once_the_pods_are_gone() -> None:
    f = await new_fixture()
    job = new_job(2, 4, active_deadline_seconds=5)
    job.status.start_time = rfc3339(NOW - 10)
    f.add_job(job)
    assert await f.sync(job) is None
    msg = "Job was active longer than specified deadline"
    assert conditions(f.actual) == [("FailureTarget", "True", "DeadlineExceeded", msg),
                                    ("Failed", "True", "DeadlineExceeded", msg)]
    assert f.recorder.events == [f"Warning DeadlineExceeded {msg}"]


async def test_finished_job_is_not_synced() -> None:
    f = await new_fixture()
    job = new_job(2, 2)
    job.status.conditions = [new_condition("Failed", "True", "BackoffLimitExceeded", "x", NOW)]
    f.add_job(job)
    assert await f.sync(job) is None
    assert f.status_writes == 0 and not f.pod_control.templates


async def test_job_managed_by_another_controller_is_skipped() -> None:
    f = await new_fixture()
    job = new_job(2, 2, managed_by="kueue.x-k8s.io/multikueue")
    f.add_job(job)
    assert await f.sync(job) is None
    assert f.status_writes == 0 and not f.pod_control.templates


async def test_job_managed_by_the_job_controller_is_synced() -> None:
    f = await new_fixture()
    job = new_job(2, 2, managed_by="kubernetes.io/job-controller")
    f.add_job(job)
    assert await f.sync(job) is None
    assert len(f.pod_control.templates) == 2


async def test_unknown_completion_mode_is_an_event() -> None:
    f = await new_fixture()
    job = new_job(1, 1, completion_mode="Strange")
    f.add_job(job)
    assert await f.sync(job) is None
    assert f.recorder.events == ["Warning UnknownCompletionMode Skipped Job sync because completion mode is unknown"]


async def test_deleted_job_forgets_its_expectations_and_back_off() -> None:
    f = await new_fixture()
    f.jm.expectations.expect_creations("default/foobar", 3)
    from kubeplane.controller.job.backoff_utils import BackoffRecord
    f.jm.pod_backoff_store.update_backoff_record(BackoffRecord("default/foobar", 2, NOW))
    await f.jm.sync_job(KEY)
    assert f.jm.expectations.get_expectations("default/foobar") is None
    assert "default/foobar" not in f.jm.pod_backoff_store.records


async def test_on_failure_restarts_count_against_the_backoff_limit() -> None:
    """Upstream: pastBackoffLimitOnFailure (TestPastDeadlineJobFinished's sibling tables)."""
    f = await new_fixture()
    job = new_job(1, 1, backoff_limit=2)
    job.spec.template.spec.restart_policy = "OnFailure"
    f.add_job(job)
    p = new_pod(job, "Running", name="r")
    from kubeplane.api.types import core_v1
    p.status.container_statuses = [core_v1.ContainerStatus(name="c", image="i", image_id="", ready=False,
                                                           restart_count=2, state=core_v1.ContainerState())]
    f.add_pods(p)
    assert await f.sync(job) is None
    assert conditions(f.actual) == [("FailureTarget", "True", "BackoffLimitExceeded",
                                     "Job has reached the specified backoff limit")]
    assert f.pod_control.delete_pod_name == ["r"]


async def test_failed_pods_back_off_before_replacement() -> None:
    """Two failures after the last success, the last one 3 s ago: the replacement waits 17 s."""
    f = await new_fixture()
    job = new_job(1, 1)
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", finished_at=rfc3339(NOW - 8)),
               new_pod(job, "Failed", finished_at=rfc3339(NOW - 3)))
    assert await f.sync(job) is None
    assert not f.pod_control.templates and f.actual.status.failed == 2
    f.clock.step(16.5)
    assert f.jm.queue.len() == 0
    f.clock.step(1)
    assert f.jm.queue.len() == 1


async def test_an_unreadable_time_in_the_status_fails_neither_a_handler_nor_a_sync() -> None:
    f = await new_fixture()
    job = new_job(1, 1, active_deadline_seconds=30)
    job.status.start_time = "yesterday"
    f.add_job(job)
    old = job.deep_copy()
    old.spec.active_deadline_seconds = 10
    f.jm.update_job(old, job)                              # an informer handler must never raise
    p = new_pod(job, "Failed", finished_at="not a time")
    f.add_pods(p)
    assert await f.sync(job) is None
    assert f.actual.status.failed == 1 and len(f.pod_control.templates) == 1
