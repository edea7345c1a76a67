"""Readiness workers for every running container that has a readinessProbe.

    pm = ProbeManager(runtime, clock=clock, on_change=pod_workers.enqueue)
    pm.update_pod(pod, rt_status)        # after each sync: start/stop workers
    pm.is_ready(container, rt_container) # what generate_api_pod_status asks

Upstream: prober_manager.go (AddPod/RemovePod/UpdatePodStatus) and results/results_manager.go.
A container without a readinessProbe is ready once running, as upstream.
"""
from __future__ import annotations

from typing import Callable

from ...api.types import core_v1
from ...utils.clock import REAL_CLOCK, Clock
from ..runtime import RUNNING, ContainerStatus, PodStatus, Runtime
from .worker import ProbeSpec, Worker


class ProbeManager:
    """workers: (pod uid, container name) -> the worker probing its current attempt.
    ready: container id -> latest readiness result (only for probed containers).
    """

    def __init__(self, runtime: Runtime, *, clock: Clock = REAL_CLOCK,
                 on_change: Callable[[str], None] = lambda uid: None) -> None:
        self.runtime, self.clock, self.on_change = runtime, clock, on_change
        self.workers: dict[tuple[str, str], Worker] = {}
        self.ready: dict[str, bool] = {}

    def update_pod(self, pod: core_v1.Pod, rt: PodStatus) -> None:
        """Start a worker for each newly running probed container; stop stale ones."""
        uid = pod.metadata.uid or ""
        for c in pod.spec.containers or ():
            if c.readiness_probe is None:
                continue
            st = rt.latest(c.name or "")
            key = (uid, c.name or "")
            w = self.workers.get(key)
            if st is None or st.state != RUNNING:
                if w is not None:
                    self._stop(key)
                continue
            if w is not None and w.container_id == st.id:
                continue
            if w is not None:
                self._stop(key)
            w = Worker(st.id, ProbeSpec.from_probe(c.readiness_probe), st.started_at or self.clock.now(),
                       clock=self.clock, probe=lambda cid: self.runtime.probe(cid, "readiness"),
                       on_result=lambda cid, ok, uid=uid: self._set(uid, cid, ok))
            self.workers[key] = w
            w.start()

    def is_ready(self, c: core_v1.Container, st: ContainerStatus) -> bool:
        """Readiness of a running container. Upstream: UpdatePodStatus's ready computation."""
        if c.readiness_probe is None:
            return True
        return self.ready.get(st.id, False)

    def remove_pod(self, uid: str) -> None:
        for key in [k for k in self.workers if k[0] == uid]:
            self._stop(key)

    def stop(self) -> None:
        for key in list(self.workers):
            self._stop(key)

    def _stop(self, key: tuple[str, str]) -> None:
        w = self.workers.pop(key)
        w.stop()
        self.ready.pop(w.container_id, None)

    def _set(self, uid: str, cid: str, ok: bool) -> None:
        self.ready[cid] = ok
        self.on_change(uid)
