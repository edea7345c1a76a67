"""StorageVersionMigrations (stored; the migrator controller is issue 14).
Upstream: pkg/registry/storagemigration/storagemigration/strategy.go (status subresource)."""
from __future__ import annotations

from ....api.resources import STATUS
from ....api.validation import storagemigration as validation
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class SVMStrategy(Strategy):
    has_status = True


STORAGE_VERSION_MIGRATIONS = register(ResourceDefinition(
    "storagemigration.k8s.io", "v1", "StorageVersionMigration", "storageversionmigrations",
    "storageversionmigration", False, "io.k8s.api.storagemigration.v1.StorageVersionMigration",
    subresources=(STATUS("StorageVersionMigration"),),
    strategy=SVMStrategy(),
    validate=validation.validate_storage_version_migration,
    validate_update=validation.validate_storage_version_migration_update,
))
