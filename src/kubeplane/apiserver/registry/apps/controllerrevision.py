"""ControllerRevisions. Upstream: pkg/registry/apps/controllerrevision (strategy.go: no status,
no generation)."""
from __future__ import annotations

from ....api.validation import apps as validation
from ...tables import apps as tables
from ..definition import ResourceDefinition
from ..registry import register

CONTROLLERREVISIONS = register(ResourceDefinition(
    "apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", True,
    "io.k8s.api.apps.v1.ControllerRevision",
    validate=validation.validate_controller_revision,
    validate_update=validation.validate_controller_revision_update,
    columns=tables.controller_revision_columns, printer=tables.print_controller_revision,
))
