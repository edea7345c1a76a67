"""End to end: the Scheduler on informers against FakeClientset (the real API server in-process)."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable

import pytest

from kubeplane.api import errors
from kubeplane.testing.fake import FakeClientset
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.client.tools.record import FakeRecorder
from kubeplane.scheduler import Scheduler, SchedulerOptions
from kubeplane.scheduler.schedule_one import schedule_one
from kubeplane.utils.clock import FakeClock

from .helpers import node_dict, pod_dict


async def until(cond: Callable[[], bool], tries: int = 2000) -> None:
    """Yield to the loop until cond() holds (no wall-clock sleeping)."""
    for _ in range(tries):
        if cond():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


class Env:
    def __init__(self, fake: FakeClientset, factory: SharedInformerFactory, sched: Scheduler,
                 recorder: FakeRecorder, clock: FakeClock) -> None:
        self.fake, self.factory, self.sched, self.recorder, self.clock = fake, factory, sched, recorder, clock

    async def create_pod(self, d: dict[str, Any]) -> None:
        await self.fake.core_v1().pods(d["metadata"]["namespace"]).create(d)
        key = f"{d['metadata']['namespace']}/{d['metadata']['name']}"
        await until(lambda: self.sched.pod_lister_get(*key.split("/")) is not None)

    async def schedule_next(self) -> None:
        await schedule_one(self.sched)
        await self.sched.wait_for_bindings()

    async def get_pod(self, name: str) -> Any:
        return await self.fake.core_v1().pods("default").get(name)


@pytest.fixture
async def env(fake_clock: FakeClock) -> AsyncIterator[Env]:
    fake = await FakeClientset.new()
    await fake.seed(node_dict("n1", cpu="2"), node_dict("n2", cpu="2"), node_dict("n3", cpu="2"))
    factory = SharedInformerFactory(fake)
    recorder = FakeRecorder()
    sched = Scheduler(fake, factory.core_v1().pods(), factory.core_v1().nodes(), recorder=recorder,
                      clock=fake_clock, options=SchedulerOptions(seed=7))
    factory.start()
    await factory.wait_for_cache_sync()
    try:
        yield Env(fake, factory, sched, recorder, fake_clock)
    finally:
        await factory.shutdown()


async def test_pod_is_bound_with_scheduled_event(env: Env) -> None:
    await env.create_pod(pod_dict("web", requests={"cpu": "500m"}))
    env.fake.clear_actions()
    await env.schedule_next()
    assert env.fake.verbs() == [("create", "pods", "binding")]
    pod = await env.get_pod("web")
    assert pod.spec.node_name in {"n1", "n2", "n3"}
    assert [c.type for c in pod.status.conditions if c.status == "True"] == ["PodScheduled"]
    assert env.recorder.events == [f"Normal Scheduled Successfully assigned default/web to {pod.spec.node_name}"]
    await until(lambda: not env.sched.cache.assumed_pods)       # the watch confirmed the binding
    assert env.sched.queue.where("default/web") is None


async def test_unschedulable_pod_gets_condition_event_and_waits(env: Env) -> None:
    await env.create_pod(pod_dict("big", requests={"cpu": "1500m"}))
    await env.schedule_next()                    # fits: one node now has 500m left
    await env.create_pod(pod_dict("big2", requests={"cpu": "1500m"}))
    await env.schedule_next()
    await env.create_pod(pod_dict("big3", requests={"cpu": "1500m"}))
    await env.schedule_next()
    await env.create_pod(pod_dict("huge", requests={"cpu": "1"}))
    env.fake.clear_actions()
    await env.schedule_next()
    msg = ("0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
           "3 No preemption victims found for incoming pod..")
    assert env.recorder.events[-1] == f"Warning FailedScheduling {msg}"
    assert env.fake.verbs() == [("patch", "pods", "status")]
    pod = await env.get_pod("huge")
    [cond] = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert (cond.status, cond.reason, cond.message) == ("False", "Unschedulable", msg)
    assert env.sched.queue.where("default/huge") == "unschedulable"
    # A new node is a cluster event that moves it back; its backoff (1 s) has to pass first.
    await env.fake.core_v1().nodes().create(node_dict("n4", cpu="2"))
    await until(lambda: env.sched.queue.where("default/huge") != "unschedulable")
    assert env.sched.queue.where("default/huge") == "backoff"
    env.clock.step(1.0)
    env.sched.queue.flush_backoff_q_completed()
    await env.schedule_next()
    assert (await env.get_pod("huge")).spec.node_name == "n4"


async def test_assumed_pod_counts_before_the_watch_confirms(env: Env) -> None:
    """Two pods of 1.5 cpu on 2-cpu nodes must land on different nodes even though the
    second cycle runs before the first binding comes back through the watch."""
    await env.create_pod(pod_dict("a", requests={"cpu": "1500m"}))
    await env.create_pod(pod_dict("b", requests={"cpu": "1500m"}))
    await schedule_one(env.sched)                # cycle for a; binding task not yet run
    assert len(env.sched.cache.assumed_pods) == 1
    await schedule_one(env.sched)
    await env.sched.wait_for_bindings()
    a, b = await env.get_pod("a"), await env.get_pod("b")
    assert a.spec.node_name and b.spec.node_name and a.spec.node_name != b.spec.node_name


async def test_bind_failure_forgets_and_backs_off(env: Env) -> None:
    await env.create_pod(pod_dict("x", requests={"cpu": "100m"}))
    env.fake.fail_on("create", "pods", errors.InternalError("boom"), times=1)
    await env.schedule_next()
    assert env.sched.cache.pod_count() == 0                  # forgotten
    assert env.sched.queue.where("default/x") == "backoff"
    assert env.recorder.events[-1].startswith("Warning FailedScheduling ")
    pod = await env.get_pod("x")
    [cond] = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert cond.reason == "SchedulerError"
    env.clock.step(1.0)
    env.sched.queue.flush_backoff_q_completed()
    await env.schedule_next()
    assert (await env.get_pod("x")).spec.node_name


async def test_other_scheduler_and_bound_pods_are_ignored(env: Env) -> None:
    await env.create_pod(pod_dict("mine", spec={"schedulerName": "other"}))
    await env.create_pod(pod_dict("pre", node="n1", requests={"cpu": "1"}))
    assert env.sched.queue.where("default/mine") is None
    assert env.sched.queue.where("default/pre") is None
    assert env.sched.cache.nodes["n1"].requested.milli_cpu == 1000


async def test_run_schedules_many_pods(env: Env) -> None:
    task = asyncio.ensure_future(env.sched.run())
    for i in range(20):
        await env.fake.core_v1().pods("default").create(pod_dict(f"p{i}", requests={"cpu": "100m"}))
    await until(lambda: env.sched.scheduled == 20, tries=20000)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pods = (await env.fake.core_v1().pods("default").list()).items
    per_node: dict[str, int] = {}
    for p in pods:
        per_node[p.spec.node_name] = per_node.get(p.spec.node_name, 0) + 1
    assert sum(per_node.values()) == 20 and len(per_node) == 3       # spread by LeastAllocated
    assert max(per_node.values()) - min(per_node.values()) <= 1


async def test_the_pod_informer_hands_an_unchanged_spec_over(env: Env) -> None:
    """The scheduler's cache compares the old and new spec of every assigned pod's update
    (Cache._update_pod); it asks its pod informer to compare them once and share an equal spec."""
    await env.create_pod(pod_dict("web", requests={"cpu": "500m"}))
    await env.schedule_next()
    inf = env.factory.core_v1().pods().informer()
    await until(lambda: bool(inf.get_store().get_by_key("default/web").spec.node_name))
    bound = inf.get_store().get_by_key("default/web")
    await env.fake.core_v1().pods("default").patch("web", {"status": {"phase": "Running"}}, "merge",
                                                   subresource="status")
    await until(lambda: inf.get_store().get_by_key("default/web").status.phase == "Running")
    running = inf.get_store().get_by_key("default/web")
    assert running is not bound and running.spec is bound.spec
    cached = env.sched.cache.get_pod(running)
    assert cached is running                               # the cache took the update
