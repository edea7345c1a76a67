"""Validation for the kinds we serve, rule for rule as upstream's strategies run it.

    validate(obj)                     create (ValidateX, then the registry's generic
                                      ObjectMeta check for kinds whose validator skips it)
    validate_update(obj, old)         main-resource update: new-object rules + immutability
    validate_status_update(obj, old)  /status update
    warnings(obj)                     HTTP Warning texts for a create

Each returns upstream's field errors in upstream's order; `errors.Invalid(group, kind,
name, errs)` turns them into the 422 Status. Objects are JSON dicts as decoded; callers
default them first (defaults.set_defaults) exactly like the apiserver does, because
several rules (terminationGracePeriodSeconds, restartPolicy, imagePullPolicy, …) are
"Required" checks on fields defaulting always fills.
"""
from __future__ import annotations

from typing import Any, Callable

from kubeplane.api.errors import FieldError

from . import apps, coordination, core, events
from . import meta as m

Obj = dict[str, Any]
Create = Callable[[Obj], list[FieldError]]
Update = Callable[[Obj, Obj], list[FieldError]]

__all__ = ["FieldError", "validate", "validate_namespace_finalizers", "validate_update", "validate_status_update",
           "warnings"]

validate_namespace_finalizers = core.validate_namespace_finalizers


def _meta_update(new: Obj, old: Obj) -> list[FieldError]:
    return m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})


def _update_then_create(create: Create) -> Update:
    """ValidateXUpdate for kinds whose update is "metadata update rules + the create rules on spec"."""
    def update(new: Obj, old: Obj) -> list[FieldError]:
        errs = _meta_update(new, old)
        return errs + [e for e in create(new) if not e.field.startswith("metadata.")]
    return update


def _core_event_create(ev: Obj) -> list[FieldError]:
    """core/v1 Events: legacy rules; the generic path-segment name check only if those pass."""
    return core.validate_core_event(ev) or core.validate_core_event_meta(ev)


def _core_event_update(new: Obj, old: Obj) -> list[FieldError]:
    return core.validate_core_event(new) or _meta_update(new, old)


# (apiVersion, kind) -> (create, update, status update)
_VALIDATORS: dict[tuple[str, str], tuple[Create, Update, Update]] = {
    ("apps/v1", "Deployment"): (apps.validate_deployment, apps.validate_deployment_update,
                                apps.validate_deployment_status_update),
    ("apps/v1", "ReplicaSet"): (apps.validate_replica_set, apps.validate_replica_set_update,
                                apps.validate_replica_set_status_update),
    ("autoscaling/v1", "Scale"): (apps.validate_scale, _update_then_create(apps.validate_scale), _meta_update),
    ("v1", "Pod"): (core.validate_pod, core.validate_pod_update, core.validate_pod_status_update),
    ("v1", "Binding"): (core.validate_binding, lambda new, old: core.validate_binding(new), _meta_update),
    ("v1", "Namespace"): (core.validate_namespace, _meta_update, core.validate_namespace_status_update),
    ("v1", "Node"): (core.validate_node, _update_then_create(core.validate_node), _meta_update),
    ("v1", "ConfigMap"): (core.validate_config_map, core.validate_config_map_update, _meta_update),
    ("v1", "Secret"): (core.validate_secret, core.validate_secret_update, _meta_update),
    ("v1", "Service"): (core.validate_service, core.validate_service_update, _meta_update),
    ("v1", "ServiceAccount"): (core.validate_service_account, _meta_update, _meta_update),
    ("v1", "Event"): (_core_event_create, _core_event_update, _meta_update),
    ("events.k8s.io/v1", "Event"): (events.validate_event, events.validate_event_update, _meta_update),
    ("coordination.k8s.io/v1", "Lease"): (coordination.validate_lease, coordination.validate_lease_update,
                                          _meta_update),
}


def _key(obj: Obj) -> tuple[str, str]:
    return obj.get("apiVersion", ""), obj.get("kind", "")


def validate(obj: Obj) -> list[FieldError]:
    """Field errors for creating obj (empty when valid, and for kinds we do not know)."""
    entry = _VALIDATORS.get(_key(obj))
    return entry[0](obj) if entry else []


def validate_update(obj: Obj, old: Obj) -> list[FieldError]:
    """Field errors for replacing old with obj through the main resource."""
    entry = _VALIDATORS.get(_key(obj))
    return entry[1](obj, old) if entry else _meta_update(obj, old)


def validate_status_update(obj: Obj, old: Obj) -> list[FieldError]:
    """Field errors for replacing old with obj through the /status subresource."""
    entry = _VALIDATORS.get(_key(obj))
    return entry[2](obj, old) if entry else _meta_update(obj, old)


_WARNINGS: dict[tuple[str, str], Callable[[Obj], list[str]]] = {
    ("apps/v1", "Deployment"): apps.replica_set_name_warnings,
    ("apps/v1", "ReplicaSet"): apps.replica_set_name_warnings,
}


def warnings(obj: Obj) -> list[str]:
    """HTTP Warning header texts for creating obj (upstream's WarningsOnCreate)."""
    fn = _WARNINGS.get(_key(obj))
    return fn(obj) if fn else []
