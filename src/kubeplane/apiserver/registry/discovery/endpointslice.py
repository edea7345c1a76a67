"""EndpointSlices. Upstream: pkg/registry/discovery/endpointslice (strategy.go)."""
from __future__ import annotations

from ....api.defaulting import discovery as defaulting
from ....api.validation import discovery as validation
from ...tables import discovery as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy


class EndpointSliceStrategy(Strategy):
    """An EndpointSlice has no spec: every change outside metadata bumps its generation."""

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: endpointSliceStrategy.PrepareForUpdate (compares all but ObjectMeta)."""
        gen = old["metadata"].get("generation", 0)
        changed = any(new.get(k) != old.get(k) for k in ("addressType", "endpoints", "ports"))
        new["metadata"]["generation"] = gen + 1 if changed else gen


ENDPOINT_SLICES = register(ResourceDefinition(
    "discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True,
    "io.k8s.api.discovery.v1.EndpointSlice",
    strategy=EndpointSliceStrategy(),
    defaulter=defaulting.set_defaults_endpoint_slice, defaults_outside_spec=True,
    validate=validation.validate_endpoint_slice, validate_update=validation.validate_endpoint_slice_update,
    columns=tables.endpoint_slice_columns, printer=tables.print_endpoint_slice,
))
