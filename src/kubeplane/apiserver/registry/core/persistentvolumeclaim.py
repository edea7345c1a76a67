"""PersistentVolumeClaims. Upstream: pkg/registry/core/persistentvolumeclaim (strategy.go)."""
from __future__ import annotations

from ....api.defaulting import core as defaulting
from ....api.resources import STATUS
from ....api.validation import core as validation
from ...tables import core_storage as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy


class PersistentVolumeClaimStrategy(Strategy):
    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: persistentvolumeclaimStrategy.PrepareForCreate clears the status; the
        stored claim reads back Pending (SetDefaults_PersistentVolumeClaim on decode)."""
        obj["status"] = {"phase": "Pending"}


PERSISTENT_VOLUME_CLAIMS = register(ResourceDefinition(
    "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", "persistentvolumeclaim", True,
    "io.k8s.api.core.v1.PersistentVolumeClaim",
    short_names=("pvc",), subresources=(STATUS("PersistentVolumeClaim"),),
    strategy=PersistentVolumeClaimStrategy(),
    defaulter=defaulting.set_defaults_persistent_volume_claim, defaults_outside_spec=True,
    validate=validation.validate_persistent_volume_claim,
    validate_update=validation.validate_persistent_volume_claim_update,
    validate_status_update=validation.validate_persistent_volume_claim_status_update,
    columns=tables.persistent_volume_claim_columns, printer=tables.print_persistent_volume_claim,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
