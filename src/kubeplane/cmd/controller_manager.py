"""`kubeplane controller-manager`: the controllers, with their own workers, on shared informers.

Upstream: cmd/kube-controller-manager. `kubeplane up` runs the same controllers inside its own
process over the in-process transport (no sockets, no TLS); this command runs them in a process
of their own against any API server from a kubeconfig. The code is the same either way.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from ..client.clientset import Clientset
from ..client.informers import SharedInformerFactory
from ..utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ControllerManagerOptions:
    replicaset_workers: int = 5          # --concurrent-replicaset-syncs
    gc_workers: int = 20                 # --concurrent-gc-syncs
    namespace_workers: int = 10          # --concurrent-namespace-syncs
    deployment_workers: int = 5          # --concurrent-deployment-syncs
    node_monitor_grace_period: float = 50.0   # --node-monitor-grace-period (seconds)


async def run_controllers(clientset: Clientset, *, clock: Clock = REAL_CLOCK,
                          options: ControllerManagerOptions = ControllerManagerOptions()) -> None:
    """Build every controller on one informer factory, start them, and run until cancelled."""
    from ..client.tools.record import EventBroadcaster
    from ..controller.garbagecollector import GarbageCollector
    from ..controller.namespace import NamespaceController
    from ..controller.nodelifecycle import NodeLifecycleController, NodeLifecycleOptions
    from ..controller.replicaset import ReplicaSetController

    factory = SharedInformerFactory(clientset, clock=clock)
    broadcaster = EventBroadcaster(clientset, clock=clock)
    rs = ReplicaSetController(factory.apps_v1().replicasets(), factory.core_v1().pods(), clientset, clock=clock,
                              recorder=broadcaster.new_recorder("replicaset-controller"))
    gc = GarbageCollector(clientset, factory, clock=clock, workers=options.gc_workers)
    ns = NamespaceController(clientset, factory.core_v1().namespaces(), clock=clock,
                             workers=options.namespace_workers)
    nodes = NodeLifecycleController(factory.core_v1().nodes(), factory.core_v1().pods(),
                                    factory.coordination_v1().leases(), clientset, clock=clock,
                                    recorder=broadcaster.new_recorder("node-controller"),
                                    options=NodeLifecycleOptions(
                                        node_monitor_grace_period=options.node_monitor_grace_period))
    runs = [rs.run(options.replicaset_workers), gc.run(), ns.run(), nodes.run()]
    deployment = _deployment_controller(factory, clientset, broadcaster, clock)
    if deployment is not None:
        runs.append(deployment.run(options.deployment_workers))
    broadcaster.start()
    try:
        async with asyncio.TaskGroup() as tg:
            for coro in runs:
                tg.create_task(coro)
            factory.start()                  # every informer the controllers asked for above
    finally:
        await factory.shutdown()
        await broadcaster.shutdown()


def _deployment_controller(factory: SharedInformerFactory, clientset: Clientset, broadcaster: Any,
                           clock: Clock) -> Any:
    """The deployment controller, once it exists (issue 4)."""
    try:
        from ..controller.deployment import DeploymentController
    except ImportError:
        return None
    return DeploymentController(factory.apps_v1().deployments(), factory.apps_v1().replicasets(),
                                factory.core_v1().pods(), clientset, clock=clock,
                                recorder=broadcaster.new_recorder("deployment-controller"))


async def run_with_leader_election(clientset: Clientset, identity: str) -> None:
    """Run the controllers only while holding the kube-system/kube-controller-manager Lease, as
    upstream does by default, so several controller-managers can stand by for each other."""
    from ..client.tools.leaderelection import LeaderCallbacks, LeaderElectionConfig, LeaderElector

    async def lead(stop: asyncio.Event) -> None:
        await run_controllers(clientset)

    def stopped() -> None:
        # Upstream exits the process here ("leaderelection lost"); run() returns and so do we.
        log.error("leaderelection lost", extra={"identity": identity})

    config = LeaderElectionConfig("kube-system", "kube-controller-manager", identity,
                                  callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=stopped),
                                  release_on_cancel=True)
    await LeaderElector(clientset, config).run()


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("controller-manager", help="run the controllers against an API server")
    p.add_argument("--kubeconfig", type=pathlib.Path, required=True)
    p.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                   help="hold the kube-system/kube-controller-manager Lease while running (default on)")
    p.add_argument("--log-level", default="warning")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..client.transport import HTTPTransport
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    async def main() -> None:
        cs = Clientset(HTTPTransport.from_kubeconfig(args.kubeconfig, user_agent="kube-controller-manager"))
        try:
            if args.leader_elect:
                await run_with_leader_election(cs, f"{socket.gethostname()}_{uuid.uuid4()}")
            else:
                await run_controllers(cs)
        finally:
            await cs.close()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
    return 0
