"""ReplicaSets. Upstream: pkg/registry/apps/replicaset (strategy.go; /scale: handlers/subresources.py)."""
from __future__ import annotations

from ....api import defaults
from ....api.resources import SCALE, STATUS
from ....api.validation import apps as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import AppsStrategy

REPLICASETS = register(ResourceDefinition(
    "apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, "io.k8s.api.apps.v1.ReplicaSet",
    short_names=("rs",), categories=("all",), subresources=(STATUS("ReplicaSet"), SCALE),
    strategy=AppsStrategy(),
    defaulter=defaults.set_defaults_replica_set,
    validate=validation.validate_replica_set, validate_update=validation.validate_replica_set_update,
    validate_status_update=validation.validate_replica_set_status_update,
    warnings=validation.replica_set_name_warnings,
    columns=columns.replica_set_columns, printer=printers.print_replica_set,
))
