"""`kubeplane scheduler`: the scheduler against an API server from a kubeconfig.

    kubeplane scheduler --kubeconfig KC [--secure-port 10259] [--bind-address 127.0.0.1]

It serves /healthz (leaderElection), /livez (ping), /readyz (leaderElection,
sched-handler-sync) and /metrics over HTTPS (serving.py), as kube-scheduler does.

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
from ..utils.healthz import NamedCheck
from .standalone import add_component_parser, run_component

log = logging.getLogger(__name__)

SECURE_PORT = 10259          # upstream: ports.KubeSchedulerPort


async def run_scheduler(clientset: Clientset, *, clock: Clock = REAL_CLOCK, options: Any = None,
                        factory: SharedInformerFactory | None = None) -> None:
    """Build the scheduler on its own informers (or on `factory`'s, which its owner stops),
    start them, and schedule until cancelled."""
    from ..client.tools.record import EventBroadcaster
    from ..scheduler import Scheduler, SchedulerOptions
    from ..scheduler.framework.runtime import DEFAULT_SCHEDULER_NAME

    owns_factory = factory is None
    factory = factory or new_informer_factory(clientset, clock=clock)
    broadcaster = EventBroadcaster(clientset, clock=clock)
    sched = Scheduler(clientset, factory.core_v1().pods(), factory.core_v1().nodes(),
                      recorder=broadcaster.new_recorder(DEFAULT_SCHEDULER_NAME), clock=clock,
                      options=options or SchedulerOptions())
    sched.framework.set_informer_factory(factory)  # listers for default spreading
    from ..scheduler.framework.plugins.volumebinding import wire_volume_binding
    wire_volume_binding(sched, factory)            # claims and volumes (issue 14, helper sts)
    broadcaster.start()
    factory.start()
    try:
        await sched.run()
    finally:
        if owns_factory:
            await factory.shutdown()
        await broadcaster.shutdown()


def new_informer_factory(clientset: Clientset, *, clock: Clock = REAL_CLOCK) -> SharedInformerFactory:
    """The scheduler's own informers (`kubeplane scheduler`, `up --scheduler-process`; in `up`'s
    own process it shares the process's): every object without managedFields, as upstream, and
    a pod without the status the scheduler never reads (trim_pod_status).

    Upstream: NewInformerFactory / newPodInformer's trim (pkg/scheduler/scheduler.go).
    """
    return SharedInformerFactory(clientset, clock=clock, transform=scheduler_transform)


def scheduler_transform(obj: Any) -> Any:
    from ..api.types.core_v1 import Pod
    from ..client.tools.cache.shared_informer import transform_strip_managed_fields
    obj = transform_strip_managed_fields(obj)
    if isinstance(obj, Pod) and obj.status is not None:
        obj.status = trim_pod_status(obj.status)
    return obj


def trim_pod_status(st: Any) -> Any:
    """What a pod's status is to the scheduler: its phase (terminal pods leave the cache),
    nominatedNodeName (preemption), the PodScheduled condition (update_pod_scheduled_condition
    patches only a change), and the resources a resize or a resource claim put there
    (status.resources/allocatedResources, each container status's resources/allocatedResources,
    resize, resourceClaimStatuses, extendedResourceClaimStatus, which upstream's PodRequests and
    DRA read). The rest (the other conditions, IPs, container states, start time) is the
    kubelet's report: a fifth of a running pod's decoded size (8.8 -> 6.8 KB), dropped from the
    scheduler's own copy. Deviation: upstream's scheduler trims only managedFields; a plugin
    that comes to read another status field must keep it here.
    """
    from ..api.types.core_v1 import ContainerStatus, PodStatus

    def containers(statuses: Any) -> Any:
        return [ContainerStatus(name=c.name, image=c.image, image_id=c.image_id, ready=c.ready,
                                restart_count=c.restart_count, resources=c.resources,
                                allocated_resources=c.allocated_resources) for c in statuses] if statuses else None
    return PodStatus(phase=st.phase, nominated_node_name=st.nominated_node_name, observed_generation=st.observed_generation,
                     conditions=[c for c in st.conditions or () if c.type == "PodScheduled"] or None,
                     resize=st.resize, resources=st.resources, allocated_resources=st.allocated_resources,
                     resource_claim_statuses=st.resource_claim_statuses,
                     extended_resource_claim_status=st.extended_resource_claim_status,
                     container_statuses=containers(st.container_statuses),
                     init_container_statuses=containers(st.init_container_statuses))


class HandlerSync:
    """The "sched-handler-sync" readiness check: fails while the running scheduler's informers
    have not delivered their first list. Upstream starts them before leader election, so a
    standby is ready too; here they start once leading, and a standby (no informers) passes.
    Upstream: handlerSyncCheck (cmd/kube-scheduler/app/server.go)
    """

    def __init__(self) -> None:
        self.factory: SharedInformerFactory | None = None

    def check(self) -> Exception | None:
        f = self.factory
        if f is None or all(f.informers[key].shared.has_synced() for key in f.tasks):
            return None
        return RuntimeError("waiting for handlers to sync")


def add_parser(sub: Any) -> None:
    add_component_parser(sub, "scheduler", "run the scheduler against an API server", "kube-scheduler", run,
                         secure_port=SECURE_PORT)


def run(args: argparse.Namespace) -> int:
    from .serving import HealthChecks, LeaderHealthzAdaptor

    health = HealthChecks()
    watchdog = LeaderHealthzAdaptor() if args.leader_elect else None
    if watchdog is not None:
        health.add(("healthz", "readyz"), watchdog.named_check())
    synced = HandlerSync()
    health.add(("readyz",), NamedCheck("sched-handler-sync", synced.check))

    async def schedule(cs: Clientset) -> None:
        synced.factory = factory = new_informer_factory(cs)
        try:
            await run_scheduler(cs, factory=factory)
        finally:
            await factory.shutdown()

    return run_component(args, user_agent="kube-scheduler", lease="kube-scheduler", run=schedule, health=health,
                         watchdog=watchdog)
