"""The Scheduler: cache + queue + framework, fed by pod and node informers.

Upstream: pkg/scheduler/scheduler.go. One profile (default-scheduler) with upstream's
default plugins and weights.

    sched = Scheduler(clientset, factory.core_v1().pods(), factory.core_v1().nodes(),
                      recorder=broadcaster.new_recorder("default-scheduler"))
    factory.start()
    await sched.run()          # until cancelled
"""
from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..api.types.core_v1 import Pod
from ..client.tools.cache import wait_for_cache_sync
from ..utils.clock import REAL_CLOCK, Clock
from .eventhandlers import NodeEventHandler, PodEventHandler
from .framework.runtime import Framework, default_framework
from .internal.cache import Cache, Snapshot
from .internal.queue.scheduling_queue import ASSIGNED_POD_DELETE, PriorityQueue
from .schedule_one import schedule_one

if TYPE_CHECKING:
    from ..client.clientset import Clientset
    from ..client.informers import ResourceInformer
    from ..client.listers import NodeLister, PodLister

log = logging.getLogger(__name__)
# How long schedule_loop runs before yielding to the event loop (seconds). The scheduler shares
# the loop with every task of `up`: while the ReplicaSet controller's creates (up to 500 in
# flight) fill a loop turn, a 10 ms slice left binding seconds behind creation (10,000 pods on
# 1,000 nodes: startup p99 1.4-3.2 s, a rolling update's 8-9 s); 50 ms keeps pods bound about
# as fast as they are created (p99 0.94-0.96 s, rolling update's 1.2-1.5 s) at the same CPU,
# and delays the other tasks by at most one slice, only while pods wait (BENCHMARKS.md).
SCHEDULING_SLICE = 0.050


@dataclass(frozen=True)
class SchedulerOptions:
    percentage_of_nodes_to_score: int = 0          # 0: adaptive (50% - nodes/125, >= 5%)
    pod_initial_backoff: float = 1.0               # seconds (podInitialBackoffSeconds)
    pod_max_backoff: float = 10.0                  # seconds (podMaxBackoffSeconds)
    pod_max_in_unschedulable_pods: float = 300.0   # seconds before a periodic flush retries a pod
    seed: int | None = None                        # selectHost tie-breaking; None: random


class Scheduler:
    def __init__(self, client: Clientset, pod_informer: ResourceInformer[PodLister],
                 node_informer: ResourceInformer[NodeLister], *, recorder: Any,
                 clock: Clock = REAL_CLOCK, options: SchedulerOptions = SchedulerOptions(),
                 framework: Framework | None = None) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.options = options
        self.percentage_of_nodes_to_score = options.percentage_of_nodes_to_score
        self.cache = Cache()
        self.snapshot = Snapshot()
        self.framework = framework or default_framework(clientset=client)
        self.framework.snapshot = self.snapshot
        self.framework._clientset = client
        self.scheduler_names = frozenset([self.framework.profile_name])
        self.queue = PriorityQueue(clock=clock, less=self.framework.queue_sort_func(),
                                   pod_initial_backoff=options.pod_initial_backoff,
                                   pod_max_backoff=options.pod_max_backoff,
                                   pod_max_in_unschedulable_pods=options.pod_max_in_unschedulable_pods)
        self.next_start_node_index = 0
        self.rng = random.Random(options.seed)
        self.binding_tasks: set[asyncio.Future[None]] = set()
        self.scheduled = 0
        self.pod_informer = pod_informer.informer()
        self.node_informer = node_informer.informer()
        self.pod_informer.add_event_handler(PodEventHandler(self))
        self.pod_informer.share_unchanged_specs()         # Cache._update_pod compares specs
        self.node_informer.add_event_handler(NodeEventHandler(self))

    # --- cache handlers (upstream eventhandlers.go) ----------------------------------------------

    def add_pod_to_cache(self, pod: Pod) -> None:
        """Upstream: addPodToCache"""
        self.cache.add_pod(pod)
        self.queue.assigned_pod_added(pod)

    def update_pod_in_cache(self, old: Pod, new: Pod) -> None:
        """Upstream: updatePodInCache"""
        try:
            self.cache.update_pod(old, new)
        except ValueError:
            log.exception("Scheduler cache UpdatePod failed", extra={"pod": new.metadata.name})
            return
        self.queue.assigned_pod_updated(old, new)

    def delete_pod_from_cache(self, pod: Pod) -> None:
        """Upstream: deletePodFromCache: freed room may help unschedulable pods."""
        try:
            self.cache.remove_pod(pod)
        except ValueError:
            log.info("Scheduler cache RemovePod: pod not in cache", extra={"pod": pod.metadata.name})
        self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE)

    def pod_lister_get(self, namespace: str, name: str) -> Pod | None:
        return self.pod_informer.indexer.get_by_key(f"{namespace}/{name}")

    # --- running ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Wait for the informers, then schedule until cancelled. Upstream: Scheduler.Run"""
        await wait_for_cache_sync(self.pod_informer, self.node_informer, *self.framework.plugin_informers)
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(self.queue.run())
                tg.create_task(self.schedule_loop())
        finally:
            self.queue.close()
            for t in list(self.binding_tasks):
                t.cancel()

    async def schedule_loop(self) -> None:
        """Schedule pods back to back, yielding to the loop (binding tasks, informers, the
        other components of this process) once per time slice rather than once per pod: one
        pod per loop turn left the scheduler ~14% of a busy loop, and pods waited seconds."""
        slice_end = self.clock.monotonic() + SCHEDULING_SLICE
        while await schedule_one(self):
            if self.clock.monotonic() >= slice_end:
                await self.clock.sleep(0)
                slice_end = self.clock.monotonic() + SCHEDULING_SLICE

    async def wait_for_bindings(self) -> None:
        """Await every binding in flight (tests and benchmarks)."""
        while self.binding_tasks:
            await asyncio.gather(*list(self.binding_tasks), return_exceptions=True)
