"""CSIStorageCapacities. Upstream: pkg/registry/storage/csistoragecapacity (strategy.go)."""
from __future__ import annotations

from ....api.validation import storage as validation
from ...tables import storage as tables
from ..definition import ResourceDefinition
from ..registry import register

CSI_STORAGE_CAPACITIES = register(ResourceDefinition(
    "storage.k8s.io", "v1", "CSIStorageCapacity", "csistoragecapacities", "csistoragecapacity", True,
    "io.k8s.api.storage.v1.CSIStorageCapacity",
    validate=validation.validate_csi_storage_capacity,
    validate_update=validation.validate_csi_storage_capacity_update,
    columns=tables.csi_storage_capacity_columns, printer=tables.print_csi_storage_capacity,
))
