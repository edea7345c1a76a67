"""Fixtures for the Job controller tests: upstream's newJob/newPod/setPodsStatuses helpers,
listers filled by hand, a FakePodControl and a captured status (upstream's
updateStatusHandler seam), on a FakeClock."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.types import ObjectName, batch_v1, core_v1, meta_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.controller import controller_utils as cu
from kubeplane.controller.job import JobController
from kubeplane.controller.job.job_controller import JOB_KIND
from kubeplane.controller.job.util import JOB_COMPLETION_INDEX_ANNOTATION, JOB_TRACKING_FINALIZER
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

# Upstream's testFinishedAt: one second after the zero time, so that no back-off applies.
TEST_FINISHED_AT = "0001-01-01T00:00:01Z"
NOW = 1_700_000_000.0
_names = itertools.count()


@dataclass
class FakeJobPodControl(cu.FakePodControl):
    """FakePodControl plus CreatePodsWithGenerateName (the generate name kept on the template)."""

    generate_names: list[str] = field(default_factory=list)

    async def create_pods_with_generate_name(self, namespace: str, template: core_v1.PodTemplateSpec,
                                             controller_object: Any, controller_ref: meta_v1.OwnerReference,
                                             generate_name: str) -> None:
        self.generate_names.append(generate_name)
        await self.create_pods(namespace, template, controller_object, controller_ref)


def new_job(parallelism: int | None, completions: int | None, backoff_limit: int = 6,
            completion_mode: str | None = None, name: str = "foobar", **spec: Any) -> batch_v1.Job:
    """Upstream: newJobWithName (None: leave completions/parallelism unset)."""
    return batch_v1.Job(
        metadata=meta_v1.ObjectMeta(name=name, namespace="default", uid=f"uid-{name}", generation=1),
        spec=batch_v1.JobSpec(
            selector=meta_v1.LabelSelector(match_labels={"foo": "bar"}),
            template=core_v1.PodTemplateSpec(metadata=meta_v1.ObjectMeta(labels={"foo": "bar"}),
                                             spec=core_v1.PodSpec(containers=[core_v1.Container(name="c",
                                                                                                image="foo/bar")])),
            parallelism=parallelism, completions=completions, backoff_limit=backoff_limit,
            completion_mode=completion_mode, **spec),
        status=batch_v1.JobStatus())


def new_pod(job: batch_v1.Job, phase: str, *, index: str | None = None, name: str | None = None,
            finalizer: bool = True, terminating: bool = False, ready: bool = False,
            finished_at: str | None = TEST_FINISHED_AT, exit_code: int | None = None,
            container: str = "c", conditions: list[core_v1.PodCondition] | None = None,
            annotations: dict[str, str] | None = None) -> core_v1.Pod:
    """Upstream: newPod + newPodList / setPodsStatusesWithIndexes."""
    name = name or f"pod-{next(_names)}"
    meta = meta_v1.ObjectMeta(name=name, namespace="default", uid=name, labels={"foo": "bar"},
                              owner_references=[cu.new_controller_ref(job, JOB_KIND)],
                              creation_timestamp=rfc3339(NOW - 100), annotations=dict(annotations or {}))
    if finalizer:
        meta.finalizers = [JOB_TRACKING_FINALIZER]
    if index is not None:
        meta.annotations[JOB_COMPLETION_INDEX_ANNOTATION] = index
    if terminating:
        meta.deletion_timestamp = rfc3339(NOW)
    status = core_v1.PodStatus(phase=phase, conditions=list(conditions or ()))
    if ready:
        status.conditions.append(core_v1.PodCondition(type="Ready", status="True"))
    if phase in ("Succeeded", "Failed"):
        status.container_statuses = [core_v1.ContainerStatus(
            name=container, image="foo/bar", image_id="", ready=False, restart_count=0,
            state=core_v1.ContainerState(terminated=core_v1.ContainerStateTerminated(
                exit_code=exit_code or 0, finished_at=finished_at)))]
    return core_v1.Pod(metadata=meta, spec=core_v1.PodSpec(containers=[core_v1.Container(name=container)]),
                       status=status)


@dataclass
class JobFixture:
    clock: FakeClock
    factory: SharedInformerFactory
    jm: JobController
    pod_control: FakeJobPodControl
    recorder: FakeRecorder
    actual: batch_v1.Job | None = None
    status_writes: int = 0

    def add_job(self, job: batch_v1.Job) -> None:
        self.factory.batch_v1().jobs().informer().get_indexer().add(job)
        self.actual = job

    def add_pods(self, *pods: core_v1.Pod) -> None:
        for p in pods:
            self.factory.core_v1().pods().informer().get_indexer().add(p)

    def set_pods_statuses(self, job: batch_v1.Job, pending: int = 0, active: int = 0, succeeded: int = 0,
                          failed: int = 0, terminating: int = 0, ready: int = 0) -> None:
        """Upstream: setPodsStatuses"""
        self.add_pods(*(new_pod(job, "Pending") for _ in range(pending)))
        self.add_pods(*(new_pod(job, "Running", ready=i < ready) for i in range(active)))
        self.add_pods(*(new_pod(job, "Succeeded") for _ in range(succeeded)))
        self.add_pods(*(new_pod(job, "Failed") for _ in range(failed)))
        self.add_pods(*(new_pod(job, "Running", terminating=True) for _ in range(terminating)))

    async def sync(self, job: batch_v1.Job) -> Exception | None:
        try:
            await self.jm.sync_job(ObjectName(job.metadata.namespace or "", job.metadata.name or ""))
        except Exception as err:
            return err
        return None


async def new_fixture(now: float = NOW) -> JobFixture:
    clock = FakeClock(start=now)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    recorder = FakeRecorder()
    jm = JobController(factory.core_v1().pods(), factory.batch_v1().jobs(), fake, clock=clock, recorder=recorder)
    pc = FakeJobPodControl()
    jm.pod_control = pc
    f = JobFixture(clock, factory, jm, pc, recorder)

    async def update_status(job: batch_v1.Job) -> batch_v1.Job:
        f.actual = job
        f.status_writes += 1
        return job
    jm.update_status_handler = update_status
    return f


def conditions(job: batch_v1.Job | None) -> list[tuple[str | None, str | None, str | None, str | None]]:
    """(type, status, reason, message) of each condition, times ignored as upstream's cmpopts do."""
    return [(c.type, c.status, c.reason, c.message) for c in (job.status.conditions if job and job.status else ())
            or ()]


COMPLETE = ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods")
SUCCESS_CRITERIA_MET = ("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods")
BACKOFF_MSG = "Job has reached the specified backoff limit"
FAILURE_TARGET_BACKOFF = ("FailureTarget", "True", "BackoffLimitExceeded", BACKOFF_MSG)
FAILED_BACKOFF = ("Failed", "True", "BackoffLimitExceeded", BACKOFF_MSG)
