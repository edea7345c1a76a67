"""TTL-after-finished: upstream's TestTimeLeft table and processJob's outcomes, on the fake clock."""
from __future__ import annotations

import pytest

from kubeplane.api.types import ObjectName, batch_v1, meta_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.job.job_controller import new_condition
from kubeplane.controller.ttlafterfinished import TTLAfterFinishedController
from kubeplane.controller.ttlafterfinished.ttlafterfinished_controller import needs_cleanup, time_left
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

NOW = 1_700_000_000.0


def job(ttl: int | None, finished_at: float | None, cond: str = "Complete", name: str = "j") -> dict:
    d: dict = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                                              "containers": [{"name": "c", "image": "busybox"}]}}}}
    if ttl is not None:
        d["spec"]["ttlSecondsAfterFinished"] = ttl
    return d


def typed(ttl: int | None, finished_at: float | None, cond: str = "Complete") -> batch_v1.Job:
    j = batch_v1.Job(metadata=meta_v1.ObjectMeta(name="j", namespace="default"),
                     spec=batch_v1.JobSpec(ttl_seconds_after_finished=ttl), status=batch_v1.JobStatus())
    if finished_at is not None:
        j.status.conditions = [new_condition(cond, "True", "", "", finished_at)]
    return j


@pytest.mark.parametrize("ttl,finished,cond,want", [
    pytest.param(None, NOW, "Complete", False, id="no-ttl"),
    pytest.param(10, None, "Complete", False, id="not-finished"),
    pytest.param(10, NOW, "Complete", True, id="complete"),
    pytest.param(0, NOW, "Failed", True, id="failed-ttl-0"),
    pytest.param(10, NOW, "SuccessCriteriaMet", False, id="interim-condition-is-not-finished"),
])
def test_needs_cleanup(ttl, finished, cond, want) -> None:
    assert needs_cleanup(typed(ttl, finished, cond)) is want


@pytest.mark.parametrize("ttl,finished_ago,want_left", [
    pytest.param(0, 0, 0, id="ttl-0-expired-at-once"),
    pytest.param(10, 5, 5, id="not-yet"),
    pytest.param(10, 15, -5, id="expired"),
    pytest.param(10, -5, 15, id="finished-in-the-future"),
])
def test_time_left(ttl, finished_ago, want_left) -> None:
    left, expire_at = time_left(typed(ttl, NOW - finished_ago), NOW)
    assert left == want_left and expire_at == NOW - finished_ago + ttl


def test_time_left_without_a_finish_time_is_an_error() -> None:
    j = typed(10, NOW)
    j.status.conditions[0].last_transition_time = None
    with pytest.raises(ValueError, match="unable to find the time when the Job default/j finished"):
        time_left(j, NOW)


async def _setup(ttl: int, finished_ago: float):
    clock = FakeClock(start=NOW)
    fake = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(fake, clock=clock)
    tc = TTLAfterFinishedController(factory.batch_v1().jobs(), fake, clock=clock)
    [stored] = await fake.seed(job(ttl, None))
    stored = stored.deep_copy()
    stored.status = batch_v1.JobStatus(conditions=[new_condition("Complete", "True", "", "", NOW - finished_ago)])
    fake.recorder.recording = False
    stored = await fake.batch_v1().jobs("default").update_status(stored)
    fake.recorder.recording = True
    factory.batch_v1().jobs().informer().get_indexer().add(stored)
    return clock, fake, tc, stored


async def test_expired_job_is_deleted_with_a_uid_precondition_in_the_foreground() -> None:
    clock, fake, tc, stored = await _setup(ttl=30, finished_ago=31)
    await tc.process_job(ObjectName("default", "j"))
    deletes = [a for a in fake.actions if a.verb == "delete"]
    assert len(deletes) == 1 and deletes[0].resource == "jobs"
    j = await fake.batch_v1().jobs("default").get("j")     # foreground: the GC finishes it (orphan finalizer)
    assert j.metadata.deletion_timestamp is not None and "foregroundDeletion" in (j.metadata.finalizers or ())


async def test_job_not_yet_expired_is_requeued_for_its_expiry() -> None:
    clock, fake, tc, stored = await _setup(ttl=30, finished_ago=10)
    await tc.process_job(ObjectName("default", "j"))
    assert not [a for a in fake.actions if a.verb == "delete"]
    clock.step(19.5)
    assert tc.queue.len() == 0
    clock.step(1)
    assert tc.queue.len() == 1


async def test_ttl_raised_meanwhile_is_seen_by_the_live_read() -> None:
    clock, fake, tc, stored = await _setup(ttl=30, finished_ago=31)
    live = stored.deep_copy()
    live.spec.ttl_seconds_after_finished = 3600
    await fake.batch_v1().jobs("default").update(live)      # the cache still says 30
    await tc.process_job(ObjectName("default", "j"))
    assert not [a for a in fake.actions if a.verb == "delete"]


async def test_add_and_update_enqueue_only_finished_jobs_with_a_ttl() -> None:
    clock = FakeClock(start=NOW)
    fake = await FakeClientset.new(clock=clock)
    tc = TTLAfterFinishedController(SharedInformerFactory(fake, clock=clock).batch_v1().jobs(), fake, clock=clock)
    tc.add_job(typed(10, None))
    tc.add_job(typed(None, NOW))
    assert tc.queue.len() == 0
    deleting = typed(10, NOW)
    deleting.metadata.deletion_timestamp = rfc3339(NOW)
    tc.update_job(typed(10, None), deleting)
    assert tc.queue.len() == 0
    tc.update_job(typed(10, None), typed(10, NOW))
    assert tc.queue.len() == 1


async def test_deletion_latency_is_observed() -> None:
    from prometheus_client import REGISTRY
    name = "ttl_after_finished_controller_job_deletion_duration_seconds_count"
    before = REGISTRY.get_sample_value(name) or 0.0
    clock, fake, tc, stored = await _setup(ttl=30, finished_ago=31)
    await tc.process_job(ObjectName("default", "j"))
    assert REGISTRY.get_sample_value(name) == before + 1
