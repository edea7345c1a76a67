"""DeviceClasses, DeviceTaintRules, ResourceClaims, ResourceClaimTemplates and ResourceSlices, in
upstream's discovery order (allocation is the scheduler's, not here).
Upstream: pkg/registry/resource/*/strategy.go — generation follows spec where upstream sets it
(device classes, taint rules, slices), claims and templates have an immutable spec."""
from __future__ import annotations

from ....api import labels
from ....api.defaulting import resource as defaulting
from ....api.resources import STATUS
from ....api.validation import resource as validation
from ...tables import resource as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy

GROUP = "resource.k8s.io"
_DEF = "io.k8s.api.resource.v1."


class GenerationStrategy(Strategy):
    sets_generation = True


class StatusGenerationStrategy(Strategy):
    has_status = True
    sets_generation = True


class ClaimStrategy(Strategy):
    has_status = True


DEVICE_CLASSES = register(ResourceDefinition(
    GROUP, "v1", "DeviceClass", "deviceclasses", "deviceclass", False, _DEF + "DeviceClass",
    strategy=GenerationStrategy(),
    validate=validation.validate_device_class, validate_update=validation.validate_device_class_update,
    columns=tables.name_age_columns, printer=tables.print_name_age,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))

DEVICE_TAINT_RULES = register(ResourceDefinition(
    GROUP, "v1", "DeviceTaintRule", "devicetaintrules", "devicetaintrule", False, _DEF + "DeviceTaintRule",
    subresources=(STATUS("DeviceTaintRule"),),
    strategy=StatusGenerationStrategy(),
    validate=validation.validate_device_taint_rule, validate_update=validation.validate_device_taint_rule_update,
    validate_status_update=validation.validate_device_taint_rule_status_update,
    columns=tables.name_age_columns, printer=tables.print_name_age,
))

RESOURCE_CLAIMS = register(ResourceDefinition(
    GROUP, "v1", "ResourceClaim", "resourceclaims", "resourceclaim", True, _DEF + "ResourceClaim",
    subresources=(STATUS("ResourceClaim"),),
    strategy=ClaimStrategy(),
    defaulter=defaulting.set_defaults_resource_claim,
    validate=validation.validate_resource_claim, validate_update=validation.validate_resource_claim_update,
    validate_status_update=validation.validate_resource_claim_status_update,
    columns=tables.claim_columns, printer=tables.print_claim,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))

RESOURCE_CLAIM_TEMPLATES = register(ResourceDefinition(
    GROUP, "v1", "ResourceClaimTemplate", "resourceclaimtemplates", "resourceclaimtemplate", True,
    _DEF + "ResourceClaimTemplate",
    defaulter=defaulting.set_defaults_resource_claim_template,
    validate=validation.validate_resource_claim_template,
    validate_update=validation.validate_resource_claim_template_update,
    columns=tables.name_age_columns, printer=tables.print_name_age,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))

# Upstream: ResourceSlice field label conversion (spec.nodeName, spec.driver, spec.pool.name).
SLICE_FIELDS = {
    **labels.NAME_FIELD,
    "spec.nodeName": labels.path("spec", "nodeName"),
    "spec.driver": labels.path("spec", "driver"),
    "spec.pool.name": lambda o: ((o.get("spec") or {}).get("pool") or {}).get("name") or "",
}

RESOURCE_SLICES = register(ResourceDefinition(
    GROUP, "v1", "ResourceSlice", "resourceslices", "resourceslice", False, _DEF + "ResourceSlice",
    strategy=GenerationStrategy(),
    validate=validation.validate_resource_slice, validate_update=validation.validate_resource_slice_update,
    columns=tables.slice_columns, printer=tables.print_slice,
    field_selectors=SLICE_FIELDS,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
