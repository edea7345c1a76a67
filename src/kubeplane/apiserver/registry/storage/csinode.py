"""CSINodes. Upstream: pkg/registry/storage/csinode (strategy.go)."""
from __future__ import annotations

from ....api.validation import storage as validation
from ...tables import storage as tables
from ..definition import ResourceDefinition
from ..registry import register

CSI_NODES = register(ResourceDefinition(
    "storage.k8s.io", "v1", "CSINode", "csinodes", "csinode", False, "io.k8s.api.storage.v1.CSINode",
    validate=validation.validate_csi_node, validate_update=validation.validate_csi_node_update,
    columns=tables.csi_node_columns, printer=tables.print_csi_node,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
