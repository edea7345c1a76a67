"""What every component run as a process of its own shares: a kubeconfig, logging, and
(for the controller-manager and the scheduler) leader election on a kube-system Lease.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import socket
import uuid
from typing import Any, Awaitable, Callable

from ..client.clientset import Clientset

log = logging.getLogger(__name__)

Run = Callable[[Clientset], Awaitable[None]]


def add_component_parser(sub: Any, name: str, help: str, lease: str, main: Callable[[argparse.Namespace], int]
                         ) -> argparse.ArgumentParser:
    """The common flags; `lease` "" means the component takes no leader election (kubelets)."""
    p: argparse.ArgumentParser = sub.add_parser(name, help=help)
    p.add_argument("--kubeconfig", type=pathlib.Path, required=True)
    if lease:
        p.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                       help=f"hold the kube-system/{lease} Lease while running (default on)")
    p.add_argument("--log-level", default="warning")
    p.set_defaults(func=main)
    return p


async def run_with_leader_election(clientset: Clientset, lease: str, identity: str, run: Run) -> None:
    """Run only while holding the kube-system/<lease> Lease, as upstream's components do, so
    several copies can stand by for each other."""
    from ..client.tools.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector

    async def lead(stop: asyncio.Event) -> None:
        await run(clientset)

    def stopped() -> None:
        # Upstream exits the process here ("leaderelection lost"); run() returns and so do we.
        log.error("leaderelection lost", extra={"identity": identity})

    config = LeaderElectionConfig("kube-system", lease, identity,
                                  callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=stopped),
                                  release_on_cancel=True)
    await LeaderElector(clientset, config).run()


def run_process(log_level: str, main: Callable[[], Awaitable[None]], *, use_uvloop: bool = False) -> int:
    """Around the main coroutine of every long-running command: GC tuning, logging, the event
    loop (uvloop for `up`), and Ctrl-C as a clean exit (0)."""
    from ..utils import gc_tuning
    gc_tuning.tune()
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if use_uvloop:
        try:
            import uvloop
            uvloop.install()
        except ImportError:       # pragma: no cover - uvloop is a dependency, but keep working without it
            pass
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0


def run_component(args: argparse.Namespace, *, user_agent: str, lease: str, run: Run) -> int:
    """The body of `kubeplane <component> --kubeconfig FILE`: connect over HTTPS and run."""
    from ..client.transport import HTTPTransport

    async def main() -> None:
        cs = Clientset(HTTPTransport.from_kubeconfig(args.kubeconfig, user_agent=user_agent))
        try:
            if lease and args.leader_elect:
                await run_with_leader_election(cs, lease, f"{socket.gethostname()}_{uuid.uuid4()}", run)
            else:
                await run(cs)
        finally:
            await cs.close()

    return run_process(args.log_level, main)
