"""Deployments. Upstream: pkg/registry/apps/deployment (strategy.go; /scale: handlers/subresources.py)."""
from __future__ import annotations

from ....api import defaults
from ....api.resources import SCALE, STATUS
from ....api.validation import apps as validation
from ...tables import columns, printers
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import AppsStrategy


class DeploymentStrategy(AppsStrategy):
    # Annotations are copied to ReplicaSets, so changing them is a spec change (strategy.go).
    generation_watches_annotations = True


DEPLOYMENTS = register(ResourceDefinition(
    "apps", "v1", "Deployment", "deployments", "deployment", True, "io.k8s.api.apps.v1.Deployment",
    short_names=("deploy",), categories=("all",), subresources=(STATUS("Deployment"), SCALE),
    strategy=DeploymentStrategy(),
    defaulter=defaults.set_defaults_deployment,
    validate=validation.validate_deployment, validate_update=validation.validate_deployment_update,
    validate_status_update=validation.validate_deployment_status_update,
    warnings=validation.replica_set_name_warnings,
    columns=columns.deployment_columns, printer=printers.print_deployment,
))
