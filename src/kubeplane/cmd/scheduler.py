"""`kubeplane scheduler`: the scheduler against an API server from a kubeconfig.

Upstream: cmd/kube-scheduler. `kubeplane up` calls run_scheduler() in its own process over
the in-process transport; this command runs the same code in a process of its own.
"""
from __future__ import annotations

import argparse
import logging
from typing import Any

from ..client.clientset import Clientset
from ..client.informers import SharedInformerFactory
from ..utils.clock import REAL_CLOCK, Clock
from .standalone import add_component_parser, run_component

log = logging.getLogger(__name__)


async def run_scheduler(clientset: Clientset, *, clock: Clock = REAL_CLOCK, options: Any = None,
                        factory: SharedInformerFactory | None = None) -> None:
    """Build the scheduler on its own informers (or on `factory`'s, which its owner stops),
    start them, and schedule until cancelled."""
    from ..client.tools.record import EventBroadcaster
    from ..scheduler import Scheduler, SchedulerOptions
    from ..scheduler.framework.runtime import DEFAULT_SCHEDULER_NAME

    owns_factory = factory is None
    factory = factory or SharedInformerFactory(clientset, clock=clock)
    broadcaster = EventBroadcaster(clientset, clock=clock)
    sched = Scheduler(clientset, factory.core_v1().pods(), factory.core_v1().nodes(),
                      recorder=broadcaster.new_recorder(DEFAULT_SCHEDULER_NAME), clock=clock,
                      options=options or SchedulerOptions())
    broadcaster.start()
    factory.start()
    try:
        await sched.run()
    finally:
        if owns_factory:
            await factory.shutdown()
        await broadcaster.shutdown()


def add_parser(sub: Any) -> None:
    add_component_parser(sub, "scheduler", "run the scheduler against an API server", "kube-scheduler", run)


def run(args: argparse.Namespace) -> int:
    return run_component(args, user_agent="kube-scheduler", lease="kube-scheduler", run=run_scheduler)
