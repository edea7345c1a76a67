"""LimitRanger: the LimitRanges of a namespace default and bound the resources of its pods and
claims.

Admit (pod create): each container and init container gets the `default` (limits) and
`defaultRequest` (requests) of every Container-type limit it lacks, noted in the
`kubernetes.io/limit-ranger` annotation ("LimitRanger plugin set: cpu, memory request for
container web; ..."). Validate: per container (Container type), per pod (Pod type: the sum
over containers, sidecars and the largest init container, pod-level resources first) and per
claim (PersistentVolumeClaim type: its storage request), `min`, `max` and
`maxLimitRequestRatio` hold, else 403 with upstream's messages (several joined in brackets).
Pod updates are left alone (containers are immutable), except the resize subresource.

Cost on the pod create path: a look-up in a watch-fed index of /registry/limitranges/
(_index.py), nothing when the namespace has no LimitRange. A stored
LimitRange gets upstream's defaulting (SetDefaults_LimitRangeItem) as it is read, which is
idempotent, so objects written before the kind had its defaulting behave the same.

Upstream: plugin/pkg/admission/limitranger/admission.go (runLimitFunc, PodMutateLimitFunc,
PodValidateLimitFunc, PersistentVolumeClaimValidateLimitFunc, minConstraint, maxConstraint,
maxRequestConstraint, limitRequestRatioConstraint, podRequests, podLimits) and
SetDefaults_LimitRangeItem (pkg/apis/core/v1/defaults.go).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..chain import register
from ..interface import CREATE, UPDATE, Attributes, Operation, Plugin, forbidden
from ._index import PrefixIndex
from ....api.quantity import MAX_MILLI_VALUE, ZERO, Quantity, resource_list
from ....quota.evaluator.core.pods import pod_resources

if TYPE_CHECKING:
    from ...server import APIServer

Obj = dict[str, Any]
ResourceList = dict[str, Quantity]

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
LIMIT_TYPE_POD, LIMIT_TYPE_CONTAINER, LIMIT_TYPE_PVC = "Pod", "Container", "PersistentVolumeClaim"
PREFIX = "/registry/limitranges/"
# Pod-level resources override the containers' sum for these only. Upstream: supportedPodLevelResources


@register
class LimitRanger(Plugin):
    NAME = "LimitRanger"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    RESOURCES = frozenset({("", "pods"), ("", "persistentvolumeclaims")})
    SUBRESOURCES = frozenset({"", "resize"})
    MUTATING = True
    VALIDATING = True

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.index = PrefixIndex(api.storage, PREFIX)

    def admit_now(self, a: Attributes) -> bool:
        # A pod created in a namespace without LimitRanges (nearly every write this plugin
        # sees): one look-up, none of _now's calls.
        if a.operation is CREATE and a.kind == "Pod" and self.index.has_now(a.namespace) is False:
            return True
        return self._now(a, self._admit)

    async def admit(self, a: Attributes) -> None:
        """Upstream: LimitRanger.Admit"""
        if self._judges(a):
            self._admit(a, await self.index.namespace(a.namespace))

    def validate_now(self, a: Attributes) -> bool:
        if a.operation is CREATE and a.kind == "Pod" and self.index.has_now(a.namespace) is False:
            return True
        return self._now(a, self._validate)

    def _now(self, a: Attributes, phase: Callable[[Attributes, list[Obj]], None]) -> bool:
        """A phase without waiting: done when the request is not this plugin's, or the
        namespace's LimitRanges are known (the index needs no relist)."""
        if not self._judges(a):
            return True
        lrs = self.index.namespace_now(a.namespace)
        if lrs is None:
            return False
        phase(a, lrs)
        return True

    async def validate(self, a: Attributes) -> None:
        """Upstream: LimitRanger.Validate"""
        if self._judges(a):
            self._validate(a, await self.index.namespace(a.namespace))

    @staticmethod
    def _admit(a: Attributes, limit_ranges: list[Obj]) -> None:
        for lr in limit_ranges:
            if a.kind == "Pod":
                pod_mutate_limit_func(set_defaults_limit_range(lr), a.obj or {})

    @staticmethod
    def _validate(a: Attributes, limit_ranges: list[Obj]) -> None:
        for lr in limit_ranges:
            lr = set_defaults_limit_range(lr)
            if a.kind == "Pod":
                errs = pod_validate_limit_func(lr, a.obj or {})
            else:
                errs = pvc_validate_limit_func(lr, a.obj or {})
            if errs:
                raise forbidden(a, aggregate(errs))

    @staticmethod
    def _judges(a: Attributes) -> bool:
        """Whether the request is one this plugin judges. Upstream: runLimitFunc's guards"""
        if not supports_attributes(a) or not isinstance(a.obj, dict):
            return False
        # ignore all objects marked for deletion
        return a.old_obj is None or not (a.old_obj.get("metadata") or {}).get("deletionTimestamp")


def supports_attributes(a: Attributes) -> bool:
    """Pods (create, and the resize subresource) and claims. Upstream: DefaultLimitRangerActions.SupportsAttributes"""
    if a.group != "":
        return False
    if a.subresource == "resize" and a.kind == "Pod" and a.operation is UPDATE:
        return True
    if a.subresource:
        return False
    if a.kind == "Pod" and a.operation is UPDATE:
        return False                 # containers are immutable: nothing to default or check
    return a.kind in ("Pod", "PersistentVolumeClaim")


def set_defaults_limit_range(lr: Obj) -> Obj:
    """A copy of lr whose Container items have upstream's defaults: default (limits) from max,
    defaultRequest from default, then from min. Upstream: SetDefaults_LimitRangeItem"""
    items = []
    for item in ((lr.get("spec") or {}).get("limits") or ()):
        if item.get("type") == LIMIT_TYPE_CONTAINER:
            default = {**(item.get("max") or {}), **(item.get("default") or {})}
            default_request = {**(item.get("min") or {}), **default, **(item.get("defaultRequest") or {})}
            item = {**item, "default": default, "defaultRequest": default_request}
        items.append(item)
    return {**lr, "spec": {**(lr.get("spec") or {}), "limits": items}}


# --- mutation ---------------------------------------------------------------------------------

def pod_mutate_limit_func(lr: Obj, pod: Obj) -> None:
    """Upstream: PodMutateLimitFunc (defaultContainerResourceRequirements + mergePodResourceRequirements)"""
    requests: Obj = {}
    limits: Obj = {}
    for item in lr["spec"]["limits"]:
        if item.get("type") == LIMIT_TYPE_CONTAINER:
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    if not requests and not limits:
        return
    spec = pod.get("spec") or {}
    annotations: list[str] = []
    for field, prefix in (("containers", "container"), ("initContainers", "init container")):
        for c in spec.get(field) or ():
            annotations += merge_container_resources(c, requests, limits, prefix)
    if annotations:
        meta = pod.setdefault("metadata", {})
        if not meta.get("annotations"):
            meta["annotations"] = {}
        meta["annotations"][LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(annotations)


def merge_container_resources(c: Obj, requests: Obj, limits: Obj, prefix: str) -> list[str]:
    """Fill the container's missing requests and limits; what was set, as annotation parts.
    Upstream: mergeContainerResources"""
    resources = c.get("resources") or {}
    out = []
    for kind, defaults in (("limits", limits), ("requests", requests)):
        have = resources.get(kind) or {}
        added = sorted(k for k in defaults if k not in have)
        if added:
            resources[kind] = {**have, **{k: defaults[k] for k in added}}
            c["resources"] = resources
            out.append((kind, added))
    # upstream appends the requests note before the limits note
    notes = {kind: ", ".join(names) for kind, names in out}
    name = c.get("name", "")
    return ([f"{notes['requests']} request for {prefix} {name}"] if "requests" in notes else []) + \
           ([f"{notes['limits']} limit for {prefix} {name}"] if "limits" in notes else [])


# --- validation -------------------------------------------------------------------------------

def pod_validate_limit_func(lr: Obj, pod: Obj) -> list[str]:
    """Upstream: PodValidateLimitFunc"""
    errs: list[str] = []
    spec = pod.get("spec") or {}
    for item in lr["spec"]["limits"]:
        limit_type = item.get("type")
        if limit_type == LIMIT_TYPE_CONTAINER:
            for field in ("containers", "initContainers"):
                for c in spec.get(field) or ():
                    resources = c.get("resources") or {}
                    errs += check_item(item, limit_type, resource_list(resources.get("requests")),
                                       resource_list(resources.get("limits")))
        elif limit_type == LIMIT_TYPE_POD:
            errs += check_item(item, limit_type, pod_requests(spec), pod_limits(spec))
    return errs


def check_item(item: Obj, limit_type: str, request: ResourceList, limit: ResourceList) -> list[str]:
    """min, max and maxLimitRequestRatio of one LimitRangeItem against one set of resources."""
    errs = []
    for constraint, fn in (("min", min_constraint), ("max", max_constraint),
                           ("maxLimitRequestRatio", limit_request_ratio_constraint)):
        for k, enforced in resource_list(item.get(constraint)).items():
            if (err := fn(limit_type, k, enforced, request, limit)) is not None:
                errs.append(err)
    return errs


def pvc_validate_limit_func(lr: Obj, pvc: Obj) -> list[str]:
    """Storage requests only (claim limits are no user input). Upstream: PersistentVolumeClaimValidateLimitFunc"""
    errs = []
    requests = resource_list(((pvc.get("spec") or {}).get("resources") or {}).get("requests"))
    for item in lr["spec"]["limits"]:
        if item.get("type") != LIMIT_TYPE_PVC:
            continue
        for k, enforced in resource_list(item.get("min")).items():
            if (err := min_constraint(LIMIT_TYPE_PVC, k, enforced, requests, {})) is not None:
                errs.append(err)
        for k, enforced in resource_list(item.get("max")).items():
            if (err := max_request_constraint(LIMIT_TYPE_PVC, k, enforced, requests)) is not None:
                errs.append(err)
    return errs


def request_limit_enforced_values(req: Quantity | None, lim: Quantity | None,
                                  enforced: Quantity) -> tuple[int, int, int]:
    """The three at a common precision: milli-units unless one would overflow.
    Upstream: requestLimitEnforcedValues"""
    req, lim = req or ZERO, lim or ZERO
    values = (req.int_value(), lim.int_value(), enforced.int_value())
    if all(v <= MAX_MILLI_VALUE for v in values):
        return req.milli_value(), lim.milli_value(), enforced.milli_value()
    return values


def min_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList,
                   limit: ResourceList) -> str | None:
    """Upstream: minConstraint"""
    req, lim = request.get(name), limit.get(name)
    observed_req, observed_lim, enforced_value = request_limit_enforced_values(req, lim, enforced)
    if req is None:
        return f"minimum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if observed_req < enforced_value:
        return f"minimum {name} usage per {limit_type} is {enforced}, but request is {req}"
    if lim is not None and observed_lim < enforced_value:
        return f"minimum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    return None


def max_request_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList) -> str | None:
    """Upstream: maxRequestConstraint"""
    req = request.get(name)
    observed_req, _, enforced_value = request_limit_enforced_values(req, None, enforced)
    if req is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if observed_req > enforced_value:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return None


def max_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList,
                   limit: ResourceList) -> str | None:
    """Upstream: maxConstraint"""
    req, lim = request.get(name), limit.get(name)
    observed_req, observed_lim, enforced_value = request_limit_enforced_values(req, lim, enforced)
    if lim is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No limit is specified"
    if observed_lim > enforced_value:
        return f"maximum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    if req is not None and observed_req > enforced_value:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return None


def limit_request_ratio_constraint(limit_type: str, name: str, enforced: Quantity, request: ResourceList,
                                   limit: ResourceList) -> str | None:
    """Upstream: limitRequestRatioConstraint"""
    req, lim = request.get(name), limit.get(name)
    observed_req, observed_lim, _ = request_limit_enforced_values(req, lim, enforced)
    if req is None or observed_req == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                "but no request is specified or request is 0")
    if lim is None or observed_lim == 0:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                "but no limit is specified or limit is 0")
    observed_ratio = observed_lim / observed_req
    display = observed_ratio
    max_ratio = float(enforced.int_value())
    if enforced.int_value() <= MAX_MILLI_VALUE:
        observed_ratio *= 1000
        max_ratio = float(enforced.milli_value())
    if observed_ratio > max_ratio:
        return (f"{name} max limit to request ratio per {limit_type} is {enforced}, "
                f"but provided ratio is {display:f}")
    return None


def aggregate(errs: list[str]) -> str:
    """Upstream: utilerrors.NewAggregate(errs).Error() — one message, or the distinct ones in brackets."""
    distinct = list(dict.fromkeys(errs))
    return distinct[0] if len(distinct) == 1 else "[" + ", ".join(distinct) + "]"


# --- pod totals -------------------------------------------------------------------------------

def pod_requests(spec: Obj) -> ResourceList:
    """The pod's effective requests, no overhead. Upstream: podRequests (LimitRanger's call of
    AggregateContainerRequests with the pod-level resources)."""
    return pod_resources(spec, "requests")


def pod_limits(spec: Obj) -> ResourceList:
    """Upstream: podLimits."""
    return pod_resources(spec, "limits")
