"""Pod-level resources (`spec.resources`, PodLevelResources: beta and on in 1.37): their defaults.

Upstream: SetDefaults_Pod's defaultHugePagePodLimits, defaultPodRequests and defaultPodLimits
(pkg/apis/core/v1/defaults.go), over AggregateContainerRequests/Limits
(component-helpers/resource/helpers.go). They run on pods only (not templates), after each
container's requests were defaulted to its limits, and only when the pod sets some pod-level
resources. Worked example: a pod with `spec.resources.limits: {cpu: "1", memory: 1Gi}` and
containers without requests gets `spec.resources.requests: {cpu: "1", memory: 1Gi}` (and is
Guaranteed); with containers requesting cpu 100m and 200m it gets requests cpu 300m (their
sum) and memory 1Gi (the limit).

A container's effective requests (or limits) over a pod: the sum over regular containers and
sidecars (init containers with restartPolicy Always), or, if larger, what any init container
needs while it runs (itself plus the sidecars started before it).

Quantities are summed exactly (api/quantity.Quantity.add) and written as Go's Quantity.String()
writes them: the sum keeps the format of its first term, `1Gi` + `512Mi` is `1536Mi`, `100m` +
`0.2` is `300m`.
"""
from __future__ import annotations

from typing import Any

from .quantity import ZERO, Quantity

Obj = dict[str, Any]
_HUGEPAGES = "hugepages-"


def set_defaults_pod_resources(pod: Obj) -> None:
    """Upstream: the PodLevelResources step of SetDefaults_Pod."""
    spec = pod.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("resources"), dict):
        return
    default_huge_page_pod_limits(spec)
    default_pod_requests(spec)
    default_pod_limits(spec)


def default_huge_page_pod_limits(spec: Obj) -> None:
    """Pod-level hugepages limits default to the containers' aggregate, unless requested at
    pod level. Upstream: defaultHugePagePodLimits"""
    res = spec["resources"]
    if not res.get("limits") and not res.get("requests"):
        return
    pod_lims = dict(res.get("limits") or {})
    requests = res.get("requests") or {}
    for key, q in aggregate_container(spec, "limits").items():
        if key.startswith(_HUGEPAGES) and key not in requests and key not in pod_lims:
            pod_lims[key] = str(q)
    if pod_lims != (res.get("limits") or {}):
        res["limits"] = dict(sorted(pod_lims.items()))      # Go writes map keys sorted


def default_pod_requests(spec: Obj) -> None:
    """With pod-level limits: requests default to the containers' aggregate requests (cpu,
    memory), else to the pod-level limit. Upstream: defaultPodRequests"""
    res = spec["resources"]
    limits = res.get("limits")
    if not limits:
        return
    pod_reqs = dict(res.get("requests") or {})
    for key, q in aggregate_container(spec, "requests").items():
        if key not in pod_reqs and is_supported_pod_level_resource(key) and not key.startswith(_HUGEPAGES):
            pod_reqs[key] = str(q)
    for key, value in limits.items():
        if key not in pod_reqs and is_supported_pod_level_resource(key):
            pod_reqs[key] = value
    if pod_reqs != (res.get("requests") or {}):
        res["requests"] = dict(sorted(pod_reqs.items()))      # Go writes map keys sorted


def default_pod_limits(spec: Obj) -> None:
    """With pod-level requests and no pod-level limits: cpu and memory limits default to the
    containers' aggregate when every container has one. Upstream: defaultPodLimits"""
    res = spec["resources"]
    if _names_supported(res.get("limits")) or not _names_supported(res.get("requests")):
        return
    pod_limits = dict(res.get("limits") or {})
    for key, q in aggregate_container(spec, "limits").items():
        if (key in pod_limits or not is_supported_pod_level_resource(key) or key.startswith(_HUGEPAGES)
                or not _all_containers_limit(spec, key)):
            continue
        pod_limits[key] = str(q)
    if pod_limits != (res.get("limits") or {}):
        res["limits"] = dict(sorted(pod_limits.items()))      # Go writes map keys sorted


def is_supported_pod_level_resource(name: str) -> bool:
    """Upstream: IsSupportedPodLevelResource (cpu, memory, hugepages-*)."""
    return name in ("cpu", "memory") or name.startswith(_HUGEPAGES)


def _names_supported(resources: Any) -> bool:
    """Upstream: IsPodLevelLimitsSet / IsPodLevelRequestsSet."""
    return isinstance(resources, dict) and any(is_supported_pod_level_resource(k) for k in resources)


def _all_containers_limit(spec: Obj, key: str) -> bool:
    """Upstream: AllContainersHaveLimitForResource (init and regular containers)."""
    return all(key in ((c.get("resources") or {}).get("limits") or {})
               for k in ("initContainers", "containers") for c in spec.get(k) or ())


def aggregate_container(spec: Obj, which: str) -> dict[str, Quantity]:
    """The pod's effective container requests or limits (`which`), keys in Go's map order
    for JSON (sorted). Upstream: AggregateContainerRequests / AggregateContainerLimits"""
    total: dict[str, Quantity] = {}
    for c in spec.get("containers") or ():
        _add(total, _list(c, which))
    sidecars: dict[str, Quantity] = {}
    init_max: dict[str, Quantity] = {}
    for c in spec.get("initContainers") or ():
        own = _list(c, which)
        if c.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            running = sidecars
        else:
            running = {}
            _add(running, own)
            _add(running, sidecars)
        _max(init_max, running)
    _max(total, init_max)
    return dict(sorted(total.items()))


def _list(c: Obj, which: str) -> dict[str, Quantity]:
    values = (c.get("resources") or {}).get(which) or {}
    return {k: Quantity.parse(v) or ZERO for k, v in values.items()}     # malformed: refused by validation


def _add(total: dict[str, Quantity], values: dict[str, Quantity]) -> None:
    """Upstream: addResourceList with Quantity.Add (a zero sum takes the addend's format)."""
    for k, q in values.items():
        total[k] = total[k].add(q) if k in total else q


def _max(total: dict[str, Quantity], values: dict[str, Quantity]) -> None:
    """Upstream: maxResourceList."""
    for k, q in values.items():
        if k not in total or q > total[k]:
            total[k] = q
