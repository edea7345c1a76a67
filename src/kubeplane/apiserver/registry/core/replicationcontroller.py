"""ReplicationControllers. Upstream: pkg/registry/core/replicationcontroller (strategy.go;
/scale: handlers/subresources.py)."""
from __future__ import annotations

from ....api import labels
from ....api.defaulting import core_controllers as defaults
from ....api.resources import SCALE, STATUS
from ....api.validation import core as validation
from ...tables import core_controllers as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy


class ReplicationControllerStrategy(Strategy):
    has_status = True
    sets_generation = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Status = ReplicationControllerStatus{}: Go writes replicas (no omitempty)."""
        super().prepare_for_create(obj)
        obj["status"] = {"replicas": 0}


# Upstream: the ReplicationController field label conversion (pkg/apis/core/v1/conversion.go)
# and ControllerToSelectableFields.
RC_FIELDS = {**labels.META_FIELDS,
             "status.replicas": lambda o: str((o.get("status") or {}).get("replicas") or 0)}

REPLICATIONCONTROLLERS = register(ResourceDefinition(
    "", "v1", "ReplicationController", "replicationcontrollers", "replicationcontroller", True,
    "io.k8s.api.core.v1.ReplicationController",
    short_names=("rc",), categories=("all",), subresources=(STATUS("ReplicationController"), SCALE),
    strategy=ReplicationControllerStrategy(),
    defaulter=defaults.set_defaults_replication_controller, defaults_outside_spec=True,
    validate=validation.validate_replication_controller,
    validate_update=validation.validate_replication_controller_update,
    validate_status_update=validation.validate_replication_controller_status_update,
    warnings=validation.replication_controller_warnings,
    columns=tables.replication_controller_columns, printer=tables.print_replication_controller,
    field_selectors=RC_FIELDS,
))
