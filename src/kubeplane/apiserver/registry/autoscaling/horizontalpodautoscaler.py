"""HorizontalPodAutoscalers, served as autoscaling/v2 (preferred, and the stored form) and as
autoscaling/v1 from the same storage (/registry/horizontalpodautoscalers/), as upstream.

Two definitions, one per version: the registry keys resources by (group, version, plural) and
both share the storage prefix (it is the plural). The v1 definition converts at the registry
boundary (to_storage/from_storage: api/autoscaling_conversion.py), so everything behind it —
defaulting, validation, strategy, admission, storage, watch — sees only v2 objects; v2 is
registered first, so discovery lists [v2, v1] with v2 preferred.

Upstream: pkg/registry/autoscaling/horizontalpodautoscaler (strategy.go: create starts from
an empty status; no generation), the storage version v2 (pkg/controlplane/apiserver/options).
"""
from __future__ import annotations

from typing import Any

from ....api.autoscaling_conversion import hpa_v1_to_v2, hpa_v2_to_v1
from ....api.defaulting import autoscaling as defaulting
from ....api.resources import STATUS
from ....api.validation import autoscaling as validation
from ...tables import autoscaling as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class HorizontalPodAutoscalerStrategy(Strategy):
    has_status = True

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        # Go's zero HorizontalPodAutoscalerStatus: desiredReplicas and currentMetrics have no
        # omitempty (a fresh HPA shows `currentMetrics: null`).
        obj["status"] = {"desiredReplicas": 0, "currentMetrics": None}


_COMMON: dict[str, Any] = dict(
    short_names=("hpa",), categories=("all",), subresources=(STATUS("HorizontalPodAutoscaler"),),
    storage_prefix="horizontalpodautoscalers",
    strategy=HorizontalPodAutoscalerStrategy(),
    columns=tables.hpa_columns, printer=tables.print_hpa,
)

HPA_V2 = register(ResourceDefinition(
    "autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler", True,
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler",
    defaulter=defaulting.set_defaults_hpa,
    validate=validation.validate_hpa, validate_update=validation.validate_hpa_update,
    validate_status_update=validation.validate_hpa_status_update, **_COMMON))

# No defaulting or validation of its own: a v1 object is converted to v2 before the write
# pipeline, which then picks v2's by the object's apiVersion (registry/scheme.py).
HPA_V1 = register(ResourceDefinition(
    "autoscaling", "v1", "HorizontalPodAutoscaler", "horizontalpodautoscalers", "horizontalpodautoscaler", True,
    "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
    to_storage=hpa_v1_to_v2, from_storage=hpa_v2_to_v1, **_COMMON))
