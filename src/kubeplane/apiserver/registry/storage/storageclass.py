"""StorageClasses. Upstream: pkg/registry/storage/storageclass (strategy.go)."""
from __future__ import annotations

from ....api.defaulting import storage as defaulting
from ....api.validation import storage as validation
from ...tables import storage as tables
from ..definition import ResourceDefinition
from ..registry import register

STORAGE_CLASSES = register(ResourceDefinition(
    "storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False,
    "io.k8s.api.storage.v1.StorageClass",
    short_names=("sc",),
    defaulter=defaulting.set_defaults_storage_class, defaults_outside_spec=True,
    validate=validation.validate_storage_class, validate_update=validation.validate_storage_class_update,
    columns=tables.storage_class_columns, printer=tables.print_storage_class,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
