"""The scheduler: binds pending pods to nodes, as upstream's kube-scheduler.

Upstream: pkg/scheduler. Layout mirrors it: scheduler.py (the Scheduler), schedule_one.py
(one attempt), eventhandlers.py, internal/queue (activeQ/backoffQ/unschedulablePods),
internal/cache (assumed pods, snapshot), framework/ (extension points, runtime, plugins).
"""
from .scheduler import Scheduler, SchedulerOptions

__all__ = ["Scheduler", "SchedulerOptions"]
