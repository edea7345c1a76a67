"""autoscaling/v1 Scale, the kind of deployments/scale and replicasets/scale (served by
handlers/subresources.py). Upstream: pkg/apis/autoscaling/validation (ValidateScale)."""
from __future__ import annotations

from ....api.validation import apps as validation
from ..definition import TypeDefinition, update_then_create
from ..registry import register_type

SCALE = register_type(TypeDefinition(
    "autoscaling/v1", "Scale", validate=validation.validate_scale,
    validate_update=update_then_create(validation.validate_scale),
))
