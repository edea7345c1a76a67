"""CSIDrivers. Upstream: pkg/registry/storage/csidriver (strategy.go: generation follows spec)."""
from __future__ import annotations

from ....api.defaulting import storage as defaulting
from ....api.validation import storage as validation
from ...tables import storage as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class CSIDriverStrategy(Strategy):
    sets_generation = True


CSI_DRIVERS = register(ResourceDefinition(
    "storage.k8s.io", "v1", "CSIDriver", "csidrivers", "csidriver", False, "io.k8s.api.storage.v1.CSIDriver",
    strategy=CSIDriverStrategy(),
    defaulter=defaulting.set_defaults_csi_driver,
    validate=validation.validate_csi_driver, validate_update=validation.validate_csi_driver_update,
    columns=tables.csi_driver_columns, printer=tables.print_csi_driver,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
