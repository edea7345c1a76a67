"""Workqueue metrics: upstream's names and semantics (client-go util/workqueue/metrics.go),
read back through prometheus_client's default registry, with a fake clock."""
from __future__ import annotations

import itertools

from prometheus_client import REGISTRY
from prometheus_client.exposition import generate_latest

from kubeplane.client.util.workqueue import (
    Queue,
    QueueOptions,
    RateLimitingQueue,
    RateLimitingQueueOptions,
)
from kubeplane.utils.clock import FakeClock

_names = itertools.count()


def sample(metric: str, name: str, **labels: str) -> float | None:
    return REGISTRY.get_sample_value(metric, {"name": name, **labels})


def fresh_name() -> str:
    return f"test-queue-{next(_names)}"


async def test_adds_depth_and_durations() -> None:
    clock, name = FakeClock(), fresh_name()
    q: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name=name, clock=clock))
    q.add("a")
    q.add("a")                     # coalesced: not an add (upstream counts only adds of clean items)
    q.add("b")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 2
    clock.step(0.5)
    assert await q.get() == ("a", False)
    assert sample("workqueue_depth", name) == 1
    assert sample("workqueue_queue_duration_seconds_count", name) == 1
    assert sample("workqueue_queue_duration_seconds_sum", name) == 0.5
    assert sample("workqueue_queue_duration_seconds_bucket", name, le="0.1") == 0
    assert sample("workqueue_queue_duration_seconds_bucket", name, le="1.0") == 1
    clock.step(2)
    assert sample("workqueue_unfinished_work_seconds", name) == 2.0
    assert sample("workqueue_longest_running_processor_seconds", name) == 2.0
    q.done("a")
    assert sample("workqueue_work_duration_seconds_sum", name) == 2.0
    assert sample("workqueue_work_duration_seconds_bucket", name, le="1.0") == 0
    assert sample("workqueue_work_duration_seconds_bucket", name, le="10.0") == 1
    assert sample("workqueue_work_duration_seconds_bucket", name, le="+Inf") == 1
    assert sample("workqueue_unfinished_work_seconds", name) == 0.0
    assert sample("workqueue_longest_running_processor_seconds", name) == 0.0


async def test_every_add_after_is_a_retry() -> None:
    clock, name = FakeClock(), fresh_name()
    q: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name=name, clock=clock))
    q.add_rate_limited("a")
    q.add_after("b", 0)
    q.add_after("c", 10)
    assert sample("workqueue_retries_total", name) == 3
    assert sample("workqueue_adds_total", name) == 1          # b only: a and c are still waiting
    q.shut_down()
    q.add_after("d", 1)                                      # ignored once shutting down
    assert sample("workqueue_retries_total", name) == 3


async def test_a_re_added_item_counts_again_after_it_is_done() -> None:
    clock, name = FakeClock(), fresh_name()
    q: Queue[str] = Queue(QueueOptions(name=name, clock=clock))
    q.add("a")
    await q.get()
    q.add("a")                      # dirty again while processing: an add, depth 1
    assert (sample("workqueue_adds_total", name), sample("workqueue_depth", name)) == (2, 1)
    q.done("a")
    assert await q.get() == ("a", False)
    assert sample("workqueue_depth", name) == 0


def test_unnamed_queues_are_not_metered() -> None:
    Queue().add("x")
    assert sample("workqueue_adds_total", "") is None


def test_queues_sharing_a_name_share_counters() -> None:
    name = fresh_name()
    q1: Queue[str] = Queue(QueueOptions(name=name))
    q2: Queue[str] = Queue(QueueOptions(name=name))
    q1.add("a")
    q2.add("a")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 2


def test_exposition_has_upstream_names_and_help() -> None:
    Queue(QueueOptions(name=fresh_name())).add("x")
    text = generate_latest(REGISTRY).decode()
    for line in ("# HELP workqueue_depth [BETA] Current depth of workqueue",
                 "# TYPE workqueue_adds_total counter",
                 "# TYPE workqueue_queue_duration_seconds histogram",
                 "# TYPE workqueue_longest_running_processor_seconds gauge"):
        assert line in text
