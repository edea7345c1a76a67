"""Upstream's TestControllerSyncJob table (job_controller_test.go), as facts about sync_job.

Kubernetes 1.37 runs the Job controller with JobPodReplacementPolicy, JobManagedBy and
JobSuccessPolicy on (GA), so where the upstream table has variants by feature gate, these are
the gates-on expectations: status.terminating is always set, a finished Job first gets the
interim SuccessCriteriaMet/FailureTarget condition and Complete/Failed only once no pod is
left terminating, and Complete carries reason CompletionsReached.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kubeplane.api.types import batch_v1
from kubeplane.controller.job.backoff_utils import BackoffRecord
from kubeplane.controller.job.indexed_job_utils import get_completion_index
from kubeplane.controller.job.job_controller import new_condition
from kubeplane.utils.clock import rfc3339

from job_testutil import (
    COMPLETE, FAILED_BACKOFF, FAILURE_TARGET_BACKOFF, NOW, SUCCESS_CRITERIA_MET, conditions, new_fixture, new_job,
    new_pod,
)

SUSPENDED = ("Suspended", "True", "JobSuspended", "Job suspended")
RESUMED = ("Suspended", "False", "JobResumed", "Job resumed")


@dataclass
class Case:
    parallelism: int | None
    completions: int | None
    backoff_limit: int = 6
    deleting: bool = False
    pod_limit: int = 0
    completion_mode: str | None = None
    was_suspended: bool = False
    suspend: bool = False
    pod_replacement_policy: str | None = None
    pod_failure_policy: batch_v1.PodFailurePolicy | None = None
    initial: dict | None = None                    # active, succeeded, failed, start_time, conditions
    backoff_record: tuple[int, float] | None = None  # failures after last success, last failure time
    pod_controller_error: bool = False
    pending: int = 0
    active: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    terminating: int = 0
    with_indexes: list[tuple[str, str]] = field(default_factory=list)
    fake_expectation: int = 0                      # < 0: expect deletions, > 0: expect creations
    want_creations: int = 0
    want_deletions: int = 0
    want_active: int = 0
    want_ready: int = 0
    want_succeeded: int = 0
    want_completed_idxs: str | None = None
    want_failed: int = 0
    want_terminating: int = 0
    want_conditions: list[tuple] = field(default_factory=list)
    want_created_indexes: set[int] = field(default_factory=set)
    want_pod_patches: int = 0


CASES = {
    "job start": Case(2, 5, want_creations=2, want_active=2),
    "WQ job start": Case(2, None, want_creations=2, want_active=2),
    "pending pods": Case(2, 5, pending=2, want_active=2),
    "correct # of pods": Case(3, 5, active=3, ready=2, want_active=3, want_ready=2),
    "WQ job: correct # of pods": Case(2, None, active=2, want_active=2),
    "too few active pods": Case(2, 5, active=1, succeeded=1, want_creations=1, want_active=2, want_succeeded=1,
                                want_pod_patches=1),
    "WQ job: recreate pods when failed": Case(1, None, active=1, failed=1, pod_replacement_policy="Failed",
                                              terminating=1, want_terminating=1, want_pod_patches=1, want_failed=1,
                                              want_active=1),
    "WQ job: PodReplacementPolicy not set": Case(1, 1, active=1, failed=1, terminating=1, want_terminating=1,
                                                 want_active=1, want_pod_patches=2, want_failed=2),
    "WQ job: recreate pods when terminating or failed": Case(1, None, active=1, failed=1,
                                                             pod_replacement_policy="TerminatingOrFailed",
                                                             terminating=1, want_terminating=1, want_active=1,
                                                             want_pod_patches=2, want_failed=2),
    "more terminating pods than parallelism": Case(1, 1, active=2, terminating=4, pod_replacement_policy="Failed",
                                                   want_terminating=5, want_active=1, want_deletions=1,
                                                   want_pod_patches=1),
    "more terminating pods than parallelism; PodFailurePolicy used": Case(
        1, 1, active=2, terminating=4, pod_failure_policy=batch_v1.PodFailurePolicy(rules=[]),
        want_terminating=5, want_active=1, want_deletions=1, want_pod_patches=1),
    "too few active pods and active back-off": Case(1, 1, backoff_record=(1, NOW), initial={"start_time": NOW}),
    "too few active pods and no back-offs": Case(1, 1, backoff_record=(0, NOW), want_creations=1, want_active=1),
    "too few active pods with a dynamic job": Case(2, None, active=1, want_creations=1, want_active=2),
    "too few active pods, with controller error": Case(2, 5, pod_controller_error=True, active=1, succeeded=1,
                                                       want_creations=1, want_active=1, want_pod_patches=1),
    "too many active pods": Case(2, 5, active=3, want_deletions=1, want_active=2, want_pod_patches=1,
                                 want_terminating=1),
    "too many active pods, with controller error": Case(2, 5, pod_controller_error=True, active=3,
                                                        want_pod_patches=1, want_active=3),
    "count ready pods when too many active pods": Case(2, 5, active=3, ready=3, want_deletions=1, want_active=2,
                                                       want_pod_patches=1, want_ready=2, want_terminating=1),
    "failed + succeed pods: reset backoff delay": Case(2, 5, active=1, succeeded=1, failed=1, want_creations=1,
                                                       want_active=2, want_succeeded=1, want_failed=1,
                                                       want_pod_patches=2),
    "new failed pod": Case(2, 5, active=1, failed=1, want_creations=1, want_active=2, want_failed=1,
                           want_pod_patches=1),
    "no new pod; possible finalizer update of failed pod": Case(1, 1, initial={"active": 1, "failed": 1}, active=1,
                                                                want_active=1, want_failed=1),
    "only new failed pod with controller error": Case(2, 5, pod_controller_error=True, active=1, failed=1,
                                                      want_creations=1, want_active=1, want_pod_patches=1),
    "job finish": Case(2, 5, succeeded=5, want_succeeded=5, want_conditions=[SUCCESS_CRITERIA_MET, COMPLETE],
                       want_pod_patches=5),
    "WQ job finishing": Case(2, None, active=1, succeeded=1, want_active=1, want_succeeded=1, want_pod_patches=1),
    "WQ job all finished": Case(2, None, succeeded=2, want_succeeded=2,
                                want_conditions=[SUCCESS_CRITERIA_MET, COMPLETE], want_pod_patches=2),
    "WQ job all finished despite one failure": Case(2, None, succeeded=1, failed=1, want_succeeded=1, want_failed=1,
                                                    want_conditions=[SUCCESS_CRITERIA_MET, COMPLETE],
                                                    want_pod_patches=2),
    "more active pods than parallelism": Case(2, 5, active=10, want_deletions=8, want_active=2, want_pod_patches=8,
                                              want_terminating=8),
    "more active pods than remaining completions": Case(3, 4, active=3, succeeded=2, want_deletions=1,
                                                        want_active=2, want_succeeded=2, want_pod_patches=3,
                                                        want_terminating=1),
    "status change": Case(2, 5, active=2, succeeded=2, want_active=2, want_succeeded=2, want_pod_patches=2),
    "deleting job": Case(2, 5, deleting=True, pending=1, active=1, succeeded=1, want_active=2, want_succeeded=1,
                         want_pod_patches=3),
    "limited pods": Case(100, 200, pod_limit=10, want_creations=10, want_active=10),
    "too many job failures": Case(2, 5, backoff_limit=0, deleting=True, failed=1, want_failed=1,
                                  want_conditions=[FAILURE_TARGET_BACKOFF, FAILED_BACKOFF], want_pod_patches=1),
    "job failures, unsatisfied expectations": Case(2, 5, backoff_limit=0, deleting=True, failed=1,
                                                   fake_expectation=1, want_failed=1, want_pod_patches=1),
    "indexed job start": Case(2, 5, completion_mode="Indexed", want_creations=2, want_active=2,
                              want_created_indexes={0, 1}),
    "indexed job with some pods deleted, podReplacementPolicy Failed": Case(
        2, 5, completion_mode="Indexed", pod_replacement_policy="Failed", terminating=1, want_creations=1,
        want_active=1, want_created_indexes={0}, want_terminating=1),
    "indexed job with some pods deleted, podReplacementPolicy TerminatingOrFailed": Case(
        2, 5, completion_mode="Indexed", pod_replacement_policy="TerminatingOrFailed", terminating=1,
        want_creations=2, want_active=2, want_created_indexes={0, 1}, want_terminating=1, want_pod_patches=1),
    "indexed job completed": Case(2, 3, completion_mode="Indexed",
                                  with_indexes=[("0", "Succeeded"), ("1", "Failed"), ("1", "Succeeded"),
                                                ("2", "Succeeded")],
                                  want_succeeded=3, want_failed=1, want_completed_idxs="0-2",
                                  want_conditions=[SUCCESS_CRITERIA_MET, COMPLETE], want_pod_patches=4),
    "indexed job failed": Case(2, 3, backoff_limit=0, completion_mode="Indexed",
                               with_indexes=[("0", "Succeeded"), ("1", "Failed"), ("2", "Running")],
                               want_succeeded=1, want_failed=2, want_completed_idxs="0",
                               want_conditions=[FAILURE_TARGET_BACKOFF], want_pod_patches=3, want_deletions=1,
                               want_terminating=1),
    "count ready pods when job fails": Case(2, 3, backoff_limit=0, active=2, ready=2, failed=1, want_failed=3,
                                            want_conditions=[FAILURE_TARGET_BACKOFF], want_pod_patches=3,
                                            want_deletions=2, want_terminating=2),
    "indexed job repeated completed index": Case(2, 3, completion_mode="Indexed",
                                                 with_indexes=[("0", "Succeeded"), ("1", "Succeeded"),
                                                               ("1", "Succeeded")],
                                                 want_creations=1, want_active=1, want_succeeded=2,
                                                 want_completed_idxs="0,1", want_created_indexes={2},
                                                 want_pod_patches=3),
    "indexed job some running and completed pods": Case(
        8, 20, completion_mode="Indexed",
        with_indexes=[("0", "Running"), ("2", "Succeeded"), ("3", "Pending"), ("4", "Succeeded"), ("5", "Succeeded"),
                      ("7", "Succeeded"), ("8", "Succeeded"), ("9", "Succeeded")],
        want_creations=6, want_active=8, want_succeeded=6, want_completed_idxs="2,4,5,7-9",
        want_created_indexes={1, 6, 10, 11, 12, 13}, want_pod_patches=6),
    "indexed job some failed pods": Case(3, 4, completion_mode="Indexed",
                                         with_indexes=[("0", "Failed"), ("1", "Pending"), ("2", "Failed")],
                                         want_creations=2, want_active=3, want_failed=2,
                                         want_created_indexes={0, 2}, want_pod_patches=2),
    "indexed job some pods without index": Case(
        2, 5, completion_mode="Indexed", active=1, succeeded=1, failed=1,
        with_indexes=[("invalid", "Running"), ("invalid", "Succeeded"), ("invalid", "Failed"),
                      ("invalid", "Pending"), ("0", "Succeeded"), ("1", "Running"), ("2", "Running")],
        want_deletions=3, want_active=2, want_succeeded=1, want_completed_idxs="0", want_pod_patches=8,
        want_terminating=3),
    "indexed job repeated indexes": Case(
        5, 5, completion_mode="Indexed", succeeded=1, failed=1,
        with_indexes=[("invalid", "Running"), ("0", "Succeeded"), ("1", "Running"), ("2", "Running"),
                      ("2", "Pending")],
        want_deletions=2, want_active=2, want_succeeded=1, want_completed_idxs="0", want_pod_patches=5,
        want_terminating=2),
    "indexed job with indexes outside of range": Case(
        2, 5, completion_mode="Indexed",
        with_indexes=[("0", "Succeeded"), ("5", "Running"), ("6", "Succeeded"), ("7", "Pending"), ("8", "Failed")],
        want_succeeded=1, want_deletions=2, want_completed_idxs="0", want_pod_patches=5, want_terminating=2),
    "suspending a job with satisfied expectations": Case(2, 4, suspend=True, active=2, want_deletions=2,
                                                         want_conditions=[SUSPENDED], want_pod_patches=2,
                                                         want_terminating=2),
    "count ready pods when suspending a job with satisfied expectations": Case(
        2, 4, suspend=True, active=2, ready=2, want_deletions=2, want_conditions=[SUSPENDED], want_pod_patches=2,
        want_terminating=2),
    "suspending a job with unsatisfied expectations": Case(2, 4, suspend=True, active=3, fake_expectation=-1,
                                                           want_active=3),
    "count ready pods when suspending a job with unsatisfied expectations": Case(
        2, 4, suspend=True, active=3, ready=3, fake_expectation=-1, want_active=3, want_ready=3),
    "resuming a suspended job": Case(2, 4, was_suspended=True, want_creations=2, want_active=2,
                                     want_conditions=[RESUMED]),
    "suspending a deleted job": Case(2, 4, suspend=True, deleting=True, active=2, want_active=2, want_pod_patches=2),
    "FailureTarget=False condition added manually is ignored": Case(
        1, 1, active=1, ready=1, initial={"active": 1, "start_time": NOW, "conditions": [
            ("FailureTarget", "False", "ConditionAddedManually", "Testing")]},
        want_active=1, want_ready=1,
        want_conditions=[("FailureTarget", "False", "ConditionAddedManually", "Testing")]),
    "SuccessCriteriaMet=False condition added manually is ignored": Case(
        1, 1, active=1, ready=1, initial={"active": 1, "start_time": NOW, "conditions": [
            ("SuccessCriteriaMet", "False", "ConditionAddedManually", "Testing")]},
        want_active=1, want_ready=1,
        want_conditions=[("SuccessCriteriaMet", "False", "ConditionAddedManually", "Testing")]),
}


def _build(tc: Case) -> batch_v1.Job:
    job = new_job(tc.parallelism, tc.completions, tc.backoff_limit, tc.completion_mode)
    job.spec.suspend = tc.suspend
    job.spec.pod_replacement_policy = tc.pod_replacement_policy
    job.spec.pod_failure_policy = tc.pod_failure_policy
    if tc.initial is not None:
        job.status.start_time = rfc3339(tc.initial.get("start_time", NOW))
        job.status.active = tc.initial.get("active", 0)
        job.status.succeeded = tc.initial.get("succeeded", 0)
        job.status.failed = tc.initial.get("failed", 0)
        job.status.conditions = [new_condition(t, s, r, m, NOW) for t, s, r, m in tc.initial.get("conditions", ())]
    if tc.was_suspended:
        job.status.conditions = [*(job.status.conditions or ()),
                                 new_condition("Suspended", "True", "JobSuspended", "Job suspended", NOW)]
    if tc.deleting:
        job.metadata.deletion_timestamp = rfc3339(NOW)
    return job


@pytest.mark.parametrize("name", list(CASES))
async def test_controller_sync_job(name: str) -> None:
    tc = CASES[name]
    f = await new_fixture()
    if tc.pod_controller_error:
        f.pod_control.err = RuntimeError("fake error")
    f.pod_control.create_limit = tc.pod_limit
    job = _build(tc)
    key = "default/foobar"
    if tc.backoff_record is not None:
        f.jm.pod_backoff_store.update_backoff_record(BackoffRecord(key, *tc.backoff_record))
    if tc.fake_expectation < 0:
        f.jm.expectations.expect_deletions(key, -tc.fake_expectation)
    elif tc.fake_expectation > 0:
        f.jm.expectations.expect_creations(key, tc.fake_expectation)
    f.add_job(job)
    f.set_pods_statuses(job, tc.pending, tc.active, tc.succeeded, tc.failed, tc.terminating, tc.ready)
    f.add_pods(*(new_pod(job, phase, index=ix) for ix, phase in tc.with_indexes))

    err = await f.sync(job)

    if tc.pod_controller_error or (tc.pod_limit and f.pod_control.create_call_count > tc.pod_limit):
        assert err is not None
    else:
        assert err is None, err
    pc = f.pod_control
    assert len(pc.templates) == tc.want_creations
    if tc.completion_mode == "Indexed":
        got = set()
        for t, gen in zip(pc.templates, pc.generate_names):
            ix = get_completion_index(t.metadata.annotations)
            got.add(ix)
            assert t.metadata.labels["batch.kubernetes.io/job-completion-index"] == str(ix)
            assert t.spec.hostname == f"foobar-{ix}" and gen == f"foobar-{ix}-"
            env = t.spec.containers[0].env
            assert env[-1].name == "JOB_COMPLETION_INDEX"
            assert env[-1].value_from.field_ref.field_path == \
                "metadata.labels['batch.kubernetes.io/job-completion-index']"
        assert got == tc.want_created_indexes
    else:
        assert all(not g for g in pc.generate_names) and all(not t.spec.hostname for t in pc.templates)
    assert all("batch.kubernetes.io/job-tracking" in t.metadata.finalizers for t in pc.templates)
    assert len(pc.delete_pod_name) == tc.want_deletions
    assert len(pc.controller_refs) == tc.want_creations
    for ref in pc.controller_refs:
        assert (ref.api_version, ref.kind, ref.name, ref.uid, ref.controller) == \
            ("batch/v1", "Job", "foobar", job.metadata.uid, True)
    st = f.actual.status
    assert st.active == tc.want_active
    assert st.ready == tc.want_ready
    assert (st.succeeded or 0) == tc.want_succeeded
    assert st.completed_indexes == tc.want_completed_idxs
    assert (st.failed or 0) == tc.want_failed
    assert st.terminating == tc.want_terminating
    assert (st.start_time is None) == tc.suspend
    assert conditions(f.actual) == tc.want_conditions
    if tc.pod_limit:
        assert pc.create_call_count <= 1 + 2 + 4 + 8            # slow start stops after the failing batch
    assert len(pc.patches) == tc.want_pod_patches
