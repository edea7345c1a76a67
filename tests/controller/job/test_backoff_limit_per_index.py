"""backoffLimitPerIndex and maxFailedIndexes (upstream's TestSyncJobWithJobBackoffLimitPerIndex
outcomes): a failed pod's index is retried with its failure count carried by the replacement,
until the count reaches the limit; then the index fails, and the Job once all indexes are done
or maxFailedIndexes is exceeded."""
from __future__ import annotations

from kubeplane.api.types import batch_v1
from kubeplane.controller.job.util import JOB_INDEX_FAILURE_COUNT_ANNOTATION, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION

from job_testutil import conditions, new_fixture, new_job, new_pod

FAILED_INDEXES = ("Failed", "True", "FailedIndexes", "Job has failed indexes")
TARGET_FAILED_INDEXES = ("FailureTarget", "True", "FailedIndexes", "Job has failed indexes")
MAX_MSG = "Job has exceeded the specified maximal number of failed indexes"


def indexed(completions: int, parallelism: int, per_index: int, **spec) -> batch_v1.Job:
    return new_job(parallelism, completions, 2**31 - 1, "Indexed", backoff_limit_per_index=per_index, **spec)


def count(n: int, ignored: int = 0) -> dict[str, str]:
    out = {JOB_INDEX_FAILURE_COUNT_ANNOTATION: str(n)}
    if ignored:
        out[JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] = str(ignored)
    return out


async def test_first_failure_retries_the_index_with_its_count() -> None:
    f = await new_fixture()
    job = indexed(3, 3, 1)
    f.add_job(job)
    f.add_pods(new_pod(job, "Running", index="0", annotations=count(0)),
               new_pod(job, "Failed", index="1", name="f1", annotations=count(0)),
               new_pod(job, "Running", index="2", annotations=count(0)))
    assert await f.sync(job) is None
    (t,) = f.pod_control.templates
    assert t.metadata.annotations["batch.kubernetes.io/job-completion-index"] == "1"
    assert t.metadata.annotations[JOB_INDEX_FAILURE_COUNT_ANNOTATION] == "1"
    assert JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION not in t.metadata.annotations
    # the failed pod keeps its finalizer until the replacement (carrying the count) exists
    assert f.pod_control.patches == [] and (f.actual.status.failed or 0) == 0
    assert f.actual.status.failed_indexes == "" and conditions(f.actual) == []


async def test_replaced_failure_is_counted_once_the_replacement_is_active() -> None:
    f = await new_fixture()
    job = indexed(3, 3, 1)
    f.add_job(job)
    f.add_pods(new_pod(job, "Running", index="0"), new_pod(job, "Failed", index="1", annotations=count(0)),
               new_pod(job, "Running", index="1", annotations=count(1)), new_pod(job, "Running", index="2"))
    assert await f.sync(job) is None
    assert not f.pod_control.templates and len(f.pod_control.patches) == 1 and f.actual.status.failed == 1
    assert f.actual.status.failed_indexes == ""


async def test_index_fails_at_the_limit_and_the_job_when_all_indexes_are_done() -> None:
    f = await new_fixture()
    job = indexed(3, 3, 1)
    f.add_job(job)
    f.add_pods(new_pod(job, "Succeeded", index="0"), new_pod(job, "Failed", index="1", annotations=count(1)),
               new_pod(job, "Succeeded", index="2"))
    assert await f.sync(job) is None
    st = f.actual.status
    assert st.failed_indexes == "1" and st.completed_indexes == "0,2" and st.succeeded == 2 and st.failed == 1
    assert conditions(f.actual) == [TARGET_FAILED_INDEXES, FAILED_INDEXES]
    assert not f.pod_control.templates
    assert f.recorder.events == ["Warning FailedIndexes Job has failed indexes"]


async def test_other_indexes_go_on_after_one_failed() -> None:
    f = await new_fixture()
    job = indexed(4, 2, 0)
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", index="0"), new_pod(job, "Succeeded", index="1"))
    assert await f.sync(job) is None
    assert f.actual.status.failed_indexes == "0" and f.actual.status.completed_indexes == "1"
    assert sorted(t.metadata.annotations["batch.kubernetes.io/job-completion-index"]
                  for t in f.pod_control.templates) == ["2", "3"]
    assert conditions(f.actual) == []


async def test_max_failed_indexes_exceeded_fails_the_job_and_deletes_active_pods() -> None:
    f = await new_fixture()
    job = indexed(4, 4, 0, max_failed_indexes=1)
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", index="0"), new_pod(job, "Failed", index="1"),
               new_pod(job, "Running", index="2", name="r2"), new_pod(job, "Running", index="3", name="r3"))
    assert await f.sync(job) is None
    assert conditions(f.actual) == [("FailureTarget", "True", "MaxFailedIndexesExceeded", MAX_MSG)]
    assert sorted(f.pod_control.delete_pod_name) == ["r2", "r3"] and f.actual.status.terminating == 2
    assert f.actual.status.failed_indexes == "0,1"


async def test_fail_index_rule_fails_the_index_at_once() -> None:
    f = await new_fixture()
    rule = batch_v1.PodFailurePolicyRule(action="FailIndex", on_exit_codes=batch_v1.PodFailurePolicyOnExitCodesRequirement(
        operator="In", values=[42]))
    job = indexed(2, 2, 3, pod_failure_policy=batch_v1.PodFailurePolicy(rules=[rule]))
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", index="0", exit_code=42), new_pod(job, "Running", index="1"))
    assert await f.sync(job) is None
    assert f.actual.status.failed_indexes == "0" and not f.pod_control.templates


async def test_ignored_failure_counts_in_the_ignored_annotation() -> None:
    f = await new_fixture()
    rule = batch_v1.PodFailurePolicyRule(action="Ignore", on_exit_codes=batch_v1.PodFailurePolicyOnExitCodesRequirement(
        operator="In", values=[3]))
    job = indexed(1, 1, 0, pod_failure_policy=batch_v1.PodFailurePolicy(rules=[rule]))
    f.add_job(job)
    f.add_pods(new_pod(job, "Failed", index="0", exit_code=3, annotations=count(0)))
    assert await f.sync(job) is None
    (t,) = f.pod_control.templates
    assert t.metadata.annotations[JOB_INDEX_FAILURE_COUNT_ANNOTATION] == "0"
    assert t.metadata.annotations[JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION] == "1"
    assert f.actual.status.failed_indexes == ""


async def test_index_back_off_delays_the_replacement() -> None:
    f = await new_fixture()
    job = indexed(1, 1, 5)
    f.add_job(job)
    from kubeplane.utils.clock import rfc3339
    # failed 4 s ago with one earlier failure: the third try waits 20 s after the failure
    f.add_pods(new_pod(job, "Failed", index="0", annotations=count(1), finished_at=rfc3339(f.clock.now() - 4)))
    assert await f.sync(job) is None
    assert not f.pod_control.templates
    assert f.jm.queue.len() == 0          # waiting in the delaying queue, 16 s from now
    f.clock.step(15.5)
    assert f.jm.queue.len() == 0
    f.clock.step(1)
    assert f.jm.queue.len() == 1
