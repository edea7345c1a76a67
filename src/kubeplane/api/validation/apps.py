"""apps/v1 Deployment and ReplicaSet validation, and the autoscaling/v1 Scale subresource.

Upstream: pkg/apis/apps/validation/validation.go, the selector-immutability check of
pkg/registry/apps/{deployment,replicaset}/strategy.go, and autoscaling ValidateScale.
Rule by rule this is /work/shared/spec/deployment-behaviour.md §2.
"""
from __future__ import annotations

import re
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import core
from . import meta as m
from .names import is_dns1123_label, is_valid_percent, name_is_dns_subdomain

Obj = dict[str, Any]


def validate_deployment(d: Obj) -> list[FieldError]:
    """Upstream: ValidateDeployment"""
    errs = m.validate_object_meta(d.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_deployment_spec(d.get("spec") or {}, "spec")


def validate_deployment_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateDeploymentUpdate + strategy ValidateUpdate (apps/v1 selector immutable)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += validate_deployment_spec(new.get("spec") or {}, "spec")
    return errs + _immutable_selector(new, old)


def validate_deployment_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateDeploymentStatusUpdate (counts, and collisionCount never decreases)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    errs += validate_deployment_status(status, "status")
    return errs + _collision_count_decrement(status, old.get("status") or {})


def validate_deployment_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateDeploymentSpec"""
    errs = m.nonnegative(spec.get("replicas"), path + ".replicas")
    errs += _validate_selector_and_template(spec, path)
    errs += validate_deployment_strategy(spec.get("strategy") or {}, path + ".strategy")
    errs += m.nonnegative(spec.get("minReadySeconds"), path + ".minReadySeconds")
    if spec.get("revisionHistoryLimit") is not None:
        errs += m.nonnegative(spec["revisionHistoryLimit"], path + ".revisionHistoryLimit")   # 0 is valid
    pds = spec.get("progressDeadlineSeconds")
    if pds is not None:
        errs += m.nonnegative(pds, path + ".progressDeadlineSeconds")
        if pds <= (spec.get("minReadySeconds") or 0):
            errs.append(errors.invalid(path + ".progressDeadlineSeconds", pds, "must be greater than minReadySeconds"))
    return errs


def _immutable_selector(new: Obj, old: Obj) -> list[FieldError]:
    """apps/v1's immutable spec.selector, the bad value a LabelSelector struct."""
    sel = (new.get("spec") or {}).get("selector")
    errs = m.immutable(sel, (old.get("spec") or {}).get("selector"), "spec.selector")
    for e in errs:
        e.value = m.selector_value(sel)
    return errs


def _validate_selector_and_template(spec: Obj, path: str) -> list[FieldError]:
    """The selector block shared by ValidateDeploymentSpec and ValidateReplicaSetSpec.

    A nil selector is Required *and* converts to "match nothing", so the template-label
    check still fires; an empty selector `{}` is invalid but matches everything, so it
    does not. (ReplicaSets really do say "for deployment": upstream's message.)
    """
    sel = spec.get("selector")
    errs: list[FieldError] = []
    if sel is None:
        errs.append(errors.required(path + ".selector"))
    else:
        errs += m.validate_label_selector(sel, path + ".selector")
        if m.selector_is_empty(sel):
            errs.append(errors.invalid(path + ".selector", m.selector_value(sel), "empty selector is invalid for deployment"))
    if not m.selector_convertible(sel):
        return errs + [errors.invalid(path + ".selector", m.selector_value(sel), "invalid label selector")]
    return errs + validate_pod_template_spec_for_replica_set(spec.get("template") or {}, sel, path + ".template")


def validate_pod_template_spec_for_replica_set(template: Obj, sel: Any, path: str) -> list[FieldError]:
    """Upstream: ValidatePodTemplateSpecForReplicaSet"""
    errs: list[FieldError] = []
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not m.selector_is_empty(sel) and not m.selector_matches(sel, labels):
        errs.append(errors.invalid(path + ".metadata.labels", labels, "`selector` does not match template `labels`"))
    errs += core.validate_pod_template_spec(template, path)
    tspec = template.get("spec") or {}
    if tspec.get("restartPolicy", "") != "Always":
        errs.append(errors.not_supported(path + ".spec.restartPolicy", tspec.get("restartPolicy", ""), ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(errors.forbidden(path + ".spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return errs


def validate_deployment_strategy(strategy: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateDeploymentStrategy"""
    kind, ru = strategy.get("type", ""), strategy.get("rollingUpdate")
    if kind == "Recreate":
        if ru is not None:
            return [errors.forbidden(path + ".rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        if ru is None:
            return [errors.required(path + ".rollingUpdate", "this should be defaulted and never be nil")]
        return validate_rolling_update_deployment(ru, path + ".rollingUpdate")
    return [errors.not_supported(path, strategy, ["Recreate", "RollingUpdate"])]


def validate_rolling_update_deployment(ru: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateRollingUpdateDeployment.

    Only maxUnavailable is capped at 100%; maxSurge "200%" is fine. Both resolving to the
    literal 0 (0 or "0%" in any mix) is rejected on maxUnavailable.
    """
    max_unavailable, max_surge = ru.get("maxUnavailable"), ru.get("maxSurge")
    errs = validate_positive_int_or_percent(max_unavailable, path + ".maxUnavailable")
    errs += validate_positive_int_or_percent(max_surge, path + ".maxSurge")
    if _int_or_percent_value(max_unavailable) == 0 and _int_or_percent_value(max_surge) == 0:
        errs.append(errors.invalid(path + ".maxUnavailable", _render(max_unavailable), "may not be 0 when `maxSurge` is 0"))
    percent = _percent_value(max_unavailable)
    if percent is not None and percent > 100:
        errs.append(errors.invalid(path + ".maxUnavailable", max_unavailable, "must not be greater than 100%"))
    return errs


def _render(v: Any) -> Any:
    """A nil IntOrString pointer is dereferenced to Go's zero value (int 0) upstream."""
    return 0 if v is None else v


def validate_positive_int_or_percent(v: Any, path: str) -> list[FieldError]:
    """Upstream: ValidatePositiveIntOrPercent"""
    if isinstance(v, str):
        return [errors.invalid(path, v, msg) for msg in is_valid_percent(v)]
    return m.nonnegative(v, path)


def _percent_value(v: Any) -> int | None:
    return int(v[:-1]) if isinstance(v, str) and not is_valid_percent(v) else None


def _int_or_percent_value(v: Any) -> int:
    """Upstream: getIntOrPercentValue ("25%" -> 25, 3 -> 3, malformed strings -> IntValue's 0)."""
    percent = _percent_value(v)
    if percent is not None:
        return percent
    if isinstance(v, str):
        return int(v) if re.fullmatch(r"[+-]?[0-9]+", v) else 0
    return v if isinstance(v, int) else 0


def validate_deployment_status(status: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateDeploymentStatus"""
    errs: list[FieldError] = []
    for key in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                "unavailableReplicas", "collisionCount"):
        errs += m.nonnegative(status.get(key), f"{path}.{key}")
    return errs + _replica_counts(status, path, ("updatedReplicas", "readyReplicas", "availableReplicas"))


def _replica_counts(status: Obj, path: str, keys: tuple[str, ...]) -> list[FieldError]:
    """Each count ≤ status.replicas, and availableReplicas ≤ readyReplicas.

    Absent counts are Go's 0, so a negative status.replicas also reports every count:
    replicas -1 -> "updatedReplicas: Invalid value: 0: cannot be greater than status.replicas".
    """
    replicas = status.get("replicas") or 0
    errs = [errors.invalid(f"{path}.{k}", status.get(k) or 0, "cannot be greater than status.replicas")
            for k in keys if (status.get(k) or 0) > replicas]
    if (status.get("availableReplicas") or 0) > (status.get("readyReplicas") or 0):
        errs.append(errors.invalid(path + ".availableReplicas", status.get("availableReplicas") or 0,
                                   "cannot be greater than readyReplicas"))
    return errs


def _collision_count_decrement(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: IsDecremented (a set count may not drop or be cleared; nil->value is fine)."""
    n, o = new.get("collisionCount"), old.get("collisionCount")
    if o is not None and (n is None or n < o):
        return [errors.invalid("status.collisionCount", n or 0, "cannot be decremented")]
    return []


# --- ReplicaSet ----------------------------------------------------------------------------------


def validate_replica_set(rs: Obj) -> list[FieldError]:
    """Upstream: ValidateReplicaSet"""
    errs = m.validate_object_meta(rs.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_replica_set_spec(rs.get("spec") or {}, "spec")


def validate_replica_set_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateReplicaSetSpec"""
    errs = m.nonnegative(spec.get("replicas"), path + ".replicas")
    errs += m.nonnegative(spec.get("minReadySeconds"), path + ".minReadySeconds")
    return errs + _validate_selector_and_template(spec, path)


def validate_replica_set_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateReplicaSetUpdate + strategy ValidateUpdate (apps/v1 selector immutable)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += validate_replica_set_spec(new.get("spec") or {}, "spec")
    return errs + _immutable_selector(new, old)


def validate_replica_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateReplicaSetStatusUpdate / ValidateReplicaSetStatus"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for key in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        errs += m.nonnegative(status.get(key), f"status.{key}")
    return errs + _replica_counts(status, "status", ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"))


def replica_set_name_warnings(obj: Obj) -> list[str]:
    """Upstream: WarningsOnCreate of the deployment and replicaset strategies (names end up in pod hostnames)."""
    msgs = is_dns1123_label((obj.get("metadata") or {}).get("name") or "")
    if not msgs or not (obj.get("metadata") or {}).get("name"):
        return []
    return ["metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; "
            f"a DNS label is recommended: [{' '.join(msgs)}]"]


# --- autoscaling/v1 Scale ------------------------------------------------------------------------


def validate_scale(scale: Obj) -> list[FieldError]:
    """Upstream: ValidateScale (pkg/apis/autoscaling/validation)."""
    errs = m.validate_object_meta(scale.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + m.nonnegative((scale.get("spec") or {}).get("replicas"), "spec.replicas")


# --- StatefulSet ---------------------------------------------------------------------------------
# Upstream: ValidateStatefulSet* (pkg/apis/apps/validation/validation.go), the selector check of
# pkg/registry/apps/statefulset/strategy.go. Left out: the strategy's warnings for the
# volumeClaimTemplates (GetWarningsForPersistentVolumeClaimSpec: upstream validates no claim spec
# there) and the pod-spec feature-gated options.


def _tspec(spec: Obj) -> Obj:
    return (spec.get("template") or {}).get("spec") or {}


def validate_stateful_set(sts: Obj) -> list[FieldError]:
    """Upstream: ValidateStatefulSet (names: ValidateStatefulSetName, a DNS subdomain)."""
    errs = m.validate_object_meta(sts.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_stateful_set_spec(sts.get("spec") or {}, "spec")


def validate_stateful_set_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateStatefulSetSpec"""
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy") or ""
    if not policy:
        errs.append(errors.required(path + ".podManagementPolicy"))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(errors.invalid(path + ".podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"))
    errs += _validate_stateful_set_update_strategy(spec.get("updateStrategy") or {}, path + ".updateStrategy")
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(retention, dict):
        for key in ("whenDeleted", "whenScaled"):
            value = retention.get(key) or ""
            if value not in ("Retain", "Delete"):
                errs.append(errors.not_supported(f"{path}.persistentVolumeClaimRetentionPolicy.{key}", value,
                                                 ["Retain", "Delete"]))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        errs += m.nonnegative(ordinals.get("start"), path + ".ordinals.start")
    errs += m.nonnegative(spec.get("replicas"), path + ".replicas")
    errs += m.nonnegative(spec.get("minReadySeconds"), path + ".minReadySeconds")
    sel = spec.get("selector")
    if sel is None:
        errs.append(errors.required(path + ".selector"))
    else:
        errs += m.validate_label_selector(sel, path + ".selector")
        if m.selector_is_empty(sel):
            errs.append(errors.invalid(path + ".selector", m.selector_value(sel), "empty selector is invalid for statefulset"))
    if not m.selector_convertible(sel):
        errs.append(errors.invalid(path + ".selector", sel, ""))
    else:
        errs += _validate_pod_template_spec_for_stateful_set(spec, path + ".template")
    tspec = _tspec(spec)
    if tspec.get("restartPolicy", "") != "Always":
        errs.append(errors.not_supported(path + ".template.spec.restartPolicy", tspec.get("restartPolicy", ""), ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(errors.forbidden(path + ".template.spec.activeDeadlineSeconds",
                                     "activeDeadlineSeconds in StatefulSet is not Supported"))
    return errs


def _validate_pod_template_spec_for_stateful_set(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidatePodTemplateSpecForStatefulSet, and the template's pod spec with the
    volume claim templates counted as volumes (a container mounts them by name)."""
    template, sel = spec.get("template") or {}, spec.get("selector")
    labels = (template.get("metadata") or {}).get("labels") or {}
    errs: list[FieldError] = []
    if not m.selector_is_empty(sel) and not m.selector_matches(sel, labels):
        errs.append(errors.invalid(path + ".metadata.labels", labels, "`selector` does not match template `labels`"))
    tspec = template.get("spec") or {}
    volumes = list(tspec.get("volumes") or [])
    known = {v.get("name") for v in volumes if isinstance(v, dict)}
    for claim in spec.get("volumeClaimTemplates") or []:
        name = ((claim or {}).get("metadata") or {}).get("name")
        if name and name not in known:
            volumes.append({"name": name, "emptyDir": {}})
    if len(volumes) != len(tspec.get("volumes") or []):
        template = {**template, "spec": {**tspec, "volumes": volumes}}
    return errs + core.validate_pod_template_spec(template, path)


def _validate_stateful_set_update_strategy(strategy: Obj, path: str) -> list[FieldError]:
    kind, ru = strategy.get("type") or "", strategy.get("rollingUpdate")
    if not kind:
        return [errors.required(path)]
    if kind == "OnDelete":
        if ru is not None:
            return [errors.invalid(path + ".rollingUpdate", ru, "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if kind == "RollingUpdate":
        return _validate_rolling_update_stateful_set(ru, path + ".rollingUpdate") if isinstance(ru, dict) else []
    return [errors.invalid(path, strategy, "must be 'RollingUpdate' or 'OnDelete'")]


def _validate_rolling_update_stateful_set(ru: Obj, path: str) -> list[FieldError]:
    """Upstream: validateRollingUpdateStatefulSet"""
    errs = m.nonnegative(ru.get("partition"), path + ".partition")
    max_unavailable = ru.get("maxUnavailable")
    if max_unavailable is not None:
        errs += validate_positive_int_or_percent(max_unavailable, path + ".maxUnavailable")
        if _int_or_percent_value(max_unavailable) == 0:
            errs.append(errors.invalid(path + ".maxUnavailable", max_unavailable, "cannot be 0"))
        errs += _not_more_than_100_percent(max_unavailable, path + ".maxUnavailable")
    return errs


def _not_more_than_100_percent(v: Any, path: str) -> list[FieldError]:
    """Upstream: IsNotMoreThan100Percent"""
    percent = _percent_value(v)
    return [errors.invalid(path, v, "must not be greater than 100%")] if percent is not None and percent > 100 else []


STATEFUL_SET_UPDATABLE = ("replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                          "persistentVolumeClaimRetentionPolicy", "minReadySeconds")


def validate_stateful_set_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateStatefulSetUpdate (the name is not validated again) + the strategy's
    selector immutability."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errs += validate_stateful_set_spec(spec, "spec")
    clone = {**spec, **{k: old_spec[k] for k in STATEFUL_SET_UPDATABLE if k in old_spec}}
    for k in STATEFUL_SET_UPDATABLE:
        if k not in old_spec:
            clone.pop(k, None)
    if not m.semantic_equal(clone, old_spec):
        errs.append(errors.forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                                     "'template', 'updateStrategy', 'revisionHistoryLimit', "
                                     "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
    return errs + m.immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector")


def stateful_set_warnings(sts: Obj) -> list[str]:
    """Upstream: statefulSetStrategy.WarningsOnCreate (the revisionHistoryLimit warning; the pod
    template and claim template warnings are left out)."""
    limit = (sts.get("spec") or {}).get("revisionHistoryLimit")
    if isinstance(limit, int) and limit < 0:
        return ["spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended"]
    return []


def validate_stateful_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateStatefulSetStatusUpdate / ValidateStatefulSetStatus"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for key in ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                "observedGeneration", "collisionCount"):
        errs += m.nonnegative(status.get(key), f"status.{key}")
    replicas = status.get("replicas") or 0
    for key in ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
        if (status.get(key) or 0) > replicas:
            errs.append(errors.invalid(f"status.{key}", status.get(key) or 0, "cannot be greater than status.replicas"))
    if (status.get("availableReplicas") or 0) > (status.get("readyReplicas") or 0):
        errs.append(errors.invalid("status.availableReplicas", status.get("availableReplicas") or 0,
                                   "cannot be greater than status.readyReplicas"))
    return errs + _collision_count_decrement(status, old.get("status") or {})


# --- DaemonSet -----------------------------------------------------------------------------------


def validate_daemon_set(ds: Obj) -> list[FieldError]:
    """Upstream: ValidateDaemonSet"""
    errs = m.validate_object_meta(ds.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_daemon_set_spec(ds.get("spec") or {}, "spec")


def validate_daemon_set_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateDaemonSetSpec (a nil selector matches nothing: the template check fires)."""
    sel, template = spec.get("selector"), spec.get("template") or {}
    errs = m.validate_label_selector(sel, path + ".selector")
    labels = (template.get("metadata") or {}).get("labels") or {}
    if m.selector_convertible(sel) and not m.selector_matches(sel, labels):
        errs.append(errors.invalid(path + ".template.metadata.labels", labels, "`selector` does not match template `labels`"))
    if m.selector_is_empty(sel):
        errs.append(errors.invalid(path + ".selector", sel, "empty selector is invalid for daemonset"))
    errs += core.validate_pod_template_spec(template, path + ".template")
    tspec = template.get("spec") or {}
    if tspec.get("restartPolicy", "") != "Always":
        errs.append(errors.not_supported(path + ".template.spec.restartPolicy", tspec.get("restartPolicy", ""), ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(errors.invalid(path + ".template.spec.activeDeadlineSeconds", tspec["activeDeadlineSeconds"],
                                   "activeDeadlineSeconds must be nil for daemonset"))
    errs += m.nonnegative(spec.get("minReadySeconds"), path + ".minReadySeconds")
    errs += _validate_daemon_set_update_strategy(spec.get("updateStrategy") or {}, path + ".updateStrategy")
    if spec.get("revisionHistoryLimit") is not None:
        errs += m.nonnegative(spec["revisionHistoryLimit"], path + ".revisionHistoryLimit")
    return errs


def _validate_daemon_set_update_strategy(strategy: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateDaemonSetUpdateStrategy + ValidateRollingUpdateDaemonSet"""
    kind, ru = strategy.get("type") or "", strategy.get("rollingUpdate")
    if kind == "OnDelete":
        return []
    if kind != "RollingUpdate":
        return [errors.not_supported(path, strategy, ["RollingUpdate", "OnDelete"])]
    if not isinstance(ru, dict):
        return [errors.required(path + ".rollingUpdate")]
    path += ".rollingUpdate"
    unavailable, surge = ru.get("maxUnavailable"), ru.get("maxSurge")
    errs = validate_positive_int_or_percent(unavailable, path + ".maxUnavailable")
    errs += validate_positive_int_or_percent(surge, path + ".maxSurge")
    errs += _not_more_than_100_percent(unavailable, path + ".maxUnavailable")
    errs += _not_more_than_100_percent(surge, path + ".maxSurge")
    has_unavailable, has_surge = _int_or_percent_value(unavailable) != 0, _int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errs.append(errors.invalid(path + ".maxSurge", _render(surge), "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        errs.append(errors.required(path + ".maxUnavailable", "cannot be 0 when maxSurge is 0"))
    return errs


def validate_daemon_set_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateDaemonSetUpdate + the strategy's selector immutability (apps/v1)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += validate_daemon_set_spec(new.get("spec") or {}, "spec")
    return errs + _immutable_selector(new, old)


def validate_daemon_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateDaemonSetStatusUpdate / validateDaemonSetStatus"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for key in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
                "collisionCount"):
        errs += m.nonnegative(status.get(key), f"status.{key}")
    return errs + _collision_count_decrement(status, old.get("status") or {})


# --- ControllerRevision --------------------------------------------------------------------------


def validate_controller_revision(cr: Obj) -> list[FieldError]:
    """Upstream: ValidateControllerRevisionCreate"""
    errs = m.validate_object_meta(cr.get("metadata") or {}, True, name_is_dns_subdomain)
    if cr.get("data") is None:
        errs.append(errors.required("data", "data is mandatory"))
    return errs + m.nonnegative(cr.get("revision"), "revision")


def validate_controller_revision_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateControllerRevisionUpdate (data is immutable)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += validate_controller_revision(new)
    return errs + m.immutable(new.get("data"), old.get("data"), "data")
