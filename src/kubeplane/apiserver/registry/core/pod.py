"""Pods, and the Binding kind of pods/binding and the legacy bindings collection. Upstream:
pkg/registry/core/pod (strategy.go; the binding, log and status subresources are served by
handlers/subresources.py, podlog.py and the generic update with the status strategy; eviction
by registry/core/eviction.py)."""
from __future__ import annotations

import copy

from ....api import defaults, labels
from ....api.resources import STATUS, Subresource
from ....api.validation import core as validation
from ....api.validation.ephemeral import validate_pod_ephemeral_containers_update
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy, pod_qos_class


class PodStrategy(Strategy):
    has_status = True
    graceful = True

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj.get("spec") or {})}

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> None:
        """pods/ephemeralcontainers: the stored pod with only the request's ephemeral containers
        (and its name, namespace, resourceVersion, uid). Upstream: podEphemeralContainersStrategy
        PrepareForUpdate (dropNonEphemeralContainerUpdates)."""
        if subresource != "ephemeralcontainers":
            return super().prepare_for_subresource_update(subresource, new, old)
        kept = drop_non_ephemeral_container_updates(new, copy.deepcopy(old))
        new.clear()
        new.update(kept)

    def check_graceful_delete(self, obj: Obj, requested: int | None) -> int:
        """Upstream: podStrategy.CheckGracefulDelete.

        The requested period, else spec.terminationGracePeriodSeconds (else 0); unscheduled and
        finished pods go at once (0); a negative period becomes 1. A pod on a node thus waits
        for its kubelet, which makes the final delete with grace 0.
        """
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        period = requested if requested is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else period


def _pod_ip(o: Obj) -> str:
    status = o.get("status") or {}
    return ((status.get("podIPs") or [{}])[0]).get("ip") or status.get("podIP") or ""


# Upstream: the Pod field label conversion (pkg/apis/core/v1/conversion.go) and ToSelectableFields.
POD_FIELDS = {
    **labels.META_FIELDS,
    "spec.nodeName": labels.path("spec", "nodeName"),
    "spec.restartPolicy": labels.path("spec", "restartPolicy"),
    "spec.schedulerName": labels.path("spec", "schedulerName"),
    "spec.serviceAccountName": labels.path("spec", "serviceAccountName"),
    "spec.hostNetwork": labels.flag("spec", "hostNetwork"),
    "status.phase": labels.path("status", "phase"),
    "status.podIP": _pod_ip,
    "status.podIPs": lambda o: "",       # accepted by the conversion, but not a selectable field
    "status.nominatedNodeName": labels.path("status", "nominatedNodeName"),
    "spec.host": labels.path("spec", "nodeName"),     # old v1 clients' name for spec.nodeName
}

PODS = register(ResourceDefinition(
    "", "v1", "Pod", "pods", "pod", True, "io.k8s.api.core.v1.Pod",
    short_names=("po",), categories=("all",),
    subresources=(STATUS("Pod"), Subresource("binding", "Binding", ("create",)),
                  Subresource("ephemeralcontainers", "Pod", ("get", "patch", "update")),
                  Subresource("eviction", "Eviction", ("create",), "policy", "v1"),
                  Subresource("log", "Pod", ("get",))),
    strategy=PodStrategy(),
    defaulter=defaults.set_defaults_pod,
    validate=validation.validate_pod, validate_update=validation.validate_pod_update,
    validate_status_update=validation.validate_pod_status_update,
    validate_subresource_update={"ephemeralcontainers": validate_pod_ephemeral_containers_update},
    columns=columns.pod_columns, printer=printers.print_pod,
    field_selectors=POD_FIELDS,
    returns_deleted_object=True,
))

# The legacy bindings collection (POST /api/v1/namespaces/<ns>/bindings): the same code path as
# pods/<name>/binding, the pod named by the Binding (upstream: LegacyBindingREST). Its definition
# is also the Binding kind's defaulting and validation for both.
BINDING = register(ResourceDefinition(
    "", "v1", "Binding", "bindings", "binding", True, "io.k8s.api.core.v1.Binding", verbs=("create",),
    validate=validation.validate_binding,
    validate_update=lambda new, old: validation.validate_binding(new),
))


def drop_non_ephemeral_container_updates(new: Obj, old_copy: Obj) -> Obj:
    """old_copy with new's spec.ephemeralContainers and its name, namespace, resourceVersion
    and uid: every other change of the request is dropped.
    Upstream: dropNonEphemeralContainerUpdates, dropPodUpdates (pkg/registry/core/pod/strategy.go)"""
    meta, new_meta = old_copy["metadata"], new.get("metadata") or {}
    for key in ("name", "namespace", "resourceVersion", "uid"):
        if new_meta.get(key):
            meta[key] = new_meta[key]
        else:
            meta.pop(key, None)
    spec = old_copy.setdefault("spec", {})
    ecs = (new.get("spec") or {}).get("ephemeralContainers")
    if ecs:
        spec["ephemeralContainers"] = ecs
    else:
        spec.pop("ephemeralContainers", None)
    return old_copy


def set_pod_condition(pod: Obj, type_: str, status: str, now: str, reason: str = "", message: str = "") -> None:
    """Upstream: podutil.UpdatePodCondition — lastTransitionTime moves only when status changes."""
    conds = pod.setdefault("status", {}).setdefault("conditions", [])
    cond: Obj = {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    for i, c in enumerate(conds):
        if c.get("type") == type_:
            if c.get("status") == status:
                cond["lastTransitionTime"] = c.get("lastTransitionTime", now)
            conds[i] = cond
            return
    conds.append(cond)
