"""A pod's QoS class (status.qosClass), computed as upstream computes it on create.

Upstream: ComputePodQOS (pkg/apis/core/helper/qos/qos.go) with 1.37's feature defaults:
PodLevelResources (beta, on) and PodLevelResourcesFixKubeletQOSClass (on): pod-level
`spec.resources` decide alone when they name cpu, memory or hugepages-*, else the containers
and init containers do (ephemeral containers cannot have resources).

Only cpu and memory count, and only quantities above zero: `requests: {cpu: "0"}` is as good as
none, `nvidia.com/gpu` and `hugepages-2Mi` never make a pod Burstable. Quantities compare by
value (`1000m` equals `1`, `1Gi` equals `1024Mi`), and each resource's requests and limits are
summed over the containers before they are compared. A pod is
* BestEffort when no container requests or limits cpu or memory;
* Guaranteed when every container limits both cpu and memory and the summed requests equal
  the summed limits, resource by resource;
* Burstable otherwise.
Example: containers {req cpu 100m, lim cpu 200m} and {req cpu 100m, lim cpu 0} (memory limited
equally in both): the second has no cpu limit above zero, so Burstable.
"""
from __future__ import annotations

from typing import Any

from .quantity import nanos

BEST_EFFORT, BURSTABLE, GUARANTEED = "BestEffort", "Burstable", "Guaranteed"
_QOS_RESOURCES = ("cpu", "memory")      # supportedQoSComputeResources
_HUGEPAGES_PREFIX = "hugepages-"


def compute_pod_qos(spec: dict[str, Any]) -> str:
    """The QoS class of a pod with this spec. Upstream: ComputePodQOS"""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    pod_level = spec.get("resources")
    if pod_level and isinstance(pod_level, dict) and is_pod_level_resources_set(pod_level):
        _add_positive(requests, pod_level.get("requests"))
        guaranteed = _add_positive(limits, pod_level.get("limits")) == len(_QOS_RESOURCES)
    else:
        guaranteed = True
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or ():
                res = c.get("resources") if isinstance(c, dict) else None
                if not res or not isinstance(res, dict):
                    guaranteed = False             # no cpu and memory limits
                    continue
                _add_positive(requests, res.get("requests"))
                if _add_positive(limits, res.get("limits")) < len(_QOS_RESOURCES):
                    guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed and requests == limits:
        return GUARANTEED
    return BURSTABLE


def is_pod_level_resources_set(resources: dict[str, Any]) -> bool:
    """Whether pod-level requests or limits name a resource pod-level resources support (cpu,
    memory, hugepages-*). Upstream: isPodLevelResourcesSet (qos.go), IsSupportedPodLevelResource
    (component-helpers/resource/helpers.go)"""
    for key in ("requests", "limits"):
        for name in resources.get(key) or ():
            if name in _QOS_RESOURCES or name.startswith(_HUGEPAGES_PREFIX):
                return True
    return False


def _add_positive(total: dict[str, int], resources: Any) -> int:
    """Add the cpu and memory quantities above zero to total; return how many there were.
    Upstream: processResourceList / the per-container loops of ComputePodQOS."""
    found = 0
    if resources and isinstance(resources, dict):
        for name in _QOS_RESOURCES:
            if name in resources and (n := nanos(resources[name])) > 0:
                total[name] = total.get(name, 0) + n
                found += 1
    return found
