"""Defaulting and validation by an object's apiVersion/kind, from its registry definition.

Upstream: runtime.Scheme's Default (the registered SetDefaults_* funcs) and the strategies'
Validate / ValidateUpdate / WarningsOnCreate, which the generic store calls. A kind the
registry does not know has no defaults, and only the generic ObjectMeta update rules.
"""
from __future__ import annotations

from typing import Any

from ...api.errors import FieldError
from .definition import ResourceDefinition, TypeDefinition, meta_update
from .registry import REGISTRY

Obj = dict[str, Any]
_TYPES = REGISTRY.types


def type_of(obj: Obj) -> ResourceDefinition | TypeDefinition | None:
    return _TYPES.get((obj.get("apiVersion", ""), obj.get("kind", "")))


def set_defaults(obj: Obj) -> None:
    """Apply upstream's SetDefaults_* for obj's apiVersion/kind in place (no-op for unknown kinds)."""
    t = type_of(obj)
    if t is not None and t.defaulter is not None:
        t.defaulter(obj)


def set_defaults_except_spec(obj: Obj) -> None:
    """set_defaults for a /status write, whose spec the strategy then replaces with the stored
    one (defaulted when it was written): the spec is set aside while the defaulters run, so
    metadata and status get their defaults without a walk over the whole pod template.

    Kinds whose defaulters only fill spec (pods, Deployments, ReplicaSets, Services: their
    definitions say defaults_outside_spec=False) have nothing to default here: a pod's status
    patch skips the walk altogether."""
    t = type_of(obj)
    if t is None or t.defaulter is None:
        return
    if "spec" not in obj:
        t.defaulter(obj)
        return
    if not t.defaults_outside_spec:
        return
    spec = obj["spec"]
    obj["spec"] = {}
    try:
        t.defaulter(obj)
    finally:
        obj["spec"] = spec


def validate(obj: Obj) -> list[FieldError]:
    """Field errors for creating obj (empty when valid, and for kinds we do not know)."""
    t = type_of(obj)
    return t.validate(obj) if t else []


def validate_update(obj: Obj, old: Obj) -> list[FieldError]:
    """Field errors for replacing old with obj through the main resource."""
    t = type_of(obj)
    return t.validate_update(obj, old) if t else meta_update(obj, old)


def validate_status_update(obj: Obj, old: Obj) -> list[FieldError]:
    """Field errors for replacing old with obj through the /status subresource."""
    t = type_of(obj)
    return t.validate_status_update(obj, old) if t else meta_update(obj, old)


def warnings(obj: Obj) -> list[str]:
    """HTTP Warning header texts for creating obj (upstream's WarningsOnCreate)."""
    t = type_of(obj)
    return t.warnings(obj) if t else []
