"""The HPA's replica calculator: from the pods' metrics to a desired replica count.

Pure arithmetic over a pod lister and a metrics client (nothing is written). The rules:

- Pods being deleted or Failed are ignored; Pending pods count as unready; pods with no metric
  are missing. For CPU, a pod is also unready while its sample may still reflect start-up (within
  cpuInitializationPeriod of its start, a sample not a full window after it turned Ready) or if
  it has never been Ready.
- usageRatio = usage / target over the ready pods. Within the tolerances (by default 10% either
  way) nothing changes. Without unready or missing pods, the answer is ceil(ratio * ready pods).
- Otherwise, to damp the change: on a scale-down missing pods count as using their whole
  request (or the target, if above 100%); on a scale-up missing pods and unready pods count as
  using nothing. If that new ratio is within tolerance, or flips the direction, keep the count.

Example (upstream's TestReplicaCalcScaleUpUnreadyLessScale): 3 pods of 1 CPU at a 30% target use
300m (unready), 500m, 700m. Ready pods: 1200m / 2000m = 60%, ratio 2.0, a scale-up with an unready
pod: count it at 0 -> 1200m / 3000m = 40%, ratio 1.33 over 3 pods -> ceil(4.0) = 4 replicas.

Upstream: pkg/controller/podautoscaler/replica_calculator.go (ReplicaCalculator, Tolerances,
groupPods, calculateRequests, removeMetricsForPods).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...api import quantity
from ...api.types import core_v1
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339
from .. import controller_utils as cu
from .metrics import MetricsClient, PodMetric, PodMetricsInfo, get_metric_usage_ratio, get_resource_utilization_ratio

DEFAULT_TOLERANCE = 0.1                      # --horizontal-pod-autoscaler-tolerance
DEFAULT_CPU_INITIALIZATION_PERIOD = 300.0    # --horizontal-pod-autoscaler-cpu-initialization-period (5m)
DEFAULT_DELAY_OF_INITIAL_READINESS_STATUS = 30.0   # --horizontal-pod-autoscaler-initial-readiness-delay
MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1
_ZERO_TIME = -62135596800.0                  # Go's zero time.Time


@dataclass(frozen=True, slots=True)
class Tolerances:
    """How far below and above 1.0 a usage ratio may be without a change. Upstream: Tolerances"""

    scale_down: float = DEFAULT_TOLERANCE
    scale_up: float = DEFAULT_TOLERANCE

    def __str__(self) -> str:
        return f"[down:{self.scale_down * 100:.1f}%, up:{self.scale_up * 100:.1f}%]"

    def is_within(self, usage_ratio: float) -> bool:
        return (1.0 - self.scale_down) <= usage_ratio <= (1.0 + self.scale_up)


class ReplicaCalculator:
    """Upstream: ReplicaCalculator"""

    def __init__(self, metrics_client: MetricsClient, pod_lister: Any, *,
                 cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD,
                 delay_of_initial_readiness_status: float = DEFAULT_DELAY_OF_INITIAL_READINESS_STATUS,
                 clock: Clock = REAL_CLOCK) -> None:
        self.metrics_client = metrics_client
        self.pod_lister = pod_lister
        self.cpu_initialization_period = cpu_initialization_period
        self.delay_of_initial_readiness_status = delay_of_initial_readiness_status
        self.clock = clock

    # --- resource metrics (utilization of the requests, or raw values) ---------------------------

    def get_resource_replicas(self, current_replicas: int, target_utilization: int, resource: str,
                              tolerances: Tolerances, namespace: str, selector: Any, container: str = ""
                              ) -> tuple[int, int, int, float]:
        """(replicas, utilization %, raw average, metrics timestamp) for a target utilization of
        the pods' requests. Raises ValueError with upstream's message. Upstream: GetResourceReplicas"""
        try:
            metrics, timestamp = self.metrics_client.get_resource_metric(resource, namespace, selector, container)
        except ValueError as e:
            raise ValueError(f"unable to get metrics for resource {resource}: {e}") from None
        pods = self._pods(namespace, selector)
        ready, unready, missing, ignored = group_pods(pods, metrics, resource, self.cpu_initialization_period,
                                                      self.delay_of_initial_readiness_status, self.clock.now())
        remove_metrics_for_pods(metrics, ignored)
        remove_metrics_for_pods(metrics, unready)
        if not metrics:
            raise ValueError("did not receive metrics for targeted pods (pods might be unready)")
        requests = calculate_requests(pods, container, resource)
        ratio, utilization, raw = get_resource_utilization_ratio(metrics, requests, target_utilization)

        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if tolerances.is_within(ratio):
                return current_replicas, utilization, raw, timestamp
            return math.ceil(ratio * ready), utilization, raw, timestamp

        if missing:
            if ratio < 1.0:
                # On a scale-down, missing pods use all they request (or the target, above 100%).
                fallback = max(100, target_utilization)
                for pod in missing:
                    metrics[pod] = PodMetric(_go_div(requests[pod] * fallback, 100))
            elif ratio > 1.0:
                for pod in missing:               # on a scale-up, missing pods use nothing
                    metrics[pod] = PodMetric(0)
        if scale_up_with_unready:
            for pod in unready:                   # on a scale-up, unready pods use nothing
                metrics[pod] = PodMetric(0)
        new_ratio, _, _ = get_resource_utilization_ratio(metrics, requests, target_utilization)
        return _damped(current_replicas, ratio, new_ratio, len(metrics), tolerances), utilization, raw, timestamp

    def get_raw_resource_replicas(self, current_replicas: int, target_usage: int, resource: str,
                                  tolerances: Tolerances, namespace: str, selector: Any, container: str = ""
                                  ) -> tuple[int, int, float]:
        """(replicas, average usage, timestamp) for a raw target (milli-units per pod).
        Upstream: GetRawResourceReplicas"""
        try:
            metrics, timestamp = self.metrics_client.get_resource_metric(resource, namespace, selector, container)
        except ValueError as e:
            raise ValueError(f"unable to get metrics for resource {resource}: {e}") from None
        replicas, usage = self.calc_plain_metric_replicas(metrics, current_replicas, target_usage, tolerances,
                                                          namespace, selector, resource)
        return replicas, usage, timestamp

    # --- pods metrics (custom metrics per pod) ------------------------------------------------------

    def get_metric_replicas(self, current_replicas: int, target_usage: int, metric_name: str, tolerances: Tolerances,
                            namespace: str, selector: Any, metric_selector: Any = None) -> tuple[int, int, float]:
        """Upstream: GetMetricReplicas"""
        try:
            metrics, timestamp = self.metrics_client.get_raw_metric(metric_name, namespace, selector, metric_selector)
        except ValueError as e:
            raise ValueError(f"unable to get metric {metric_name}: {e}") from None
        replicas, usage = self.calc_plain_metric_replicas(metrics, current_replicas, target_usage, tolerances,
                                                          namespace, selector, "")
        return replicas, usage, timestamp

    def calc_plain_metric_replicas(self, metrics: PodMetricsInfo, current_replicas: int, target_usage: int,
                                   tolerances: Tolerances, namespace: str, selector: Any, resource: str
                                   ) -> tuple[int, int]:
        """Replicas for a per-pod target value (missing pods count as exactly the target on a
        scale-down). Upstream: calcPlainMetricReplicas"""
        pods = self._pods(namespace, selector)
        ready, unready, missing, ignored = group_pods(pods, metrics, resource, self.cpu_initialization_period,
                                                      self.delay_of_initial_readiness_status, self.clock.now())
        remove_metrics_for_pods(metrics, ignored)
        remove_metrics_for_pods(metrics, unready)
        if not metrics:
            raise ValueError("did not receive metrics for targeted pods (pods might be unready)")
        ratio, usage = get_metric_usage_ratio(metrics, target_usage)

        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if tolerances.is_within(ratio):
                return current_replicas, usage
            return math.ceil(ratio * ready), usage

        if missing:
            if ratio < 1.0:
                for pod in missing:
                    metrics[pod] = PodMetric(target_usage)
            elif ratio > 1.0:
                for pod in missing:
                    metrics[pod] = PodMetric(0)
        if scale_up_with_unready:
            for pod in unready:
                metrics[pod] = PodMetric(0)
        new_ratio, _ = get_metric_usage_ratio(metrics, target_usage)
        return _damped(current_replicas, ratio, new_ratio, len(metrics), tolerances), usage

    # --- object and external metrics -----------------------------------------------------------------

    def get_object_metric_replicas(self, current_replicas: int, target_usage: int, metric_name: str,
                                   tolerances: Tolerances, namespace: str, object_ref: Any, selector: Any,
                                   metric_selector: Any = None) -> tuple[int, int, float]:
        """A metric of one object against a total target. Upstream: GetObjectMetricReplicas"""
        try:
            usage, _ = self.metrics_client.get_object_metric(metric_name, namespace, object_ref, metric_selector)
        except ValueError as e:
            raise ValueError(f"unable to get metric {metric_name}: {e} on {_kind(object_ref)} "
                             f"{namespace}/{_name(object_ref)}") from None
        replicas, timestamp = self.get_usage_ratio_replica_count(current_replicas, usage / target_usage, tolerances,
                                                                 namespace, selector)
        return replicas, usage, timestamp

    def get_usage_ratio_replica_count(self, current_replicas: int, usage_ratio: float, tolerances: Tolerances,
                                      namespace: str, selector: Any) -> tuple[int, float]:
        """ceil(ratio * ready pods), capped at MaxInt32; from 0 replicas ceil(ratio) (scale from
        zero, no tolerance). The timestamp is left zero, as upstream. Upstream: getUsageRatioReplicaCount"""
        if current_replicas == 0:
            return math.ceil(usage_ratio), _ZERO_TIME
        if tolerances.is_within(usage_ratio):
            return current_replicas, _ZERO_TIME
        try:
            ready = self.get_ready_pods_count(namespace, selector)
        except ValueError as e:
            raise ValueError(f"unable to calculate ready pods: {e}") from None
        replicas = usage_ratio * ready
        return (MAX_INT32 if replicas > MAX_INT32 else math.ceil(replicas)), _ZERO_TIME

    def get_object_per_pod_metric_replicas(self, status_replicas: int, target_average_usage: int, metric_name: str,
                                           tolerances: Tolerances, namespace: str, object_ref: Any,
                                           metric_selector: Any = None) -> tuple[int, int, float]:
        """A metric of one object against a per-pod target. Upstream: GetObjectPerPodMetricReplicas"""
        try:
            usage, timestamp = self.metrics_client.get_object_metric(metric_name, namespace, object_ref,
                                                                     metric_selector)
        except ValueError as e:
            raise ValueError(f"unable to get metric {metric_name}: {e} on {_kind(object_ref)} "
                             f"{namespace}/{_name(object_ref)}") from None
        replicas = status_replicas
        if not tolerances.is_within(_fdiv(usage, target_average_usage * replicas)):
            replicas = math.ceil(usage / target_average_usage)
        per_pod = _fdiv(usage, status_replicas)
        return replicas, MAX_INT64 if per_pod > MAX_INT64 else math.ceil(per_pod), timestamp

    def get_ready_pods_count(self, namespace: str, selector: Any) -> int:
        """Running and Ready pods. Upstream: getReadyPodsCount"""
        pods = self._pods(namespace, selector)
        return sum(1 for p in pods if _phase(p) == "Running" and cu.is_pod_ready(p))

    def get_external_metric_replicas(self, current_replicas: int, target_usage: int, metric_name: str,
                                     tolerances: Tolerances, namespace: str, metric_selector: Any, pod_selector: Any
                                     ) -> tuple[int, int, float]:
        """The sum of an external metric's series against a total target.
        Upstream: GetExternalMetricReplicas"""
        values = self._external(metric_name, namespace, metric_selector)[0]
        usage = 0
        for v in values:
            if v > 0 and usage > MAX_INT64 - v:      # cap at MaxInt64 on overflow
                usage = MAX_INT64
                break
            usage += v
        replicas, timestamp = self.get_usage_ratio_replica_count(current_replicas, usage / target_usage, tolerances,
                                                                 namespace, pod_selector)
        return replicas, usage, timestamp

    def get_external_per_pod_metric_replicas(self, status_replicas: int, target_usage_per_pod: int, metric_name: str,
                                             tolerances: Tolerances, namespace: str, metric_selector: Any
                                             ) -> tuple[int, int, float]:
        """An external metric's sum against a per-pod target. Upstream: GetExternalPerPodMetricReplicas"""
        values, timestamp = self._external(metric_name, namespace, metric_selector)
        usage = min(sum(values), MAX_INT64)
        replicas = status_replicas
        if not tolerances.is_within(_fdiv(usage, target_usage_per_pod * replicas)):
            wanted = math.ceil(usage / target_usage_per_pod)
            replicas = MAX_INT32 if wanted > MAX_INT32 else wanted
        per_pod = _fdiv(usage, status_replicas)
        usage = MAX_INT64 if usage >= MAX_INT64 or per_pod > MAX_INT64 else math.ceil(per_pod)
        return replicas, usage, timestamp

    def _external(self, metric_name: str, namespace: str, metric_selector: Any) -> tuple[list[int], float]:
        try:
            return self.metrics_client.get_external_metric(metric_name, namespace, metric_selector)
        except ValueError as e:
            raise ValueError(f"unable to get external metric {namespace}/{metric_name}/{metric_selector}: {e}"
                             ) from None

    def _pods(self, namespace: str, selector: Any) -> list[core_v1.Pod]:
        pods = self.pod_lister.pods(namespace).list(selector)
        if not pods:
            raise ValueError("no pods returned by selector while calculating replica count")
        return list(pods)


def _damped(current: int, ratio: float, new_ratio: float, counted: int, tolerances: Tolerances) -> int:
    """The replica count after the missing/unready pods were filled in: unchanged if the new
    ratio is within tolerance, flips direction, or the new count would move against it."""
    if tolerances.is_within(new_ratio) or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
        return current
    replicas = math.ceil(new_ratio * counted)
    if (new_ratio < 1.0 and replicas > current) or (new_ratio > 1.0 and replicas < current):
        return current
    return replicas


def group_pods(pods: list[core_v1.Pod], metrics: PodMetricsInfo, resource: str, cpu_initialization_period: float,
               delay_of_initial_readiness_status: float, now: float) -> tuple[int, set[str], set[str], set[str]]:
    """(ready count, unready, missing, ignored pod names). Upstream: groupPods"""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod.metadata.name or ""
        phase = _phase(pod)
        if pod.metadata.deletion_timestamp is not None or phase == "Failed":
            ignored.add(name)
            continue
        if phase == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu" and _cpu_unready(pod, metric, cpu_initialization_period,
                                              delay_of_initial_readiness_status, now):
            unready.add(name)
            continue
        ready += 1
    return ready, unready, missing, ignored


def _cpu_unready(pod: core_v1.Pod, metric: PodMetric, init_period: float, initial_delay: float, now: float) -> bool:
    """CPU samples lie while a pod starts: within the initialization period, unready unless Ready
    and sampled a full window after turning Ready; after it, unready only if never Ready."""
    condition = cu.get_pod_ready_condition(pod)
    start = pod.status.start_time if pod.status else None
    if condition is None or start is None:
        return True
    started = parse_rfc3339(start)
    transition = parse_rfc3339(condition.last_transition_time) if condition.last_transition_time else _ZERO_TIME
    if started + init_period > now:
        return condition.status == "False" or metric.timestamp < transition + metric.window
    return condition.status == "False" and started + initial_delay > transition


def calculate_requests(pods: list[core_v1.Pod], container: str, resource: str) -> dict[str, int]:
    """Per pod, the request (milli-units) of `resource`: one container's if the HPA names one;
    else the pod-level request if the pod sets pod-level resources (PodLevelResources, KEP-2837);
    else the sum over the containers and restartable init containers. ValueError if a request is
    missing. Upstream: calculateRequests"""
    out = {}
    for pod in pods:
        if not container and _pod_level_requests_set(pod):
            out[pod.metadata.name or ""] = _pod_level_request(pod, resource)
        else:
            out[pod.metadata.name or ""] = _pod_request(pod, container, resource)
    return out


# Upstream: resourcehelpers.IsSupportedPodLevelResource
_POD_LEVEL_RESOURCES = ("cpu", "memory")


def _pod_level_requests_set(pod: core_v1.Pod) -> bool:
    """Upstream: resourcehelpers.IsPodLevelRequestsSet — pod-level requests, or supported limits."""
    r = pod.spec.resources if pod.spec else None
    if r is None:
        return False
    return bool(r.requests) or any(name in _POD_LEVEL_RESOURCES for name in r.limits or ())


def _pod_level_request(pod: core_v1.Pod, resource: str) -> int:
    """Upstream: calculatePodLevelRequests (the requests defaulting copied from the limits)."""
    r = pod.spec.resources if pod.spec else None
    requests = (r.requests if r else None) or {}
    if resource not in _POD_LEVEL_RESOURCES or resource not in requests:
        raise ValueError(f"missing pod-level request for {resource} in Pod {pod.metadata.name}")
    return quantity.milli_value(requests[resource])


def _pod_request(pod: core_v1.Pod, container: str, resource: str) -> int:
    """Upstream: calculatePodRequestsFromContainers"""
    spec = pod.spec or core_v1.PodSpec()
    containers = [*(spec.containers or ()), *(c for c in spec.init_containers or () if c.restart_policy == "Always")]
    total = 0
    for c in containers:
        if not container or container == c.name:
            requests = (c.resources.requests if c.resources else None) or {}
            if resource not in requests:
                raise ValueError(f"missing request for {resource} in container {c.name} of Pod {pod.metadata.name}")
            total += quantity.milli_value(requests[resource])
        if container and container == c.name:
            return total
    if container:
        raise ValueError(f"container {container} not found in Pod {pod.metadata.name}")
    return total


def remove_metrics_for_pods(metrics: PodMetricsInfo, pods: set[str]) -> None:
    for pod in pods:
        metrics.pop(pod, None)


def _phase(pod: core_v1.Pod) -> str | None:
    return pod.status.phase if pod.status else None


def _fdiv(a: float, b: float) -> float:
    """Go's float64 division: by zero is +Inf (a target with no replicas in its status yet)."""
    if b == 0:
        return math.inf if a > 0 else (0.0 if a == 0 else -math.inf)
    return a / b


def _go_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _kind(ref: Any) -> str:
    return getattr(ref, "kind", None) or (ref.get("kind", "") if isinstance(ref, dict) else "")


def _name(ref: Any) -> str:
    return getattr(ref, "name", None) or (ref.get("name", "") if isinstance(ref, dict) else "")
