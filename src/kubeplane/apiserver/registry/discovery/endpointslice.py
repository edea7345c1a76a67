"""EndpointSlices. Upstream: pkg/registry/discovery/endpointslice (strategy.go)."""
from __future__ import annotations

from ....api.defaulting import discovery as defaulting
from ....api.validation import discovery as validation
from ...tables import discovery as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy


class EndpointSliceStrategy(Strategy):
    """An EndpointSlice has no spec: a change outside metadata, or of its labels, bumps its
    generation; v1 writes drop deprecatedTopology."""

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        drop_topology_on_v1(None, obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: endpointSliceStrategy.PrepareForUpdate (compares all but ObjectMeta, and labels)."""
        gen = old["metadata"].get("generation", 0)
        changed = any(new.get(k) != old.get(k) for k in ("addressType", "endpoints", "ports")) or \
            (new["metadata"].get("labels") or {}) != (old["metadata"].get("labels") or {})
        new["metadata"]["generation"] = gen + 1 if changed else gen
        drop_topology_on_v1(old, new)


HOSTNAME_LABEL = "kubernetes.io/hostname"


def drop_topology_on_v1(old: Obj | None, new: Obj) -> None:
    """Upstream: dropTopologyOnV1 — a v1 write clears endpoints[].deprecatedTopology; a node name
    that topology carried (and the previous slice knew) moves to nodeName."""
    endpoints = new.get("endpoints")
    if not isinstance(endpoints, list) or (old is not None and old.get("endpoints") == endpoints):
        return
    known = {(e.get("deprecatedTopology") or {}).get(HOSTNAME_LABEL) for e in (old or {}).get("endpoints") or []
             if isinstance(e, dict)} - {None}
    for ep in endpoints:
        if not isinstance(ep, dict) or "deprecatedTopology" not in ep:
            continue
        node = (ep.pop("deprecatedTopology") or {}).get(HOSTNAME_LABEL)
        if ep.get("nodeName") is None and node in known:
            ep["nodeName"] = node


ENDPOINT_SLICES = register(ResourceDefinition(
    "discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True,
    "io.k8s.api.discovery.v1.EndpointSlice",
    strategy=EndpointSliceStrategy(),
    defaulter=defaulting.set_defaults_endpoint_slice, defaults_outside_spec=True,
    validate=validation.validate_endpoint_slice, validate_update=validation.validate_endpoint_slice_update,
    columns=tables.endpoint_slice_columns, printer=tables.print_endpoint_slice,
))
