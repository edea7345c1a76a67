"""PriorityQueue moves on a FakeClock, after upstream's scheduling_queue_test.go, plus a
Hypothesis state machine checking that a pod is always in exactly one place."""
from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kubeplane.scheduler.framework.types import PodInfo, QueuedPodInfo
from kubeplane.scheduler.internal.queue.scheduling_queue import NODE_ADD, PriorityQueue, is_pod_updated
from kubeplane.utils.clock import FakeClock

from ...helpers import make_pod


def fail(q: PriorityQueue, pinfo: QueuedPodInfo, cycle: int | None = None, plugin: str = "NodeResourcesFit") -> None:
    pinfo.unschedulable_plugins = {plugin} if plugin else set()
    q.add_unschedulable_if_not_present(pinfo, q.scheduling_cycle if cycle is None else cycle)


async def test_pop_order_priority_then_age(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("low", priority=1))
    fake_clock.step(1)
    q.add(make_pod("high-late", priority=10))
    q.add(make_pod("low-late", priority=1))
    q.add(make_pod("high-later", priority=10))
    names = [(await q.pop()).pod.metadata.name for _ in range(4)]
    assert names == ["high-late", "high-later", "low", "low-late"]
    assert q.scheduling_cycle == 4
    q.check_invariants()


@pytest.mark.parametrize("attempts,want", [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 10.0), (9, 10.0)])
def test_backoff_doubles_to_ten_seconds(fake_clock: FakeClock, attempts: int, want: float) -> None:
    q = PriorityQueue(clock=fake_clock)
    assert q.calculate_backoff_duration(QueuedPodInfo(PodInfo(make_pod()), attempts=attempts)) == want


async def test_unschedulable_moves_on_event_respecting_backoff(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("p"))
    pinfo = await q.pop()
    fail(q, pinfo)
    assert q.where("default/p") == "unschedulable"
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.where("default/p") == "backoff"            # first attempt failed < 1 s ago
    fake_clock.step(0.5)
    q.flush_backoff_q_completed()
    assert q.where("default/p") == "backoff"
    fake_clock.step(0.5)
    q.flush_backoff_q_completed()
    assert q.where("default/p") == "active"
    q.check_invariants()


async def test_event_after_backoff_goes_straight_to_active(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("p"))
    fail(q, await q.pop())
    fake_clock.step(2)
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert q.where("default/p") == "active"


async def test_move_request_during_cycle_sends_failure_to_backoff(fake_clock: FakeClock) -> None:
    """A node appeared while the pod was being scheduled: retry it after backoff instead of
    parking it until the next event (upstream: moveRequestCycle)."""
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("p"))
    pinfo = await q.pop()
    cycle = q.scheduling_cycle
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    fail(q, pinfo, cycle)
    assert q.where("default/p") == "backoff"


async def test_errors_go_to_backoff(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("p"))
    fail(q, await q.pop(), plugin="")
    assert q.where("default/p") == "backoff"


async def test_unschedulable_leftover_flushed_after_five_minutes(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("p"))
    fail(q, await q.pop())
    fake_clock.step(300)
    q.flush_unschedulable_pods_leftover()
    assert q.where("default/p") == "unschedulable"       # strictly longer than 5 minutes
    fake_clock.step(1)
    q.flush_unschedulable_pods_leftover()
    assert q.where("default/p") == "active"


async def test_periodic_flushes_run_on_the_clock(fake_clock: FakeClock) -> None:
    import asyncio
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("p"))
    fail(q, await q.pop(), plugin="")
    task = asyncio.ensure_future(q.run())
    await asyncio.sleep(0)
    for _ in range(2):
        fake_clock.step(1)
        for _ in range(3):
            await asyncio.sleep(0)
    assert q.where("default/p") == "active"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_update_moves_unschedulable_pod_only_on_spec_change(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    old = make_pod("p")
    q.add(old)
    fail(q, await q.pop())
    status_only = old.deep_copy()
    status_only.metadata.resource_version = "99"
    assert not is_pod_updated(old, status_only)
    q.update(old, status_only)
    assert q.where("default/p") == "unschedulable"
    fake_clock.step(5)
    relabelled = make_pod("p", labels={"x": "y"})
    q.update(old, relabelled)
    assert q.where("default/p") == "active"
    assert q.active_q.get("default/p").pod.metadata.labels == {"x": "y"}


async def test_delete_and_pop_after_close(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    q.add(make_pod("p"))
    q.delete(make_pod("p"))
    assert q.where("default/p") is None
    q.close()
    assert await q.pop() is None


def test_assigned_pod_added_moves_only_pods_with_matching_affinity(fake_clock: FakeClock) -> None:
    q = PriorityQueue(clock=fake_clock)
    term = {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}
    wants_db = make_pod("a", spec={"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}})
    plain = make_pod("b")
    for p in (wants_db, plain):
        q.add(p)
        fail(q, q._pop_now())
    fake_clock.step(20)
    q.assigned_pod_added(make_pod("db", labels={"app": "db"}, node="n1"))
    assert (q.where("default/a"), q.where("default/b")) == ("active", "unschedulable")


NAMES = st.sampled_from(["a", "b", "c", "d"])


class QueueMachine(RuleBasedStateMachine):
    """Random interleavings of queue operations; invariants checked after each step."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock()
        self.q = PriorityQueue(clock=self.clock)
        self.known: set[str] = set()

    @rule(name=NAMES, priority=st.integers(0, 3))
    def add(self, name: str, priority: int) -> None:
        self.q.add(make_pod(name, priority=priority))
        self.known.add(name)

    @rule()
    def pop(self) -> None:
        if self.q.active_q:
            self.q._pop_now()

    @rule(data=st.data(), unschedulable=st.booleans())
    def fail_in_flight(self, data: st.DataObject, unschedulable: bool) -> None:
        if self.q.in_flight:
            key = data.draw(st.sampled_from(sorted(self.q.in_flight)))
            fail(self.q, self.q.in_flight[key], plugin="X" if unschedulable else "")

    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        if self.q.in_flight:
            self.q.done(data.draw(st.sampled_from(sorted(self.q.in_flight))))

    @rule(name=NAMES)
    def update(self, name: str) -> None:
        self.q.update(make_pod(name), make_pod(name, labels={"v": "2"}))

    @rule(name=NAMES)
    def delete(self, name: str) -> None:
        self.q.delete(make_pod(name))

    @rule()
    def move_all(self) -> None:
        self.q.move_all_to_active_or_backoff_queue(NODE_ADD)

    @rule(seconds=st.sampled_from([0.5, 1.0, 5.0, 301.0]))
    def tick(self, seconds: float) -> None:
        self.clock.step(seconds)
        self.q.flush_backoff_q_completed()
        self.q.flush_unschedulable_pods_leftover()

    @invariant()
    def one_place(self) -> None:
        self.q.check_invariants()
        for p in self.q.backoff_q:
            assert self.q.get_backoff_time(p) >= p.timestamp

    @invariant()
    def active_head_is_highest_priority(self) -> None:
        head = self.q.active_q.peek()
        if head is not None:
            assert all((head.pod.spec.priority or 0) >= (p.pod.spec.priority or 0) for p in self.q.active_q)


QueueMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestQueueMachine = QueueMachine.TestCase
