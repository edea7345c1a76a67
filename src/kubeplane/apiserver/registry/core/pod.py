"""Pods, and the Binding kind of pods/binding and the legacy bindings collection. Upstream:
pkg/registry/core/pod (strategy.go; the binding, log and status subresources are served by
handlers/subresources.py, podlog.py and the generic update with the status strategy; eviction
by registry/core/eviction.py)."""
from __future__ import annotations

import copy

from ....api import defaults, labels
from ....api.resources import PROXY, STATUS, Subresource
from ....api.validation import core as validation
from ....api.validation.ephemeral import validate_pod_ephemeral_containers_update
from ....api.validation.resize import validate_pod_resize
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy, pod_qos_class


class PodStrategy(Strategy):
    has_status = True
    graceful = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: podStrategy.PrepareForCreate (generation 1, a fresh Pending status)."""
        obj.setdefault("metadata", {})["generation"] = 1
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj.get("spec") or {})}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: podStrategy.PrepareForUpdate (status kept, updatePodGeneration)."""
        super().prepare_for_update(new, old)
        update_pod_generation(new, old)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Upstream: podStatusStrategy.PrepareForUpdate's preserveOldObservedGeneration (the
        rest as every status strategy). Only pods whose status has an observedGeneration (one
        whose spec changed, here) pay for the conditions' walk."""
        super().prepare_for_status_update(new, old)
        old_status = old.get("status") or {}
        if old_status.get("observedGeneration"):
            preserve_old_observed_generation(new.setdefault("status", {}), old_status)

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> None:
        """pods/ephemeralcontainers: the stored pod with only the request's ephemeral containers;
        pods/resize: with only its containers' resources and resizePolicy (both keep the
        request's name, namespace, resourceVersion, uid). Upstream: podEphemeralContainersStrategy
        and podResizeStrategy PrepareForUpdate (dropNonEphemeralContainerUpdates,
        dropNonResizeUpdates, updatePodGeneration)."""
        if subresource == "ephemeralcontainers":
            kept = drop_non_ephemeral_container_updates(new, copy.deepcopy(old))
        elif subresource == "resize":
            kept = drop_non_resize_updates(new, copy.deepcopy(old))
        else:
            return super().prepare_for_subresource_update(subresource, new, old)
        if kept is not new:
            new.clear()
            new.update(kept)
        update_pod_generation(new, old)

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
    subresources=(STATUS("Pod"), Subresource("binding", "Binding", ("create",), handler="binding"),
                  Subresource("ephemeralcontainers", "Pod", ("get", "patch", "update"), handler="ephemeralcontainers"),
                  Subresource("eviction", "Eviction", ("create",), "policy", "v1", handler="eviction"),
                  Subresource("log", "Pod", ("get",), handler="log"),
                  PROXY("Pod"),
                  # pods/exec, attach, portforward: handlers/connect.py (upstream's Connecter: GET and POST)
                  *(Subresource(s, kind, ("create", "get"), handler="connect") for s, kind in
                    (("attach", "PodAttachOptions"), ("exec", "PodExecOptions"),
                     ("portforward", "PodPortForwardOptions"))),
                  # upstream's ResizeREST is EphemeralContainersREST's shape with its own strategy
                  Subresource("resize", "Pod", ("get", "patch", "update"), handler="ephemeralcontainers")),
    strategy=PodStrategy(),
    defaulter=defaults.set_defaults_pod,
    validate=validation.validate_pod, validate_with_spec_json=validation.validate_pod,
    validate_update=validation.validate_pod_update,
    validate_status_update=validation.validate_pod_status_update,
    validate_subresource_update={"ephemeralcontainers": validate_pod_ephemeral_containers_update,
                                 "resize": validate_pod_resize},
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


def update_pod_generation(new: Obj, old: Obj) -> None:
    """metadata.generation + 1 when the spec changed (a pod stored before generations were
    set counts as 1). Upstream: updatePodGeneration (pkg/api/pod/util.go)"""
    if new.get("spec") != old.get("spec"):
        new["metadata"]["generation"] = (old["metadata"].get("generation") or 1) + 1


def preserve_old_observed_generation(status: Obj, old_status: Obj) -> None:
    """A status write that leaves out observedGeneration (the pod's, or a condition's: matched
    by type, in order) keeps the old one. Upstream: preserveOldObservedGeneration"""
    if not status.get("observedGeneration"):
        status["observedGeneration"] = old_status["observedGeneration"]
    old_conditions = old_status.get("conditions") or ()
    for c in old_conditions:            # (a loop, not any(): no generator per status write)
        if c.get("observedGeneration"):
            break
    else:
        return        # every old generation is 0: nothing to keep (the kubelet's conditions carry none)
    old_by_type: dict[str, list[int]] = {}
    for c in old_conditions:
        old_by_type.setdefault(c.get("type", ""), []).append(c.get("observedGeneration") or 0)
    conditions = status.get("conditions") or ()
    kept = None
    for i, c in enumerate(conditions):
        gens = old_by_type.get(c.get("type", ""))
        old_gen = gens.pop(0) if gens else 0
        if not c.get("observedGeneration") and old_gen:
            # Copied, not changed in place: the list and its conditions may be the patch's, which
            # an in-process writer keeps (the kubelet's status manager), or the stored pod's.
            if kept is None:
                kept = status["conditions"] = list(conditions)
            kept[i] = {**c, "observedGeneration": old_gen}


def _reset_object_meta_for_status(new: Obj, old_copy: Obj) -> None:
    """old_copy's metadata with new's name, namespace, resourceVersion and uid.
    Upstream: metav1.ResetObjectMetaForStatus"""
    meta, new_meta = old_copy["metadata"], new.get("metadata") or {}
    for key in ("name", "namespace", "resourceVersion", "uid"):
        if new_meta.get(key):
            meta[key] = new_meta[key]
        else:
            meta.pop(key, None)


def drop_non_resize_updates(new: Obj, old_copy: Obj) -> Obj:
    """old_copy with the resources and resizePolicy of new's containers and init containers
    (and new's name, namespace, resourceVersion, uid). Containers added, removed, renamed or
    reordered: new as it is, for validation to refuse. Pod-level resources are not resizable
    (InPlacePodLevelResourcesVerticalScaling is alpha): old's stay.
    Upstream: dropNonResizeUpdates, dropNonResizeUpdatesForContainers (pkg/registry/core/pod/strategy.go)"""
    spec, old_spec = new.get("spec") or {}, old_copy.setdefault("spec", {})
    merged = {}
    for key in ("containers", "initContainers"):
        new_cs, old_cs = spec.get(key) or [], old_spec.get(key) or []
        if len(new_cs) != len(old_cs):
            return new
        if any(n.get("name") != o.get("name") for n, o in zip(new_cs, old_cs)):
            merged[key] = new_cs          # renamed or reordered: validation refuses it
            continue
        merged[key] = [_with_resize_fields(o, n) for n, o in zip(new_cs, old_cs)]
    _reset_object_meta_for_status(new, old_copy)
    for key, cs in merged.items():
        if cs or key in old_spec:
            old_spec[key] = cs
    return old_copy


def _with_resize_fields(old_c: Obj, new_c: Obj) -> Obj:
    c = dict(old_c)
    for key in ("resources", "resizePolicy"):
        if key in new_c:
            c[key] = new_c[key]
        else:
            c.pop(key, None)
    return c


def drop_non_ephemeral_container_updates(new: Obj, old_copy: Obj) -> Obj:
    """old_copy with new's spec.ephemeralContainers and its name, namespace, resourceVersion
    and uid: every other change of the request is dropped.
    Upstream: dropNonEphemeralContainerUpdates, dropPodUpdates (pkg/registry/core/pod/strategy.go)"""
    _reset_object_meta_for_status(new, old_copy)
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
