"""Pod startup latency: kubelet_pod_start_duration_seconds and the startup SLI histograms.

    tracker.pod_seen(pod)                     # the kubelet sees a pod for the first time
    tracker.record_image_started_pulling(uid) / record_image_finished_pulling(uid)
    tracker.record_running(uid, status)       # a status with phase Running, computed for a tracked pod
    tracker.observed_pod_on_watch(pod)        # each update of the pod from the watch
    tracker.delete_pod_startup_state(uid)     # the pod is gone

Only pods the kubelet starts are tracked: a pod seen first without status.startTime (one
that was running before a kubelet restart is not). Per pod, two moments are measured:

- kubelet_pod_start_duration_seconds: from the kubelet first seeing the pod to the first
  status it computes with phase Running (upstream: SyncPod, with firstSeenTime from the
  config source's annotation). Once per pod: upstream also observes a pod's very first sync,
  whatever its phase, so it counts each pod twice (kubernetes#132268, fix proposed in #132278).
- kubelet_pod_start_sli_duration_seconds: from metadata.creationTimestamp (1 s resolution,
  as upstream) to when the watch delivers the pod with every container running, less the
  time spent pulling images (first Pulling event to last Pulled after it); the _total_
  variant keeps the pulls in. Init containers' run time stays in both, as in upstream's
  tracker (its help text says otherwise). The moment the status manager is handed a status with every
  container running is marked first (upstream marks it when the status write returns; a
  watch event of that write can arrive before the write's response, and upstream then waits
  for a later update of the pod). first_with_network="true" marks each node's first pod
  that is not hostNetwork (upstream: one kubelet, one node, one first pod).

A pod's state goes once both are recorded, or with the pod (a pod that never runs keeps it
until deleted), so the tracker holds at most the pods still starting.

Upstream: pkg/kubelet/util/pod_startup_latency_tracker.go (basicPodStartupLatencyTracker,
hasPodStartedSLO) and SyncPod's PodStartDuration (kubelet.go).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..api.types import core_v1
from ..utils.clock import Clock, parse_rfc3339
from . import metrics

_TERMINAL = ("Succeeded", "Failed")


@dataclass(slots=True)
class _PodState:
    node: str
    first_seen: float                          # clock.now() when the kubelet first saw the pod
    first_started_pulling: float | None = None
    last_finished_pulling: float | None = None
    observed_running: float | None = None      # handed a status with every container running
    start_recorded: bool = False               # kubelet_pod_start_duration_seconds observed
    sli_recorded: bool = False                 # the SLI histograms observed


class PodStartupLatencyTracker:
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.pods: dict[str, _PodState] = {}           # uid -> state, pods still starting
        self.pulling: set[str] = set()                 # tracked pods with a pull begun: "Pulled" matters
        self.first_network_pod_seen: set[str] = set()  # node names

    def pod_seen(self, pod: core_v1.Pod) -> None:
        """Start tracking a pod the kubelet sees for the first time, unless it has started
        already. Upstream: ObservedPodOnWatch's first call (a new record when StartTime is zero)."""
        status = pod.status
        if status is not None and (status.start_time or status.phase in _TERMINAL):
            return
        self.pods[pod.metadata.uid or ""] = _PodState(pod.spec.node_name or "", self.clock.now())

    def record_image_started_pulling(self, uid: str) -> None:
        state = self.pods.get(uid)
        if state is not None and state.first_started_pulling is None:
            state.first_started_pulling = self.clock.now()
            self.pulling.add(uid)

    def record_image_finished_pulling(self, uid: str) -> None:
        """After a pull this tracker saw begin (an image already present pulls nothing)."""
        state = self.pods.get(uid)
        if state is not None and state.first_started_pulling is not None:
            state.last_finished_pulling = self.clock.now()

    def record_running(self, uid: str, status: dict[str, Any]) -> None:
        """The kubelet computed a status with phase Running for a tracked pod (before it is
        written). Every container running means phase Running (a pod has at least one), so
        the statuses before that one tell nothing.

        Upstream: SyncPod's PodStartDuration, RecordStatusUpdated
        """
        state = self.pods[uid]
        if state.observed_running is not None and state.start_recorded:
            return
        now = self.clock.now()
        if state.observed_running is None and has_pod_started_slo(status.get("containerStatuses")):
            state.observed_running = now
        if not state.start_recorded:
            metrics.pod_start_duration.observe(now - state.first_seen)
            state.start_recorded = True
            self._done(uid, state)

    def observed_pod_on_watch(self, pod: core_v1.Pod) -> None:
        """An update of a tracked pod came from the watch. Upstream: ObservedPodOnWatch"""
        uid = pod.metadata.uid or ""
        state = self.pods.get(uid)
        if state is None:
            return
        status = pod.status or core_v1.PodStatus()
        if status.phase in _TERMINAL:
            self.delete_pod_startup_state(uid)     # terminal: no startup to measure any more
            return
        if state.observed_running is None or state.sli_recorded or not _started(status):
            return
        created = pod.metadata.creation_timestamp
        if not created:
            return
        total = self.clock.now() - parse_rfc3339(created)
        pulling = 0.0
        if state.first_started_pulling is not None and state.last_finished_pulling is not None:
            pulling = state.last_finished_pulling - state.first_started_pulling
        first = not (pod.spec and pod.spec.host_network) and state.node not in self.first_network_pod_seen
        if first:
            self.first_network_pod_seen.add(state.node)
        metrics.observe_pod_start_sli(first, total - pulling, total)
        state.sli_recorded = True
        self._done(uid, state)

    def delete_pod_startup_state(self, uid: str) -> None:
        self.pods.pop(uid, None)
        self.pulling.discard(uid)

    def _done(self, uid: str, state: _PodState) -> None:
        if state.start_recorded and state.sli_recorded:
            self.delete_pod_startup_state(uid)


def has_pod_started_slo(container_statuses: list[dict[str, Any]] | None) -> bool:
    """Every container (of a wire status) has been started: state.running.startedAt is set.

    Upstream: hasPodStartedSLO (no containers: true, as upstream's loop)
    """
    for cs in container_statuses or ():
        running = (cs.get("state") or {}).get("running")
        if not running or not running.get("startedAt"):
            return False
    return True


def _started(status: core_v1.PodStatus) -> bool:
    """has_pod_started_slo for a typed status."""
    for cs in status.container_statuses or ():
        running = cs.state.running if cs.state is not None else None
        if running is None or not running.started_at:
            return False
    return True
