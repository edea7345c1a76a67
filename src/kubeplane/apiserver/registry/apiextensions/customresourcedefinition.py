"""CustomResourceDefinitions (apiextensions.k8s.io/v1), as upstream's apiextensions-apiserver
stores them. A CRD becoming a served kind is apiserver/apiextensions' work.

Upstream: pkg/registry/customresourcedefinition (strategy.go: status cleared on create, kept on
update, the storage version recorded in status.storedVersions, generation on spec changes; the
status strategy keeps the spec and the metadata but finalizers; etcd.go: REST.Delete's first
delete marks the CRD, adds the customresourcecleanup finalizer and the Terminating condition,
and the finalizer controller deletes the custom objects before it lets the CRD go).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....api import errors
from ....api.defaulting import apiextensions as defaulting
from ....api.resources import STATUS, ResourceInfo
from ....api.validation import apiextensions as validation
from ....storage.interface import KeyValue
from ....utils.clock import rfc3339
from ... import objects
from ...apiextensions import apiapproval, helpers
from ..definition import Obj, ResourceDefinition
from ..registry import register
from ..strategy import Strategy

if TYPE_CHECKING:
    from ...server import APIServer
    from ..deletion import DeleteOptions

GROUP = "apiextensions.k8s.io"


class CustomResourceDefinitionStrategy(Strategy):
    has_status = True
    sets_generation = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: strategy.PrepareForCreate — empty status, generation 1, the storage version stored."""
        obj["status"] = {}
        obj["metadata"]["generation"] = 1
        helpers.add_stored_version(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: strategy.PrepareForUpdate — status kept, generation on spec changes, a new
        storage version recorded."""
        super().prepare_for_update(new, old)
        helpers.add_stored_version(new)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Upstream: statusStrategy.PrepareForUpdate — spec, labels, annotations, ownerReferences
        and generation stay; finalizers may change (the finalizer controller removes its own)."""
        new["spec"] = old.get("spec")
        meta, old_meta = new["metadata"], old["metadata"]
        for key in ("labels", "annotations", "ownerReferences", "generation"):
            if key in old_meta:
                meta[key] = old_meta[key]
            else:
                meta.pop(key, None)


async def begin_delete(api: APIServer, ri: ResourceInfo, kv: KeyValue, opts: DeleteOptions) -> Obj:
    """Upstream: customresourcedefinition REST.Delete on a CRD not being deleted yet: the
    preconditions (messages as the namespace REST's), then the marks — deletionTimestamp, the
    cleanup finalizer and Terminating InstanceDeletionPending — and nothing is removed."""
    meta = kv.obj["metadata"]
    name = meta.get("name", "")
    if opts.precondition_uid is not None and opts.precondition_uid != meta.get("uid"):
        raise errors.Conflict(GROUP, "customresourcedefinitions", name, f"Precondition failed: UID in precondition: "
                              f"{opts.precondition_uid}, UID in object meta: {meta.get('uid')}")
    if opts.precondition_rv is not None and opts.precondition_rv != meta.get("resourceVersion"):
        raise errors.Conflict(GROUP, "customresourcedefinitions", name, "Precondition failed: ResourceVersion in "
                              f"precondition: {opts.precondition_rv}, ResourceVersion in object meta: "
                              f"{meta.get('resourceVersion')}")
    new = objects.mutable_copy(kv)
    now = rfc3339(api.clock.now())
    new["metadata"]["deletionTimestamp"] = now
    if not helpers.has_finalizer(new, helpers.CLEANUP_FINALIZER):
        new["metadata"]["finalizers"] = [*(new["metadata"].get("finalizers") or []), helpers.CLEANUP_FINALIZER]
    helpers.set_condition(new, helpers.TERMINATING, "True", "InstanceDeletionPending",
                          "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon", now)
    if opts.dry_run:
        return new
    with objects.storage_errors(ri, name):
        stored = await api.storage.update(kv.key, new, kv.mod_revision)
    return stored.obj


def _validate_crd_schema(root: Obj, path: str, status_enabled: bool) -> list[errors.FieldError]:
    """The validators hand an openAPIV3Schema and its path; the library takes the version's
    `schema` (CustomResourceValidation) and that one's path.

    The schema library and its CEL hooks (x-kubernetes-validations compiled on CRD writes) are
    imported on the first CRD write: a server without CRDs starts without them."""
    from ...apiextensions import celvalidation, schema
    celvalidation.install()
    return schema.validate_crd_schema({"openAPIV3Schema": root}, path.removesuffix(".openAPIV3Schema"), status_enabled)


def _validate(crd: Obj) -> list[errors.FieldError]:
    """Upstream: ValidateCustomResourceDefinition, validateAPIApproval last."""
    return (validation.validate_custom_resource_definition(crd, validate_schema=_validate_crd_schema)
            + apiapproval.validate_api_approval(crd, None))


def _validate_update(new: Obj, old: Obj) -> list[errors.FieldError]:
    """Upstream: ValidateCustomResourceDefinitionUpdate, validateAPIApproval last."""
    return (validation.validate_custom_resource_definition_update(new, old, validate_schema=_validate_crd_schema)
            + apiapproval.validate_api_approval(new, old))


CUSTOM_RESOURCE_DEFINITIONS = register(ResourceDefinition(
    GROUP, "v1", "CustomResourceDefinition", "customresourcedefinitions", "customresourcedefinition", False,
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
    short_names=("crd", "crds"), categories=("api-extensions",),
    subresources=(STATUS("CustomResourceDefinition"),),
    storage_prefix="apiextensions.k8s.io/customresourcedefinitions",
    strategy=CustomResourceDefinitionStrategy(),
    defaulter=defaulting.set_defaults_custom_resource_definition, defaults_outside_spec=True,
    validate=_validate, validate_update=_validate_update,
    validate_status_update=validation.validate_custom_resource_definition_status_update,
    begin_delete=begin_delete,
))
