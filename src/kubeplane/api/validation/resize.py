"""Validation of a write to pods/resize (in-place pod vertical scaling, GA since 1.35).

    kubectl patch pod p --subresource resize --patch '{"spec":{"containers":[{"name":"c",
        "resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"200m"}}}]}}'

Only the cpu and memory requests and limits (and resizePolicy) of the containers and the
restartable init containers (sidecars) may change: containers may not be added, removed,
renamed or reordered, resources may not be removed, the pod's QoS class may not change, and
static pods, Windows pods, pods with pod-level resources and pods on a node that reports no
container resources (a kubelet without resize support) cannot be resized. The resize
strategy (registry/core/pod.py) has already dropped every other change of the request.

Memory limits may be decreased whatever the resizePolicy (upstream lifted that rule in 1.34;
the kubelet decides whether the decrease is safe).

Upstream: ValidatePodResize, validatePodResizeContainerOrdering, validateContainerResize,
dropCPUMemoryResourcesFromContainer, isPodResizeRequestSupported
(pkg/apis/core/validation/validation.go).
"""
from __future__ import annotations

import copy
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError
from kubeplane.api.qos import compute_pod_qos, is_pod_level_resources_set

from . import core
from . import meta as m

Obj = dict[str, Any]
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
CPU_MEMORY = ("cpu", "memory")


def validate_pod_resize(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePodResize. new and old differ only in the containers' resources and
    resizePolicy (and the metadata the strategy keeps from new)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += core._validate_pod_metadata_and_spec(new)
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    for s in (old_spec, spec):
        r = s.get("resources")
        if isinstance(r, dict) and is_pod_level_resources_set(r):
            return [errors.forbidden("", "pods with pod-level resources cannot be resized")]
    if MIRROR_POD_ANNOTATION in ((old.get("metadata") or {}).get("annotations") or {}):
        return [errors.forbidden("", "static pods cannot be resized")]
    if (old_spec.get("os") or {}).get("name") == "windows":
        return [errors.forbidden("", "windows pods cannot be resized")]
    old_qos = (old.get("status") or {}).get("qosClass") or compute_pod_qos(old_spec)
    if old_qos != compute_pod_qos(spec):
        errs.append(errors.invalid("spec", (new.get("status") or {}).get("qosClass", ""),
                                   "Pod QOS Class may not change as a result of resizing"))
    if not is_pod_resize_request_supported(old):
        errs.append(errors.forbidden("spec", "Pod running on node without support for resize"))
    if order := _container_ordering(spec, old_spec):
        return errs + order
    return errs + _resources_changes(spec, old_spec)


def is_pod_resize_request_supported(pod: Obj) -> bool:
    """A running container's status carries its resources (a kubelet that resizes reports
    them). Upstream: isPodResizeRequestSupported (version skew, until GA+3)"""
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        if (cs.get("state") or {}).get("running") is not None:
            return cs.get("resources") is not None
    return True


def _container_ordering(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """Upstream: validatePodResizeContainerOrdering"""
    errs = []
    for key in ("containers", "initContainers"):
        new_cs, old_cs = spec.get(key) or [], old_spec.get(key) or []
        if len(new_cs) != len(old_cs):
            errs.append(errors.forbidden(f"spec.{key}", f"{key} may not be added or removed on resize"))
            continue
        errs += [errors.forbidden(f"spec.{key}[{i}].name", f"{key} may not be renamed or reordered on resize")
                 for i, (n, o) in enumerate(zip(new_cs, old_cs)) if n.get("name") != o.get("name")]
    return errs


def _resources_changes(spec: Obj, old_spec: Obj) -> list[FieldError]:
    """Resources not removed; nothing but cpu and memory changed. Upstream: the second half of
    ValidatePodResize"""
    errs: list[FieldError] = []
    inits, old_inits = spec.get("initContainers") or [], old_spec.get("initContainers") or []
    for i, (c, o) in enumerate(zip(inits, old_inits)):
        if _restartable(o):
            errs += _validate_container_resize(c, o, f"spec.initContainers[{i}].resources")
    for i, (c, o) in enumerate(zip(spec.get("containers") or [], old_spec.get("containers") or [])):
        errs += _validate_container_resize(c, o, f"spec.containers[{i}].resources")
    for c, o in zip(spec.get("containers") or [], old_spec.get("containers") or []):
        if not m.semantic_equal(_with_old_cpu_memory(c, o), o):
            errs.append(errors.forbidden("spec", "only cpu and memory resources are mutable"))
    for c, o in zip(inits, old_inits):
        if _restartable(c):
            if not m.semantic_equal(_with_old_cpu_memory(c, o), o):
                errs.append(errors.forbidden("spec", "only cpu and memory resources for sidecar containers are mutable"))
        elif not m.semantic_equal(c, o):
            errs.append(errors.forbidden("spec", "resources for non-sidecar init containers are immutable"))
    if errs:
        return errs
    rest, old_rest = ({k: v for k, v in s.items() if k not in ("containers", "initContainers")}
                      for s in (spec, old_spec))
    if not m.semantic_equal(rest, old_rest):
        errs.append(errors.forbidden("spec", "only cpu and memory resources are mutable"))
    return errs


def _restartable(c: Obj) -> bool:
    return c.get("restartPolicy") == "Always"


def _validate_container_resize(c: Obj, o: Obj, path: str) -> list[FieldError]:
    """Requests and limits may not be removed. Upstream: validateContainerResize"""
    new_r, old_r = c.get("resources") or {}, o.get("resources") or {}
    errs = []
    for key, what in (("requests", "requests"), ("limits", "limits")):
        if any(name not in (new_r.get(key) or {}) for name in old_r.get(key) or {}):
            errs.append(errors.forbidden(f"{path}.{key}", f"resource {what} cannot be removed"))
    return errs


def _with_old_cpu_memory(c: Obj, o: Obj) -> Obj:
    """c with old's cpu and memory requests and limits, and old's resizePolicy: what must then
    equal old. Upstream: dropCPUMemoryResourcesFromContainer"""
    c = copy.deepcopy(c)
    resources = c.setdefault("resources", {})
    old_r = o.get("resources") or {}
    for key in ("requests", "limits"):
        if not old_r.get(key):             # none before: none to compare (upstream returns nil)
            resources.pop(key, None)
            continue
        rl = {k: v for k, v in (resources.get(key) or {}).items() if k not in CPU_MEMORY}
        rl.update({k: v for k, v in (old_r.get(key) or {}).items() if k in CPU_MEMORY})
        if rl:
            resources[key] = rl
        else:
            resources.pop(key, None)
    if "resizePolicy" in o:
        c["resizePolicy"] = o["resizePolicy"]
    else:
        c.pop("resizePolicy", None)
    return c
