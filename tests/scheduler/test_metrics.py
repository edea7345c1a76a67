"""Scheduler metrics (upstream pkg/scheduler/metrics): attempts by result, their duration,
pending pods by sub-queue and pods entering each sub-queue, read from the default registry."""
from __future__ import annotations

from prometheus_client import REGISTRY

from .helpers import node_dict, pod_dict
from .test_scheduler import Env, env, until  # noqa: F401 - the fixture

PROFILE = "default-scheduler"


def value(metric: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(metric, labels) or 0.0


async def test_attempts_pending_pods_and_incoming(env: Env) -> None:  # noqa: F811
    scheduled = value("scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE)
    unschedulable = value("scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE)
    observed = value("scheduler_scheduling_attempt_duration_seconds_count", result="scheduled", profile=PROFILE)
    added = value("scheduler_queue_incoming_pods_total", queue="active", event="PodAdd")
    failed = value("scheduler_queue_incoming_pods_total", queue="unschedulable", event="ScheduleAttemptFailure")
    moved = value("scheduler_queue_incoming_pods_total", queue="backoff", event="NodeAdd")

    await env.create_pod(pod_dict("web", requests={"cpu": "500m"}))
    assert value("scheduler_pending_pods", queue="active") == 1
    assert value("scheduler_queue_incoming_pods_total", queue="active", event="PodAdd") == added + 1
    await env.schedule_next()
    assert value("scheduler_schedule_attempts_total", result="scheduled", profile=PROFILE) == scheduled + 1
    assert value("scheduler_scheduling_attempt_duration_seconds_count",
                 result="scheduled", profile=PROFILE) == observed + 1
    assert value("scheduler_pending_pods", queue="active") == 0

    await env.create_pod(pod_dict("huge", requests={"cpu": "4"}))
    await env.schedule_next()
    assert value("scheduler_schedule_attempts_total", result="unschedulable", profile=PROFILE) == unschedulable + 1
    assert value("scheduler_pending_pods", queue="unschedulable") == 1
    assert value("scheduler_queue_incoming_pods_total", queue="unschedulable",
                 event="ScheduleAttemptFailure") == failed + 1
    await env.fake.core_v1().nodes().create(node_dict("n4", cpu="8"))
    await until(lambda: env.sched.queue.where("default/huge") == "backoff")
    assert value("scheduler_pending_pods", queue="backoff") == 1
    assert value("scheduler_queue_incoming_pods_total", queue="backoff", event="NodeAdd") == moved + 1
    assert value("scheduler_pending_pods", queue="gated") == 0
