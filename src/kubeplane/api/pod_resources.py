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

Quantities are summed exactly (api/qos.nanos) and written as Go's Quantity.String() writes
them (format_quantity): the sum keeps the format of its first term, `1Gi` + `512Mi` is `1536Mi`,
`100m` + `0.2` is `300m`.
"""
from __future__ import annotations

from typing import Any

from .qos import nanos

Obj = dict[str, Any]
NANO = 10**9
_HUGEPAGES = "hugepages-"
_BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
BINARY_SI, DECIMAL_SI, DECIMAL_EXPONENT = "BinarySI", "DecimalSI", "DecimalExponent"

# A quantity being summed: (value in nanos, Go's Format).
Quantity = tuple[int, str]


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
            pod_lims[key] = format_quantity(q)
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
            pod_reqs[key] = format_quantity(q)
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
        pod_limits[key] = format_quantity(q)
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
    return {k: (nanos(v), quantity_format(v)) for k, v in values.items()}


def _add(total: dict[str, Quantity], values: dict[str, Quantity]) -> None:
    """Upstream: addResourceList with Quantity.Add (a zero sum takes the addend's format)."""
    for k, (n, fmt) in values.items():
        if k not in total:
            total[k] = (n, fmt)
        else:
            tn, tfmt = total[k]
            total[k] = (tn + n, fmt if tn == 0 else tfmt)


def _max(total: dict[str, Quantity], values: dict[str, Quantity]) -> None:
    """Upstream: maxResourceList."""
    for k, q in values.items():
        if k not in total or q[0] > total[k][0]:
            total[k] = q


def quantity_format(value: Any) -> str:
    """The Format ParseQuantity gives a quantity: BinarySI for Ki..Ei, DecimalExponent for an
    exponent, DecimalSI otherwise (and for numbers)."""
    text = str(value).strip()
    if text.endswith(_BINARY_SUFFIXES):
        return BINARY_SI
    body = text.lstrip("+-")
    if any(ch in "eE" for ch in body) and not text.endswith("E"):
        return DECIMAL_EXPONENT
    return DECIMAL_SI


def format_quantity(q: Quantity) -> str:
    """What Quantity.String() writes for this value and format. Upstream: CanonicalizeBytes,
    int64Amount.AsCanonicalBytes / AsCanonicalBase1024Bytes (api/resource/quantity.go, amount.go).
    Examples: (1.5e9 nanos, DecimalSI) -> "1500m"; (1536 MiB, BinarySI) -> "1536Mi";
    (512 bytes, BinarySI) -> "512" (below 1024 a binary quantity is written in decimal)."""
    n, fmt = q
    if n == 0:
        return "0"
    if fmt == BINARY_SI and (abs(n) < 1024 * NANO or n % NANO):
        fmt = DECIMAL_SI              # nothing to gain, or not a whole number of bytes
    if fmt == BINARY_SI:
        amount, times = _remove_factors(n // NANO, 1024)
        if times < len(_BINARY_SUFFIXES) + 1:
            return f"{amount}{('', *_BINARY_SUFFIXES)[times]}"
        fmt = DECIMAL_SI
    amount, times = _remove_factors(n, 10)
    exponent = times - 9
    while exponent % 3:                # down to a multiple of 3, as AsCanonicalBytes
        amount, exponent = amount * 10, exponent - 1
    if fmt == DECIMAL_EXPONENT:
        return f"{amount}e{exponent}" if exponent else str(amount)
    suffix = _DECIMAL_SUFFIXES.get(exponent)
    return f"{amount}{suffix}" if suffix is not None else f"{amount}e{exponent}"


def _remove_factors(value: int, base: int) -> tuple[int, int]:
    """Upstream: removeInt64Factors."""
    sign, value, times = (-1 if value < 0 else 1), abs(value), 0
    while value >= base and value % base == 0:
        value, times = value // base, times + 1
    return sign * value, times
