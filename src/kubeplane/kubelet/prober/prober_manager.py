"""Readiness, liveness and startup workers for every running container that has those probes.

    pm = ProbeManager(runtime, clock=clock, on_change=pod_workers.enqueue, on_unhealthy=kill)
    pm.update_pod(pod, rt_status)          # after each sync: start/stop workers
    pm.is_ready(container, rt_container)   # what generate_api_pod_status asks
    pm.is_started(container, rt_container)

Upstream: prober_manager.go (AddPod/RemovePod/UpdatePodStatus) and results/results_manager.go.
A container without a readinessProbe is ready once started, one without a startupProbe is
started once running, as upstream. A liveness or startup Failure calls
on_unhealthy(pod uid, container id, container name, probe type): the kubelet kills the
container and its restart policy decides what follows.

Each (pod, container, probe type) with a worker has a metrics.ProbeSeries (prober_probe_total,
prober_probe_duration_seconds) from its first worker until the pod is removed: a container's
next attempt gets a new worker but goes on counting in the same series, as upstream's one
worker per (pod, container, probe type) does across restarts; the pod's removal drops its
series, as upstream's worker deletes its series when it stops.
"""
from __future__ import annotations

from typing import Callable

from ...api.types import core_v1
from ...utils.clock import REAL_CLOCK, Clock
from ..metrics import ProbeSeries
from ..runtime import RUNNING, ContainerStatus, PodStatus, Runtime
from .worker import LIVENESS, READINESS, STARTUP, ProbeSpec, Worker

PROBE_TYPES = (STARTUP, READINESS, LIVENESS)
UnhealthyHandler = Callable[[str, str, str, str], None]


def _probe_of(c: core_v1.Container, probe_type: str) -> core_v1.Probe | None:
    return getattr(c, f"{probe_type}_probe")


class ProbeManager:
    """workers: (pod uid, container name, probe type) -> the worker probing its current attempt.
    ready / started: container id -> latest readiness / startup result (probed containers only).
    series: (pod uid, container name, probe type) -> its prober_* series, while the pod is here.
    """

    def __init__(self, runtime: Runtime, *, clock: Clock = REAL_CLOCK,
                 on_change: Callable[[str], None] = lambda uid: None,
                 on_unhealthy: UnhealthyHandler = lambda uid, cid, name, probe_type: None) -> None:
        self.runtime, self.clock, self.on_change, self.on_unhealthy = runtime, clock, on_change, on_unhealthy
        self.workers: dict[tuple[str, str, str], Worker] = {}
        self.series: dict[tuple[str, str, str], ProbeSeries] = {}
        self.ready: dict[str, bool] = {}
        self.started: dict[str, bool] = {}
        # container id -> (pod uid, probe type -> the result its first worker starts from)
        self.restored: dict[str, tuple[str, dict[str, bool]]] = {}

    def restore_pod(self, pod: core_v1.Pod, rt: PodStatus) -> None:
        """After a kubelet restart: let the workers of each still-running attempt start from
        the readiness and started flags the pod's status reports for it (same container id),
        instead of upstream's initial Failure / unknown; the next probes decide from there.
        """
        uid = pod.metadata.uid or ""
        probed = {c.name for c in pod.spec.containers or () if c.readiness_probe or c.startup_probe}
        for cs in (pod.status.container_statuses if pod.status else None) or ():
            st = rt.latest(cs.name or "")
            if cs.name in probed and st is not None and st.state == RUNNING and st.id == cs.container_id:
                self.restored[st.id] = (uid, {READINESS: bool(cs.ready), STARTUP: bool(cs.started)})

    def update_pod(self, pod: core_v1.Pod, rt: PodStatus) -> None:
        """Start a worker per probe of each newly running container; stop stale ones."""
        for c in pod.spec.containers or ():
            st = rt.latest(c.name or "")
            for probe_type in PROBE_TYPES:
                probe = _probe_of(c, probe_type)
                if probe is not None:
                    self._ensure(pod, c, st, probe_type, probe)

    def _ensure(self, pod: core_v1.Pod, c: core_v1.Container, st: ContainerStatus | None, probe_type: str,
                probe: core_v1.Probe) -> None:
        uid = pod.metadata.uid or ""
        key = (uid, c.name or "", probe_type)
        w = self.workers.get(key)
        if st is None or st.state != RUNNING:
            if w is not None:
                self._stop(key)
            return
        if w is not None and w.container_id == st.id:
            return
        if w is not None:
            self._stop(key)
        initial = self.restored[st.id][1].get(probe_type) if st.id in self.restored else None
        series = self.series.get(key)
        if series is None:
            series = self.series[key] = ProbeSeries(probe_type, c.name or "", pod.metadata.name or "",
                                                    pod.metadata.namespace or "", uid)
        w = Worker(st.id, ProbeSpec.from_probe(probe), st.started_at or self.clock.now(), clock=self.clock,
                   probe=lambda cid, t=probe_type: self.runtime.probe(cid, t),
                   on_result=lambda cid, ok, t=probe_type, name=c.name or "": self._set(uid, name, t, cid, ok),
                   probe_type=probe_type, started=lambda cid=st.id, c=c: self._is_started_id(c, cid),
                   initial=initial, series=series)
        if initial is not None and probe_type == READINESS:
            self.ready[st.id] = initial
        elif initial is not None and probe_type == STARTUP:
            self.started[st.id] = initial
        self.workers[key] = w
        w.start()

    def is_started(self, c: core_v1.Container, st: ContainerStatus) -> bool:
        """Whether a running container counts as started. Upstream: UpdatePodStatus"""
        return self._is_started_id(c, st.id)

    def _is_started_id(self, c: core_v1.Container, cid: str) -> bool:
        if c.startup_probe is None:
            return True
        return self.started.get(cid, False)

    def is_ready(self, c: core_v1.Container, st: ContainerStatus) -> bool:
        """Readiness of a running container. Upstream: UpdatePodStatus's ready computation."""
        if not self.is_started(c, st):
            return False
        if c.readiness_probe is None:
            return True
        return self.ready.get(st.id, False)

    def remove_pod(self, uid: str) -> None:
        for key in [k for k in self.workers if k[0] == uid]:
            self._stop(key)
        for key in [k for k in self.series if k[0] == uid]:
            del self.series[key]
        for cid in [cid for cid, (owner, _) in self.restored.items() if owner == uid]:
            del self.restored[cid]

    def stop(self) -> None:
        for key in list(self.workers):
            self._stop(key)
        self.series.clear()

    def _stop(self, key: tuple[str, str, str]) -> None:
        w = self.workers.pop(key)
        w.stop()
        self.ready.pop(w.container_id, None)
        self.started.pop(w.container_id, None)
        self.restored.pop(w.container_id, None)

    def _set(self, uid: str, name: str, probe_type: str, cid: str, ok: bool) -> None:
        if probe_type == READINESS:
            self.ready[cid] = ok
        elif probe_type == STARTUP:
            self.started[cid] = ok
        if not ok and probe_type in (LIVENESS, STARTUP):
            self.on_unhealthy(uid, cid, name, probe_type)
        self.on_change(uid)
