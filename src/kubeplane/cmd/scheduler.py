"""`kubeplane scheduler`: the scheduler against an API server from a kubeconfig.

Upstream: cmd/kube-scheduler. `kubeplane up` calls run_scheduler() in its own process over
the in-process transport; this command runs the same code in a process of its own.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import socket
import uuid
from typing import Any

from ..client.clientset import Clientset
from ..client.informers import SharedInformerFactory
from ..utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)


async def run_scheduler(clientset: Clientset, *, clock: Clock = REAL_CLOCK, options: Any = None) -> None:
    """Build the scheduler on its own informers, start them, and schedule until cancelled."""
    from ..client.tools.record import EventBroadcaster
    from ..scheduler import Scheduler, SchedulerOptions
    from ..scheduler.framework.runtime import DEFAULT_SCHEDULER_NAME

    factory = SharedInformerFactory(clientset, clock=clock)
    broadcaster = EventBroadcaster(clientset, clock=clock)
    sched = Scheduler(clientset, factory.core_v1().pods(), factory.core_v1().nodes(),
                      recorder=broadcaster.new_recorder(DEFAULT_SCHEDULER_NAME), clock=clock,
                      options=options or SchedulerOptions())
    broadcaster.start()
    factory.start()
    try:
        await sched.run()
    finally:
        await factory.shutdown()
        await broadcaster.shutdown()


async def run_with_leader_election(clientset: Clientset, identity: str) -> None:
    """Schedule only while holding the kube-system/kube-scheduler Lease, as upstream does."""
    from ..client.tools.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector

    async def lead(stop: asyncio.Event) -> None:
        await run_scheduler(clientset)

    def stopped() -> None:
        log.error("leaderelection lost", extra={"identity": identity})

    config = LeaderElectionConfig("kube-system", "kube-scheduler", identity,
                                  callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=stopped),
                                  release_on_cancel=True)
    await LeaderElector(clientset, config).run()


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("scheduler", help="run the scheduler against an API server")
    p.add_argument("--kubeconfig", type=pathlib.Path, required=True)
    p.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                   help="hold the kube-system/kube-scheduler Lease while running (default on)")
    p.add_argument("--log-level", default="warning")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..client.transport import HTTPTransport
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    async def main() -> None:
        cs = Clientset(HTTPTransport.from_kubeconfig(args.kubeconfig, user_agent="kube-scheduler"))
        try:
            if args.leader_elect:
                await run_with_leader_election(cs, f"{socket.gethostname()}_{uuid.uuid4()}")
            else:
                await run_scheduler(cs)
        finally:
            await cs.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0
