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
        """Upstream: persistentvolumeclaimStrategy.PrepareForCreate clears the status (the stored
        claim reads back Pending: SetDefaults_PersistentVolumeClaim on decode) and normalises the
        data sources."""
        obj["status"] = {"phase": "Pending"}
        normalize_data_sources(obj.get("spec"))

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: PrepareForUpdate — as the generic one, and the data sources normalised again
        (an older client omits the dataSourceRef the create filled in)."""
        super().prepare_for_update(new, old)
        normalize_data_sources(new.get("spec"))


def normalize_data_sources(spec: object) -> None:
    """Upstream: pvcutil.NormalizeDataSources (AnyVolumeDataSource, GA) — a claim that sets one of
    dataSource and dataSourceRef gets the other as a copy (not from a cross-namespace ref)."""
    if not isinstance(spec, dict):
        return
    ds, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if isinstance(ds, dict) and ref is None:
        spec["dataSourceRef"] = _copy_reference(ds)
    elif isinstance(ref, dict) and ds is None and not ref.get("namespace"):
        spec["dataSource"] = _copy_reference(ref)


def _copy_reference(ref: Obj) -> Obj:
    """kind and name always (Go strings without omitempty), apiGroup when set (a pointer)."""
    copy: Obj = {"apiGroup": ref["apiGroup"]} if ref.get("apiGroup") is not None else {}
    return {**copy, "kind": ref.get("kind", ""), "name": ref.get("name", "")}


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
