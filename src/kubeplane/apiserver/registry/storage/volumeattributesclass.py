"""VolumeAttributesClasses. Upstream: pkg/registry/storage/volumeattributesclass (strategy.go)."""
from __future__ import annotations

from ....api.validation import storage as validation
from ...tables import storage as tables
from ..definition import ResourceDefinition
from ..registry import register

VOLUME_ATTRIBUTES_CLASSES = register(ResourceDefinition(
    "storage.k8s.io", "v1", "VolumeAttributesClass", "volumeattributesclasses", "volumeattributesclass", False,
    "io.k8s.api.storage.v1.VolumeAttributesClass",
    short_names=("vac",),
    validate=validation.validate_volume_attributes_class,
    validate_update=validation.validate_volume_attributes_class_update,
    columns=tables.volume_attributes_class_columns, printer=tables.print_volume_attributes_class,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
