"""PersistentVolumes. Upstream: pkg/registry/core/persistentvolume (strategy.go)."""
from __future__ import annotations

import time

from ....api.defaulting import core as defaulting
from ....api.resources import STATUS
from ....utils.clock import rfc3339
from ....api.validation import core as validation
from ...tables import core_storage as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy


def now_rfc3339() -> str:
    # Strategies get no clock (upstream: NowFunc); the wall clock, like upstream's.
    return rfc3339(time.time())


class PersistentVolumeStrategy(Strategy):
    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: persistentvolumeStrategy.PrepareForCreate — status reset to Pending, with
        the time of the transition (the creation time)."""
        obj["status"] = {"phase": "Pending",
                         "lastPhaseTransitionTime": obj["metadata"].get("creationTimestamp") or now_rfc3339()}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Upstream: persistentvolumeStatusStrategy.PrepareForUpdate — a phase change the client
        did not time is timed now; an unchanged phase keeps its time."""
        super().prepare_for_status_update(new, old)
        status, old_status = new.setdefault("status", {}), old.get("status") or {}
        if not isinstance(status, dict):
            return
        old_time = old_status.get("lastPhaseTransitionTime")
        if status.get("phase") == old_status.get("phase"):
            if status.get("lastPhaseTransitionTime") is None and old_time is not None:
                status["lastPhaseTransitionTime"] = old_time
        elif status.get("lastPhaseTransitionTime") in (None, old_time):
            status["lastPhaseTransitionTime"] = now_rfc3339()


PERSISTENT_VOLUMES = register(ResourceDefinition(
    "", "v1", "PersistentVolume", "persistentvolumes", "persistentvolume", False,
    "io.k8s.api.core.v1.PersistentVolume",
    short_names=("pv",), subresources=(STATUS("PersistentVolume"),),
    strategy=PersistentVolumeStrategy(),
    defaulter=defaulting.set_defaults_persistent_volume, defaults_outside_spec=True,
    validate=validation.validate_persistent_volume, validate_update=validation.validate_persistent_volume_update,
    validate_status_update=validation.validate_persistent_volume_status_update,
    columns=tables.persistent_volume_columns, printer=tables.print_persistent_volume,
    returns_deleted_object=True,          # upstream: the store's ReturnDeletedObject
))
