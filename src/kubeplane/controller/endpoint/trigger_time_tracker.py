"""The `endpoints.kubernetes.io/last-change-trigger-time` value: when the change that this
sync publishes happened (the earliest pod readiness change or Service creation since the last
sync), so that consumers can measure programming latency.

Upstream: pkg/controller/util/endpoint/trigger_time_tracker.go
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ...api.types import ObjectName, core_v1
from .. import controller_utils as cu


@dataclass
class ServiceState:
    last_pod_trigger_times: dict[str, float] = field(default_factory=dict)
    last_service_trigger_time: float = 0.0


def _time(value: object) -> float:
    from ...utils.clock import parse_rfc3339
    if not value:
        return 0.0
    return parse_rfc3339(value) if isinstance(value, str) else float(value)  # type: ignore[arg-type]


def get_pod_trigger_time(pod: core_v1.Pod) -> float:
    """The pod's Ready condition's lastTransitionTime. Upstream: getPodTriggerTime"""
    cond = cu.get_pod_ready_condition(pod)
    return _time(cond.last_transition_time) if cond is not None else 0.0


def get_service_trigger_time(service: core_v1.Service) -> float:
    """Upstream: getServiceTriggerTime"""
    return _time(service.metadata.creation_timestamp)


class TriggerTimeTracker:
    """Upstream: TriggerTimeTracker"""

    def __init__(self) -> None:
        self.service_states: dict[ObjectName, ServiceState] = {}

    def compute_endpoint_last_change_trigger_time(self, namespace: str, service: core_v1.Service,
                                                  pods: list[core_v1.Pod]) -> float | None:
        """The earliest trigger time that changed since the last call (None: nothing changed);
        for a Service seen the first time, its creationTimestamp.
        Upstream: ComputeEndpointLastChangeTriggerTime"""
        key = ObjectName(namespace, service.metadata.name or "")
        state = self.service_states.get(key)
        was_known = state is not None
        state = state or ServiceState()
        changed: float | None = None
        pod_times: dict[str, float] = {}
        for pod in pods:
            t = get_pod_trigger_time(pod)
            if t:
                pod_times[pod.metadata.name or ""] = t
                if t > state.last_pod_trigger_times.get(pod.metadata.name or "", 0.0):
                    changed = t if changed is None else min(changed, t)
        svc_time = get_service_trigger_time(service)
        if svc_time > state.last_service_trigger_time:
            changed = svc_time if changed is None else min(changed, svc_time)
        self.service_states[key] = ServiceState(pod_times, svc_time)
        if not was_known:
            return svc_time or None
        return changed

    def delete_service(self, namespace: str, name: str) -> None:
        """Upstream: DeleteService"""
        self.service_states.pop(ObjectName(namespace, name), None)
