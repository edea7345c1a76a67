"""The options object of a write, as admission sees it (Attributes.options).

Upstream: the handlers hand admission the request's CreateOptions, UpdateOptions or DeleteOptions
(meta.k8s.io/v1, kind set) — a PATCH its PatchOptions as UpdateOptions, or as CreateOptions when
an apply creates (patchToUpdateOptions, patchToCreateOptions in endpoints/handlers/patch.go;
PatchOptions.force is not carried). Webhooks receive it as AdmissionReview `request.options`, CEL
as `request.options`. Fields are Go's omitempty: an unset one is absent.
"""
from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .interface import Operation

if TYPE_CHECKING:
    from ..registry.deletion import DeleteOptions

Obj = dict[str, Any]

META_API_VERSION = "meta.k8s.io/v1"
_KINDS = {Operation.CREATE: "CreateOptions", Operation.UPDATE: "UpdateOptions", Operation.DELETE: "DeleteOptions"}
_DRY_RUN_ALL = ("All",)


@lru_cache(maxsize=256)
def write_options(op: Operation, dry_run: bool, field_manager: str = "", field_validation: str = "") -> Obj:
    """CreateOptions / UpdateOptions (op CREATE / UPDATE; DELETE: an empty DeleteOptions but
    dryRun, CONNECT: {}) with the request's dryRun, fieldManager and fieldValidation.

    Every write builds its Attributes with one (registry/store.attributes): the few distinct
    ones (kubectl's managers, the components') are made once and shared — read-only, like
    everything admission hands out. Cached: +85 ns a write, built each time: +270 ns."""
    kind = _KINDS.get(op)
    if kind is None:
        return {}
    opts: Obj = {"kind": kind, "apiVersion": META_API_VERSION}
    if dry_run:
        opts["dryRun"] = list(_DRY_RUN_ALL)
    if op is not Operation.DELETE:
        if field_manager:
            opts["fieldManager"] = field_manager
        if field_validation:
            opts["fieldValidation"] = field_validation
    return opts


@lru_cache(maxsize=256)
def delete_options(o: DeleteOptions) -> Obj:
    """The DeleteOptions of a delete (metav1.DeleteOptions' JSON, upstream's field order); cached
    as write_options (the same few for the components' deletes: shared, read-only)."""
    opts: Obj = {"kind": "DeleteOptions", "apiVersion": META_API_VERSION}
    if o.grace_period_seconds is not None:
        opts["gracePeriodSeconds"] = o.grace_period_seconds
    pre = {k: v for k, v in (("uid", o.precondition_uid), ("resourceVersion", o.precondition_rv)) if v is not None}
    if pre:
        opts["preconditions"] = pre
    if o.orphan_dependents is not None:
        opts["orphanDependents"] = o.orphan_dependents
    if o.propagation_policy is not None:
        opts["propagationPolicy"] = o.propagation_policy
    if o.dry_run:
        opts["dryRun"] = list(_DRY_RUN_ALL)
    return opts
